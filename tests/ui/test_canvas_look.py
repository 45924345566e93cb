"""How the canvas reads: node titles, presentation zoom, overlay cards side by side."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from modrag_studio.engine.core.datatypes import Answer, Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.trace import NodeVisit, Trace
from modrag_studio.ui.inspection.overlays import CARD_WIDTH
from modrag_studio.ui.present.presentation import PresentationWindow

pytestmark = pytest.mark.ui


def chain(n: int) -> GraphDocument:
    nodes = [{"id": "q", "type": "graph.input", "params": {"name": "question"}}]
    nodes += [{"id": f"u{i}", "type": "text.upper"} for i in range(n)]
    nodes += [{"id": "out", "type": "graph.output", "params": {"name": "answer"}}]
    ids = [node["id"] for node in nodes]
    edges = [{"from": f"{a}.{'value' if a == 'q' else 'text'}",
              "to": f"{b}.{'value' if b == 'out' else 'text'}"} for a, b in pairwise(ids)]
    return GraphDocument.model_validate({"nodes": nodes, "edges": edges})


def title(window, node_id: str) -> str:
    return window.canvas.node_item(node_id).text_item.toPlainText()


def test_graph_inputs_and_outputs_are_titled_by_their_name(main_window):
    editor = main_window.editor
    editor.reset(chain(1))
    assert title(main_window, "q") == "Input: question"
    assert title(main_window, "out") == "Output: answer"
    assert title(main_window, "u0") == "Upper case"
    editor.set_param("q", "name", "topic")
    assert title(main_window, "q") == "Input: topic"
    editor.set_title("q", "Ask me")  # an explicit title wins
    assert title(main_window, "q") == "Ask me"
    editor.set_param("q", "name", "other")
    assert title(main_window, "q") == "Ask me"
    editor.set_title("q", None)
    assert title(main_window, "q") == "Input: other"
    editor.undo()
    assert title(main_window, "q") == "Ask me"


def test_presentation_zoom_draws_titles_and_port_names(main_window, qtbot):
    main_window.editor.reset(chain(12))
    canvas = main_window.canvas
    canvas.view.resetTransform()
    canvas.view.scale(0.1, 0.1)  # the editor zoomed far out: its nodes are drawn as blocks
    item = canvas.node_item("u5")
    main_window.grab()
    assert not item.text_item.isVisible()
    # step 1 frames the whole graph; the node's own step (the second) zooms in on it
    trace = Trace(run_id="r", graph_name="chain",
                  visits=[NodeVisit(node_id="q", type_id="graph.input", status="done"),
                          NodeVisit(node_id="u5", type_id="text.upper", status="done")])
    shown = PresentationWindow(trace, canvas)
    qtbot.addWidget(shown)
    shown.resize(1200, 800)
    shown.show()
    shown.go(1)
    shown.grab()
    assert shown.view.transform().m11() > 0.8
    assert item.text_item.isVisible() and item.text_item.toPlainText() == "Upper case · u5"
    port_labels = [item.get_input_text_item(p) for p in item.inputs]
    assert port_labels and all(label.isVisible() for label in port_labels)
    shown.close()
    item.update()
    main_window.grab()  # a closed presentation no longer counts at the next repaint
    assert not item.text_item.isVisible()
    # a node at the edge of the graph is centred too (the view may scroll past the items)
    trace.visits[1].node_id = "out"
    shown = PresentationWindow(trace, canvas)
    qtbot.addWidget(shown)
    shown.resize(1200, 800)
    shown.show()
    shown.go(1)
    centre = shown.view.mapFromScene(canvas.node_scene_rect("out").center())
    middle = shown.view.viewport().rect().center()
    assert abs(centre.x() - middle.x()) < 40 and abs(centre.y() - middle.y()) < 40
    shown.close()


def test_overlay_cards_cover_no_node_and_no_other_card(main_window):
    main_window.editor.reset(chain(4))
    editor = main_window.editor
    # nodes packed closer than a card is wide, one right under another; a card covers
    # neither a node nor its state word above and caption below
    editor.move_nodes({"q": (0, 0), "u0": (170, 0), "u1": (340, 20), "u2": (0, 110),
                       "u3": (170, 300), "out": (510, 0)})
    overlays = main_window.features.run.overlays
    long_text = "The pump is serviced every three months. " * 12
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"doc{i}", text=long_text, index=i)
              for i in range(9)]
    for node_id in ("q", "u0", "u1", "u2", "u3", "out"):
        overlays.show_outputs(node_id, {"text": Answer(text=long_text)})
    overlays.show_outputs("u0", {"chunks": chunks})
    overlays.show_metrics("u0", {"recall": 0.5, "mrr": 0.25})
    canvas = main_window.canvas
    nodes = [canvas.node_scene_rect(n).adjusted(0, -16, 0, 22) for n in canvas.node_ids()]
    cards = [c for slots in overlays.cards.values() for c in slots.values()]
    assert len(cards) == 7
    rects = [c.sceneBoundingRect() for c in cards]
    for i, rect in enumerate(rects):
        assert rect.width() <= CARD_WIDTH + 0.5
        assert not any(rect.intersects(node) for node in nodes), i
        assert not any(rect.intersects(other) for other in rects[i + 1:]), i
    # each card sits right under (or over) its own node, left edges aligned
    for card in cards:
        assert abs(card.pos().x() - canvas.node_scene_rect(card.node_id).left()) < 1
    # "fit graph" and image exports take the cards in
    assert all(canvas.items_rect().contains(rect) for rect in rects)
    # moving a node places the cards again
    editor.move_nodes({"u3": (170, 130)})
    rects = [c.sceneBoundingRect() for c in cards]
    nodes = [canvas.node_scene_rect(n).adjusted(0, -16, 0, 22) for n in canvas.node_ids()]
    for i, rect in enumerate(rects):
        assert not any(rect.intersects(node) for node in nodes), i
        assert not any(rect.intersects(other) for other in rects[i + 1:]), i


def test_a_card_opens_under_the_mouse_and_keeps_its_pages(main_window):
    main_window.editor.reset(chain(1))
    overlays = main_window.features.run.overlays
    text = "A long answer that needs many lines to be read in full. " * 20
    overlays.show_outputs("u0", {"text": Answer(text=text)})
    card = overlays.card("u0")
    compact = card.boundingRect()
    card.hoverEnterEvent(None)
    assert card.zValue() > 100
    opened = card.boundingRect()
    assert opened.width() > compact.width() and opened.height() > compact.height()
    card.hoverLeaveEvent(None)
    assert card.boundingRect() == compact
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text="t", index=i) for i in range(10)]
    overlays.show_outputs("u0", {"chunks": chunks})
    card = overlays.card("u0")
    assert card.pages() == 3
    card.set_page(2)
    assert card.visible_rows()[-1][0].text == "c9"  # chunk ids: "#n" tells chunks apart


def test_presentation_steps_with_clicker_keys_and_shows_neighbours(main_window, qtbot):
    from PySide6.QtCore import Qt

    main_window.editor.reset(chain(6))
    ids = main_window.editor.document().node_ids()  # one row: every step's neighbours are
    main_window.editor.move_nodes({n: (i * 230.0, 0.0) for i, n in enumerate(ids)})  # near
    main_window.editor.set_metadata(description="Upper-cases the question six times.")
    canvas = main_window.canvas
    visits = [NodeVisit(node_id=n, type_id="text.upper", status="done")
              for n in ("u1", "u2", "u3")]
    shown = PresentationWindow(Trace(run_id="r", graph_name="chain", visits=visits), canvas)
    qtbot.addWidget(shown)
    shown.resize(1200, 800)
    shown.show()
    qtbot.waitExposed(shown)
    assert shown.description.text() == "Upper-cases the question six times."
    shown.go(1)
    visible = shown.view.mapToScene(shown.view.viewport().rect()).boundingRect()
    for node_id in ("u1", "u2", "u3"):  # the step's node and both neighbours
        assert visible.contains(canvas.node_scene_rect(node_id))
    start = shown.view.transform()
    for key, expected in ((Qt.Key.Key_Right, 2), (Qt.Key.Key_PageUp, 1),
                          (Qt.Key.Key_PageDown, 2), (Qt.Key.Key_Left, 1),
                          (Qt.Key.Key_Space, 2)):
        qtbot.keyClick(shown.view, key)  # keys reach the replay even from the view
        assert shown.index == expected
    assert shown.view.transform().m11() == pytest.approx(start.m11(), rel=0.3)
    shown.close()


def _wires_through_nodes(canvas) -> list[tuple[str, str, str]]:
    """Wires whose drawn path passes over a node that is not one of their ends."""
    view = canvas.view
    found = []
    for pipe in view.all_pipes():
        if pipe.input_port is None or pipe.output_port is None:
            continue
        own = {pipe.input_port.node, pipe.output_port.node}
        path = pipe.path()
        points = [path.pointAtPercent(k / 200) for k in range(201)]
        for node in view.all_nodes():
            inner = node.sceneBoundingRect().adjusted(4, 4, -4, -4)
            if node not in own and node.isVisible() and any(inner.contains(p) for p in points):
                found.append((pipe.output_port.node.name, pipe.input_port.node.name, node.name))
                break
    return found


def test_wires_are_drawn_around_nodes_and_rerouted_after_a_move(main_window):
    from modrag_studio.engine.core.document import load

    root = Path(__file__).resolve().parents[2]
    editor, canvas = main_window.editor, main_window.canvas
    editor.reset(load(root / "sample_graphs" / "modular_rag.json"))
    assert _wires_through_nodes(canvas) == []
    # a node dropped onto a straight wire: the wire now goes around it
    editor.reset(chain(2))
    x0, y0 = canvas.node_item("u0").xy_pos
    x1, y1 = canvas.node_item("u1").xy_pos
    editor.move_nodes({"u1": (x0 + 600.0, y0), "out": (x0 + 900.0, y0 + 300.0)})
    editor.move_nodes({"out": (x0 + 300.0, y0 - 5.0)})  # between u0 and u1, in the wire's way
    assert _wires_through_nodes(canvas) == []
    u0, u1 = canvas.node_item("u0"), canvas.node_item("u1")
    pipe = next(p for p in canvas.view.all_pipes()
                if p.output_port.node is u0 and p.input_port.node is u1)
    assert pipe.path().elementCount() > 4  # corners, not the plain curve


def test_opening_a_graph_routes_each_wire_once(main_window, monkeypatch):
    """The canvas drew every wire twice while a graph opened (once as it was connected, once
    when all nodes stood): a 100-node graph spent 0.2 s of its launch on the first round."""
    from modrag_studio.ui.canvas import adapter

    routed = []
    real = adapter.routed_path
    monkeypatch.setattr(adapter, "routed_path",
                        lambda *args: routed.append(args[:2]) or real(*args))
    doc = chain(6)
    main_window.editor.reset(doc)
    assert len(routed) == len(doc.edges)
