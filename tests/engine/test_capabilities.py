"""Capabilities are declared on node types and read through the registry: ``type_ids(where=...)``
answers with the types (and their former ids) that declare one, and the built-in library
declares its stores, indexes and span kinds so that no application list names them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from modrag_studio.composition import build_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.trust.reach import reach


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
    assert kinds["eval.judge"] == "evaluator" and kinds["split.recursive"] is None


class ShelfParams(BaseModel):
    folder: str = "/srv/shelf"
    key_env: str = "SHELF_KEY"


class Writer(NodeType):
    """A store that says what it writes and which variable it reads."""

    type_id = "acme.writer"
    Params = ShelfParams

    def store_writes(self, params: ShelfParams, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        return [("folder", f"the shelf in {params.folder}")] if outside(params.folder) else []

    def env_reads(self, params: ShelfParams) -> list[tuple[str, ...]] | None:
        return [("key_env", params.key_env, "shelf.example")]

    def run(self, ctx: NodeContext, params: ShelfParams) -> dict[str, Any]:
        return {}


class Quiet(NodeType):
    type_id = "acme.quiet"
    Params = ShelfParams

    def run(self, ctx: NodeContext, params: ShelfParams) -> dict[str, Any]:
        return {}


def test_the_optional_hooks_are_declared_methods_with_defaults():
    node = Plain()
    assert node.env_reads(None) is None and node.store_writes(None, lambda p: True) == []
    assert node.search_ahead(None, {}, ["q"]) == 0 and node.param_listing(None, "model") is None
    assert Plain.choice_sources == {}


def test_the_trust_list_reads_what_a_type_declares_and_nothing_from_one_that_does_not(
        tmp_path):
    registry = NodeRegistry()
    registry.register(Writer)
    registry.register(Quiet)
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "w", "type": "acme.writer", "params": {}},
        {"id": "q", "type": "acme.quiet", "params": {}}]})
    found = reach(doc, registry, tmp_path / "g.json")
    assert found.writes == [("w.folder", "the shelf in /srv/shelf")]
    assert ("w.key_env", "SHELF_KEY", "shelf.example") in found.sends


def test_graph_inputs_are_read_by_their_role_whatever_their_type_id(tmp_path):
    """The history's question and the server's path roots come from the nodes whose type's
    ``graph_role`` is "input", not from one type id."""
    from modrag_nodes.graph_io import GraphInput
    from modrag_studio.engine.history.store import question_of
    from modrag_studio.server.disclosure import ClientView

    class Ask(GraphInput):
        type_id = "acme.ask"

    registry = build_registry(plugins=False)
    registry.register(Ask)
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "q", "type": "acme.ask",
         "params": {"name": "question", "default": "When is LP-07 serviced?"}},
        {"id": "c", "type": "acme.ask", "params": {"name": "corpus", "default": str(tmp_path)}},
    ]})
    assert question_of({}, doc, registry) == "When is LP-07 serviced?"
    assert tmp_path in ClientView.of(doc, registry).roots


def test_a_reroute_point_is_the_registrys_pass_through_type_with_its_own_ports():
    from modrag_studio.engine.edit.editor import GraphEditor
    from tests.engine.helpers import chain_graph

    class Point(NodeType):
        type_id = "acme.point"
        passes_through = True
        isolate_inputs = False
        inputs = (InputPort("inp", Any, required=False),)
        outputs = (OutputPort("out", Any),)

        def run(self, ctx: NodeContext, params: Any, inp: Any = None) -> dict[str, Any]:
            return {"out": inp}

    registry = NodeRegistry()
    for node_type in build_registry(plugins=False):
        if not node_type.passes_through:
            registry.register(node_type)
    registry.register(Point)
    editor = GraphEditor(registry)
    editor.reset(chain_graph())
    point = editor.insert_reroute("up", "text", "join", "texts", (10, 20))
    doc = editor.document()
    assert doc.node(point).type == "acme.point"
    assert {("up.text", f"{point}.inp"), (f"{point}.out", "join.texts")} <= {
        (e.source, e.target) for e in doc.edges}


def test_a_node_is_titled_by_the_param_its_type_names_as_its_role():
    from modrag_studio.engine.core.document import NodeSpec
    from modrag_studio.engine.layout.titles import node_title

    registry = build_registry(plugins=False)
    spec = NodeSpec.model_validate({"id": "t", "type": "query.transform",
                                    "params": {"mode": "hyde"}})
    assert node_title(spec, registry.get("query.transform")) == "HyDE"
    plain = NodeSpec.model_validate({"id": "p", "type": "acme.plain", "params": {"mode": "x"}})
    assert node_title(plain, Plain) == Plain.display_title()
