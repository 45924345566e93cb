"""Per-query cost of the ``modrag eval`` loop: a graph run per query with the indexes cached.

The loop is ``evaluate_graph`` itself (only the query-side nodes execute, the indexing nodes
come from the cache). After each query its progress callback does the same retrieval by hand
(query embedding, one Chroma query, one BM25 search on the very same index objects), timed
apart. Engine and raw calls alternate query by query, so machine load hits both alike; the
ratio "engine / raw" is what the executor and the nodes add (copies, cache keys, cache
writes, store checks, scoring).

The whole evaluation against its floor: ``--rounds`` times, the evaluation (no callback: the
raw calls above are not its work) and then a hand-written batched loop on the same index
objects doing the same work (all query vectors in one call, Chroma in batches, BM25, RRF, and
each scored output's document ranking scored with the same metrics). Before each round the
per-query results are dropped from memory and the indexes put back by one untimed run, so
every round scores the queries cold with the indexes loaded. The ratio of the medians is
the "per query against the floor" figure; the per-query columns of the interleaved loop
exclude the batched work done before the first query.

``--baseline REV`` also runs the loop on the code of git revision REV (a temporary export of
it), in its own process, with the same data, queries and Chroma folder: before and after
side by side.

Run: .venv/bin/python bench/bench_eval_loop.py [--queries 30] [--docs 0] [--rounds 3]
     [--baseline REV]
The first run embeds the corpus into a Chroma folder under --data-dir (all 5,183 SciFact
abstracts take minutes to tens of minutes on two cores; --docs 500 is quicker); later runs
reuse it. The node result cache is a fresh temporary folder per run, so no query is cached.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "data" / "scifact"
GRAPH = ROOT / "sample_graphs" / "scifact_hybrid.json"


def dataset_dir(dataset: Path, docs: int, data_dir: Path) -> Path:
    """The dataset folder: the given one, or a copy holding only its first ``docs`` abstracts."""
    if not docs:
        return dataset
    target = data_dir / "dataset"
    if not (target / "corpus.jsonl").exists():
        (target / "qrels").mkdir(parents=True, exist_ok=True)
        with (dataset / "corpus.jsonl").open(encoding="utf-8") as src:
            lines = [line for _, line in zip(range(docs), src, strict=False)]
        (target / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
        (target / "queries.jsonl").write_bytes((dataset / "queries.jsonl").read_bytes())
        for qrels in (dataset / "qrels").glob("*.tsv"):
            (target / "qrels" / qrels.name).write_bytes(qrels.read_bytes())
    return target


def measure(args: argparse.Namespace) -> dict[str, object]:
    """Run the loop in this process (on whatever code ``modrag_studio`` imports from)."""
    import modrag_studio
    from modrag_nodes.embedding.spec import embed_texts
    from modrag_nodes.vectorstore import chroma_store
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation import evaluate_graph, load_beir

    data_dir = Path(args.data_dir) / f"docs-{args.docs or 'all'}"
    data_dir.mkdir(parents=True, exist_ok=True)
    dataset = load_beir(dataset_dir(Path(args.dataset), args.docs, data_dir), args.split)
    doc = load(args.graph)
    query_ids = dataset.evaluated_query_ids()[: args.queries]
    outputs = [f"{n}.results" for n in ("bm25", "dense", "fusion") if n in doc.node_ids()]
    top_k = {n.id: int(n.params.get("top_k", 10)) for n in doc.nodes}
    with tempfile.TemporaryDirectory(prefix="modrag-bench-cache-") as cache_dir:
        executor = Executor(default_registry(),
                            cache=NodeCache(disk_dir=cache_dir), work_dir=data_dir)
        warm_inputs = {"corpus": str(dataset.corpus_path),  # a query outside the measured
                       "query": dataset.queries[dataset.evaluated_query_ids()[-1]]}  # ones
        started = time.perf_counter()
        warm = executor.run(doc, warm_inputs)  # builds the indexes
        warm_s = time.perf_counter() - started
        if not warm.ok:
            failed = [f"{v.node_id}: {v.error.message}" for v in warm.trace.visits if v.error]
            raise SystemExit(f"warm-up run failed: {failed}")
        bm25_index = warm.output_of("bm25_index", "index") if "bm25" in top_k else None
        vector_index = warm.output_of("store", "index") if "dense" in top_k else None
        collection = None if vector_index is None else chroma_store.get_collection(
            chroma_store.client_for(vector_index), vector_index.collection)
        marks: list[tuple[float, float]] = []

        def raw_query(done: int, total: int) -> None:
            """After each engine query: the same retrieval by hand, timed on its own."""
            entered = time.perf_counter()
            text = dataset.queries[query_ids[done - 1]]
            if vector_index is not None:
                vectors = embed_texts(vector_index.embedder, [text], role="query")
                collection.query(query_embeddings=vectors, n_results=top_k["dense"],
                                 include=["documents", "metadatas", "distances"])
            if bm25_index is not None:
                bm25_index.search(text, top_k["bm25"])
            marks.append((entered, time.perf_counter()))

        texts = [dataset.queries[q] for q in query_ids]
        qrels = [dataset.qrels[q] for q in query_ids]
        engine_totals, floor_totals = [], []
        for _ in range(args.rounds):
            executor.cache.clear_memory()  # the queries' results go; one run puts the
            executor.run(doc, warm_inputs)  # indexes back in memory (untimed)
            started = time.perf_counter()
            report = evaluate_graph(doc, dataset, outputs, executor=executor,
                                    limit=args.queries)
            engine_totals.append(time.perf_counter() - started)
            floor_total, floor_top, floor_ndcg = batched_floor(
                texts, qrels, vector_index, collection, bm25_index, top_k)
            floor_totals.append(floor_total)
        same_top = sum(row["top_docs"][:10] == top
                       for row, top in zip(report.per_query.get("fusion.results", []),
                                           floor_top, strict=False))
        same_ndcg = all(abs(report.outputs[f"{name}.results"]["ndcg@10"] - value) < 1e-9
                        for name, value in floor_ndcg.items())
        executor.cache.clear_memory()
        executor.run(doc, warm_inputs)
        started = time.perf_counter()  # interleaved: engine query, then the same by hand
        evaluate_graph(doc, dataset, outputs, executor=executor, limit=args.queries,
                       on_progress=raw_query)
    engine = [entered - (marks[i - 1][1] if i else started)
              for i, (entered, _) in enumerate(marks)]
    raw = [left - entered for entered, left in marks]
    return {
        "code": str(Path(modrag_studio.__file__).parent.parent),
        "queries": len(engine), "warm_s": warm_s,
        "engine_mean": statistics.mean(engine), "engine_median": statistics.median(engine),
        "raw_mean": statistics.mean(raw), "raw_median": statistics.median(raw),
        "ndcg10": {spec: round(v["ndcg@10"], 4) for spec, v in report.outputs.items()},
        "engine_total": statistics.median(engine_totals),
        "floor_total": statistics.median(floor_totals),
        "engine_rounds": engine_totals, "floor_rounds": floor_totals,
        "same_top10": same_top, "same_ndcg": same_ndcg,
    }


def batched_floor(texts: list[str], qrels: list[dict[str, int]], vector_index, collection,
                  bm25_index, top_k: dict[str, int]
                  ) -> tuple[float, list[list[str]], dict[str, float]]:
    """The hand-written batched loop on the same index objects, doing the evaluation's work:
    all query vectors in one ``embed`` call, Chroma in batches, BM25 per query, RRF (k=60) in
    plain Python, each list's documents ranked by their best chunk and scored with the
    evaluation's metrics (nDCG@10, recall, hit, MRR). Returns the seconds it took, each
    query's fused top 10 docs and the mean nDCG@10 of each list."""
    from modrag_nodes.embedding.spec import embed_texts
    from modrag_studio.evaluation.metrics import score_ranking

    started = time.perf_counter()
    vectors = embed_texts(vector_index.embedder, texts, role="query")
    dense: list[list[tuple[str, str]]] = []
    for start in range(0, len(texts), 100):
        found = collection.query(query_embeddings=vectors[start:start + 100],
                                 n_results=top_k["dense"], include=["metadatas"])
        dense.extend([(cid, str((meta or {}).get("doc_id", cid.split("#")[0])))
                      for cid, meta in zip(ids, metas, strict=True)]
                     for ids, metas in zip(found["ids"], found["metadatas"], strict=True))
    chunks = bm25_index.chunks
    tops = []
    ndcg = {"bm25": 0.0, "dense": 0.0, "fusion": 0.0}
    for number, (text, dense_hits) in enumerate(zip(texts, dense, strict=True)):
        sparse = [(chunks[i].chunk_id, chunks[i].doc_id)
                  for i, score in bm25_index.search(text, top_k["bm25"]) if score > 0]
        fused: dict[str, float] = {}
        doc_of: dict[str, str] = {}
        for ranking in (sparse, dense_hits):
            for rank, (chunk_id, doc_id) in enumerate(ranking, start=1):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (60 + rank)
                doc_of[chunk_id] = doc_id
        fused_docs = [doc_of[c] for c in sorted(fused, key=lambda c: -fused[c])]
        for name, docs in (("bm25", [d for _, d in sparse]), ("dense", [d for _, d in dense_hits]),
                           ("fusion", fused_docs)):
            ranked = list(dict.fromkeys(docs))
            ndcg[name] += score_ranking(str(number), ranked, qrels[number]).values["ndcg@10"]
            if name == "fusion":
                tops.append(ranked[:10])
    return (time.perf_counter() - started, tops,
            {name: total / max(1, len(texts)) for name, total in ndcg.items()})


