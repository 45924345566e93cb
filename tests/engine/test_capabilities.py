"""Capabilities are declared on node types and read through the registry: ``type_ids(where=...)``
answers with the types (and their former ids) that declare one, and the built-in library
declares its stores, indexes and span kinds so that no application list names them."""

from __future__ import annotations

from typing import Any

from modrag_studio.composition import build_registry
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.registry import NodeRegistry


class Shelf(NodeType):
    type_id = "acme.shelf"
    aliases = ("acme.old_shelf",)
    store_role = "vector"

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        return {}


class Plain(NodeType):
    type_id = "acme.plain"

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        return {}


def test_type_ids_answers_with_the_declaring_types_and_their_former_ids():
    registry = NodeRegistry()
    registry.register(Shelf)
    registry.register(Plain)
    assert registry.type_ids(where=lambda t: t.store_role == "vector") == {
        "acme.shelf", "acme.old_shelf"}
    assert registry.type_ids(where=lambda t: t.store_role == "graph") == frozenset()


def test_the_library_declares_its_stores_indexes_and_span_kinds():
    registry = build_registry(plugins=False)
    vector = registry.type_ids(where=lambda t: t.store_role == "vector")
    assert {"store.chroma", "store.lancedb"} <= vector
    assert {"kg.build", "kg.code_graph"} <= registry.type_ids(
        where=lambda t: t.store_role == "graph")
    kinds = {t.type_id: t.span_kind for t in registry}
    assert kinds["retrieve.vector"] == kinds["kg.search"] == "retriever"
    assert kinds["fuse.rrf"] == kinds["rerank.cross_encoder"] == "reranker"
    assert kinds["embed.chunks"] == "embedding" and kinds["llm.chat"] == "llm"
    assert kinds["split.recursive"] is None
