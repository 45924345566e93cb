"""The result cache is bounded in bytes (memory and disk), signed, and managed by
``modrag cache``."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache, approx_size, disk_usage
from modrag_studio.engine.cache.signing import BadSignature, load_signed

MB = 1024 * 1024


def blob(mb: float, seed: int = 0) -> dict:
    return {"value": np.full(int(mb * MB) // 8, float(seed))}


def test_memory_is_bounded_in_bytes_least_recently_used_first():
    cache = NodeCache(memory_bytes=3 * MB, memory_items=1000)
    for i in range(5):
        cache.put(f"k{i}", blob(1, i), disk=False)
        cache.get("k0")  # k0 stays recently used
    assert cache.memory_used <= 3 * MB
    assert cache.get("k0") is not None and cache.get("k4") is not None
    assert cache.get("k1") is None and cache.get("k2") is None
    cache.put("huge", blob(4), disk=False)  # over the whole budget: not kept
    assert cache.get("huge") is None and cache.get("k4") is not None


def test_the_same_large_result_under_many_keys_does_not_grow_memory_without_bound():
    cache = NodeCache(memory_bytes=2 * MB)
    for i in range(20):  # a file asked for under 20 spellings of its path
        cache.put(f"spelling{i}", blob(0.5), disk=False)
    assert cache.memory_used <= 2 * MB
    assert len(cache._memory) <= 4


def test_disk_is_bounded_and_keeps_recently_read_entries(tmp_path):
    cache = NodeCache(disk_dir=tmp_path, memory_bytes=0, disk_bytes=int(2.5 * MB))
    for i in range(6):
        cache.put(f"{i:02d}" + "a" * 62, blob(0.8, i))
        os.utime(cache._path(f"{i:02d}" + "a" * 62), (1000 + i, 1000 + i))
        if i >= 1:
            assert cache.get("00" + "a" * 62) is not None  # read: recently used again
    used, entries = disk_usage(tmp_path)
    assert used <= 2.5 * MB and entries <= 3
    assert cache.get("00" + "a" * 62) is not None
    assert cache.get("01" + "a" * 62) is None


def test_sizes_of_nested_results_are_estimated():
    chunks = [{"text": f"{i}" + "x" * 1000, "id": str(i)} for i in range(10_000)]
    assert 10_000_000 <= approx_size({"chunks": chunks}) <= 30_000_000


class Planted:
    def __reduce__(self):
        return (Path.write_text, (Path(os.environ["PLANTED_MARKER"]), "ran"))


def test_a_planted_pickle_is_refused_not_run(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv("PLANTED_MARKER", str(marker))
    cache = NodeCache(disk_dir=tmp_path / "cache")
    key = "ab" * 32
    cache.put(key, {"value": 1})
    path = cache._path(key)
    envelope = {"format": 1, "key": key, "outputs": {"value": Planted()}}
    path.write_bytes(pickle.dumps(envelope))  # an unsigned pickle (the old format)
    fresh = NodeCache(disk_dir=tmp_path / "cache")
    assert fresh.get(key) is None
    assert not marker.exists()
    assert "corrupted cache entry" in fresh.warnings[0]
    # a signed-looking entry with a forged signature is refused too
    path.write_bytes(b"MRSC1\n" + b"\0" * 32 + pickle.dumps(envelope))
    with pytest.raises(BadSignature):
        load_signed(path)
    assert not marker.exists()


def test_the_signing_key_is_private(tmp_path):
    from modrag_studio.engine.cache.signing import key_path, signing_key

    signing_key()
    assert oct(key_path().stat().st_mode & 0o777) == "0o600"


def test_cache_command_info_prune_clear(tmp_path, capsys):
    from modrag_studio.cli import main

    cache = NodeCache(disk_dir=tmp_path)
    for i in range(4):
        cache.put(f"{i:02d}" + "b" * 62, blob(0.5, i))
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    assert "in 4 result(s)" in capsys.readouterr().out
    assert main(["cache", "prune", "--cache-dir", str(tmp_path), "--max-mb", "1.2"]) == 0
    assert "removed 2 result(s)" in capsys.readouterr().out
    assert disk_usage(tmp_path)[1] == 2
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert disk_usage(tmp_path) == (0, 0)


def test_served_path_inputs_are_normalised_before_they_become_keys(tmp_path):
    from modrag_studio.server.exposure import Exposure
    from tests.server.test_exposure import rag_graph

    (tmp_path / "data" / "a" / "b").mkdir(parents=True)
    doc = rag_graph(str(tmp_path / "data" / "a"), str(tmp_path / "chroma"))
    exposure = Exposure.plan(doc, expose=["corpus"], data_root=tmp_path / "data")
    spellings = ["a/b", "a/./b", "a//b", "a/b/", "./a/../a/b", str(tmp_path / "data/a/b")]
    assert len({exposure.run_inputs({"corpus": s})["corpus"] for s in spellings}) == 1


def test_cli_path_inputs_are_written_one_way():
    from modrag_studio.engine.trust.reach import normalise_path_inputs
    from tests.server.test_exposure import rag_graph

    doc = rag_graph("corpus", "chroma")
    spellings = ["a/b", "a/./b", "a//b", "a/b/", "./a/b"]
    assert {normalise_path_inputs(doc, {"corpus": s, "question": "a/./b"},
                                  default_registry())["corpus"]
            for s in spellings} == {"a/b"}
    registry = default_registry()
    assert normalise_path_inputs(doc, {"question": "a/./b"}, registry) == {"question": "a/./b"}
    assert normalise_path_inputs(doc, {"corpus": "a/c/../b"}, registry)["corpus"] == "a/c/../b"
    assert normalise_path_inputs(doc, {"corpus": "/x//y/."}, registry)["corpus"] == "/x/y"
