"""A corpus where stemming decides retrieval, as a BEIR dataset, a folder and an evaluation
set, the BM25 graph the tuner tests tune (no models), and scripted scorers whose search
and test stages disagree."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument, from_json_dict
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.evaluation.evalset import EvalQuestion
from modrag_studio.evaluation.tuning.scoring import Scored, Stage

WORDS = ["harvest", "glacier", "lantern", "meadow", "compass", "harbor", "falcon", "orchard",
         "canyon", "thunder", "ember", "willow", "quartz", "violet", "timber", "saddle",
         "marble", "pepper", "copper", "basalt", "cobalt", "walnut", "nectar", "pebble",
         "ripple", "sparrow", "tundra", "velvet", "zephyr", "anchor"]


def write_stemming_dataset(folder: Path, count: int = 60) -> Path:
    """Document i says "<word_i> <word_j> farming"; query i asks with the plural and "-ing"
    forms, so only a stemmed index matches most queries to their document."""
    (folder / "qrels").mkdir(parents=True)
    docs, queries, rows = [], [], []
    for i in range(count):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        docs.append({"_id": f"d{i}", "title": "", "text": f"The {a} keeper walks near "
                     f"the {b} path every morning, number {i}."})
        queries.append({"_id": f"q{i}", "text": f"{a}s keepers walking {b}s paths"})
        rows.append(f"q{i}\td{i}\t1")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                               + "\n".join(rows) + "\n")
    return folder


def bm25_graph(stemmer: str = "none"):
    nodes = [("corpus", "graph.input", {"name": "corpus"}),
             ("query", "graph.input", {"name": "query"}),
             ("load", "load.files", {}),
             ("split", "split.recursive", {"chunk_size": 300, "overlap": 0}),
             ("index", "bm25.index", {"stemmer": stemmer}),
             ("bm25", "retrieve.bm25", {"top_k": 10}),
             ("rerank", "fuse.rrf", {}),
             ("out", "graph.output", {"name": "results"})]
    edges = [("corpus.value", "load.path"), ("load.documents", "split.documents"),
             ("split.chunks", "index.chunks"), ("index.index", "bm25.index"),
             ("query.value", "bm25.query"), ("bm25.results", "rerank.rankings"),
             ("rerank.results", "out.value")]
    return from_json_dict({"schema_version": 1, "metadata": {"name": "stem"},
                           "nodes": [{"id": i, "type": t, "params": p} for i, t, p in nodes],
                           "edges": [{"from": a, "to": b} for a, b in edges]})


def write_stemming_corpus(folder: Path, count: int = 60) -> Path:
    """The same documents as files ``d<i>.txt`` (chunk ids ``d<i>.txt#0``)."""
    folder.mkdir(parents=True)
    for i in range(count):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        (folder / f"d{i}.txt").write_text(f"The {a} keeper walks near the {b} path every "
                                          f"morning, number {i}.", encoding="utf-8")
    return folder


def write_stemming_evalset(path: Path, count: int = 60) -> Path:
    questions = []
    for i in range(count):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        questions.append(EvalQuestion(
            id=f"g{i}", question=f"{a}s keepers walking {b}s paths",
            expected_evidence=ExpectedEvidence.from_dict({"chunk_ids": [f"d{i}.txt#0"]}),
            expected_facts=[[f"number {i}"]]))
    questions.append(EvalQuestion(id="u1", question="who owns the moon", answerable=False))
    path.write_text("".join(q.to_json_line() + "\n" for q in questions), encoding="utf-8")
    return path


class ScriptedScorer:
    """Scores by the graph's stemmer and the stage: what the search sees and what the test
    finds can be set apart (a winner that overfits its tuning questions)."""

    def __init__(self, search: dict[str, float], test: dict[str, float],
                 noise: float = 0.02) -> None:
        self.levels = {"search": search, "test": test}
        self.noise = noise

    def __call__(self, graph: GraphDocument, query_ids: Sequence[str], *, stage: Stage,
                 split: int) -> Scored:
        stemmer = graph.node("index").params.get("stemmer", "none")
        level = self.levels[stage][stemmer]
        rows = {}
        for q in query_ids:
            i = int(q.lstrip("qg"))
            jitter = self.noise * ((i * (7 if stemmer == "none" else 3)) % 5 - 2)
            rows[q] = {"query_id": q, "ndcg@10": min(1.0, max(0.0, level + jitter))}
        return Scored(rows, ["ndcg@10"])


OVERFITS = ScriptedScorer(search={"none": 0.5, "english": 0.8},
                          test={"none": 0.8, "english": 0.3})
TIES = ScriptedScorer(search={"none": 0.5, "english": 0.8},
                      test={"none": 0.5, "english": 0.5}, noise=0.2)
