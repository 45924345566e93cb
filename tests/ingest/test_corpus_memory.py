"""Loading and splitting a corpus costs about its size, not a list of its words: the peak
memory of ``load.files -> split.*`` on three generated files stays under a bound (measured in
a child process of its own, so other tests' memory does not count)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_corpus_memory.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_corpus_memory", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("shape", "splitter"), [("one-line", "split.recursive"),
                                                 ("lines", "split.markdown")])
def test_the_peak_memory_of_load_and_split_stays_near_the_corpus_size(tmp_path, shape,
                                                                       splitter):
    bench = _bench()
    corpus_mb = bench.write_corpus(tmp_path / "corpus", shape, 3) / (1 << 20)
    got = bench.measure(tmp_path / "corpus", splitter)
    growth = got["peak_mb"] - got["baseline_mb"]
    assert got["chunks"] > 1000
    # the documents (1x), their chunks (1.1x text and their fields) and one file's work;
    # a list of every word's span took 83 MB for these 9 MB
    assert growth < 4 * corpus_mb, (shape, splitter, got, round(corpus_mb))
