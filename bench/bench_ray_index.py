"""Indexing and evaluating a SciFact subset locally vs on Ray (1 and 2 embedding actors).

    nice -n 10 .venv/bin/python bench/bench_ray_index.py [--data ../shared/data/scifact]
        [--docs 1000] [--queries 100] [--address HOST:PORT] [--out bench-ray.json]

Without --address a head node is started on 127.0.0.1 (free ports) and stopped at the end.
Prints, as JSON: local and Ray indexing time and rows/s per embedding-actor count (same
graph: recursive split 1000/100, all-MiniLM-L6-v2, a Chroma folder, BM25), Ray's overhead
per block (a BM25-only pipeline on Ray minus the same work in one process, per read block),
and evaluation queries/s with and without Ray (2 actors).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parent.parent


def subset(data: Path, docs: int, folder: Path) -> Path:
    """The first ``docs`` documents, the queries whose relevant documents are all among them."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:docs]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept = {json.loads(line)["_id"] for line in lines}
    (folder / "qrels").mkdir(exist_ok=True)
    rows = (data / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()
    good = [r for r in rows[1:] if r.split("\t")[1] in kept]
    (folder / "qrels" / "train.tsv").write_text("\n".join([rows[0], *good]) + "\n",
                                                encoding="utf-8")
    (folder / "queries.jsonl").write_bytes((data / "queries.jsonl").read_bytes())
    return folder


def graph(store_path: Path | None) -> dict:
    nodes = [
        {"id": "corpus", "type": "graph.input", "params": {"name": "corpus"}},
        {"id": "query", "type": "graph.input", "params": {"name": "query"}},
        {"id": "load", "type": "load.files", "params": {}},
        {"id": "split", "type": "split.recursive", "params": {"chunk_size": 1000,
                                                              "overlap": 100}},
        {"id": "bm25_index", "type": "bm25.index",
         "params": {"stopwords": "english", "stemmer": "english"}},
        {"id": "bm25", "type": "retrieve.bm25", "params": {"top_k": 100}},
    ]
    edges = [{"from": "corpus.value", "to": "load.path"},
             {"from": "load.documents", "to": "split.documents"},
             {"from": "split.chunks", "to": "bm25_index.chunks"},
             {"from": "bm25_index.index", "to": "bm25.index"},
             {"from": "query.value", "to": "bm25.query"}]
    if store_path is not None:
        nodes += [{"id": "embedder", "type": "embed.model", "params": {}},
                  {"id": "store", "type": "store.chroma",
                   "params": {"path": str(store_path), "collection": "scifact-bench"}},
                  {"id": "dense", "type": "retrieve.vector", "params": {"top_k": 100}}]
        edges += [{"from": "split.chunks", "to": "store.chunks"},
                  {"from": "embedder.embedder", "to": "store.embedder"},
                  {"from": "store.index", "to": "dense.index"},
                  {"from": "embedder.embedder", "to": "dense.embedder"},
                  {"from": "query.value", "to": "dense.query"}]
    return {"schema_version": 1, "metadata": {"name": "bench_ray"}, "nodes": nodes,
            "edges": edges}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--address", help="a running Ray cluster (default: start one here)")
    parser.add_argument("--actors", default="1,2", help="embedding actor counts to run")
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "token")

    from modrag_nodes.vectorstore import chroma_store
    from modrag_studio.distributed.plan import embedder_of_plan, index_locally, ingest_plan
    from modrag_studio.distributed.ray_eval import evaluate_on_ray
    from modrag_studio.distributed.ray_index import RayIndexOptions, index_on_ray
    from modrag_studio.distributed.session import ray_session
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import from_json_dict
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation import evaluate_graph, load_beir

    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    data = subset(Path(args.data), args.docs, work / "data")
    corpus = data / "corpus.jsonl"
    figures: dict = {"docs": args.docs}

    def local_run(doc_json: dict) -> tuple[float, int]:
        doc = from_json_dict(doc_json)
        started = time.perf_counter()
        results = index_locally(doc, ingest_plan(doc), {"corpus": str(corpus)},
                                Executor(default_registry(),
                                         cache=NodeCache(), work_dir=work / "w"))
        assert all(r.ok for r in results.values())
        chunks = next(iter(results.values())).output_of("split", "chunks")
        return time.perf_counter() - started, len(chunks)

    seconds, chunks = local_run(graph(work / "chroma-local"))
    figures["chunks"] = chunks
    figures["local_index_s"] = round(seconds, 1)
    figures["local_rows_per_s"] = round(chunks / seconds, 1)
    bm25_local_s, _ = local_run(graph(None))
    figures["local_bm25_only_s"] = round(bm25_local_s, 2)

    address = args.address or "local"
    with ray_session(address):
        for actors in [int(a) for a in args.actors.split(",")]:
            chroma_store.forget_clients()
            doc = from_json_dict(graph(work / f"chroma-ray{actors}"))
            plan = ingest_plan(doc)
            summary = index_on_ray(plan, corpus, embedder_of_plan(doc, plan, {}),
                                   RayIndexOptions(embed_actors=actors, block_lines=100))
            figures[f"ray_{actors}_actors_index_s"] = round(summary.seconds, 1)
            figures[f"ray_{actors}_actors_rows_per_s"] = round(summary.chunks / summary.seconds,
                                                               1)
            figures[f"ray_{actors}_actors_stages"] = summary.stages
        doc = from_json_dict(graph(None))
        summary = index_on_ray(ingest_plan(doc), corpus, None,
                               RayIndexOptions(block_lines=100))
        blocks = summary.stages.get("read", [1])[0]
        figures["ray_bm25_only_s"] = round(summary.seconds, 2)
        figures["ray_overhead_per_block_s"] = round((summary.seconds - bm25_local_s) / blocks, 3)

        dataset = load_beir(data, "train")
        doc = from_json_dict(graph(work / "chroma-local"))
        outputs = ["bm25.results", "dense.results"]
        executor = Executor(default_registry(),
                            cache=NodeCache(disk_dir=work / "cache"), work_dir=work / "w")
        evaluate_graph(doc, dataset, outputs, executor=executor, limit=1)  # warm the cache
        local = evaluate_graph(doc, dataset, outputs, executor=executor, limit=args.queries)
        remote = evaluate_on_ray(address, doc, dataset, outputs, executor=executor, actors=2,
                                 limit=args.queries)
        figures["eval_queries"] = local.queries
        figures["eval_local_q_per_s"] = round(local.queries / local.seconds, 1)
        figures["eval_ray_2_actors_q_per_s"] = round(remote.queries / remote.seconds, 1)
        figures["eval_same_metrics"] = local.outputs == remote.outputs
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
