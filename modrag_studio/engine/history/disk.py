"""The run history's files on disk: the private sqlite index, the bytes it takes, the temp
files of run writes (a killed write leaves one) and the limits read from the environment."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

from modrag_studio.engine.cache.node_cache import (
    DEFAULT_DISK_MB,
    DISK_ENV,
    STALE_TEMP_S,
    TEMP_SUFFIX,
    allocated,
)
from modrag_studio.engine.core.paths import env_limit

RUNS_ENV, SIZE_ENV = "MODRAG_HISTORY_RUNS", "MODRAG_HISTORY_MB"
DEFAULT_RUNS = 2000
MIN_DEFAULT_MB = 16.0  # the size limit when a quarter of the cache's disk limit is less
INDEX_NAME = "index.sqlite"
INDEX_FILES = (INDEX_NAME, f"{INDEX_NAME}-wal", f"{INDEX_NAME}-shm")


def history_limits() -> tuple[int, int]:
    """(runs per graph, bytes) from ``$MODRAG_HISTORY_RUNS`` and ``$MODRAG_HISTORY_MB``;
    InvalidSetting naming the variable for a limit below 1, which would keep nothing and
    wipe every graph's history at the next run recorded."""
    runs = env_limit(RUNS_ENV, DEFAULT_RUNS, "runs", minimum=1,
                     hint="to keep no history, do not record")
    disk_mb = env_limit(DISK_ENV, DEFAULT_DISK_MB, "MB")
    size_mb = env_limit(SIZE_ENV, max(disk_mb / 4, MIN_DEFAULT_MB), "MB", minimum=1,
                        hint="to keep no history, do not record")
    return int(runs), int(size_mb * 1024 * 1024)


def private_index(root: Path) -> Path:
    """The index path, its files (the WAL and shared-memory files sqlite makes beside it
    take the index's mode) readable by their owner only, as the run files are."""
    root.mkdir(parents=True, exist_ok=True)
    index = root / INDEX_NAME
    with contextlib.suppress(FileExistsError):
        os.close(os.open(index, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for name in INDEX_FILES:
        with contextlib.suppress(FileNotFoundError):
            if (root / name).stat().st_mode & 0o077:
                os.chmod(root / name, 0o600)
    return index


def index_bytes(root: Path) -> int:
    """Disk space the index takes (its WAL and shared-memory files included)."""
    total = 0
    for name in INDEX_FILES:
        with contextlib.suppress(OSError):
            total += allocated((root / name).stat())
    return total


def temp_files(root: Path) -> list[tuple[float, int, Path]]:
    """(last change, disk space, path) of each temp file of a run write, finished or not."""
    folder = root / "runs"
    found = []
    if folder.is_dir():
        for entry in os.scandir(folder):
            if entry.name.endswith(TEMP_SUFFIX) and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.append((info.st_mtime, allocated(info), Path(entry.path)))
    return found


def remove_temp_files(root: Path, *, stale_only: bool) -> int:
    """Delete the temp files of killed writes (all of them unless ``stale_only``: those
    older than a write takes); returns the bytes freed."""
    stale_before = time.time() - STALE_TEMP_S
    freed = 0
    for changed, size, path in temp_files(root):
        if not stale_only or changed < stale_before:
            with contextlib.suppress(OSError):
                path.unlink()
                freed += size
    return freed


def remove_all(root: Path) -> int:
    """Delete the index and every run file (a damaged index cannot say which runs it
    lists); returns the bytes freed."""
    freed = index_bytes(root) + sum(size for _, size, _ in temp_files(root))
    for name in INDEX_FILES:
        (root / name).unlink(missing_ok=True)
    runs = root / "runs"
    if runs.is_dir():
        for path in runs.glob("*.run"):
            with contextlib.suppress(OSError):
                freed += allocated(path.stat())
        shutil.rmtree(runs, ignore_errors=True)
    return freed
