"""The same SciFact evaluation with the dense index in Chroma and in LanceDB, side by side.

The graph is ``sample_graphs/scifact_dense.json`` (MiniLM, top 200, cosine) with the corpus
embedded once by an ``embed.chunks`` node feeding the store's ``embedded`` input, so both
stores index the very same vectors; the LanceDB run is the graph's ``lancedb`` variant (the
store swapped for ``store.lancedb``, params kept). For each store, in a fresh folder:

- index: the store node's time to write every vector into an empty collection (the embedding,
  shared, is reported once);
- re-sync: the store node again with nothing changed (reads the stored state, writes nothing);
- eval: ``evaluate_graph`` over the split's queries as ``modrag eval`` runs it (query vectors
  and searches batched ahead), nDCG@10 and wall time per query;
- single query: ``retrieve.vector`` run alone per query (no batching), the median of
  ``--single`` queries: the latency a served request sees.

Run: .venv/bin/python bench/bench_store_lancedb_vs_chroma.py [--split train] [--docs 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_eval_loop import DATASET, dataset_dir  # noqa: E402

GRAPH = ROOT / "sample_graphs" / "scifact_dense.json"
STORES = {"chroma": None, "lancedb": "lancedb"}  # store -> the graph's variant


def embedded_graph(variant: str | None):
    """scifact_dense (or its variant) with the corpus embedded once before the store."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import GraphDocument
    from modrag_studio.engine.edit.variants import apply_variant

    data = json.loads(GRAPH.read_text(encoding="utf-8"))
    data["nodes"].append({"id": "embed", "type": "embed.chunks"})
    data["edges"] = [e for e in data["edges"] if e["to"] not in ("store.chunks",
                                                                 "store.embedder")]
    data["edges"] += [{"from": "split.chunks", "to": "embed.chunks"},
                      {"from": "embedder.embedder", "to": "embed.embedder"},
                      {"from": "embed.embedded", "to": "store.embedded"}]
    doc = GraphDocument.model_validate(data)
    return apply_variant(doc, variant, default_registry()) if variant else doc


def seconds_of(result, node_id: str) -> float:
    return sum(v.duration_s for v in result.trace.visits if v.node_id == node_id
               and not v.cached)


def measure(store: str, variant: str | None, dataset, cache, work: Path, args) -> dict:
    from modrag_nodes.vectorstore import handles
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation import evaluate_graph

    doc = embedded_graph(variant)
    executor = Executor(default_registry(), cache=cache, work_dir=work)
    inputs = {"corpus": str(dataset.corpus_path),
              "query": dataset.queries[dataset.evaluated_query_ids()[0]]}
    first = executor.run(doc, inputs, target="store")
    if not first.ok:
        raise SystemExit(f"{store}: indexing failed: "
                         + "; ".join(v.error.message for v in first.trace.visits if v.error))
    index = first.output_of("store", "index")
    again = executor.run(doc, inputs, target="store", rerun=["store"])
    handles.forget()  # the evaluation opens the store from disk
    started = time.perf_counter()
    report = evaluate_graph(doc, dataset, ["dense.results"], executor=executor,
                            limit=args.queries or None)
    eval_s = time.perf_counter() - started
    single = []
    for query_id in dataset.evaluated_query_ids()[:args.single]:
        run = executor.run(doc, {**inputs, "query": dataset.queries[query_id]},
                           target="dense", rerun=["dense"])
        single.append(seconds_of(run, "dense"))
    size = sum(p.stat().st_size for p in Path(index.path).rglob("*") if p.is_file())
    return {"store": store, "count": index.count, "embed_s": seconds_of(first, "embed"),
            "index_s": seconds_of(first, "store"), "resync_s": seconds_of(again, "store"),
            "ndcg10": report.outputs["dense.results"]["ndcg@10"],
            "recall100": report.outputs["dense.results"].get("recall@100"),
            "queries": report.queries, "eval_s": eval_s,
            "per_query_ms": 1000 * eval_s / max(1, report.queries),
            "single_ms": 1000 * statistics.median(single) if single else None,
            "disk_mb": size / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="train", help="qrels split (default: train)")
    parser.add_argument("--docs", type=int, default=0, help="first N abstracts (0: all)")
    parser.add_argument("--queries", type=int, default=0, help="first N queries (0: all)")
    parser.add_argument("--single", type=int, default=50,
                        help="queries timed one by one without batching (default 50)")
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args()

    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.evaluation import load_beir

    with tempfile.TemporaryDirectory(prefix="modrag-bench-stores-") as tmp:
        base = Path(tmp)
        dataset = load_beir(dataset_dir(Path(args.dataset), args.docs, base), args.split)
        cache = NodeCache()  # shared: the corpus is loaded, split and embedded once
        rows = [measure(store, variant, dataset, cache, base / store, args)
                for store, variant in STORES.items()]
    embed_s = max(r["embed_s"] for r in rows)
    print(f"SciFact {args.split}: {rows[0]['count']} chunks, {rows[0]['queries']} queries; "
          f"corpus embedded once in {embed_s:.1f} s (MiniLM, shared by both stores)")
    header = ("store", "nDCG@10", "recall@100", "index s", "re-sync s", "eval ms/query",
              "single query ms", "disk MB")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in rows:
        recall = f"{r['recall100']:.4f}" if r["recall100"] is not None else "-"
        single = f"{r['single_ms']:.1f}" if r["single_ms"] is not None else "-"
        print(f"{r['store']} | {r['ndcg10']:.4f} | {recall} | {r['index_s']:.2f} | "
              f"{r['resync_s']:.2f} | {r['per_query_ms']:.1f} | {single} | "
              f"{r['disk_mb']:.1f}")
    gap = abs(rows[0]["ndcg10"] - rows[1]["ndcg10"])
    print(f"nDCG@10 gap: {gap:.4f} ({'within' if gap <= 0.005 else 'NOT within'} 0.005)")
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
