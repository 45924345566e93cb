"""The editor on screen: palette, wiring on the canvas, refusals, properties, undo/redo."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

pytestmark = pytest.mark.ui


def view_pos(window, node_id: str, port: str, kind: str) -> QPoint:
    return window.canvas.view.mapFromScene(window.canvas.port_scene_pos(node_id, port, kind))


def drag(window, start: QPoint, end: QPoint, check_midway=None) -> None:
    viewport = window.canvas.view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for step in range(1, 6):
        QTest.mouseMove(viewport, start + (end - start) * step / 5)
    if check_midway is not None:
        check_midway()
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def test_palette_groups_filters_and_adds_by_drop_and_activation(main_window):
    palette = main_window.palette
    assert "Developer" not in palette.categories() and "Debug" not in palette.categories()
    main_window.actions["developer_nodes"].trigger()  # debug/test nodes, on demand
    assert {"Developer", "Graph", "Text"} <= set(palette.categories())
    palette.search.setText("upper")
    assert palette.visible_type_ids() == ["text.upper"]
    palette.search.setText("")
    # drag from the palette: the mime data the tree produces, dropped on the viewer
    item = palette.item_for("debug.constant")
    mime = palette.tree.mimeData([item])
    main_window.canvas.view.data_dropped.emit(mime, QPoint(120, 80))
    doc = main_window.editor.document()
    assert [n.type for n in doc.nodes] == ["debug.constant"]
    assert (doc.layout.nodes["constant_1"].x, doc.layout.nodes["constant_1"].y) == (120, 80)
    assert main_window.canvas.selected_node_ids() == ["constant_1"]
    # double-click / Enter in the palette adds at the view centre
    palette._activate_item(palette.item_for("text.upper"))
    assert main_window.editor.document().node_ids() == ["constant_1", "upper_1"]
    assert main_window.canvas.node_ids() == ["constant_1", "upper_1"]
    assert "*" in main_window.windowTitle()


def test_tab_search_adds_a_node(main_window, qtbot):
    view = main_window.canvas.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Tab)
    popup = main_window.search_popup
    assert popup.isVisible()
    QTest.keyClicks(popup.line, "sleep")
    assert popup.results.count() == 0  # a test-only node: hidden by default
    QTest.keyClick(popup.line, Qt.Key.Key_Escape)
    main_window.palette.developer_box.setChecked(True)
    QTest.keyClick(view, Qt.Key.Key_Tab)
    QTest.keyClicks(popup.line, "sleep")
    assert popup.results.count() == 1
    QTest.keyClick(popup.line, Qt.Key.Key_Return)
    assert not popup.isVisible()
    assert [n.type for n in main_window.editor.document().nodes] == ["debug.sleep"]
    QTest.keyClick(view, Qt.Key.Key_Tab)
    QTest.keyClick(popup.line, Qt.Key.Key_Escape)
    assert not popup.isVisible()


def test_wire_compatible_ports_with_the_mouse_and_highlight(main_window):
    editor = main_window.editor
    a = editor.add_node("debug.constant", (0, 0))
    b = editor.add_node("text.upper", (300, 0))
    c = editor.add_node("debug.counter", (300, 160))
    main_window.canvas.fit_all()
    seen = {}

    def midway():
        canvas = main_window.canvas
        seen["upper"] = canvas.input_port_items(b)["text"].hovered
        seen["counter_count_dimmed"] = canvas.input_port_items(c)["count"].opacity() < 1
    drag(main_window, view_pos(main_window, a, "value", "out"),
         view_pos(main_window, b, "text", "in"), midway)
    assert seen == {"upper": True, "counter_count_dimmed": True}
    assert [(e.source, e.target) for e in editor.document().edges] == [
        (f"{a}.value", f"{b}.text")]
    assert main_window.canvas.canvas_edges() == {(a, "value", b, "text")}
    assert main_window.canvas.node_item(c).opacity() == 1
    assert all(p.opacity() == 1 for p in main_window.canvas.input_port_items(c).values())
    main_window.actions["undo"].trigger()
    assert editor.document().edges == [] and main_window.canvas.canvas_edges() == set()
    main_window.actions["redo"].trigger()
    assert main_window.canvas.canvas_edges() == {(a, "value", b, "text")}


def test_incompatible_connection_is_refused_with_its_reason(main_window):
    editor = main_window.editor
    counter = editor.add_node("debug.counter", (0, 0))
    upper = editor.add_node("text.upper", (300, 0))
    main_window.canvas.fit_all()
    drag(main_window, view_pos(main_window, counter, "count", "out"),
         view_pos(main_window, upper, "text", "in"))
    message = main_window.statusBar().currentMessage()
    assert "output 'count' is int" in message and "input 'text' takes str" in message
    assert main_window.canvas.current_hint() == message
    assert editor.document().edges == [] and main_window.canvas.canvas_edges() == set()
    assert not editor.can_undo or editor.undo_label().startswith("add")


def test_move_is_undoable_and_layout_only(main_window):
    editor = main_window.editor
    a = editor.add_node("debug.constant", (0, 0))
    main_window.canvas.fit_all()
    item = main_window.canvas.node_item(a)
    start = main_window.canvas.view.mapFromScene(item.sceneBoundingRect().center())
    drag(main_window, start, start + QPoint(60, 40))
    x, y = editor.node_position(a)
    assert x > 20 and y > 10
    assert editor.document().without_layout().nodes[0].params == {}
    editor.undo()
    assert editor.node_position(a) == (0, 0)
    assert item.xy_pos == [0.0, 0.0]


def test_param_edit_validates_inline_and_undoes(main_window):
    editor = main_window.editor
    sleep = editor.add_node("debug.sleep")
    gin = editor.add_node("graph.input")
    main_window.canvas.select_nodes([sleep])
    fields = main_window.properties.fields
    assert set(fields) == {"seconds", "steps"}
    assert fields["seconds"].widget.maximum() == 3600
    fields["seconds"].widget.setValue(2.5)
    fields["seconds"].widget.editingFinished.emit()
    assert editor.document().node(sleep).params == {"seconds": 2.5}
    main_window.actions["undo"].trigger()
    assert editor.document().node(sleep).params == {}
    assert fields["seconds"].widget.value() == 1.0
    main_window.actions["redo"].trigger()
    assert fields["seconds"].widget.value() == 2.5
    # an invalid value never reaches the graph; the message is shown at the field
    main_window.canvas.select_nodes([gin])
    name = main_window.properties.fields["name"]
    name.widget.setText("not a name!")
    name.widget.editingFinished.emit()
    assert editor.document().node(gin).params == {}
    assert "pattern" in name.error.text() and not name.error.isHidden()
    name.widget.setText("question")
    name.widget.editingFinished.emit()
    assert editor.document().node(gin).params == {"name": "question"}
    assert name.error.isHidden()


def test_schema_driven_editors(main_window):
    editor = main_window.editor
    route = editor.add_node("debug.match_route")
    items = editor.add_node("debug.list")
    main_window.canvas.select_nodes([route])
    fields = main_window.properties.fields
    assert fields["ignore_case"].kind == "bool" and fields["pattern"].kind == "str"
    fields["ignore_case"].widget.setChecked(False)
    assert editor.document().node(route).params == {"ignore_case": False}
    main_window.canvas.select_nodes([items])
    lines = main_window.properties.fields["items"]
    assert lines.kind == "lines" and lines.widget.toPlainText() == "a\nb"
    lines.widget.setPlainText("x\ny\nz")
    lines._commit()
    assert editor.document().node(items).params == {"items": ["x", "y", "z"]}


def test_clipboard_delete_select_all_groups_and_notes(main_window):
    editor = main_window.editor
    a = editor.add_node("graph.input", (0, 0))
    b = editor.add_node("text.upper", (250, 0))
    editor.connect(a, "value", b, "text")
    main_window.select_all()
    assert sorted(main_window.canvas.selected_node_ids()) == sorted([a, b])
    main_window.copy()
    main_window.paste()
    assert len(editor.document().nodes) == 4 and len(editor.document().edges) == 2
    assert len(main_window.canvas.selected_node_ids()) == 2
    main_window.delete_selection()
    assert editor.document().node_ids() == [a, b]
    main_window.canvas.select_nodes([b])
    main_window.duplicate()
    assert len(editor.document().nodes) == 3
    main_window.canvas.select_nodes([a, b])
    group = main_window.group_selection("Question path")
    note = main_window.add_note("explain")
    layout = editor.document().layout
    assert [g.title for g in layout.groups] == ["Question path"]
    assert layout.groups[0].width > 250 and [n.text for n in layout.notes] == ["explain"]
    assert main_window.canvas.layout_item(group) is not None
    editor.undo()
    assert main_window.canvas.layout_item(note) is None
    # dragging a group moves the nodes inside it in one undo step
    item = main_window.canvas.layout_item(group)
    item._press_pos = item.pos()
    item.setPos(item.pos() + QPointF(100, 0))
    item.on_moved(item, item._press_pos, item.pos())
    assert editor.node_position(a)[0] == 100
    editor.undo()
    assert editor.node_position(a)[0] == 0


def test_problems_badge_nodes_and_select_on_click(main_window, qtbot):
    editor = main_window.editor
    upper = editor.add_node("text.upper")
    qtbot.waitUntil(lambda: bool(main_window.problems.problems), timeout=15000)
    tree = main_window.problems.tree
    assert tree.topLevelItemCount() == 1 and "not connected" in tree.topLevelItem(0).text(3)
    assert main_window.canvas.badged_node_ids() == [upper]
    main_window.canvas.select_nodes([])
    main_window.problems._clicked(tree.topLevelItem(0))
    assert main_window.canvas.selected_node_ids() == [upper]
    const = editor.add_node("debug.constant")
    editor.connect(const, "value", upper, "text")
    qtbot.waitUntil(lambda: not main_window.problems.problems, timeout=15000)
    assert main_window.canvas.badged_node_ids() == []


def test_canvas_context_menu_offers_edit_commands(main_window):
    menu = main_window.canvas_menu(QPoint(50, 50))
    actions = menu.actions()
    assert actions[0].text().startswith("Add Node")
    assert main_window.actions["delete"] in actions and main_window.actions["group"] in actions
    actions[0].trigger()
    assert main_window.search_popup.isVisible()


def test_keyboard_shortcuts_on_the_canvas(main_window, qtbot):
    editor = main_window.editor
    a = editor.add_node("debug.constant")
    main_window.activateWindow()
    view = main_window.canvas.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert main_window.canvas.selected_node_ids() == [a]
    QTest.keyClick(view, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert len(editor.document().nodes) == 2
    QTest.keyClick(view, Qt.Key.Key_Delete)
    assert editor.document().node_ids() == [a]
    QTest.keyClick(view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(editor.document().nodes) == 2
    # typing in a text field edits the text, it does not delete nodes
    main_window.canvas.select_nodes([a])
    field = main_window.properties.fields["value"].widget
    field.setFocus()
    field.setText("abc")
    QTest.keyClick(field, Qt.Key.Key_Delete)
    assert len(editor.document().nodes) == 2


def test_dragged_node_is_reported_live(main_window):
    editor = main_window.editor
    a = editor.add_node("debug.constant", (0, 0))
    main_window.canvas.fit_all()
    moved = []
    main_window.canvas.on_node_moved.append(moved.append)
    item = main_window.canvas.node_item(a)
    start = main_window.canvas.view.mapFromScene(item.sceneBoundingRect().center())
    viewport = main_window.canvas.view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(viewport, start + QPoint(30, 0))
    QTest.mouseMove(viewport, start + QPoint(60, 0))
    QApplication.processEvents()
    assert moved.count(a) >= 1 and editor.node_position(a) == (0, 0)  # not committed yet
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       start + QPoint(60, 0))
    assert editor.node_position(a)[0] > 20


def test_resize_groups_and_colour_nodes_are_layout_edits(main_window):
    editor = main_window.editor
    a = editor.add_node("debug.constant")
    group = main_window.group_selection("G")
    item = main_window.canvas.layout_item(group)
    item.set_size(500, 260)
    item.handle.mouseReleaseEvent(None)
    layout = editor.document().layout
    assert (layout.groups[0].width, layout.groups[0].height) == (500, 260)
    main_window.canvas.select_nodes([a])
    menu = main_window.canvas_menu(QPoint(10, 10))
    colours = next(x.menu() for x in menu.actions() if x.text() == "Node Colour")
    next(x for x in colours.actions() if x.text() == "Blue").trigger()
    assert editor.document().layout.nodes[a].color == "#2f4f7a"
    assert main_window.canvas.node_item(a).color[:3] == (0x2f, 0x4f, 0x7a)
    editor.undo()
    assert editor.document().layout.nodes[a].color is None
    assert main_window.canvas.node_item(a).color[:3] != (0x2f, 0x4f, 0x7a)
    assert editor.document().without_layout().nodes[0].params == {}


def test_every_state_has_a_colour():
    from modrag_studio.engine.run.trace import NODE_STATES
    from modrag_studio.ui.canvas.items import STATE_COLORS

    assert set(STATE_COLORS) == set(NODE_STATES)


def test_zoom_keeps_the_point_under_the_pointer_in_place(main_window):
    from PySide6.QtCore import QPoint

    from modrag_studio.ui.canvas.view import zoom_by
    from tests.engine.helpers import chain_graph

    main_window.editor.reset(chain_graph())
    main_window.canvas.fit_all()
    view = main_window.canvas.view
    corner = QPoint(60, 60)
    before = view.mapToScene(corner)
    zoom_by(view, 1.25, corner)
    after = view.mapToScene(corner)
    assert abs(after.x() - before.x()) < 3 and abs(after.y() - before.y()) < 3
    centre = view.viewport().rect().center()
    middle = view.mapToScene(centre)
    zoom_by(view, 1.25, centre)  # the on-canvas buttons: around the middle
    moved = view.mapToScene(centre)
    assert abs(moved.x() - middle.x()) < 3 and abs(moved.y() - middle.y()) < 3
    assert abs(view.mapToScene(corner).x() - after.x()) > 10  # the corner point did move
