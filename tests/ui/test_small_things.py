"""Small things a newcomer notices: readable compare badges at any zoom, the subgraph's
description in sentences, and a hint of what to do first on an empty canvas."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QWidget

from modrag_studio.engine.core.document import save
from tests.evaluation.compare_helpers import two_bm25_graph
from tests.ui.run_helpers import rag_graph
from tests.ui.test_subgraphs_ui import HYBRID, make

pytestmark = pytest.mark.ui


def test_variant_badges_are_readable_on_a_fitted_graph(main_window, qtbot, tmp_path):
    path = tmp_path / "g.json"
    save(two_bm25_graph(), path)
    assert main_window.open_path(path, offer_restore=False)
    variants = main_window.features.variants
    variants.new_variant("few", ["plain.top_k=2"])
    view = main_window.canvas.view
    view.resetTransform()
    view.scale(0.35, 0.35)  # a large graph fitted in the window
    badge = variants.change_badges["plain"]
    on_screen = badge.deviceTransform(view.viewportTransform()).mapRect(badge.rect())
    assert on_screen.height() >= 14, on_screen  # was about 5 pixels
    node = main_window.canvas.node_item("plain")
    node_on_screen = view.mapFromScene(node.sceneBoundingRect()).boundingRect()
    assert abs(on_screen.top() - node_on_screen.bottom()) <= 6  # still under its node


def test_the_subgraph_description_reads_as_sentences(qtbot, make_window):
    window = make_window(rag_graph())
    make(window, HYBRID, title="Subgraph")
    window.canvas.select_nodes(["subgraph"])
    panel = window.properties
    qtbot.waitUntil(lambda: panel.node_id == "subgraph")
    text = panel.header.text()
    assert "in its place. Holds 3 nodes" in text, text


def test_an_empty_canvas_says_what_to_do_first(main_window, qtbot):
    main_window.editor.add_node("graph.input", (0, 0))
    hint = main_window.canvas.view.viewport().findChild(QLabel, "emptyCanvasHint")
    assert hint is not None and not hint.isVisible()
    main_window.actions["new"].trigger()  # File > New
    qtbot.waitUntil(hint.isVisible)
    assert "Nodes" in hint.text() and "Tab" in hint.text() and "Getting Started" in hint.text()
    area = main_window.canvas.view.viewport().rect()
    assert area.contains(hint.geometry())
    assert abs(hint.geometry().center().x() - area.center().x()) <= 2
    main_window.add_node_at("graph.input", QPointF(0, 0))  # the first node: the hint goes
    assert not hint.isVisible()
    main_window.actions["undo"].trigger()
    qtbot.waitUntil(hint.isVisible)
    assert hint.testAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)


def _purple_pixels(image) -> int:
    purple = QColor(150, 90, 210).rgb()
    return sum(image.pixel(x, y) == purple for x in range(0, image.width(), 2)
               for y in range(0, image.height(), 2))


def test_badges_stay_off_the_minimap(main_window, qtbot, tmp_path):
    path = tmp_path / "g.json"
    save(two_bm25_graph(), path)
    assert main_window.open_path(path, offer_restore=False)
    main_window.features.variants.new_variant("few", ["plain.top_k=2"])
    canvas = main_window.canvas
    canvas.center_on(["plain"])
    zoom_in = canvas.view.findChild(QWidget, "zoomControls").buttons["in"]
    minimap = canvas.view.findChild(QWidget, "minimap")
    for _ in range(4):
        qtbot.mouseClick(zoom_in, Qt.MouseButton.LeftButton)
    minimap.sync_visibility()
    qtbot.waitUntil(minimap.isVisible)
    minimap.refit()
    assert _purple_pixels(canvas.view.viewport().grab().toImage()) > 0  # on the canvas
    assert _purple_pixels(minimap.viewport().grab().toImage()) == 0  # not over the map


def test_a_long_model_name_shows_its_start(main_window, qtbot):
    node = main_window.editor.add_node("llm.model", (0, 0),
                                       params={"model": "qwen2.5-coder-1.5b-instruct"})
    main_window.canvas.select_nodes([node])
    panel = main_window.properties
    qtbot.waitUntil(lambda: panel.node_id == node)
    line = panel.pickers["model"].combo.lineEdit()
    assert line.text() == "qwen2.5-coder-1.5b-instruct" and line.cursorPosition() == 0
