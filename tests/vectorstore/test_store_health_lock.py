"""Pre-flight on a store whose collection is locked: busy in this process, blocked by another."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from modrag_nodes.vectorstore.store_health import folder_health
from modrag_nodes.vectorstore.write_lock import lock_path
from modrag_studio.engine.core.errors import NodeConfigError


def _health(folder: Path) -> str:
    return folder_health(folder, "docs", "Chroma", lambda: None, lambda: "Chroma folder ok")


def test_a_collection_this_process_is_writing_is_busy_not_broken(tmp_path):
    with lock_path(tmp_path, "docs").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(str(os.getpid()))
        fh.flush()
        detail = _health(tmp_path)
    assert "being written by this process" in detail


def test_a_collection_another_process_writes_is_not_ready(tmp_path):
    path = lock_path(tmp_path, "docs")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys
        fh = open({str(path)!r}, "w")
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(str(os.getpid())); fh.flush()
        print("locked", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(NodeConfigError, match=f"locked by PID {holder.pid}"):
            _health(tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=10)
