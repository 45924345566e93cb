"""One writer per collection, across threads and processes.

A store in a folder (embedded Chroma, LanceDB) is locked with ``flock`` on a file in the
store folder (``.modrag-<collection>.lock``, holding the writer's PID); a Chroma server
collection with a lock in this process only. The lock is held from reading the stored state
to writing the collection metadata, so two synchronisations never interleave.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from modrag_nodes.vectorstore.handles import folder_backends  # keys ("<backend>", folder)
from modrag_studio.engine.core.node import NodeConfigError, env_limit

WAIT_ENV = "MODRAG_STORE_LOCK_WAIT"
_thread_locks: dict[tuple[Any, ...], threading.Lock] = {}
_guard = threading.Lock()
#: (store folder, collection) -> the PID that took its file lock, while this process holds it
_held_here: dict[tuple[str, str], int] = {}


class CollectionLocked(NodeConfigError):
    """Another writer kept the collection locked for longer than the wait."""


def default_wait() -> float:
    """Seconds a writer waits for the lock: ``$MODRAG_STORE_LOCK_WAIT`` (read at each wait,
    InvalidSetting naming it when it is not a finite number >= 0), default 120."""
    return env_limit(WAIT_ENV, 120.0, "seconds")


def _thread_lock(key: tuple[Any, ...]) -> threading.Lock:
    with _guard:
        return _thread_locks.setdefault(key, threading.Lock())


def lock_path(folder: Path, collection: str) -> Path:
    return folder / f".modrag-{collection}.lock"


def holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "another process"
    return f"PID {pid}" if pid.isdigit() else "another process"


def _held_key(folder: Path, collection: str) -> tuple[str, str]:
    return str(Path(folder).resolve()), collection


def written_here(folder: Path, collection: str) -> bool:
    """Whether this process holds the collection's write lock now (a write of its own going
    on: busy, not broken); told by the locks it took, not by the lock file's text (a process
    forked while one was held does not hold it)."""
    return _held_here.get(_held_key(folder, collection)) == os.getpid()


def held_by(folder: Path, collection: str) -> str | None:
    """Who holds the collection's write lock now (``PID n``), or None when nobody does (or
    there is no lock file); the lock is not taken."""
    import fcntl

    path = lock_path(folder, collection)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return holder(path)
    except OSError:
        return None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextmanager
def no_writer(location: tuple[Any, ...], collection: str) -> Iterator[None]:
    """For a run that only reads a store (a served request): no wait for the write lock,
    but CollectionLocked at once, naming the writer, while another process writes it."""
    if location[0] in folder_backends():
        writer = held_by(Path(location[1]), collection)
        if writer is not None:
            raise CollectionLocked(
                f"collection '{collection}' in {location[1]} is being written by {writer}; "
                "the read-only index answers again when that write ends")
    yield


@contextmanager
def collection_lock(location: tuple[Any, ...], collection: str, *, wait_s: float | None = None,
                    should_stop=lambda: False) -> Iterator[None]:
    """Hold the collection's write lock; CollectionLocked after ``wait_s`` seconds."""
    wait_s = default_wait() if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    local = _thread_lock((*location, collection))
    while not local.acquire(timeout=0.05):
        if should_stop():
            raise NodeConfigError("cancelled while waiting for the collection's write lock")
        if time.monotonic() > deadline:
            raise CollectionLocked(f"collection '{collection}' is being written by another run "
                                   f"in this process (waited {wait_s:g} s)")
    try:
        if location[0] not in folder_backends():
            yield
            return
        with _file_lock(Path(location[1]), collection, deadline, wait_s, should_stop):
            yield
    finally:
        local.release()


@contextmanager
def _file_lock(folder: Path, collection: str, deadline: float, wait_s: float,
               should_stop) -> Iterator[None]:
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    path = lock_path(folder, collection)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if should_stop():
                    raise NodeConfigError("cancelled while waiting for the collection's write "
                                          "lock") from None
                if time.monotonic() > deadline:
                    raise CollectionLocked(
                        f"collection '{collection}' in {folder} is locked by {holder(path)} "
                        f"(waited {wait_s:g} s); let that run finish or stop it") from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        key = _held_key(folder, collection)
        _held_here[key] = os.getpid()
        try:
            yield
        finally:
            _held_here.pop(key, None)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
