"""Where ModRAG Studio keeps its caches and default data (overridable by environment)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_run_work_dir: ContextVar[Path | None] = ContextVar("modrag_run_work_dir", default=None)


def cache_home() -> Path:
    """Node result cache: ``$MODRAG_CACHE_DIR`` or ``~/.cache/modrag-studio``."""
    env = os.environ.get("MODRAG_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "modrag-studio"


def data_home() -> Path:
    """Folder for indexes and other node data: ``$MODRAG_DATA_DIR`` or ``~/.local/share``."""
    env = os.environ.get("MODRAG_DATA_DIR")
    return Path(env) if env else Path.home() / ".local" / "share" / "modrag-studio"


def work_home() -> Path:
    """The work folder of the run in progress on this thread (``data_home()`` outside runs).

    It is the folder nodes get as ``ctx.work_dir``; ``NodeType.fingerprint`` has no context
    and uses this to look at the same on-disk state.
    """
    return _run_work_dir.get() or data_home()


@contextmanager
def using_work_dir(path: Path) -> Iterator[None]:
    """Make ``work_home()`` return ``path`` on this thread for the duration of a run."""
    token = _run_work_dir.set(path)
    try:
        yield
    finally:
        _run_work_dir.reset(token)
