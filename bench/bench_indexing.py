"""Indexing throughput: load -> split -> embed -> Chroma through the engine, against calling
sentence-transformers ``encode`` directly on the same chunk texts.

    .venv/bin/python bench/bench_indexing.py [--limit 1000] [--repeat 2]

Prints both times and their ratio (direct / engine; 1.0 means the engine adds nothing,
the target is at least 0.85). The model is loaded and Chroma imported before timing, so
both sides measure throughput, not start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from modrag_studio.composition import default_registry

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def graph(corpus: Path, chroma: Path, args: argparse.Namespace):
    from modrag_studio.engine.core.document import GraphDocument

    nodes = [
        {"id": "load", "type": "load.files", "params": {"path": str(corpus)}},
        {"id": "split", "type": "split.recursive",
         "params": {"chunk_size": args.chunk_size, "overlap": args.overlap}},
        {"id": "emb", "type": "embed.model", "params": {"batch_size": args.batch_size}},
        {"id": "store", "type": "store.chroma",
         "params": {"path": str(chroma), "collection": "scifact-bench"}},
        {"id": "out", "type": "graph.output", "params": {"name": "index"}},
    ]
    edges = [
        {"from": "load.documents", "to": "split.documents"},
        {"from": "split.chunks", "to": "store.chunks"},
        {"from": "emb.embedder", "to": "store.embedder"},
        {"from": "store.index", "to": "out.value"},
    ]
    return GraphDocument.model_validate(
        {"metadata": {"name": "bench-indexing"}, "nodes": nodes, "edges": edges})


def subset(corpus: Path, limit: int, folder: Path) -> Path:
    """The first ``limit`` documents of the corpus in a file of their own (0: all)."""
    target = folder / "corpus.jsonl"
    with corpus.open(encoding="utf-8") as src, target.open("w", encoding="utf-8") as dst:
        for count, line in enumerate(src):
            if limit and count >= limit:
                break
            dst.write(line)
    return target


def run_engine(corpus: Path, work: Path, args: argparse.Namespace) -> tuple[float, list[str], dict]:
    from modrag_nodes.vectorstore import chroma_store
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.run.executor import Executor

    # A new folder each run: Chroma keeps an open store's data in memory even when its
    # folder is deleted, so reusing the path would find the vectors of the previous run.
    chroma = Path(tempfile.mkdtemp(prefix="chroma-", dir=work))
    chroma_store.forget_clients()
    executor = Executor(default_registry(), cache=NodeCache(), work_dir=work)
    doc = graph(corpus, chroma, args)
    start = time.perf_counter()
    result = executor.run(doc)
    seconds = time.perf_counter() - start
    if not result.ok:
        failed = [v for v in result.trace.visits if v.error]
        raise SystemExit(f"engine run failed: {failed[0].error.message if failed else result}")
    chunks = result.output_of("split", "chunks")
    per_node = {v.node_id: round(v.duration_s, 2) for v in result.trace.visits}
    per_node["store.embed_seconds"] = result.trace.last_visit("store").details["embed_seconds"]
    per_node["vectors"] = result.outputs["index"].count
    return seconds, [c.text for c in chunks], per_node


def run_direct(texts: list[str], batch_size: int) -> float:
    from modrag_nodes.embedding.models import _sentence_transformer
    from modrag_nodes.embedding.spec import EmbedderSpec

    model = _sentence_transformer(EmbedderSpec())
    start = time.perf_counter()
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                           normalize_embeddings=True, show_progress_bar=False)
    seconds = time.perf_counter() - start
    assert vectors.shape[0] == len(texts)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=0, help="first N documents (0: all 5,183)")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--overlap", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each side, alternating which goes first; best of each")
    args = parser.parse_args()
    if not args.corpus.is_file():
        raise SystemExit(f"corpus not found: {args.corpus}")

    import chromadb  # noqa: F401  (import cost is start-up, not throughput)

    from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts

    with tempfile.TemporaryDirectory(prefix="modrag-bench-") as tmp:
        folder = Path(tmp)
        corpus = subset(args.corpus, args.limit, folder)
        # Load the model and warm its kernels on real text lengths, for both sides.
        with corpus.open(encoding="utf-8") as fh:
            lines = [line for _, line in zip(range(64), fh, strict=False)]
        sample = [json.loads(line).get("text", "")[:1000] for line in lines]
        embed_texts(EmbedderSpec(), sample)
        engine_times, direct_times = [], []
        seconds, texts, per_node = run_engine(corpus, folder, args)
        engine_times.append(seconds)
        direct_times.append(run_direct(texts, args.batch_size))
        for _ in range(args.repeat - 1):  # then direct first, so load drift hits both sides
            direct_times.append(run_direct(texts, args.batch_size))
            seconds, texts, per_node = run_engine(corpus, folder, args)
            engine_times.append(seconds)
    engine, direct = min(engine_times), min(direct_times)
    docs = args.limit or sum(1 for _ in args.corpus.open(encoding="utf-8"))
    print(f"corpus: {args.corpus} ({docs} documents, {len(texts)} chunks, "
          f"split.recursive {args.chunk_size}/{args.overlap}, batch {args.batch_size})")
    print(f"engine load->split->embed->chroma: {engine:.2f} s "
          f"({len(texts) / engine:.1f} chunks/s)  runs: {[round(t, 2) for t in engine_times]}")
    print(f"  per node (last run, s): {per_node}")
    print(f"direct SentenceTransformer.encode: {direct:.2f} s "
          f"({len(texts) / direct:.1f} chunks/s)  runs: {[round(t, 2) for t in direct_times]}")
    print(f"throughput ratio engine/direct: {direct / engine:.3f} (target >= 0.85)")


if __name__ == "__main__":
    main()
