"""Subgraphs in the studio: Make Subgraph / Expand Subgraph through the real actions (undoable,
the document restored exactly), a run on a collapsed subgraph (its state rolled up from the
inner nodes), the opened subgraph with its inner overlays, components in the palette, and the
update offered with what changed."""

from __future__ import annotations

import json

import pytest

from modrag_studio.engine.compose import components
from modrag_studio.engine.core.document import dumps, load, save
from tests.ui.run_helpers import rag_graph
from tests.ui.test_run_features import run_and_wait

pytestmark = pytest.mark.ui
HYBRID = ["words", "tail", "fuse"]


def make(window, ids, title="Two searches"):
    asked = []
    window.features.subgraphs.name = lambda parent: asked.append(parent) or title
    window.canvas.select_nodes(ids)
    window.actions["make_subgraph"].trigger()
    assert asked == [window]  # the title was asked for
    return window.canvas.selected_node_ids()


def test_make_and_expand_through_the_edit_menu_round_trip_and_undo(qtbot, make_window):
    window = make_window(rag_graph())
    editor, canvas = window.editor, window.canvas
    before = editor.document()
    assert make(window, HYBRID) == ["two_searches"]
    made = editor.document()
    assert made.node("two_searches").title == "Two searches"
    assert set(HYBRID).isdisjoint(canvas.node_ids()) and "two_searches" in canvas.node_ids()
    item = canvas.node_item("two_searches")
    ports = {p.name for p in item.inputs} | {p.name for p in item.outputs}
    assert ports == {"query", "chunks", "results"}  # one port per crossing wire's end
    assert ("question", "value", "two_searches", "query") in canvas.canvas_edges()
    window.actions["expand_subgraph"].trigger()
    assert editor.document() == before and dumps(editor.document()) == dumps(before)
    assert set(HYBRID) <= set(canvas.node_ids()) and "two_searches" not in canvas.node_ids()
    assert set(canvas.selected_node_ids()) == set(HYBRID)
    editor.undo()
    assert editor.document() == made and "two_searches" in canvas.node_ids()
    editor.undo()
    assert editor.document() == before and "two_searches" not in canvas.node_ids()


def test_a_run_rolls_up_on_the_collapsed_node_and_the_opened_one_shows_inner_overlays(
        qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    make(window, HYBRID, title="Subgraph")
    run_and_wait(qtbot, window)
    result = window.features.run.controller.last_result
    assert result.ok, result.trace.failure_summary()
    assert {"subgraph/words", "subgraph/tail", "subgraph/fuse"} <= {
        v.node_id for v in result.trace.visits}
    canvas = window.canvas
    assert canvas.node_state("subgraph") == "done"
    overlays = window.features.run.overlays
    assert "subgraph" in overlays.cards  # the fused results leaving the subgraph
    window.canvas.view.grab().save(str(tmp_path / "collapsed.png"))
    window.canvas.select_nodes(["subgraph"])
    view = window.features.subgraphs.open_selected()
    qtbot.waitExposed(view)
    assert set(view.canvas.node_ids()) == set(HYBRID)
    for node_id in HYBRID:
        assert view.canvas.node_state(node_id) == "done", node_id
    assert set(HYBRID) <= set(view.overlays.cards)
    view.canvas.fit_all()
    view.grab().save(str(tmp_path / "opened.png"))
    # read-only: a move is put back
    view.editor.move_nodes({"fuse": (5000.0, 5000.0)})
    qtbot.waitUntil(lambda: not view.editor.can_undo)
    assert view.editor.document() == window.editor.document().node(
        "subgraph").subgraph.graph.model_copy(update={"layout": view.editor.document().layout})
    view.close()


def test_components_in_the_palette_link_and_a_changed_file_is_offered_with_its_changes(
        qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    feature = window.features.subgraphs
    make(window, HYBRID, title="Subgraph")
    path = tmp_path / "components" / "two_searches.subgraph.json"
    feature.save_as_component("subgraph", path)
    spec = window.editor.document().node("subgraph")
    assert spec.subgraph.link is not None
    feature.folders = [path.parent]
    feature.refresh_palette()
    palette = window.palette
    assert "Components" in palette.categories()
    entry = f"component:{path}"
    assert palette.item_for(entry) is not None
    palette.on_activate[0](entry)  # as a double-click in the palette does
    added = window.canvas.selected_node_ids()
    assert added == ["two_searches"]
    assert window.editor.document().node("two_searches").subgraph.link.sha256 == \
        spec.subgraph.link.sha256
    graph_path = tmp_path / "g.json"
    save(window.editor.document(), graph_path)
    data = json.loads(path.read_text())
    next(n for n in data["nodes"] if n["id"] == "words")["params"]["top_k"] = 2
    path.write_text(json.dumps(data))
    asked = []
    feature.ask = lambda parent, node_id, where, lines: asked.append((node_id, lines)) or True
    window.editor.reset(load(graph_path), graph_path)  # opening the graph offers the update
    assert [a[0] for a in asked] == ["subgraph", "two_searches"]
    assert "words.top_k: 4 -> 2" in asked[0][1]
    for node_id in ("subgraph", "two_searches"):
        link = window.editor.document().node(node_id).subgraph.link
        assert link.sha256 == components.content_hash(components.load_component(path))
    window.editor.undo()
    assert window.editor.document().node("two_searches").subgraph.link.sha256 == \
        spec.subgraph.link.sha256


def test_a_declined_update_leaves_the_problem_on_the_subgraph_node(qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    feature = window.features.subgraphs
    make(window, HYBRID, title="Searches")
    path = tmp_path / "searches.subgraph.json"
    feature.save_as_component("searches", path)
    graph_path = tmp_path / "g.json"
    save(window.editor.document(), graph_path)
    data = json.loads(path.read_text())
    data["nodes"] = [n for n in data["nodes"] if n["id"] != "tail"]
    data["edges"] = [e for e in data["edges"] if not e["from"].startswith("tail.")]
    data["boundary"]["inputs"] = [{**b, "to": [t for t in b["to"] if not t.startswith("tail.")]}
                                  for b in data["boundary"]["inputs"]]
    path.write_text(json.dumps(data))
    asked = []
    feature.ask = lambda parent, node_id, where, lines: asked.append(lines) and False
    window.editor.reset(load(graph_path), graph_path)
    assert asked and "node removed: tail (toy.search)" in asked[0]
    window.problems.refresh()
    codes = {(p.code, p.node_id) for p in window.problems.problems}
    assert ("component-changed", "searches") in codes
    assert "searches" in window.problems.by_node()
    run_and_wait(qtbot, window)
    message = window.statusBar().currentMessage()
    assert "Cannot run" in message and "subgraph 'searches'" in message, message
    assert window.features.run.controller.last_result is None
