"""Peak memory of indexing 100,000 chunks through the engine, next to the raw data size.

    .venv/bin/python bench/bench_memory.py [--chunks 100000]            # load, split, BM25
    .venv/bin/python bench/bench_memory.py --dense --chunks 5000         # + embed + Chroma

A synthetic corpus (``corpus.jsonl``, BEIR layout) is written to a temporary folder and run
through ``load.files -> split.recursive -> bm25.index -> retrieve.bm25`` (with ``--dense``:
``embed.model -> store.chroma -> retrieve.vector`` as well) by the executor with its disk
cache on. Peak RSS comes from ``getrusage``; the baseline is the RSS after imports and a
tiny warm-up run, so the growth is what the corpus costs.

The stated bound (exit code 1 when exceeded): peak RSS growth at most ``--bound`` (35) times the
raw corpus size plus a fixed allowance: 50 MB, or 250 MB with ``--dense`` (the torch and
Chroma working buffers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

_TEXT = ("pump valve bearing spindle coolant filter motor sensor shaft gear belt seal inspect "
         "replace lubricate calibrate torque pressure vibration interval schedule quarterly "
         "monthly operator engineer report warranty supplier contract invoice server backup "
         "network ticket incident policy training mentor review budget audit safety")
WORDS = _TEXT.split(" ")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def write_corpus(path: Path, chunks: int, chunk_chars: int, seed: int = 1) -> int:
    """Documents of 5 paragraphs, each paragraph about one chunk long; returns bytes."""
    rng = random.Random(seed)
    docs = -(-chunks // 5)
    with path.open("w", encoding="utf-8") as fh:
        for d in range(docs):
            paragraphs = []
            for _ in range(5):
                words: list[str] = []
                while sum(len(w) + 1 for w in words) < chunk_chars - 40:
                    words.append(rng.choice(WORDS))
                paragraphs.append(" ".join(words).capitalize() + ".")
            fh.write(json.dumps({"_id": f"d{d}", "title": f"Document {d}",
                                 "text": "\n\n".join(paragraphs)}) + "\n")
    return path.stat().st_size


def graph(corpus: Path, chroma: Path, dense: bool, chunk_chars: int):
    from modrag_studio.engine.core.document import GraphDocument

    nodes = [
        {"id": "q", "type": "graph.input", "params": {"name": "question"}},
        {"id": "load", "type": "load.files", "params": {"path": str(corpus)}},
        {"id": "split", "type": "split.recursive",
         "params": {"chunk_size": chunk_chars, "overlap": 0}},
        {"id": "index", "type": "bm25.index", "params": {"engine": "fast"}},
        {"id": "search", "type": "retrieve.bm25", "params": {"top_k": 10}},
        {"id": "out", "type": "graph.output", "params": {"name": "results"}},
        {"id": "count", "type": "graph.output", "params": {"name": "chunks"}},
    ]
    edges = [
        {"from": "load.documents", "to": "split.documents"},
        {"from": "split.chunks", "to": "index.chunks"},
        {"from": "index.index", "to": "search.index"},
        {"from": "q.value", "to": "search.query"},
        {"from": "search.results", "to": "out.value"},
        {"from": "split.chunks", "to": "count.value"},
    ]
    if dense:
        nodes += [
            {"id": "emb", "type": "embed.model", "params": {"batch_size": 64}},
            {"id": "store", "type": "store.chroma",
             "params": {"path": str(chroma), "collection": "memory-bench"}},
            {"id": "vector", "type": "retrieve.vector", "params": {"top_k": 10}},
            {"id": "dense_out", "type": "graph.output", "params": {"name": "dense"}},
        ]
        edges += [
            {"from": "split.chunks", "to": "store.chunks"},
            {"from": "emb.embedder", "to": "store.embedder"},
            {"from": "store.index", "to": "vector.index"},
            {"from": "emb.embedder", "to": "vector.embedder"},
            {"from": "q.value", "to": "vector.query"},
            {"from": "vector.results", "to": "dense_out.value"},
        ]
    return GraphDocument.model_validate({"metadata": {"name": "memory-bench"},
                                         "nodes": nodes, "edges": edges})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--chunk-chars", type=int, default=300)
    parser.add_argument("--dense", action="store_true", help="also embed and store in Chroma")
    parser.add_argument("--bound", type=float, default=35.0,
                        help="allowed peak growth, in multiples of the raw corpus size")
    args = parser.parse_args()

    from modrag_studio.engine import Executor, NodeCache

    with tempfile.TemporaryDirectory(prefix="modrag-membench-") as tmp:
        work = Path(tmp)
        os.environ["MODRAG_CACHE_DIR"] = str(work / "cache")
        os.environ["MODRAG_DATA_DIR"] = str(work / "data")
        warm = work / "warm.jsonl"
        write_corpus(warm, 50, args.chunk_chars, seed=2)
        executor = Executor(default_registry(), cache=NodeCache(work / "cache"))
        warm_run = executor.run(graph(warm, work / "chroma-warm", args.dense, args.chunk_chars),
                                {"question": "pump interval"})
        assert warm_run.ok, [v.error for v in warm_run.trace.visits if v.error]
        executor.cache.clear_memory()
        corpus = work / "corpus.jsonl"
        raw_bytes = write_corpus(corpus, args.chunks, args.chunk_chars)
        raw_mb = raw_bytes / 2**20
        baseline = current_rss_mb()
        start = time.perf_counter()
        result = executor.run(graph(corpus, work / "chroma", args.dense, args.chunk_chars),
                              {"question": "how often is the pump lubricated"})
        seconds = time.perf_counter() - start
        if not result.ok:
            print("run failed:", [v.error for v in result.trace.visits if v.error])
            return 2
        peak = peak_rss_mb()
        chunks = len(result.outputs["chunks"])
        cache_mb = sum(p.stat().st_size for p in (work / "cache").rglob("*.pkl")) / 2**20

    growth = peak - baseline
    fixed = 250.0 if args.dense else 50.0
    allowed = args.bound * raw_mb + fixed
    mode = "BM25 + embeddings + Chroma" if args.dense else "BM25"
    print(f"mode: {mode}; chunks indexed: {chunks:,} in {seconds:.1f} s")
    print(f"raw corpus: {raw_mb:.1f} MB ({raw_bytes:,} bytes); disk cache written: "
          f"{cache_mb:.1f} MB")
    print(f"RSS after imports and warm-up: {baseline:.0f} MB; peak RSS: {peak:.0f} MB; "
          f"growth: {growth:.0f} MB = {growth / raw_mb:.1f} x raw corpus")
    print(f"bound: growth <= {args.bound:g} x raw + {fixed:.0f} MB = {allowed:.0f} MB -> "
          f"{'within' if growth <= allowed else 'EXCEEDED'}")
    return 0 if growth <= allowed else 1


if __name__ == "__main__":
    sys.exit(main())
