"""Vector searches done ahead of time (an evaluation searches all its queries in one call).

While a memo is open, ``retrieve.vector`` takes the rows of query vectors it holds instead of
querying the collection again. A row is kept under the collection's location, name and store
version, the number of results and the exact vector bytes, so a changed store, another
``top_k`` or another vector never reads it. Chunks are built once per record id.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

_lock = threading.Lock()
_memos: list[dict[tuple[Any, ...], Any]] = []
BATCH = 256  # query vectors per collection.query call


@contextmanager
def search_memo() -> Iterator[dict[tuple[Any, ...], Any]]:
    """Open a memo {(collection, version, n, vector bytes): result row}; dropped at the end."""
    memo: dict[tuple[Any, ...], Any] = {}
    with _lock:
        _memos.append(memo)
    try:
        yield memo
    finally:
        with _lock:
            _memos.remove(memo)


def is_open() -> bool:
    with _lock:
        return bool(_memos)


def _key(where: tuple[Any, ...], n: int, vector: np.ndarray) -> tuple[Any, ...]:
    return (*where, n, np.ascontiguousarray(vector, dtype=np.float32).tobytes())


def remembered(where: tuple[Any, ...], n: int, vectors: np.ndarray) -> dict[str, list] | None:
    """The search result of every vector (Chroma's layout), or None when one is not held."""
    with _lock:
        memos = list(_memos)
    for memo in reversed(memos):
        rows = [memo.get(_key(where, n, v)) for v in vectors]
        if all(r is not None for r in rows):
            return {field: [r[i] for r in rows]
                    for i, field in enumerate(("ids", "documents", "metadatas", "distances"))}
    return None


def search_ahead(collection: Any, where: tuple[Any, ...], n: int, vectors: np.ndarray) -> int:
    """Search every vector now (in batches) into the open memos; returns the rows kept."""
    with _lock:
        memos = list(_memos)
    if not memos or len(vectors) == 0:
        return 0
    kept = 0
    for start in range(0, len(vectors), BATCH):
        part = vectors[start:start + BATCH]
        found = collection.query(query_embeddings=part, n_results=n,
                                 include=["documents", "metadatas", "distances"])
        for row, vector in enumerate(part):
            entry = (found["ids"][row], found["documents"][row], found["metadatas"][row],
                     found["distances"][row])
            for memo in memos:
                memo[_key(where, n, vector)] = entry
            kept += 1
    return kept
