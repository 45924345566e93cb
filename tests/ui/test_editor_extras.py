"""Editor basics: minimap, zoom, a node's right-click menu, wire-drop, paste at the cursor."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, QPointF
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QApplication

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.edit.clipboard import fragment_corner
from modrag_studio.ui.canvas.editor_extras import compatible_types

pytestmark = pytest.mark.ui


class _Release:
    def __init__(self, pos: QPointF) -> None:
        self._pos = pos

    def scenePos(self) -> QPointF:  # noqa: N802 (Qt's name)
        return self._pos


def test_compatible_types_fit_the_wire_and_exact_types_come_first():
    registry = default_registry()
    found = compatible_types(registry, list[Chunk], "out")
    ids = [type_id for type_id, _ in found]
    assert "embed.chunks" in ids and "bm25.index" in ids
    assert "text.upper" not in ids and not any(i.startswith("debug.") for i in ids)
    loose = [registry.get(type_id).input_port(port).type is Any for type_id, port in found]
    assert loose == sorted(loose)  # catch-all inputs last


def test_wire_dropped_on_empty_canvas_adds_a_connected_node(main_window, qtbot):
    editor, canvas = main_window.editor, main_window.canvas
    source = editor.add_node("graph.input", (0, 0))
    node = canvas._nodes[source]
    view = canvas.view
    port = node.get_output("value").view
    view._origin_pos = view._previous_pos = view.mapFromScene(port.scenePos())
    view.start_live_connection(port)
    empty = QPointF(900, 600)
    view.apply_live_connection(_Release(empty))  # released where there is no node or port
    popup = main_window.search_popup
    assert popup.isVisible() and popup.allowed
    assert popup.results.count() == len(popup.allowed) > 3
    popup.line.setText("upper")
    popup.choose_current()
    doc = editor.document()
    added = [n for n in doc.node_ids() if n != source]
    assert [doc.node(n).type for n in added] == ["text.upper"]
    assert [(e.source_node, e.target_node) for e in doc.edges] == [(source, added[0])]
    editor.undo()  # one step: node and wire
    assert editor.document().node_ids() == [source]
    assert popup.allowed is None  # the next Tab search offers every node again


def test_node_menu_runs_to_here_and_opens_help(main_window, qtbot):
    node_id = main_window.add_node_at("split.recursive", QPointF(0, 0))
    canvas = main_window.canvas
    view_pos = canvas.view.mapFromScene(canvas.node_scene_rect(node_id).center())
    menu = main_window.features.editor_extras.context_menu(view_pos)
    texts = [a.text() for a in menu.actions()]
    assert texts[:4] == ["Run to Here", "Re-run This Node", "Inspect", "Help…"]
    assert any("Copy" in t for t in texts)
    menu.close()
    next(a for a in menu.actions() if a.text() == "Help…").trigger()
    qtbot.waitUntil(lambda: main_window.features.studio_ux.help_dialog.isVisible())
    empty = main_window.features.editor_extras.context_menu(QPoint(5, 5))
    assert "Run to Here" not in [a.text() for a in empty.actions()]
    empty.close()


def test_zoom_keys_buttons_and_minimap(main_window, qtbot):
    main_window.editor.add_node("graph.input", (0, 0))
    main_window.editor.add_node("graph.output", (1800, 900))
    view = main_window.canvas.view
    main_window.canvas.fit_all()
    start = view.transform().m11()
    main_window.actions["zoom_in"].trigger()
    assert view.transform().m11() == pytest.approx(start * 1.25, rel=0.02)
    main_window.features.editor_extras.zoom_controls.buttons["out"].click()
    main_window.features.editor_extras.zoom_controls.buttons["out"].click()
    assert view.transform().m11() < start
    minimap = main_window.features.editor_extras.minimap
    main_window.canvas.fit_all()  # the whole graph in view: the minimap would only cover it
    qtbot.waitUntil(lambda: not minimap.isVisible())
    main_window.actions["zoom_in"].trigger()
    main_window.actions["zoom_in"].trigger()
    qtbot.waitUntil(minimap.isVisible)
    assert minimap.width() <= max(120, view.width() * 0.2) + 1  # a small canvas keeps room
    minimap.refit()
    target = QPointF(1800, 900)
    from modrag_studio.ui.canvas.view import pan_to, visible_rect
    pan_to(view, target)
    assert visible_rect(view).contains(target)
    main_window.actions["minimap"].trigger()
    qtbot.waitUntil(lambda: not minimap.isVisible())
    main_window.actions["zoom_in"].trigger()  # turned off: stays hidden when zoomed in
    main_window.grab()
    assert not minimap.needed() and not minimap.isVisible()


def test_paste_lands_at_the_cursor(main_window, qtbot):
    editor = main_window.editor
    first = editor.add_node("text.upper", (100, 100))
    main_window.canvas.select_nodes([first])
    main_window.copy()
    assert fragment_corner(QApplication.clipboard().text()) == (100.0, 100.0)
    view = main_window.canvas.view
    spot = QPoint(view.width() // 3, view.height() // 3)
    QCursor.setPos(view.mapToGlobal(spot))
    if view.mapFromGlobal(QCursor.pos()) != spot:  # a platform that ignores setPos
        main_window._paste_offset = lambda text: (300.0, 200.0)
        expected = QPointF(400, 300)
    else:
        expected = view.mapToScene(spot)
    main_window.paste()
    new = [n for n in editor.document().node_ids() if n != first]
    x, y = editor.node_position(new[0])
    assert (x, y) == pytest.approx((round(expected.x(), 1), round(expected.y(), 1)), abs=1.0)


def test_the_minimap_takes_no_drop_and_moves_off_the_nodes(main_window, qtbot):
    from PySide6.QtCore import QMimeData, QPoint, Qt
    from PySide6.QtGui import QDropEvent

    from modrag_studio.ui.panels.palette import MIME_NODE_TYPE

    editor = main_window.editor
    editor.add_node("graph.input", (0, 0))
    editor.add_node("graph.output", (2400, 1400))
    main_window.canvas.fit_all()
    main_window.actions["zoom_in"].trigger()
    main_window.actions["zoom_in"].trigger()
    minimap = main_window.features.editor_extras.minimap
    qtbot.waitUntil(minimap.isVisible)
    view = main_window.canvas.view

    mime = QMimeData()
    mime.setData(MIME_NODE_TYPE, b"text.upper")
    mime.setText("text.upper")
    inside = QPoint(minimap.width() // 2, minimap.height() // 2)
    expected = view.mapToScene(minimap.mapTo(view, inside))
    before = set(editor.document().node_ids())
    drop = QDropEvent(inside.toPointF(), Qt.DropAction.CopyAction, mime,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    # a real drag delivers its drop to the minimap's viewport, whose events the minimap
    # filters (offscreen there is no drag in progress, so Qt would not deliver a sent one)
    assert minimap.eventFilter(minimap.viewport(), drop)
    added = set(editor.document().node_ids()) - before
    assert len(added) == 1  # the drop reached the canvas under the minimap
    node = editor.document().layout.nodes[added.pop()]
    assert abs(node.x - expected.x()) < 2 and abs(node.y - expected.y()) < 2

    corner = minimap.pos()
    under = view.mapToScene(minimap.geometry().center())
    editor.add_node("text.upper", (round(under.x()), round(under.y())))  # a node under it
    minimap.place()
    assert minimap.pos() != corner
    covered = view.mapToScene(minimap.geometry()).boundingRect()
    assert not any(covered.intersects(main_window.canvas.node_item(n).sceneBoundingRect())
                   for n in main_window.canvas.node_ids())


def test_the_bottom_panels_fold_away_for_room_and_come_back(main_window, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget

    def bottom():
        return [d for d in main_window.findChildren(QDockWidget)
                if main_window.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea]

    open_before = {d.objectName() for d in bottom() if d.isVisible()}
    assert len(open_before) >= 2  # problems, timeline, evidence...
    canvas_height = main_window.canvas.view.height()
    main_window.actions["bottom_panels"].trigger()  # Ctrl+J
    qtbot.waitUntil(lambda: not any(d.isVisible() for d in bottom()))
    # the room went to the canvas
    qtbot.waitUntil(lambda: main_window.canvas.view.height() > canvas_height + 100)
    main_window.actions["bottom_panels"].trigger()
    qtbot.waitUntil(lambda: {d.objectName() for d in bottom() if d.isVisible()} == open_before)
