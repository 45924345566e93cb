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


def stored_vectors(index: VectorIndex, ids: list[str]) -> Any | None:
    """The stored vectors of ``ids`` as float32 rows in that order, when the collection (a
    Chroma collection or a LanceDB table) holds every one of them; None otherwise."""
    import numpy as np

    collection, _ = open_collection(location_key(index), index.collection)
    if collection is None:
        return None
    found: dict[str, Any] = {}
    for part in cs.batches(list(dict.fromkeys(ids)), cs.PAGE):
        page = collection.get(ids=part, include=["embeddings"])
        vectors = page.get("embeddings")
        if vectors is None:
            return None
        found.update(zip(page["ids"], vectors, strict=False))
    if any(i not in found for i in ids):
        return None
    return np.asarray([found[i] for i in ids], dtype=np.float32)
