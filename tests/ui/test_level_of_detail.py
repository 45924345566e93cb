"""Level of detail on a zoomed-out canvas, role titles, route names, ids elided in the middle."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetricsF

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.ui.canvas.elide_id import elide_id
from modrag_studio.ui.inspection.card_content import MIDDLE, chunk_content

pytestmark = pytest.mark.ui


def small_graph() -> GraphDocument:
    return GraphDocument.model_validate({"nodes": [
        {"id": "q", "type": "graph.input", "params": {"name": "question"}},
        {"id": "rewrite", "type": "query.transform", "params": {"mode": "rewrite"}},
        {"id": "split_up", "type": "query.transform", "params": {"mode": "decompose"}},
        {"id": "router", "type": "route.intent", "params": {"routes": [
            {"name": "product", "keywords": ["pump"]}, {"name": "people", "keywords": ["who"]}],
            "default_route": "general"}},
        {"id": "pick_a", "type": "answer.select"}, {"id": "pick_b", "type": "answer.select"},
    ], "edges": [{"from": "q.value", "to": "rewrite.query"}]})


def test_titles_say_the_role_and_routes_are_named(main_window):
    main_window.editor.reset(small_graph())
    canvas = main_window.canvas
    title = {n: canvas.node_item(n).name for n in canvas.node_ids()}
    assert title["rewrite"] == "Rewrite" and title["split_up"] == "Decompose"
    assert title["pick_a"] != title["pick_b"] and "pick a" in title["pick_a"]
    router = canvas.node_item("router")
    labels = [t.toPlainText() for t in router._output_items.values()]
    assert labels[:2] == ["product", "people"] and "general (default)" in labels
    main_window.editor.set_param("rewrite", "mode", "hyde")
    assert canvas.node_item("rewrite").name == "HyDE"


def test_zoomed_out_nodes_show_a_large_title_and_state(main_window, qtbot):
    main_window.editor.reset(small_graph())
    canvas = main_window.canvas
    canvas.set_node_state("rewrite", "running")
    deco = canvas.decor.states["rewrite"]
    item = canvas.node_item("rewrite")
    canvas.view.resetTransform()
    canvas.view.scale(0.3, 0.3)
    main_window.grab()
    qtbot.waitUntil(lambda: deco.detail.isVisible())
    assert "Rewrite" in deco.detail.toPlainText() and "running" in deco.detail.toPlainText()
    assert not item.text_item.isVisible() and not deco.status.isVisible()
    assert all(not t.isVisible() for t in item._input_items.values())
    assert deco.detail.boundingRect().height() * 0.3 >= 14  # two large lines on screen
    qtbot.waitUntil(lambda: canvas.zoomed_out)
    canvas.view.resetTransform()
    main_window.grab()
    qtbot.waitUntil(lambda: not deco.detail.isVisible())
    assert item.text_item.isVisible() and deco.status.isVisible()


def test_cards_collapse_to_one_line_and_ids_elide_in_the_middle(main_window, qtbot):
    main_window.editor.reset(small_graph())
    manager = main_window.features.run.overlays
    chunks = [Chunk(doc_id="en_maintenance_schedule_cnc_a01.md",
                    chunk_id=f"en_maintenance_schedule_cnc_a01.md#{i}", text="x " * 40)
              for i in range(3)]
    manager.show_outputs("rewrite", {"chunks": chunks})
    card = manager.card("rewrite")
    full = card.boundingRect().height()
    cell = chunk_content(chunks).rows(0, 1)[0][0]
    assert cell.elide == MIDDLE
    metrics = QFontMetricsF(card.font)
    shown = elide_id(cell.text, lambda text: metrics.horizontalAdvance(text) <= 60)
    assert shown.startswith("en_m") and shown.endswith("…#0")  # not Qt's "en…md#0"
    assert metrics.horizontalAdvance(shown) <= 60
    canvas = main_window.canvas
    canvas.view.resetTransform()
    canvas.view.scale(0.3, 0.3)
    main_window.grab()
    qtbot.waitUntil(lambda: card.collapsed)
    assert card.boundingRect().height() < full / 2
    assert card.summary().startswith("3 chunks")
    room = metrics.horizontalAdvance("3 chunks · en_maint…#0")
    line = card.summary_fitted(metrics, room)  # the count whole, the id's start and "#0"
    assert line.startswith("3 chunks · en_m") and line.endswith("…#0"), line
    assert metrics.horizontalAdvance(line) <= room
    card.set_expanded(True)  # under the mouse: the full card again
    assert card.boundingRect().height() >= full - 1
