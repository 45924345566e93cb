"""Exact nearest neighbours for small Chroma collections.

Chroma keeps a collection's HNSW graph unsaved until it holds ``sync_threshold`` (1,000)
records and builds it again in every process, with random levels: on a 407-record
collection the same query vector gave different top 50s in different processes (the
second-best record missing in two of six). Below ``EXACT_LIMIT`` records a search compares the
query with every stored vector instead (a matrix product of at most 2,000 rows): exact, so the
same in every process. Results have Chroma's layout (``ids``, ``distances`` and, when asked,
``documents`` and ``metadatas``, one list per query vector); ties go by record id.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

EXACT_LIMIT = 2_000
_KEEP = 8  # collections whose vectors are held, most recently searched
_held: OrderedDict[tuple[Any, ...], tuple[list[str], Any]] = OrderedDict()
_lock = threading.Lock()


def applies(collection: Any, count: int) -> bool:
    """Whether searches of ``collection`` (``count`` records) are done exactly here: a small
    collection of cosine distances (the space the stores create)."""
    if not 0 < count <= EXACT_LIMIT:
        return False
    try:
        space = (collection.configuration or {}).get("hnsw", {}).get("space")
    except Exception:  # a client without configurations (a Chroma server of another kind)
        return False
    return space == "cosine"


def query(collection: Any, where: tuple[Any, ...], vectors: Any, n: int,
          include: list[str]) -> dict[str, list]:
    """The ``n`` nearest records of each of ``vectors`` by cosine distance, exactly."""
    import numpy as np

    ids, matrix = _vectors(collection, where)
    queries = np.asarray(vectors, dtype=np.float64)
    queries = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    similarity = queries @ matrix.T
    order_ids = np.asarray(ids)
    found: dict[str, list] = {"ids": [], "distances": []}
    for row in similarity:
        top = np.lexsort((order_ids, -row))[:n]
        found["ids"].append([ids[i] for i in top])
        found["distances"].append([float(1.0 - row[i]) for i in top])
    wanted = [f for f in ("documents", "metadatas") if f in include]
    if wanted:
        distinct = list(dict.fromkeys(i for row in found["ids"] for i in row))
        got = collection.get(ids=distinct, include=wanted)
        for field in wanted:
            by_id = dict(zip(got["ids"], got[field], strict=True))
            found[field] = [[by_id.get(i) for i in row] for row in found["ids"]]
    return found


def _vectors(collection: Any, where: tuple[Any, ...]) -> tuple[list[str], Any]:
    """Every record id and its unit vector, read once per store version (``where``)."""
    import numpy as np

    with _lock:
        hit = _held.get(where)
        if hit is not None:
            _held.move_to_end(where)
            return hit
    got = collection.get(include=["embeddings"])
    matrix = np.asarray(got["embeddings"], dtype=np.float64)
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    entry = (list(got["ids"]), matrix)
    with _lock:
        _held[where] = entry
        while len(_held) > _KEEP:
            _held.popitem(last=False)
    return entry
