"""The automatic layered layout used for graphs saved without positions."""

from __future__ import annotations

from modrag_studio.engine import default_registry
from modrag_studio.engine.auto_layout import auto_layout, layer_of, node_height, with_auto_layout
from modrag_studio.engine.document import GraphDocument


def diamond() -> GraphDocument:
    return GraphDocument.model_validate({
        "nodes": [
            {"id": "out", "type": "graph.output"},
            {"id": "q", "type": "graph.input"},
            {"id": "a", "type": "text.upper"},
            {"id": "b", "type": "text.upper"},
            {"id": "j", "type": "text.concat"},
            {"id": "c", "type": "debug.constant"},
        ],
        "edges": [
            {"from": "q.value", "to": "a.text"},
            {"from": "q.value", "to": "b.text"},
            {"from": "a.text", "to": "j.texts"},
            {"from": "b.text", "to": "j.texts"},
            {"from": "c.value", "to": "j.texts"},
            {"from": "j.text", "to": "out.value"},
        ],
    })


def test_layers_follow_longest_path_and_sources_sit_by_their_consumer():
    depth = layer_of(diamond())
    assert depth == {"q": 0, "c": 1, "a": 1, "b": 1, "j": 2, "out": 3}


def test_positions_go_left_to_right_without_overlap():
    doc = diamond()
    reg = default_registry()
    pos = auto_layout(doc, reg)
    assert pos["q"][0] < pos["a"][0] < pos["j"][0] < pos["out"][0]
    assert pos["a"][0] == pos["b"][0]
    boxes = [(x, y, y + node_height(doc, n, reg)) for n, (x, y) in pos.items()]
    for i, (x1, top1, bottom1) in enumerate(boxes):
        for x2, top2, bottom2 in boxes[i + 1:]:
            if x1 == x2:
                assert bottom1 <= top2 or bottom2 <= top1


def test_cycles_and_loops_do_not_break_layout():
    doc = GraphDocument.model_validate({
        "nodes": [{"id": "c", "type": "debug.counter"}, {"id": "t", "type": "debug.threshold"},
                  {"id": "x", "type": "text.upper"}, {"id": "y", "type": "text.upper"}],
        "edges": [{"from": "c.count", "to": "t.count"},
                  {"from": "t.retry", "to": "c.count", "loop": {"max_iterations": 2}},
                  {"from": "x.text", "to": "y.text"}, {"from": "y.text", "to": "x.text"}],
    })
    pos = auto_layout(doc, default_registry())
    assert set(pos) == {"c", "t", "x", "y"}
    assert pos["c"][0] < pos["t"][0]


def test_with_auto_layout_keeps_existing_positions():
    doc = diamond()
    laid = with_auto_layout(doc, default_registry())
    assert set(laid.layout.nodes) == set(doc.node_ids())
    assert with_auto_layout(laid) is laid
    data = laid.model_dump(by_alias=True)
    del data["layout"]["nodes"]["out"]
    data["layout"]["nodes"]["q"] = {"x": -500.0, "y": 7.0}
    partial = with_auto_layout(GraphDocument.model_validate(data), default_registry())
    assert (partial.layout.nodes["q"].x, partial.layout.nodes["q"].y) == (-500.0, 7.0)
    assert "out" in partial.layout.nodes
    assert partial.without_layout() == doc.without_layout()
