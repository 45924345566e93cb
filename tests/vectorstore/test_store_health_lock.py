"""Pre-flight on a store whose collection is locked: busy in this process, blocked by another."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from modrag_nodes.vectorstore.store_health import folder_health
from modrag_nodes.vectorstore.write_lock import collection_lock, lock_path, written_here
from modrag_studio.engine.core.errors import NodeConfigError


def _health(folder: Path) -> str:
    return folder_health(folder, "docs", "Chroma", lambda: None, lambda: "Chroma folder ok")


def test_a_collection_this_process_is_writing_is_busy_not_broken(tmp_path):
    assert not written_here(tmp_path, "docs")
    with collection_lock(("lancedb", str(tmp_path)), "docs", wait_s=5):
        assert written_here(tmp_path / ".", "docs") and not written_here(tmp_path, "other")
        detail = _health(tmp_path)
    assert "being written by this process" in detail
    assert not written_here(tmp_path, "docs")  # released with the lock


def _held_by_another(path: Path, pid_text: str) -> subprocess.Popen:
    """A process holding the lock file ``path`` with ``pid_text`` written in it."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys
        fh = open({str(path)!r}, "w")
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write({pid_text!r} or str(os.getpid())); fh.flush()
        print("locked", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_collection_another_process_writes_is_not_ready(tmp_path):
    holder = _held_by_another(lock_path(tmp_path, "docs"), "")
    try:
        with pytest.raises(NodeConfigError, match=f"locked by PID {holder.pid}"):
            _health(tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_lock_file_naming_this_process_is_not_a_write_of_its_own(tmp_path):
    """Whose write it is comes from the locks this process took, not from the file's text:
    another process holding a lock file that names this PID (a forked child, a PID seen
    from another namespace) still blocks."""
    holder = _held_by_another(lock_path(tmp_path, "docs"), str(os.getpid()))
    try:
        assert not written_here(tmp_path, "docs")
        with pytest.raises(NodeConfigError, match=f"locked by PID {os.getpid()}"):
            _health(tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=10)
