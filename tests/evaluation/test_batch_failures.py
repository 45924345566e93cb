"""A failure inside the batched query side (one query the embedder cannot take) names that
query and its node, and every other query keeps its result, as a per-query run would."""

from __future__ import annotations

import json
from pathlib import Path

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation import evaluate_graph, load_beir
from tests.evaluation.test_runner import ROOT, write_dataset

POISON = "a query the embedder refuses"


def _dataset(folder: Path) -> None:
    """The runner tests' dataset, plus one query the embedder refuses."""
    write_dataset(folder)
    with (folder / "queries.jsonl").open("a") as queries:
        queries.write(json.dumps({"_id": "9", "text": POISON}) + "\n")
    with (folder / "qrels" / "test.tsv").open("a") as qrels:
        qrels.write("9\td1\t1\n")


def _evaluate(tmp_path: Path, work: str, batch: bool):
    doc = load(ROOT / "sample_graphs" / "scifact_dense.json")
    doc.node("store").params["path"] = str(tmp_path / work / "chroma")
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / work / "cache"),
                        work_dir=tmp_path / work / "data")
    return evaluate_graph(doc, load_beir(tmp_path / "beir", "test"), ["dense.results"],
                          executor=executor, batch_queries=batch)


def test_one_bad_query_in_a_batch_is_named_and_the_others_are_scored(tmp_path, monkeypatch):
    from modrag_nodes.embedding import models, spec

    _dataset(tmp_path / "beir")
    real = models.embed
    calls: list[int] = []

    def refusing(model, texts, role="passage", ctx=None, resources=None):
        if role == "query":
            calls.append(len(texts))
            if POISON in texts:
                raise ValueError("the embedder refused a text")
        return real(model, texts, role=role, ctx=ctx, resources=resources)

    monkeypatch.setattr(models, "embed", refusing)
    monkeypatch.setattr(spec, "embed", refusing)
    batched = _evaluate(tmp_path, "batched", batch=True)
    assert max(calls) == 4  # the batch of all four queries was tried first, and failed
    one_by_one = _evaluate(tmp_path, "single", batch=False)
    for report in (batched, one_by_one):
        assert [(f["query_id"], f["output"]) for f in report.failures] == \
            [("9", "dense.results")], report.failures
        assert "node 'dense'" in report.failures[0]["reason"]
        assert "refused" in report.failures[0]["reason"]
        rows = {row["query_id"]: row for row in report.per_query["dense.results"]}
        assert set(rows) == {"1", "2", "3", "9"}
        assert all(rows[q]["ndcg@10"] == 1.0 for q in ("1", "2", "3"))  # kept, and right
        assert rows["9"]["ndcg@10"] == 0.0  # the failed query counts as nothing found
    assert batched.per_query["dense.results"] == one_by_one.per_query["dense.results"]
