"""One way in for the searches, whichever store wrote a ``VectorIndex``: its location key,
its collection (a Chroma collection, or a LanceDB table behind the same interface) and the
record count at a store version."""

from __future__ import annotations

from typing import Any

from modrag_nodes.vectorstore import chroma_store as cs
from modrag_nodes.vectorstore import lance_store as ls
from modrag_nodes.vectorstore.contracts import VectorIndex


def location_key(index: VectorIndex) -> tuple[Any, ...]:
    if index.backend == ls.BACKEND:
        return (ls.BACKEND, str(index.path))
    return cs.location_key(index)


def open_collection(key: tuple[Any, ...], name: str) -> tuple[Any | None, Any]:
    """The collection (None when missing) and the store version it was read at."""
    if key[0] == ls.BACKEND:
        return ls.open_collection(key, name)
    return cs.open_collection(key, name)


def count_at(key: tuple[Any, ...], name: str, collection: Any, version: Any) -> int:
    if key[0] == ls.BACKEND:
        return ls.count_at(key, name, collection, version)
    return cs.count_at(key, name, collection, version)


def forget() -> None:
    """Drop every cached client, connection and table."""
    cs.forget_clients()
    ls.forget()
