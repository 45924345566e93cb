"""Loading and chunking throughput on the shared corpora, every splitter side by side.

    .venv/bin/python bench/bench_ingest.py [--data ../shared/data] [--repeat 1]

Prints, per corpus (SciFact corpus.jsonl, the Python tutorial HTML, the Chinese Debian HTML
and PDF), the load time and, for each split strategy and smart ingest, chunks, seconds,
MB/s and the ratio of its time to the fixed-size splitter's (the cheapest baseline).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from modrag_nodes.ingest.loaders import LoadParams, load_documents
from modrag_nodes.ingest.smart_ingest import SmartParams, smart_ingest
from modrag_nodes.ingest.splitters import (
    split_fixed,
    split_markdown,
    split_recursive,
    split_sentences,
)
from modrag_studio.engine.core.datatypes import Chunk, Document

ROOT = Path(__file__).resolve().parent.parent
CORPORA = {"scifact": "scifact/corpus.jsonl", "python-tutorial": "corpora/python-tutorial",
           "debian-zh": "corpora/debian-zh"}
SPLITTERS: dict[str, Callable[[Document], list[Chunk]]] = {
    "fixed": lambda d: split_fixed(d, 1000, 100),
    "recursive": lambda d: split_recursive(d, 1000, 100),
    "sentence": lambda d: split_sentences(d, 1000, 1),
    "markdown": lambda d: split_markdown(d, 1000, 100),
}


def timed(work: Callable[[], int], repeat: int) -> tuple[int, float]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = work()
        best = min(best, time.perf_counter() - start)
    return count, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs")
    args = parser.parse_args()
    for name, rel in CORPORA.items():
        path = args.data / rel
        if not path.exists():
            print(f"{name}: {path} not found, skipped")
            continue
        start = time.perf_counter()
        docs, report = load_documents(path, LoadParams())
        load_s = time.perf_counter() - start
        megabytes = sum(len(d.text.encode("utf-8")) for d in docs) / 1e6
        print(f"\n{name}: {report.files_loaded} files, {len(docs)} documents, "
              f"{megabytes:.2f} MB text, loaded in {load_s:.2f} s")
        base: float | None = None
        rows = [(k, lambda f=f, docs=docs: sum(len(f(d)) for d in docs))
                for k, f in SPLITTERS.items()]
        rows.append(("smart", lambda docs=docs: len(smart_ingest(docs, SmartParams())[0])))
        for label, work in rows:
            count, seconds = timed(work, args.repeat)
            base = base or seconds
            print(f"  {label:<10} {count:>7} chunks {seconds:7.2f} s "
                  f"{megabytes / seconds:7.2f} MB/s  x{seconds / base:5.2f} of fixed")


if __name__ == "__main__":
    main()
