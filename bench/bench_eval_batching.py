"""Evaluation loop with query embeddings batched up front against one query at a time.

Both loops are ``evaluate_graph`` on the hybrid SciFact graph with the indexes cached: a
warm-up query (not measured) loads the model and builds or loads the indexes, then the
measured loop runs every query. ``one-by-one`` is the loop as it was (each graph run embeds
its query); ``batched`` embeds all query texts in batches first (its own warm-up query and
the batch embedding are inside the measured time). Each loop has a fresh node cache so no
query result is cached; the Chroma folder under --data-dir is shared and reused.

Run: nice -n 10 .venv/bin/python bench/bench_eval_batching.py [--queries 300] [--split train]
The first run embeds the corpus into Chroma (many minutes on two cores for all of SciFact).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "data" / "scifact"
GRAPH = ROOT / "sample_graphs" / "scifact_hybrid.json"


def measure(args: argparse.Namespace, batched: bool) -> dict[str, object]:
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation import evaluate_graph, load_beir

    dataset = load_beir(args.dataset, args.split)
    doc = load(args.graph)
    outputs = [f"{n}.results" for n in ("bm25", "dense", "fusion") if n in doc.node_ids()]
    evaluated = dataset.evaluated_query_ids()
    with tempfile.TemporaryDirectory(prefix="modrag-bench-batch-") as cache_dir:
        executor = Executor(default_registry(),
                            cache=NodeCache(disk_dir=cache_dir), work_dir=args.data_dir)
        started = time.perf_counter()
        warm = executor.run(doc, {"corpus": str(dataset.corpus_path),
                                  "query": dataset.queries[evaluated[-1]]})
        if not warm.ok:
            raise SystemExit(f"warm-up failed: {[v.error for v in warm.trace.visits if v.error]}")
        warm_s = time.perf_counter() - started
        started = time.perf_counter()
        report = evaluate_graph(doc, dataset, outputs, executor=executor, limit=args.queries,
                                batch_queries=batched)
        seconds = time.perf_counter() - started
    return {"mode": "batched" if batched else "one-by-one", "queries": report.queries,
            "warm_s": round(warm_s, 1), "seconds": round(seconds, 2),
            "per_query_ms": round(1000 * seconds / report.queries, 1),
            "ndcg10": {k: round(v["ndcg@10"], 4) for k, v in report.outputs.items()},
            "top_docs": {k: [r["top_docs"] for r in rows] for k, rows in
                         report.per_query.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--split", default="train")
    parser.add_argument("--graph", default=str(GRAPH))
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir())
                                                   / "modrag-bench-eval" / "docs-all"))
    args = parser.parse_args()
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    rows = [measure(args, batched=False), measure(args, batched=True)]
    print(f"{Path(args.graph).name}, {rows[0]['queries']} {args.split} queries, indexes cached")
    print(f"{'loop':<12}{'warm-up s':>10}{'loop s':>9}{'ms/query':>10}  nDCG@10")
    for r in rows:
        print(f"{r['mode']:<12}{r['warm_s']:>10}{r['seconds']:>9}{r['per_query_ms']:>10}  "
              + json.dumps(r["ndcg10"]))
    same = rows[0]["top_docs"] == rows[1]["top_docs"]
    print(f"speed-up {rows[0]['seconds'] / rows[1]['seconds']:.2f}x; top-10 documents of every "
          f"query identical: {same}")


if __name__ == "__main__":
    main()
