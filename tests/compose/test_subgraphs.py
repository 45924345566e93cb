"""Subgraphs: make / expand round trips, runs through a subgraph (inner ids in the trace and
the cache keys), boundary type errors naming the subgraph port, component files linked by
hash, and the undoable edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache, validate
from modrag_studio.engine.compose import components
from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.compose.inline import SubgraphError, collapse, inline
from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import (
    GraphDocument,
    dumps,
    load,
    save,
    to_json_dict,
)
from modrag_studio.engine.core.errors import GraphInvalid
from modrag_studio.engine.edit import subgraphs
from modrag_studio.engine.edit.editor import GraphEditor
from modrag_studio.engine.layout.auto_layout import with_auto_layout
from tests.engine.helpers import chain_graph, edge, graph, node

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_graphs"
REGISTRY = default_registry()


def _flat(doc: GraphDocument) -> GraphDocument:
    """A document with its subgraph instances made plain (detached) and expanded back."""
    for spec in doc.nodes:
        if spec.subgraph is not None:
            doc = inline(doc, spec.id)
    return doc


@pytest.mark.parametrize("name", ["modular_rag", "corrective_rag", "basic_rag"])
def test_make_then_expand_gives_the_same_document(name: str) -> None:
    doc = with_auto_layout(_flat(load(SAMPLES / f"{name}.json")), REGISTRY)
    ids = doc.node_ids()
    # a selection that is not contiguous in the file, wires fanning in and out
    chosen = ids[3:6] + ids[-4:-2]
    collapsed = collapse(doc, chosen, "block", title="Block")
    assert set(chosen).isdisjoint(collapsed.node_ids()) and "block" in collapsed.node_ids()
    assert collapsed != doc
    back = inline(collapsed, "block")
    assert back == doc
    assert dumps(back) == dumps(doc)  # byte for byte: the same file is written


def test_boundary_ports_are_named_after_inner_ports_and_typed_by_them() -> None:
    doc = _flat(load(SAMPLES / "modular_rag.json"))
    collapsed = collapse(doc, ["hybrid/vector", "hybrid/bm25", "hybrid/fusion"]
                         if "hybrid/vector" in doc.node_ids() else ["vector", "bm25", "fusion"],
                         "hybrid")
    node_type = type_of(collapsed.node("hybrid"), REGISTRY)
    assert [p.name for p in node_type.inputs] == ["index", "embedder", "query", "bm25_index"]
    assert [p.name for p in node_type.outputs] == ["results"]
    vector = REGISTRY.get("retrieve.vector")
    assert node_type.input_port("query").type is vector.input_port("query").type
    assert node_type.input_port("embedder").required is False  # optional inside
    boundary = collapsed.node("hybrid").subgraph.graph.boundary
    assert next(b for b in boundary.inputs if b.name == "query").to == [
        "vector.query", "bm25.query"]  # one outer wire fans out inside
    assert validate(collapsed, REGISTRY) == []


def test_expand_after_an_edit_still_gives_a_valid_graph() -> None:
    doc = chain_graph()
    collapsed = collapse(doc, ["up", "join"], "sub")
    moved = collapsed.model_copy(update={"edges": list(reversed(collapsed.edges))})
    back = inline(moved, "sub")
    assert sorted(e.source + e.target for e in back.edges) == sorted(
        e.source + e.target for e in doc.edges)
    assert validate(back, REGISTRY) == []


def test_collapse_refuses_a_taken_id_and_an_empty_selection() -> None:
    doc = chain_graph()
    with pytest.raises(SubgraphError, match="already taken"):
        collapse(doc, ["up"], "join")
    with pytest.raises(SubgraphError, match="at least one"):
        collapse(doc, [], "sub")


def test_a_run_through_a_subgraph_has_inner_ids_and_the_same_cache_keys(tmp_path) -> None:
    doc = chain_graph()
    collapsed = collapse(doc, ["up", "suffix", "join"], "sub")
    executor = Executor(REGISTRY, cache=NodeCache(disk_dir=tmp_path / "c"),
                        work_dir=tmp_path / "w")
    flat = executor.run(doc, {"question": "hi"})
    nested = executor.run(collapsed, {"question": "hi"})
    assert nested.ok and nested.outputs == flat.outputs == {"answer": "HI!"}
    visited = [v.node_id for v in nested.trace.visits]
    assert {"sub/up", "sub/suffix", "sub/join"} <= set(visited) and "sub" not in visited
    keys = {v.node_id: v.cache_key for v in flat.trace.visits}
    for visit in nested.trace.visits:
        assert visit.cache_key == keys[visit.node_id.removeprefix("sub/")], visit.node_id
        if visit.node_id.startswith("sub/"):
            assert visit.status == "cached"  # the flat run's results serve the subgraph's
    to_node = executor.run(collapsed, {"question": "hi"}, target="sub")
    assert {v.node_id for v in to_node.trace.visits} == {"q", "sub/up", "sub/suffix", "sub/join"}


def test_a_wire_of_the_wrong_type_names_the_subgraph_and_its_port() -> None:
    doc = graph([node("q", "graph.input", name="question"),
                 node("docs", "debug.constant", value="x"),
                 node("index", "bm25.index"), node("search", "retrieve.bm25"),
                 node("out", "graph.output", name="answer")],
                [edge("q.value", "search.query"), edge("index.index", "search.index"),
                 edge("search.results", "out.value")])
    collapsed = collapse(doc, ["search"], "sub")
    # wire a text into the subgraph's index input
    wrong = collapsed.model_copy(update={"edges": [
        e if e.target != "sub.index" else e.model_copy(update={"source": "q.value"})
        for e in collapsed.edges]})
    problems = validate(wrong, REGISTRY)
    port_problems = [p for p in problems if p.code == "subgraph-port-type"]
    assert len(port_problems) == 1, problems
    problem = port_problems[0]
    assert problem.node_id == "sub" and problem.field == "index"
    assert "subgraph 'sub' input 'index'" in problem.message and "search.index" in problem.message
    assert not [p for p in problems if p.code == "bad-connection"]  # said once, on the port
    with pytest.raises(GraphInvalid, match="subgraph 'sub' input 'index'"):
        Executor(REGISTRY).run(wrong, {"question": "q"})
    gone = collapsed.model_copy(update={"edges": [
        *collapsed.edges, edge_spec("sub.nothing", "out.value")]})
    assert any(p.code == "subgraph-port" and p.node_id == "sub" and "no output 'nothing'"
               in p.message for p in validate(gone, REGISTRY))


def edge_spec(source: str, target: str):
    from modrag_studio.engine.core.document import EdgeSpec
    return EdgeSpec(source=source, target=target)


# ------------------------------------------------------------------ component files


def _component_graph(tmp_path: Path) -> tuple[Path, Path]:
    """A component (upper + suffix + join) and a graph using it, saved side by side."""
    doc = chain_graph()
    collapsed = collapse(doc, ["up", "suffix", "join"], "shout")
    comp = tmp_path / "components" / "shout.subgraph.json"
    components.save_component(collapsed.node("shout").subgraph.graph, comp)
    graph_path = tmp_path / "g.json"
    spec = components.instance(comp, "shout", tmp_path)
    assert spec.subgraph.link.path == "components/shout.subgraph.json"
    save(collapsed.model_copy(update={"nodes": [
        spec if n.id == "shout" else n for n in collapsed.nodes]}), graph_path)
    return comp, graph_path


def test_a_linked_component_runs_and_a_changed_file_is_named(tmp_path) -> None:
    comp, graph_path = _component_graph(tmp_path)
    executor = Executor(REGISTRY, cache=NodeCache(disk_dir=tmp_path / "c"),
                        work_dir=tmp_path / "w")
    assert executor.run(load(graph_path), {"question": "hi"}).outputs == {"answer": "HI!"}
    data = json.loads(comp.read_text())
    next(n for n in data["nodes"] if n["id"] == "suffix")["params"]["value"] = "?"
    comp.write_text(json.dumps(data))
    problems = validate(load(graph_path), REGISTRY)
    assert [p.code for p in problems] == ["component-changed"]
    assert problems[0].node_id == "shout" and str(comp) in problems[0].message
    with pytest.raises(GraphInvalid, match="subgraph 'shout': component file .* changed"):
        executor.run(load(graph_path), {"question": "hi"})
    # the studio's update: the instance follows the new version (undoable)
    editor = GraphEditor(REGISTRY)
    editor.reset(load(graph_path), graph_path)
    old = editor.document()
    subgraphs.update_from_component(editor, "shout")
    assert validate(editor.document(), REGISTRY) == []
    assert executor.run(editor.document(), {"question": "hi"}).outputs == {"answer": "HI?"}
    editor.undo()
    assert editor.document() == old


def test_a_missing_component_is_named_and_a_detached_instance_runs_without_it(tmp_path) -> None:
    comp, graph_path = _component_graph(tmp_path)
    comp.unlink()
    doc = load(graph_path)
    problems = validate(doc, REGISTRY)
    assert [(p.code, p.node_id) for p in problems] == [("component-missing", "shout")]
    editor = GraphEditor(REGISTRY)
    editor.reset(doc, graph_path)
    subgraphs.detach(editor, "shout")
    result = Executor(REGISTRY, cache=NodeCache(disk_dir=tmp_path / "c"),
                      work_dir=tmp_path / "w").run(editor.document(), {"question": "yo"})
    assert result.outputs == {"answer": "YO!"}


def test_an_edited_copy_is_not_the_pinned_version(tmp_path) -> None:
    _, graph_path = _component_graph(tmp_path)
    doc = load(graph_path)
    doc.node("shout").subgraph.graph.node("suffix").params["value"] = "#"
    assert [p.code for p in validate(doc, REGISTRY)] == ["component-edited"]


def test_components_are_listed_and_loading_one_runs_nothing(tmp_path) -> None:
    comp, _ = _component_graph(tmp_path)
    (comp.parent / "broken.subgraph.json").write_text('{"nodes": []}')
    found = components.find_components([comp.parent, SAMPLES / "components"])
    by_name = {c.path.name: c for c in found}
    assert by_name["shout.subgraph.json"].inputs == ("text",)
    assert by_name["broken.subgraph.json"].error and "no boundary" in by_name[
        "broken.subgraph.json"].error
    assert "hybrid_retrieval.subgraph.json" in by_name


def test_samples_link_the_shipped_components() -> None:
    for name in ("modular_rag", "corrective_rag"):
        doc = load(SAMPLES / f"{name}.json")
        spec = doc.node("hybrid")
        assert spec.subgraph.link is not None and components.link_problem(
            spec, SAMPLES) is None
        assert set(expand(doc).inner_of("hybrid")) == {
            "hybrid/vector", "hybrid/bm25", "hybrid/fusion"}


# ------------------------------------------------------------------ undoable edits


def test_make_and_expand_are_undoable_edits() -> None:
    editor = GraphEditor(REGISTRY)
    editor.reset(chain_graph())
    start = editor.document()
    sub = subgraphs.make_subgraph(editor, ["up", "suffix"], title="Upper")
    made = editor.document()
    assert sub == "subgraph" and made.node(sub).title == "Upper"
    assert editor.undo_label().startswith("make subgraph")
    restored = subgraphs.expand_subgraph(editor, sub)
    assert set(restored) == {"up", "suffix"}
    assert editor.document() == start
    editor.undo()
    assert editor.document() == made
    editor.undo()
    assert editor.document() == start
    editor.redo()
    assert editor.document() == made
    assert to_json_dict(made)["nodes"][1]["subgraph"]["graph"]["boundary"]["inputs"][0][
        "name"] == "text"


# ------------------------------------------------------------------ exports


def test_mermaid_and_dot_draw_subgraphs_as_clusters_or_expanded(tmp_path) -> None:
    from modrag_studio.engine.layout.render import expanded_in_place, to_dot, to_mermaid

    doc = load(SAMPLES / "modular_rag.json")
    clusters = to_mermaid(doc, REGISTRY)
    block = clusters.split('subgraph s0["Hybrid retrieval (RRF) (hybrid)"]\n', 1)[1]
    block = block.split("    end\n", 1)[0]
    assert all(f"hybrid/{n} · " in block for n in ("vector", "bm25", "fusion")), block
    assert "rerank · " not in block and "rerank · " in clusters
    flat = to_mermaid(doc, REGISTRY, "expand")
    assert "subgraph" not in flat and "hybrid/fusion · fuse.rrf" in flat
    one_box = to_mermaid(doc, REGISTRY, "collapse")
    assert "hybrid · graph.subgraph" in one_box and "hybrid/fusion" not in one_box
    dot = to_dot(doc, REGISTRY)
    assert "subgraph cluster_0" in dot and 'label="Hybrid retrieval (RRF) (hybrid)"' in dot
    assert '"hybrid/fusion":out_results:e -> rerank:in_candidates:w' in dot
    assert "cluster" not in to_dot(doc, REGISTRY, "expand")
    expanded = expanded_in_place(doc)
    assert {"vector", "bm25", "fusion"} <= set(expanded.node_ids())
    assert validate(expanded, REGISTRY) == []


def test_a_variant_sets_a_param_inside_a_linked_subgraph(tmp_path) -> None:
    from modrag_studio.engine.core.document import VariantSpec
    from modrag_studio.engine.edit.variants import apply_variant

    _, graph_path = _component_graph(tmp_path)
    doc = load(graph_path)
    variant = VariantSpec(name="quiet", params={"shout/suffix": {"value": "."}})
    applied = apply_variant(doc, variant, REGISTRY)
    assert "shout/suffix" in applied.node_ids() and applied.node("shout/suffix").params == {
        "value": "."}
    assert doc.node("shout").subgraph.graph.node("suffix").params == {"value": "!"}
    result = Executor(REGISTRY, cache=NodeCache(disk_dir=tmp_path / "c"),
                      work_dir=tmp_path / "w").run(applied, {"question": "hi"})
    assert result.outputs == {"answer": "HI."}


def test_a_copy_of_a_document_does_not_keep_its_hash() -> None:
    doc = chain_graph()
    first = components.content_hash(doc)
    changed = doc.model_copy(update={"nodes": doc.nodes[:-1]})
    assert components.content_hash(changed) != first
    assert components.content_hash(doc) == first


def test_nested_subgraphs_run_as_outer_inner_node_and_expand_back(tmp_path) -> None:
    doc = chain_graph()
    nested = collapse(collapse(doc, ["up"], "inner"), ["inner", "suffix", "join"], "outer")
    assert nested.node_ids() == ["q", "outer", "out"]
    assert inline(inline(nested, "outer"), "inner") == doc
    result = Executor(REGISTRY, cache=NodeCache(disk_dir=tmp_path / "c"),
                      work_dir=tmp_path / "w").run(nested, {"question": "hi"})
    assert result.outputs == {"answer": "HI!"}
    assert {"outer/inner/up", "outer/suffix", "outer/join"} <= {
        v.node_id for v in result.trace.visits}


def test_a_loop_wire_into_a_subgraph_keeps_its_bound() -> None:
    doc = _flat(load(SAMPLES / "modular_rag.json"))
    collapsed = collapse(doc, ["rewrite", "synonyms"], "queries")
    loops = [e for e in collapsed.edges if e.loop is not None]
    assert [(e.source, e.target, e.loop.max_iterations) for e in loops] == [
        ("check.unsupported", "queries.feedback", 1)]
    assert validate(collapsed, REGISTRY) == []
    flat = expand(collapsed).doc
    assert [(e.source, e.target) for e in flat.edges if e.loop is not None] == [
        ("check.unsupported", "queries/rewrite.feedback")]
    assert inline(collapsed, "queries") == doc
