"""Memos opened for the length of a ``with`` block (an evaluation's precomputed values).

Nodes read the innermost open memos; a memo is dropped when its block ends. Thread-safe: an
evaluation may run nodes on worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class MemoStack:
    """A stack of open memo dicts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._memos: list[dict[Any, Any]] = []

    @contextmanager
    def open(self) -> Iterator[dict[Any, Any]]:
        """Open a new, empty memo for the block."""
        memo: dict[Any, Any] = {}
        with self.lock:
            self._memos.append(memo)
        try:
            yield memo
        finally:
            with self.lock:
                self._memos.remove(memo)

    def open_memos(self) -> list[dict[Any, Any]]:
        """The memos open now, innermost last."""
        with self.lock:
            return list(self._memos)
