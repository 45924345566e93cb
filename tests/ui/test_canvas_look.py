"""How the canvas reads: node titles, presentation zoom, overlay cards side by side."""

from __future__ import annotations

from itertools import pairwise

import pytest

from modrag_studio.engine.document import GraphDocument
from modrag_studio.engine.trace import NodeVisit, Trace
from modrag_studio.ui.presentation import PresentationWindow

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
    trace = Trace(run_id="r", graph_name="chain",
                  visits=[NodeVisit(node_id="u5", type_id="text.upper", status="done")])
    shown = PresentationWindow(trace, canvas)
    qtbot.addWidget(shown)
    shown.resize(1200, 800)
    shown.show()
    shown.go(0)
    shown.grab()
    assert shown.view.transform().m11() > 0.8
    assert item.text_item.isVisible() and item.text_item.toPlainText() == "Upper case"
    port_labels = [item.get_input_text_item(p) for p in item.inputs]
    assert port_labels and all(label.isVisible() for label in port_labels)
    shown.close()
