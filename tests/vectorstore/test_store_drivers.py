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
        forget=lambda: None, close=lambda key: None)
    monkeypatch.setitem(handles.drivers(), "memory", driver)
    index = VectorIndex(backend="memory", collection="shelf", embedder=EmbedderSpec(),
                        model_id="m", dim=2)
    key = handles.location_key(index)
    collection, version = handles.open_collection(key, "shelf")
    assert handles.count_at(key, "shelf", collection, version) == 2
    assert np.array_equal(handles.stored_vectors(index, ["b", "a"]),
                          np.asarray([[0.0, 2.0], [1.0, 0.0]], dtype=np.float32))
    assert opened == [("memory", "shelf"), ("memory", "shelf")]


def test_a_store_a_run_opens_is_held_by_its_resources_and_closed_with_them(monkeypatch):
    """Opened with the run's resources, a store is one handle they hold (whatever the number
    of opens); emptying them closes it through its driver, once; without resources (work
    outside a run) nothing is held."""
    from modrag_studio.engine.core.resources import Resources

    closed: list[tuple[Any, ...]] = []
    driver = StoreDriver(
        backends=("memory",), location_key=lambda index: ("memory", index.collection),
        open_collection=lambda key, name: (Shelf({"a": [1.0]}), (1,)),
        count_at=lambda key, name, collection, version: collection.count(),
        forget=lambda: None, close=closed.append)
    monkeypatch.setitem(handles.drivers(), "memory", driver)
    resources = Resources()
    handles.open_collection(("memory", "shelf"), "shelf")
    assert resources.open_handles() == [] and closed == []
    for _ in range(2):
        handles.open_collection(("memory", "shelf"), "shelf", resources)
    assert resources.open_handles() == [(handles.HANDLE_KIND, ("memory", "shelf"))]
    resources.unload()
    assert closed == [("memory", "shelf")] and resources.open_handles() == []


def test_a_run_holds_the_chroma_folder_it_searched_until_its_resources_close_it(tmp_path):
    """A graph run indexing and searching a Chroma folder leaves the folder (and the
    embedder) held by the executor's resources, never the process's; closing them drops that
    folder's client."""
    from modrag_nodes import register_builtin_nodes
    from modrag_nodes.vectorstore import chroma_store
    from modrag_studio.engine.core.registry import NodeRegistry
    from modrag_studio.engine.core.resources import Resources, process_resources
    from modrag_studio.engine.run.executor import Executor
    from tests.engine.helpers import edge, graph, node

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Cats purr when they are content.", "utf-8")
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    doc = graph(
        [node("load", "load.files", path=str(tmp_path / "docs")),
         node("split", "split.recursive", chunk_size=200, overlap=0),
         node("store", "store.chroma", collection="held", path=str(tmp_path / "db")),
         node("q", "graph.input", name="question"), node("dense", "retrieve.vector", top_k=1),
         node("out", "graph.output", name="hits")],
        [edge("load.documents", "split.documents"), edge("split.chunks", "store.chunks"),
         edge("store.index", "dense.index"), edge("q.value", "dense.query"),
         edge("dense.results", "out.value")])
    resources = Resources()
    before = process_resources().open_handles()
    models_before = [(r.kind, r.key) for r in process_resources().resident()]
    result = Executor(registry, work_dir=tmp_path / "work", resources=resources).run(
        doc, {"question": "Which animal purrs?"})
    assert result.ok, result.trace.failure_summary()
    key = ("chroma-persistent", str((tmp_path / "db").resolve()))
    assert (handles.HANDLE_KIND, key) in resources.open_handles()
    assert process_resources().open_handles() == before
    assert [r.kind for r in resources.resident()].count("embedder") == 1
    assert [(r.kind, r.key) for r in process_resources().resident()] == models_before
    assert key in chroma_store._clients
    resources.close_handles()
    assert key not in chroma_store._clients and resources.open_handles() == []
