"""The canvas's own controls as a user meets them: the Fit button, the zoom keys, the minimap
beside the zoom buttons, output ports in sight when zoomed out, params editable at any zoom."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtWidgets import QGraphicsItem, QSpinBox, QWidget

from modrag_studio.ui.canvas.view import pan_to, visible_rect

pytestmark = pytest.mark.ui


def _controls(window):
    return window.canvas.view.findChild(QWidget, "zoomControls")


def _scale(window) -> float:
    return window.canvas.view.transform().m11()


def _few_nodes(window) -> dict[str, str]:
    editor = window.editor
    return {"embed": editor.add_node("embed.model", (0, 0)),
            "vector": editor.add_node("retrieve.vector", (320, 0)),
            "chat": editor.add_node("llm.model", (0, 260)),
            "fuse": editor.add_node("fuse.rrf", (640, 260))}


def test_the_fit_button_shows_the_whole_graph(main_window, qtbot):
    _few_nodes(main_window)
    buttons = _controls(main_window).buttons
    for _ in range(4):
        qtbot.mouseClick(buttons["in"], Qt.MouseButton.LeftButton)
    canvas = main_window.canvas
    assert not visible_rect(canvas.view).contains(canvas.items_rect())
    qtbot.mouseClick(buttons["fit"], Qt.MouseButton.LeftButton)  # raised ZeroDivisionError
    assert visible_rect(canvas.view).contains(canvas.items_rect())


def test_ctrl_minus_and_ctrl_equals_zoom_the_canvas(main_window, qtbot):
    _few_nodes(main_window)
    view = main_window.canvas.view
    main_window.activateWindow()
    qtbot.waitUntil(main_window.isActiveWindow)
    view.setFocus()
    before = _scale(main_window)
    qtbot.keyClick(view, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: _scale(main_window) < before * 0.9)
    smaller = _scale(main_window)
    qtbot.keyClick(view, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: _scale(main_window) > smaller * 1.1)
    for action in (main_window.actions["zoom_in"], main_window.actions["zoom_out"]):
        keys = [k.toString() for k in action.shortcuts()]
        assert len(keys) == len(set(keys)), keys  # one sequence twice is "ambiguous"


def test_the_minimap_never_sits_on_the_zoom_buttons(main_window, qtbot):
    nodes = _few_nodes(main_window)
    canvas, view = main_window.canvas, main_window.canvas.view
    buttons = _controls(main_window).buttons
    for _ in range(3):
        qtbot.mouseClick(buttons["in"], Qt.MouseButton.LeftButton)
    # put a node in the bottom-right corner, where the minimap goes first
    item = canvas.node_item(nodes["fuse"])
    corner = view.mapToScene(view.width() - 120, view.height() - 80)
    centre = view.mapToScene(view.viewport().rect().center())
    pan_to(view, centre + item.sceneBoundingRect().center() - corner)
    minimap = view.findChild(QWidget, "minimap")
    qtbot.waitUntil(minimap.isVisible)
    minimap.place()
    controls = _controls(main_window)
    qtbot.waitUntil(lambda: minimap.geometry().left() < view.width() / 2)  # moved off the node
    assert not minimap.geometry().intersects(controls.geometry())


def test_zoomed_out_titles_leave_output_ports_in_sight(main_window, qtbot):
    nodes = _few_nodes(main_window)
    canvas = main_window.canvas
    canvas.view.resetTransform()
    canvas.view.scale(0.4, 0.4)
    main_window.grab()
    qtbot.waitUntil(lambda: canvas.zoomed_out)
    for key in ("embed", "chat"):
        item = canvas.node_item(nodes[key])
        label = canvas.decor.states[nodes[key]].detail
        qtbot.waitUntil(label.isVisible)
        for port in item.outputs:
            centre = port.sceneBoundingRect().center()
            assert not label.sceneBoundingRect().contains(centre), key
            assert port.zValue() > label.zValue()
        assert label.sceneBoundingRect().right() <= item.sceneBoundingRect().right() + 1
        assert label.sceneBoundingRect().bottom() <= item.sceneBoundingRect().bottom() + 1


def test_a_param_is_edited_from_the_zoomed_out_face(main_window, qtbot):
    nodes = _few_nodes(main_window)
    canvas, view = main_window.canvas, main_window.canvas.view
    buttons = _controls(main_window).buttons
    canvas.fit_all()
    for _ in range(8):
        if canvas.zoomed_out:
            break
        qtbot.mouseClick(buttons["out"], Qt.MouseButton.LeftButton)
        main_window.grab()
    qtbot.waitUntil(lambda: canvas.zoomed_out)
    node = nodes["vector"]
    label = canvas.decor.states[node].detail
    qtbot.waitUntil(label.isVisible)
    assert not canvas.params.rows[node][0].isVisible()  # the small rows are hidden
    layout = label.document().documentLayout()
    block = label.document().lastBlock()  # "top_k  10", the last line of the face
    assert block.text().split() == ["top_k", "10"]
    line = layout.blockBoundingRect(block)
    point = view.mapFromScene(label.mapToScene(QPointF(line.left() + 30, line.center().y())))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: canvas.params.editing == (node, "top_k"))
    spin = canvas.params.field.widget
    assert isinstance(spin, QSpinBox) and spin.value() == 10
    proxy = spin.graphicsProxyWidget()
    assert proxy.flags() & QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations
    assert QRectF(spin.rect()).width() >= 90  # readable at this zoom
    spin.selectAll()
    qtbot.keyClicks(spin, "4")
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: main_window.editor.document().node(node).params.get("top_k") == 4)
