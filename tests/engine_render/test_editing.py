"""The Qt-free editable model: commands, undo/redo, refusals, clipboard, change events."""

from __future__ import annotations

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine import ConnectionRefused, validate
from modrag_studio.engine.core.document import GraphDocument, dumps, loads
from modrag_studio.engine.edit.editor import GraphEditor, ParamRejected


@pytest.fixture
def editor() -> GraphEditor:
    return GraphEditor(default_registry())


def test_add_connect_undo_redo(editor):
    changes = []
    editor.subscribe(changes.append)
    q = editor.add_node("graph.input", (0, 0))
    up = editor.add_node("text.upper", (300, 0))
    editor.connect(q, "value", up, "text")
    assert [e.source for e in editor.document().edges] == [f"{q}.value"]
    assert editor.dirty
    editor.undo()
    assert editor.document().edges == []
    editor.undo()
    editor.undo()
    assert editor.document().nodes == [] and not editor.dirty
    editor.redo()
    editor.redo()
    editor.redo()
    assert len(editor.document().edges) == 1
    assert [c.kind for c in changes] == ["edit"] * 3 + ["undo"] * 3 + ["redo"] * 3


def test_refused_connection_names_types_and_fitting_ports(editor):
    c = editor.add_node("debug.counter")
    up = editor.add_node("text.upper")
    before = editor.document()
    with pytest.raises(ConnectionRefused) as info:
        editor.connect(c, "count", up, "text")
    assert "int" in str(info.value) and "str" in str(info.value)
    assert editor.document() is before
    with pytest.raises(ConnectionRefused, match="no output port 'nope'"):
        editor.connect(c, "nope", up, "text")


def test_single_input_is_rewired(editor):
    a = editor.add_node("debug.constant")
    b = editor.add_node("debug.constant")
    up = editor.add_node("text.upper")
    editor.connect(a, "value", up, "text")
    editor.connect(b, "value", up, "text")
    assert [e.source for e in editor.document().edges] == [f"{b}.value"]


def test_param_validated_before_it_reaches_the_graph(editor):
    s = editor.add_node("debug.sleep")
    with pytest.raises(ParamRejected) as info:
        editor.set_param(s, "seconds", -3)
    assert info.value.field == "seconds" and "greater than or equal" in info.value.message
    assert editor.document().node(s).params == {}
    editor.set_param(s, "seconds", "2.5")
    assert editor.document().node(s).params == {"seconds": 2.5}
    editor.undo()
    assert editor.document().node(s).params == {}
    editor.redo()
    assert editor.document().node(s).params["seconds"] == 2.5


def test_delete_removes_edges_and_layout(editor):
    q = editor.add_node("graph.input")
    out = editor.add_node("graph.output")
    editor.connect(q, "value", out, "value")
    editor.remove_nodes([q])
    doc = editor.document()
    assert doc.node_ids() == [out] and doc.edges == [] and q not in doc.layout.nodes
    editor.undo()
    assert len(editor.document().edges) == 1


def test_copy_paste_and_duplicate_use_fresh_ids(editor):
    q = editor.add_node("graph.input", (10, 20))
    up = editor.add_node("text.upper", (300, 20))
    editor.connect(q, "value", up, "text")
    new = editor.duplicate([q, up])
    doc = editor.document()
    assert len(new) == 2 and not set(new) & {q, up}
    assert len(doc.edges) == 2
    assert doc.layout.nodes[new[0]].x == 50
    assert editor.paste("not json") == []
    editor.undo()
    assert len(editor.document().nodes) == 2


def test_macro_is_one_undo_step(editor):
    with editor.macro("build"):
        a = editor.add_node("debug.constant")
        b = editor.add_node("text.upper")
        editor.connect(a, "value", b, "text")
    assert editor.undo_label() == "build"
    editor.undo()
    assert editor.document().nodes == []


def test_groups_notes_moves_stay_in_layout(editor):
    a = editor.add_node("debug.constant")
    editor.move_nodes({a: (120, 80)})
    g = editor.add_group("Retrieval", (0, 0, 400, 300))
    n = editor.add_note("hello", (5, 5))
    editor.update_group(g, title="Search")
    editor.update_note(n, text="hi")
    doc = editor.document()
    assert doc.layout.nodes[a].x == 120 and doc.layout.groups[0].title == "Search"
    assert doc.layout.notes[0].text == "hi"
    assert doc.without_layout().model_dump() == GraphDocument.model_validate(
        {"nodes": [{"id": a, "type": "debug.constant"}]}).model_dump()
    assert loads(dumps(doc)) == doc
    editor.remove_layout_items([g, n])
    assert editor.document().layout.groups == [] and editor.document().layout.notes == []


def test_reset_lays_out_and_clears_history(editor):
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "q", "type": "graph.input"}, {"id": "o", "type": "graph.output"}],
        "edges": [{"from": "q.value", "to": "o.value"}]})
    editor.add_node("debug.constant")
    editor.reset(doc)
    assert not editor.can_undo and not editor.dirty
    assert set(editor.document().layout.nodes) == {"q", "o"}
    assert validate(editor.document(), default_registry()) == []
    editor.mark_saved()
    assert not editor.dirty


def test_unknown_type_is_refused_not_crashed(editor):
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "g", "type": "no.such"}, {"id": "o", "type": "graph.output"}]})
    editor.reset(doc)
    with pytest.raises(ConnectionRefused, match="unknown node type 'no.such'"):
        editor.connect("g", "x", "o", "value")
