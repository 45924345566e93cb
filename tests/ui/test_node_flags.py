"""Bypass / Enable, Pin Output / Unpin and reroute points in the studio."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from modrag_studio.ui.canvas.items import BYPASS_OPACITY
from modrag_studio.ui.present.presentation import PresentationWindow
from tests.ui.run_helpers import flag_graph
from tests.ui.test_run_features import run_and_wait

pytestmark = pytest.mark.ui


def menu_texts(window, node_id: str) -> list[str]:
    canvas = window.canvas
    pos = canvas.view.mapFromScene(canvas.node_scene_rect(node_id).center())
    menu = window.features.editor_extras.context_menu(pos)
    texts = [a.text() for a in menu.actions()]
    menu.close()
    return texts


def trigger(window, node_id: str, text: str) -> None:
    canvas = window.canvas
    pos = canvas.view.mapFromScene(canvas.node_scene_rect(node_id).center())
    menu = window.features.editor_extras.context_menu(pos)
    menu.close()
    next(a for a in menu.actions() if a.text() == text).trigger()


def test_bypass_from_the_node_menu_dims_the_card_runs_through_and_undoes(qtbot, make_window):
    window = make_window(flag_graph())
    canvas, editor = window.canvas, window.editor
    texts = menu_texts(window, "normalise")
    assert texts[:6] == ["Run to Here", "Re-run This Node", "Inspect", "Help…", "Bypass",
                         "Pin Output"]
    trigger(window, "normalise", "Bypass")
    assert editor.document().node("normalise").bypass
    assert canvas.node_flags("normalise") == {"bypassed"}
    assert canvas.node_item("normalise").opacity() == pytest.approx(BYPASS_OPACITY)
    assert "Enable" in menu_texts(window, "normalise")
    run_and_wait(qtbot, window)
    result = window.features.run.controller.last_result
    assert result.ok and result.trace.last_visit("normalise").status == "bypassed"
    assert ", 1 bypassed" in window.statusBar().currentMessage()
    assert result.outputs["answer"].query == "what lowers blood pressure"  # not upper-cased
    assert canvas.node_state("normalise") == "bypassed"
    editor.undo()
    assert not editor.document().node("normalise").bypass
    assert canvas.node_flags("normalise") == set()
    assert canvas.node_item("normalise").opacity() == 1.0


def test_a_bypass_with_no_compatible_input_is_flagged_on_the_node(qtbot, make_window):
    window = make_window(flag_graph())
    trigger(window, "fuse", "Bypass")
    qtbot.waitUntil(lambda: "fuse" in window.canvas.badged_node_ids())
    badge = window.canvas.decor.badges["fuse"]
    assert "cannot bypass 'fuse': output 'results'" in badge.toolTip()
    errors: list[str] = []
    window.features.run.controller.run_error.connect(errors.append)
    run_and_wait(qtbot, window)
    qtbot.waitUntil(lambda: bool(errors))
    assert "cannot bypass 'fuse'" in errors[0]


def test_pin_output_then_runs_use_it_until_unpinned_with_undo(qtbot, make_window, tmp_path):
    window = make_window(flag_graph())
    canvas, editor = window.canvas, window.editor
    run_and_wait(qtbot, window)
    trigger(window, "split", "Pin Output")
    assert canvas.node_flags("split") == {"pinned"}
    assert "Unpin" in menu_texts(window, "split")
    assert not editor.dirty  # a pin is not part of the file
    run_and_wait(qtbot, window)
    trace = window.features.run.controller.last_result.trace
    assert trace.last_visit("split").status == "pinned"
    assert trace.visits_of("docs") == []  # it only fed the pinned node
    assert canvas.node_state("split") == "pinned"
    editor.undo()  # unpins
    assert canvas.node_flags("split") == set()
    run_and_wait(qtbot, window)
    trace = window.features.run.controller.last_result.trace
    assert trace.last_visit("split").status in ("done", "cached")
    editor.redo()
    assert canvas.node_flags("split") == {"pinned"}
    trigger(window, "split", "Unpin")
    assert canvas.node_flags("split") == set()


def test_pin_output_before_any_run_says_why(qtbot, make_window):
    window = make_window(flag_graph())
    trigger(window, "split", "Pin Output")
    assert window.canvas.node_flags("split") == set()
    assert "run the graph" in window.statusBar().currentMessage()


def test_double_click_on_a_wire_adds_a_reroute_point_and_delete_joins_it(qtbot, make_window):
    window = make_window(flag_graph())
    canvas, editor = window.canvas, window.editor
    window.canvas.fit_all()
    a = canvas.port_scene_pos("fuse", "results", "out")
    b = canvas.port_scene_pos("answer", "evidence", "in")
    middle = (a + b) / 2
    assert canvas.wire_at(middle) == ("fuse", "results", "answer", "evidence")
    before = sorted((e.source, e.target) for e in editor.document().edges)
    view_pos = canvas.view.mapFromScene(middle)
    qtbot.mouseDClick(canvas.view.viewport(), Qt.MouseButton.LeftButton, pos=view_pos)
    doc = editor.document()
    reroutes = [n.id for n in doc.nodes if n.type == "flow.reroute"]
    assert len(reroutes) == 1
    dot = reroutes[0]
    assert canvas.is_reroute(dot)
    rect = canvas.node_scene_rect(dot)
    assert rect.width() <= 20 and rect.contains(middle)
    assert not canvas.node_item(dot).text_item.isVisible()
    assert ("fuse.results", f"{dot}.value") in [(e.source, e.target) for e in doc.edges]
    run_and_wait(qtbot, window)
    trace = window.features.run.controller.last_result.trace
    assert trace.status == "ok" and trace.last_visit(dot).status == "done"
    shown = PresentationWindow(trace, canvas)  # a dot is not a step of the replay
    assert dot not in [visit.node_id for visit, _ in shown.steps]
    assert "answer" in [visit.node_id for visit, _ in shown.steps]
    shown.close()
    canvas.select_nodes([dot])
    window.delete_selection()
    assert sorted((e.source, e.target) for e in editor.document().edges) == before


def test_wire_context_menu_adds_a_reroute_point(qtbot, make_window):
    window = make_window(flag_graph())
    canvas = window.canvas
    a = canvas.port_scene_pos("split", "chunks", "out")
    b = canvas.port_scene_pos("words", "chunks", "in")
    middle = (a + b) / 2
    menu = window.features.editor_extras.context_menu(canvas.view.mapFromScene(middle))
    menu.close()
    action = next(a for a in menu.actions() if a.text() == "Add Reroute Point")
    action.trigger()
    doc = window.editor.document()
    dots = [n.id for n in doc.nodes if n.type == "flow.reroute"]
    assert len(dots) == 1
    window.editor.undo()
    assert [n for n in window.editor.document().nodes if n.type == "flow.reroute"] == []


def test_edit_menu_keys_bypass_and_pin_the_selection(qtbot, make_window):
    window = make_window(flag_graph())
    canvas, editor = window.canvas, window.editor
    canvas.select_nodes(["normalise", "words"])
    window.actions["bypass"].trigger()
    doc = editor.document()
    assert doc.node("normalise").bypass and doc.node("words").bypass
    window.actions["bypass"].trigger()  # all bypassed: enable them again
    assert not editor.document().node("words").bypass
    assert window.actions["bypass"].shortcut().toString() == "Ctrl+B"
    run_and_wait(qtbot, window)
    canvas.select_nodes(["split"])
    window.actions["pin"].trigger()
    assert canvas.node_flags("split") == {"pinned"}
    window.actions["pin"].trigger()
    assert canvas.node_flags("split") == set()
