"""The cache's signing key is created once, whole, however many processes start at once
(before, one that read the file between another's create and write got an empty key)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path


def _key_of(path: str, start, out) -> None:
    os.environ["MODRAG_CACHE_KEY_FILE"] = path
    import time

    from modrag_studio.engine.cache.signing import signing_key

    opened = os.fdopen

    def slow_fdopen(fd, mode="r", *args, **kwargs):  # a writer slow to write what it opened
        if "w" in mode:
            time.sleep(0.3)
        return opened(fd, mode, *args, **kwargs)

    os.fdopen = slow_fdopen

    start.wait(30)
    try:
        out.put(signing_key().hex())
    except Exception as exc:  # reported to the test, which names it
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_creating_the_key_at_once_all_read_the_same_whole_key(tmp_path):
    context = multiprocessing.get_context("fork")
    for round_ in range(3):
        path = tmp_path / f"round{round_}" / "cache.key"
        start, out = context.Event(), context.Queue()
        workers = [context.Process(target=_key_of, args=(str(path), start, out))
                   for _ in range(6)]
        for worker in workers:
            worker.start()
        start.set()
        keys = [out.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(30)
        assert len(set(keys)) == 1, keys
        assert keys[0] == Path(path).read_bytes().hex() and len(keys[0]) == 64
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        assert [p.name for p in path.parent.iterdir()] == ["cache.key"]  # no leftovers
