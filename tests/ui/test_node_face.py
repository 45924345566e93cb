"""What a node shows on the canvas (ports, tooltips, body colour), worked out without the
canvas."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.node import InputPort, NodeType, OutputPort
from modrag_studio.ui.canvas.node_face import (
    UNKNOWN_TYPE_COLOR,
    body_color,
    category_color,
    input_faces,
    node_tip,
    output_faces,
)


class Merge(NodeType):
    category = "Retrieval"
    description = "Merges result lists."
    inputs = (InputPort("lists", list[Chunk], multiple=True, description="one list a wire"),
              InputPort("limit", int, required=False))
    outputs = (OutputPort("merged", list[Chunk]),)


class Reroute(Merge):
    passes_through = True


def test_ports_say_their_type_whether_optional_and_whether_they_take_several_wires():
    lists, limit = input_faces(Merge)
    assert (lists.name, lists.several) == ("lists", True)
    assert lists.tip == "lists: list[Chunk] (several)\none list a wire"
    assert (limit.several, limit.tip) == (False, "limit?: int")
    [merged] = output_faces(Merge)
    assert (merged.several, merged.tip) == (True, "merged: list[Chunk]")
    assert lists.color == merged.color != limit.color  # the colour of the data type


def test_node_tip_and_body_colour():
    assert node_tip("m", "x.merge", Merge) == "m (x.merge)\nMerges result lists."
    assert node_tip("m", "x.gone", None) == "m (x.gone)"
    assert node_tip("r", "x.reroute", Reroute).startswith("r: reroute point")
    assert body_color(Merge) == category_color("Retrieval")
    assert body_color(None) == UNKNOWN_TYPE_COLOR
    assert body_color(Merge, "#102030") == (16, 32, 48)  # chosen in the layout
