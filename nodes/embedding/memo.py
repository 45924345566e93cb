"""Query vectors embedded ahead of time (an evaluation embeds its queries in batches).

While a memo is open, ``embed(..., role="query")`` takes the vectors of texts it holds instead
of encoding them again; texts it does not hold are encoded as usual. The vectors are the
model's own, so results only change by float rounding between batch sizes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_memos: list[dict[tuple[str, str], Any]] = []


@contextmanager
def query_vector_memo() -> Iterator[dict[tuple[str, str], Any]]:
    """Open a memo {(embedder key, text): vector}; it is dropped when the block ends."""
    memo: dict[tuple[str, str], Any] = {}
    with _lock:
        _memos.append(memo)
    try:
        yield memo
    finally:
        with _lock:
            _memos.remove(memo)


def spec_key(spec: Any) -> str:
    """What makes two embedders' query vectors the same: model, prefix, normalisation."""
    return f"{spec.model_id}|{spec.query_prefix}|{spec.normalize}"


def remember(memo: dict[tuple[str, str], Any], spec: Any, texts: list[str],
             vectors: Any) -> None:
    key = spec_key(spec)
    for text, vector in zip(texts, vectors, strict=True):
        memo[(key, text)] = vector


def remembered(spec: Any, texts: list[str]) -> list[Any] | None:
    """The memo's vectors of every text, or None when one of them is not held."""
    with _lock:
        memos = list(_memos)
    key = spec_key(spec)
    for memo in reversed(memos):
        found = [memo.get((key, t)) for t in texts]
        if all(v is not None for v in found):
            return found
    return None
