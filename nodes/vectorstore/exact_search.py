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

from modrag_studio.engine.core.node import Resources, given_or_process

EXACT_LIMIT = 2_000
KEEP = 8  # collections whose vectors are held, most recently searched first to stay


class HeldVectors:
    """Every record id and unit vector of the small collections searched lately, by store
    version; one resident of the run's resources (unloaded with the models)."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._held: OrderedDict[tuple[Any, ...], tuple[list[str], Any]] = OrderedDict()
        self._lock = threading.Lock()

    def size_bytes(self) -> int:
        with self._lock:
            return sum(matrix.nbytes for _, matrix in self._held.values())

    def get(self, collection: Any, where: tuple[Any, ...]) -> tuple[list[str], Any]:
        """The ids and unit vectors of ``collection`` at ``where`` (read once)."""
        import numpy as np

        with self._lock:
            hit = self._held.get(where)
            if hit is not None:
                self._held.move_to_end(where)
                return hit
        got = collection.get(include=["embeddings"])
        matrix = np.asarray(got["embeddings"], dtype=np.float64)
        matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        entry = (list(got["ids"]), matrix)
        with self._lock:
            self._held[where] = entry
            while len(self._held) > self.keep:
                self._held.popitem(last=False)
        return entry


def held_vectors(resources: Resources | None = None) -> HeldVectors:
    return given_or_process(resources).model(
        "collection-vectors", "exact-search", HeldVectors,
        name="vectors of small collections (exact search)",
        size=lambda held: held.size_bytes() or 1)


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
          include: list[str], resources: Resources | None = None) -> dict[str, list]:
    """The ``n`` nearest records of each of ``vectors`` by cosine distance, exactly (the
    collection's vectors are held in ``resources``, the run's)."""
    import numpy as np

    ids, matrix = held_vectors(resources).get(collection, where)
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

