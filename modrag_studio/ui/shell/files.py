"""Autosave side files and crash recovery (no widgets here; the window asks the user)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument, atomic_write_text, dumps
from modrag_studio.engine.core.paths import cache_home

AUTOSAVE_SUFFIX = ".autosave"
AUTOSAVE_INTERVAL_MS = 60_000


def autosave_dir() -> Path:
    return cache_home() / "autosave"


def autosave_path_for(path: Path | None, pid: int | None = None) -> Path:
    """``<file>.autosave`` beside a saved graph; a per-process file for an untitled one."""
    if path is not None:
        return path.with_name(path.name + AUTOSAVE_SUFFIX)
    return autosave_dir() / f"untitled-{pid or os.getpid()}.json"


def _fallback_path(path: Path) -> Path:
    digest = hashlib.sha1(str(path.resolve()).encode("utf-8")).hexdigest()[:12]
    return autosave_dir() / f"{path.stem}-{digest}{AUTOSAVE_SUFFIX}.json"


def write_autosave(doc: GraphDocument, path: Path | None) -> Path:
    """Write the autosave for a document saved at ``path`` (or untitled); returns where."""
    target = autosave_path_for(path)
    try:
        atomic_write_text(target, dumps(doc))
    except OSError:
        if path is None:
            raise
        target = _fallback_path(path)  # the graph's folder is read-only: use the cache
        atomic_write_text(target, dumps(doc))
    return target


def discard_autosave(path: Path | None) -> None:
    """Remove the autosave of ``path`` (after a save or a clean close)."""
    candidates = [autosave_path_for(path)]
    if path is not None:
        candidates.append(_fallback_path(path))
    for candidate in candidates:
        candidate.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_restorable(path: Path | None) -> Path | None:
    """An autosave left by a crash: newer than ``path``, or an untitled one of a dead process."""
    if path is not None:
        for candidate in (autosave_path_for(path), _fallback_path(path)):
            if candidate.is_file() and (
                not path.exists() or candidate.stat().st_mtime >= path.stat().st_mtime
            ):
                return candidate
        return None
    folder = autosave_dir()
    if not folder.is_dir():
        return None
    orphans = []
    for candidate in folder.glob("untitled-*.json"):
        pid_text = candidate.stem.removeprefix("untitled-")
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _alive(int(pid_text)):
            orphans.append(candidate)
    return max(orphans, key=lambda p: p.stat().st_mtime) if orphans else None
