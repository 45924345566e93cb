"""Bounds that are real: cache limits that cannot be used are refused naming the variable, the
disk limit counts the blocks a result takes, temp files never outlive a failed write or
``modrag cache clear``, and a FIFO where a graph file, a cache entry, the cache key or a
corpus file is read is refused instead of blocking the reader."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modrag_studio.cli import main
from modrag_studio.engine.cache import node_cache
from modrag_studio.engine.cache.node_cache import NodeCache, disk_usage
from modrag_studio.engine.core.errors import GraphLoadError, NodeConfigError

KEY = "ab" + "c" * 62


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result (or exception, raised here); fails if it is still waiting after
    ``seconds`` (a reader blocked on a FIFO)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("variable", ["MODRAG_CACHE_DISK_MB", "MODRAG_CACHE_MEMORY_MB"])
@pytest.mark.parametrize("value", ["inf", "-1", "lots", "nan"])
def test_a_cache_limit_that_cannot_be_used_is_refused_naming_the_variable(
        variable, value, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(variable, value)
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{variable}={value!r} is not a valid limit" in err and "finite number" in err
    from modrag_studio.ui.shell.app import main as studio_main

    assert studio_main([]) == 2  # the studio says so before it opens a window
    assert variable in capsys.readouterr().err


def test_valid_limits_still_work(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_CACHE_DISK_MB", "0.5")
    monkeypatch.setenv("MODRAG_CACHE_MEMORY_MB", "0")
    cache = NodeCache(disk_dir=tmp_path)
    assert cache.disk_bytes == 512 * 1024 and cache.memory_bytes == 0


def test_the_disk_limit_counts_the_blocks_results_take(tmp_path):
    probe = tmp_path / "probe"
    probe.write_bytes(b"x" * 100)
    if os.stat(probe).st_blocks * 512 < 1024:
        pytest.skip("this filesystem stores small files without whole blocks")
    limit = 64 * 1024
    cache = NodeCache(disk_dir=tmp_path / "cache", memory_bytes=0, disk_bytes=limit)
    for i in range(100):  # a hundred results of ~200 bytes: 20 KB of sizes, 400 KB of blocks
        cache.put(f"{i:02d}" + "d" * 62, {"value": i})
    files = list((tmp_path / "cache" / "results").rglob("*.pkl"))
    taken = sum(os.stat(f).st_blocks * 512 for f in files)
    assert taken <= limit, f"{len(files)} entries take {taken} bytes on disk"
    assert disk_usage(tmp_path / "cache")[0] == taken
    assert cache.get("99" + "d" * 62) == {"value": 99}  # the newest stayed


def _temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_a_failed_write_leaves_no_temp_file(tmp_path, monkeypatch):
    cache = NodeCache(disk_dir=tmp_path, memory_bytes=0)

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(node_cache, "dump_signed", disk_full)
    cache.put(KEY, {"value": 1})
    monkeypatch.setattr(node_cache.json, "dump", disk_full)
    cache.remember_signature("scope", "node", {"type": "x"})
    assert _temp_files(tmp_path) == []


def test_temp_files_count_against_the_limit_and_cache_clear_removes_them(tmp_path, capsys):
    cache = NodeCache(disk_dir=tmp_path, memory_bytes=0)
    cache.put(KEY, {"value": 1})
    cache.remember_signature("scope", "node", {"type": "x"})
    left = [tmp_path / "results" / "ab" / "tmpkilled.tmp", tmp_path / "signatures" / "s.tmp"]
    for path in left:  # writes killed between creating the temp file and renaming it
        path.write_bytes(b"x" * 5000)
    assert disk_usage(tmp_path)[0] >= 2 * 5000
    old = time.time() - 3600
    os.utime(left[0], (old, old))
    NodeCache(disk_dir=tmp_path, disk_bytes=1 << 30).prune()  # a stale one goes at once
    assert not left[0].exists() and left[1].exists()
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert _temp_files(tmp_path) == []
    assert disk_usage(tmp_path) == (0, 0)


def test_a_fifo_as_the_graph_file_is_refused_without_waiting(tmp_path, capsys):
    fifo = tmp_path / "graph.json"
    os.mkfifo(fifo)
    from modrag_studio.engine.core.document import load

    with pytest.raises(GraphLoadError, match="not a regular file but a FIFO"):
        within(10, lambda: load(fifo))
    assert within(10, lambda: main(["run", str(fifo)])) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_fifo_at_a_cache_path_is_refused_and_recomputed(tmp_path, monkeypatch):
    cache = NodeCache(disk_dir=tmp_path, memory_bytes=0)
    entry = cache._path(KEY)
    entry.parent.mkdir(parents=True)
    os.mkfifo(entry)
    assert within(10, lambda: cache.get(KEY)) is None
    assert any("corrupted cache entry" in w for w in cache.warnings)
    signature = tmp_path / "signatures" / f"{node_cache.stable_hash(['s', 'n'])}.json"
    signature.parent.mkdir()
    os.mkfifo(signature)
    assert within(10, lambda: cache.last_signature("s", "n")) is None
    key_fifo = tmp_path / "key"
    os.mkfifo(key_fifo)
    monkeypatch.setenv("MODRAG_CACHE_KEY_FILE", str(key_fifo))
    within(10, lambda: cache.put("ef" + "0" * 62, {"value": 2}))  # kept in memory only
    assert not cache._path("ef" + "0" * 62).exists()


def test_a_fifo_in_the_corpus_is_reported_never_opened(tmp_path):
    from modrag_nodes.ingest.loaders import LoadParams, load_documents

    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAbout pumps.\n")
    os.mkfifo(folder / "b.md")
    docs, report = within(10, lambda: load_documents(folder, LoadParams()))
    assert [d.doc_id for d in docs] == ["a.md"]
    assert [(p.file, p.reason) for p in report.skipped] == [
        ("b.md", "a FIFO, not a regular file (never opened)")]
    with pytest.raises(NodeConfigError, match="is a FIFO"):
        within(10, lambda: load_documents(folder / "b.md", LoadParams()))
    from modrag_nodes.ingest.loaders import read_bytes

    with pytest.raises(OSError, match="FIFO"):  # swapped in after the listing
        within(10, lambda: read_bytes(folder / "b.md"))


def test_an_unusable_lock_wait_is_named_when_a_store_is_written(tmp_path, monkeypatch):
    from modrag_nodes.vectorstore.write_lock import collection_lock
    from modrag_studio.engine.core.errors import InvalidSetting

    monkeypatch.setenv("MODRAG_STORE_LOCK_WAIT", "soon")  # importing the nodes still works
    with pytest.raises(InvalidSetting, match="MODRAG_STORE_LOCK_WAIT='soon'"), \
            collection_lock(("chroma-persistent", str(tmp_path)), "shared"):
        pass