def export(revision: str, folder: Path) -> Path:
    """The tree of ``revision`` in ``folder``, importable as ``modrag_studio``/``modrag_nodes``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "modrag_nodes").symlink_to("nodes")
    return folder


def run_child(args: argparse.Namespace, tree: Path) -> dict[str, object]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child",
               "--queries", str(args.queries), "--docs", str(args.docs),
               "--rounds", str(args.rounds), "--split",
               str(args.split), "--graph", str(Path(args.graph).resolve()),
               "--dataset", str(Path(args.dataset).resolve()), "--data-dir",
               str(Path(args.data_dir).resolve())]
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"run on {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--split", default="train", help="qrels split (default: train)")
    parser.add_argument("--docs", type=int, default=0, help="first N abstracts (0: all)")
    parser.add_argument("--graph", default=str(GRAPH))
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir())
                                                   / "modrag-bench-eval"))
    parser.add_argument("--rounds", type=int, default=3,
                        help="evaluation / floor pairs timed (default 3; medians reported)")
    parser.add_argument("--baseline", metavar="REV", help="also measure git revision REV")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args)))
        return
    rows: list[tuple[str, dict[str, object]]] = []
    with tempfile.TemporaryDirectory(prefix="modrag-bench-base-") as base:
        if args.baseline:
            rows.append((f"before ({args.baseline})", run_child(args, export(args.baseline,
                                                                             Path(base)))))
        rows.append(("now (working tree)", run_child(args, ROOT)))
    print(f"{Path(args.graph).name}: {rows[0][1]['queries']} queries, corpus "
          f"{'all' if not args.docs else args.docs} docs; seconds per query")
    print(f"{'code':<26}{'warm-up':>9}{'engine':>9}{'median':>9}{'raw':>9}{'median':>9}"
          f"{'engine/raw':>12}  nDCG@10")
    for name, r in rows:
        print(f"{name:<26}{r['warm_s']:>9.1f}{r['engine_mean']:>9.3f}{r['engine_median']:>9.3f}"
              f"{r['raw_mean']:>9.3f}{r['raw_median']:>9.3f}"
              f"{r['engine_mean'] / r['raw_mean']:>12.2f}  "
              + ", ".join(f"{k.split('.')[0]} {v:.4f}" for k, v in r["ndcg10"].items()))
    for name, r in rows:
        if r.get("floor_total"):
            n = r["queries"]
            print(f"{name}: whole evaluation {r['engine_total'] / n * 1000:.1f} ms a query "
                  f"(batched query side included; median of {len(r['engine_rounds'])} "
                  f"rounds) against the hand-written batched loop's "
                  f"{r['floor_total'] / n * 1000:.1f} ms: "
                  f"{r['engine_total'] / r['floor_total']:.2f}x; same fused top 10 for "
                  f"{r['same_top10']} of {n} queries; same mean nDCG@10 per list: "
                  f"{'yes' if r.get('same_ndcg') else 'NO'}")
            pairs = list(zip(r["engine_rounds"], r["floor_rounds"], strict=True))
            print("  rounds (evaluation / floor, s): "
                  + ", ".join(f"{e:.2f}/{f:.2f}" for e, f in pairs)
                  + f"; median of the rounds' ratios "
                  f"{statistics.median(e / f for e, f in pairs):.2f}x")
    if len(rows) == 2:
        before, after = rows[0][1], rows[1][1]
        print(f"engine per query, before / after: "
              f"{before['engine_mean'] / after['engine_mean']:.2f}x (mean), "
              f"{before['engine_median'] / after['engine_median']:.2f}x (median)")


if __name__ == "__main__":
    main()
