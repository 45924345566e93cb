"""Peak memory of loading and splitting a corpus of three large text files.

    .venv/bin/python bench/bench_corpus_memory.py [--mb 20] [--shapes markdown,lines,one-line]
    .venv/bin/python bench/bench_corpus_memory.py --child DIR --splitter split.recursive

Three files of ``--mb`` MB each are written to a temporary folder in one of three shapes:
``markdown`` (a heading every few paragraphs), ``lines`` (one short sentence a line, no
blank line: the shape of the attack's 59 MB files) and ``one-line`` (words with no line break
or sentence end: every piece a splitter cuts is a word). Each (shape, splitter) pair runs
``load.files -> split.*`` through the executor with its disk cache on, in a child process of
its own; the child reports its RSS after imports and a warm-up run (the baseline) and its
peak RSS from then on (``VmHWM`` reset through ``clear_refs``), so the growth is what the
corpus costs, and nothing another run left behind counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("markdown", "lines", "one-line")
SPLITTERS = ("split.markdown", "split.recursive")
WORDS = ["pump", "valve", "bearing", "spindle", "coolant", "filter", "motor", "sensor",
         "shaft", "gear", "belt", "seal", "inspect", "replace", "lubricate", "calibrate",
         "torque", "pressure", "vibration", "interval"]


def write_corpus(folder: Path, shape: str, megabytes: float, files: int = 3) -> int:
    """``files`` files of ``megabytes`` MB each in ``shape``; returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    target = int(megabytes * (1 << 20))
    for number in range(files):
        rng = random.Random(number)
        suffix = ".md" if shape == "markdown" else ".txt"
        with open(folder / f"part{number}{suffix}", "w", encoding="utf-8") as out:
            out.write(_text(shape, target, rng))
    return sum(path.stat().st_size for path in folder.iterdir())


def _text(shape: str, size: int, rng: random.Random) -> str:
    if shape == "lines":
        line = "The pump is serviced every 500 hours.\n"
        return line * (size // len(line))
    if shape == "one-line":
        words = " ".join(rng.choice(WORDS) for _ in range(4096)) + " "
        return (words * (size // len(words) + 1))[:size]
    parts: list[str] = []
    written = 0
    section = 0
    while written < size:
        section += 1
        block = [f"{'#' if section % 5 == 1 else '##'} Section {section}\n\n"]
        for _ in range(3):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
            block.append(words.capitalize() + ".\n\n")
        text = "".join(block)
        parts.append(text)
        written += len(text)
    return "".join(parts)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def reset_peak() -> bool:
    """Start the peak RSS afresh (Linux: ``clear_refs`` 5), so what imports and the warm-up
    took before the baseline does not count; False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_mb() -> float:
    """The peak RSS since ``reset_peak`` (``VmHWM``), else since the start (``getrusage``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(corpus: Path, splitter: str) -> dict[str, float]:
    """Run ``load.files -> splitter`` on ``corpus`` in this process; the figures as a dict."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from modrag_studio.composition import default_registry
    from modrag_studio.engine import Executor, NodeCache
    from modrag_studio.engine.core.document import GraphDocument

    def graph(path: Path) -> GraphDocument:
        return GraphDocument.model_validate({
            "metadata": {"name": "corpus-memory"},
            "nodes": [{"id": "load", "type": "load.files",
                       "params": {"path": str(path), "max_total_mb": 0}},
                      {"id": "split", "type": splitter, "params": {}}],
            "edges": [{"from": "load.documents", "to": "split.documents"}]})

    with tempfile.TemporaryDirectory(prefix="modrag-corpus-mem-") as tmp:
        work = Path(tmp)
        os.environ["MODRAG_CACHE_DIR"] = str(work / "cache")
        executor = Executor(default_registry(), cache=NodeCache(work / "cache"))
        warm = work / "warm"
        write_corpus(warm, "markdown", 0.01)
        assert executor.run(graph(warm), {}).ok
        executor.cache.clear_memory()
        reset_peak()
        baseline = rss_mb()
        started = time.perf_counter()
        result = executor.run(graph(corpus), {})
        seconds = time.perf_counter() - started
        if not result.ok:
            raise SystemExit(str([v.error for v in result.trace.visits if v.error]))
        chunks = len(result.output_of("split", "chunks"))
    return {"baseline_mb": baseline, "peak_mb": peak_mb(), "chunks": chunks,
            "seconds": seconds}


def measure(corpus: Path, splitter: str) -> dict[str, float]:
    """The child's figures for ``corpus`` and ``splitter``, run in a fresh interpreter."""
    done = subprocess.run([sys.executable, __file__, "--child", str(corpus),
                           "--splitter", splitter], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="size of each of the 3 files")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--splitters", default=",".join(SPLITTERS))
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--splitter", default="split.recursive", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.splitter)))
        return 0
    print(f"3 files x {args.mb:g} MB; load.files -> splitter through the executor (disk "
          "cache on), each run in its own process; growth = peak RSS - RSS after warm-up")
    print(f"{'shape':<10} {'splitter':<16} {'corpus MB':>9} {'chunks':>8} {'growth MB':>9} "
          f"{'x corpus':>8} {'x file':>7} {'s':>6}")
    with tempfile.TemporaryDirectory(prefix="modrag-corpus-") as tmp:
        for shape in args.shapes.split(","):
            corpus = Path(tmp) / shape
            corpus_mb = write_corpus(corpus, shape, args.mb) / (1 << 20)
            for splitter in args.splitters.split(","):
                got = measure(corpus, splitter)
                growth = got["peak_mb"] - got["baseline_mb"]
                print(f"{shape:<10} {splitter:<16} {corpus_mb:>9.1f} {got['chunks']:>8,} "
                      f"{growth:>9.0f} {growth / corpus_mb:>8.1f} "
                      f"{growth / (corpus_mb / 3):>7.1f} {got['seconds']:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
