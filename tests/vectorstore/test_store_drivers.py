"""Stores behind one driver protocol: each ``*_store`` module declares its ``DRIVER`` and
``handles`` finds it by that convention, so the searches reach a new backend without an
edit anywhere else."""

from __future__ import annotations

from typing import Any

import numpy as np

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import handles
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.handles import StoreDriver


def test_the_shipped_drivers_are_found_with_their_folder_backends():
    assert set(handles.drivers()) == {"chroma-persistent", "chroma-http", "lancedb"}
    assert handles.folder_backends() == {"chroma-persistent", "lancedb"}


class Shelf:
    """A collection in memory with the part of the interface the searches use."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def count(self) -> int:
        return len(self.vectors)

    def get(self, ids: list[str], include: list[str]) -> dict[str, list]:
        kept = [i for i in ids if i in self.vectors]
        return {"ids": kept, "embeddings": [self.vectors[i] for i in kept]}


def test_a_new_backend_is_reached_through_its_driver_alone(monkeypatch):
    shelf = Shelf({"a": [1.0, 0.0], "b": [0.0, 2.0]})
    opened: list[tuple[Any, ...]] = []
    driver = StoreDriver(
        backends=("memory",), location_key=lambda index: ("memory", index.collection),
        open_collection=lambda key, name: (opened.append(key) or shelf, (1,)),
        count_at=lambda key, name, collection, version: collection.count(),
        forget=lambda: None)
    monkeypatch.setitem(handles.drivers(), "memory", driver)
    index = VectorIndex(backend="memory", collection="shelf", embedder=EmbedderSpec(),
                        model_id="m", dim=2)
    key = handles.location_key(index)
    collection, version = handles.open_collection(key, "shelf")
    assert handles.count_at(key, "shelf", collection, version) == 2
    assert np.array_equal(handles.stored_vectors(index, ["b", "a"]),
                          np.asarray([[0.0, 2.0], [1.0, 0.0]], dtype=np.float32))
    assert opened == [("memory", "shelf"), ("memory", "shelf")]
