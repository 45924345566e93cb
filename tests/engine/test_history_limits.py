"""The run history keeps to its limits and belongs to its owner: the index counts against
``$MODRAG_HISTORY_MB``, a 0 limit is refused (never "recorded" and everything wiped), the
index is private, a damaged index is a clear error that ``modrag cache clear`` resets, and
temp files of killed writes are counted and pruned."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.core.errors import InvalidSetting
from modrag_studio.engine.history.store import RunHistory
from tests.engine.test_run_history import _fake_result

EMPTY = {"schema_version": 1, "nodes": [], "edges": []}


def _on_disk(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def test_the_index_counts_against_the_size_limit(tmp_path):
    history = RunHistory(tmp_path / "history", max_bytes=1024 * 1024)
    doc = from_json_dict(EMPTY)
    for i in range(60):  # long questions live in the index, not in the run files
        history.record("g", doc, {"question": f"{i} " + "why " * 10_000}, _fake_result(i))
    index = sum(p.stat().st_blocks * 512 for p in (tmp_path / "history").glob("index.sqlite*"))
    assert history.usage()[0] >= index > 0
    assert _on_disk(tmp_path / "history") <= 1024 * 1024
    assert len(history.runs("g")) >= 2  # pruned to the limit, not emptied


@pytest.mark.parametrize(("name", "value"), [("MODRAG_HISTORY_RUNS", "0"),
                                             ("MODRAG_HISTORY_MB", "0")])
def test_a_zero_history_limit_is_refused_and_wipes_nothing(tmp_path, monkeypatch, capsys,
                                                           name, value):
    from modrag_studio.cli import main

    history = RunHistory(tmp_path / "history")
    doc = from_json_dict(EMPTY)
    kept = history.record("other", doc, {"question": "the user's own run"}, _fake_result(1))
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidSetting, match=name):
        RunHistory(tmp_path / "history")
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{name}='{value}'" in err and "Traceback" not in err
    monkeypatch.delenv(name)
    assert [r.run_id for r in RunHistory(tmp_path / "history").runs()] == [kept.run_id]


def test_a_zero_cache_disk_limit_leaves_the_history_a_floor_not_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_CACHE_DISK_MB", "0")
    assert RunHistory(tmp_path / "history").max_bytes >= 1024 * 1024


def test_the_index_is_private_like_the_run_files(tmp_path):
    root = tmp_path / "history"
    root.mkdir()
    (root / "index.sqlite").touch(mode=0o644)
    os.chmod(root / "index.sqlite", 0o644)  # an index made before: tightened on open
    history = RunHistory(root)
    history.record("g", from_json_dict(EMPTY), {"question": "q"}, _fake_result(1))
    files = list(root.glob("index.sqlite*")) + list((root / "runs").glob("*.run"))
    assert len(files) >= 2
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path.name


def test_a_damaged_index_is_a_clear_error_and_cache_clear_resets_it(tmp_path, capsys):
    from modrag_studio.cli import main

    root = tmp_path / "history"
    RunHistory(root).record("g", from_json_dict(EMPTY), {"question": "q"}, _fake_result(1))
    for name in ("index.sqlite-wal", "index.sqlite-shm"):
        (root / name).unlink(missing_ok=True)
    (root / "index.sqlite").write_bytes(b"this is not a database" * 100)
    for action in ("history", "info"):
        assert main(["cache", action, "--cache-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert "index.sqlite" in err and "damaged" in err and "modrag cache clear" in err
        assert "Traceback" not in err
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "reset" in capsys.readouterr().out
    assert main(["cache", "history", "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "no recorded runs"
    assert not list((root / "runs").glob("*.run"))


def test_temp_files_of_killed_writes_are_counted_and_pruned(tmp_path):
    history = RunHistory(tmp_path / "history")
    history.record("g", from_json_dict(EMPTY), {"question": "q"}, _fake_result(1))
    runs = tmp_path / "history" / "runs"
    stale, fresh = runs / "tmpkilled.tmp", runs / "tmpwriting.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"x" * 100_000)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    before = history.usage()[0]
    assert before >= 200_000  # both temp files count
    history.prune()
    assert not stale.exists() and fresh.exists()  # a write under way keeps its file
    assert history.usage()[0] <= before - 100_000
    history.clear()
    assert not fresh.exists()


@pytest.mark.parametrize("variable", ["MODRAG_CACHE_DISK_MB", "MODRAG_CACHE_MEMORY_MB",
                                      "MODRAG_HISTORY_MB", "MODRAG_HISTORY_RUNS"])
def test_a_limit_so_large_its_bytes_overflow_is_refused_naming_it(variable, tmp_path,
                                                                  monkeypatch, capsys):
    from modrag_studio.cli import main

    monkeypatch.setenv(variable, "1e308")
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{variable}='1e308' is not a valid limit" in err and "Traceback" not in err
