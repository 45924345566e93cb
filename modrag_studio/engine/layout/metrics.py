"""How readable a layout is: wire crossings, total wire length, wires drawn through nodes.

Wires are polylines: from the drawn pipes (the studio's bench) or, without Qt, the curve the
canvas draws between estimated port positions (:func:`estimated_wires`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.layout.geometry import (
    DOT_NODE_WIDTH,
    NODE_BASE_HEIGHT,
    PORT_ROW_HEIGHT,
    node_height,
    node_ports,
)
from modrag_studio.engine.layout.wire_routing import bezier, crosses_a_node, routed_or_curve

Point = tuple[float, float]
Box = tuple[float, float, float, float]  # left, top, right, bottom


@dataclass(frozen=True)
class Wire:
    source: str
    target: str
    points: list[Point]


@dataclass(frozen=True)
class LayoutMetrics:
    crossings: int        # pairs of wires (not sharing a node) that cross
    wire_length: float    # sum of wire lengths, scene pixels
    through_nodes: int    # wires passing over a node that is not one of their ends

    def line(self) -> str:
        return (f"crossings {self.crossings:4d}   wire length {self.wire_length:9,.0f} px   "
                f"wires through nodes {self.through_nodes:3d}")


def estimated_wires(doc: GraphDocument, positions: dict[str, tuple[float, float]],
                    registry: NodeRegistry | None, width: float = DOT_NODE_WIDTH,
                    routed: bool = False) -> tuple[list[Wire], dict[str, Box]]:
    """Wires and node boxes of a layout, ports placed as the canvas draws them.

    ``routed``: a wire whose curve crosses a node takes the route around nodes the canvas
    draws instead (:mod:`~modrag_studio.engine.layout.wire_routing`).
    """
    boxes = {n: (x, y, x + width, y + node_height(doc, n, registry))
             for n, (x, y) in positions.items()}
    head = NODE_BASE_HEIGHT - PORT_ROW_HEIGHT / 2
    wires = []
    for edge in doc.edges:
        if edge.source_node not in positions or edge.target_node not in positions:
            continue
        outs = node_ports(doc, edge.source_node, registry)[1]
        ins = node_ports(doc, edge.target_node, registry)[0]
        sx, sy = positions[edge.source_node]
        tx, ty = positions[edge.target_node]
        out_row = outs.index(edge.source_port) if edge.source_port in outs else 0
        in_row = ins.index(edge.target_port) if edge.target_port in ins else 0
        start = (sx + width, sy + head + out_row * PORT_ROW_HEIGHT)
        end = (tx, ty + head + in_row * PORT_ROW_HEIGHT)
        tangent = min(abs(end[0] - start[0]), width)
        if routed:
            own = {edge.source_node, edge.target_node}
            points, _ = routed_or_curve(start, end, [boxes[n] for n in own],
                                        [b for n, b in boxes.items() if n not in own], tangent)
        else:
            points = bezier(start, end, tangent)
        wires.append(Wire(edge.source_node, edge.target_node, points))
    return wires, boxes


def _cross(p1: Point, p2: Point, q1: Point, q2: Point) -> bool:
    def side(a: Point, b: Point, c: Point) -> float:
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    d1, d2 = side(q1, q2, p1), side(q1, q2, p2)
    d3, d4 = side(p1, p2, q1), side(p1, p2, q2)
    return d1 * d2 < 0 and d3 * d4 < 0


def _bounds(points: Sequence[Point]) -> Box:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _segments(points: Sequence[Point]) -> list[tuple[Point, Point, Box]]:
    return [(p, q, (min(p[0], q[0]), min(p[1], q[1]), max(p[0], q[0]), max(p[1], q[1])))
            for p, q in zip(points, points[1:], strict=False)]


def polylines_cross(a: Sequence[Point], b: Sequence[Point]) -> bool:
    if not _overlap(_bounds(a), _bounds(b)):
        return False
    return _segments_cross(_segments(a), _segments(b))


def _segments_cross(a: list[tuple[Point, Point, Box]],
                    b: list[tuple[Point, Point, Box]]) -> bool:
    for p1, p2, box_a in a:
        for q1, q2, box_b in b:
            if _overlap(box_a, box_b) and _cross(p1, p2, q1, q2):
                return True
    return False


def measure(wires: list[Wire], boxes: dict[str, Box], margin: float = 4.0) -> LayoutMetrics:
    """Crossings (wires sharing a node never count), length, and wires over other nodes."""
    crossings = 0
    segments = [_segments(w.points) for w in wires]
    bounds = [_bounds(w.points) for w in wires]
    for i, a in enumerate(wires):
        for j in range(i + 1, len(wires)):
            b = wires[j]
            if {a.source, a.target} & {b.source, b.target} or not _overlap(bounds[i], bounds[j]):
                continue
            crossings += _segments_cross(segments[i], segments[j])
    length = sum(((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) ** 0.5
                 for w in wires for p, q in zip(w.points, w.points[1:], strict=False))
    through = sum(crosses_a_node(wire.points, [box for node_id, box in boxes.items()
                                               if node_id not in (wire.source, wire.target)],
                                 inset=margin)
                  for wire in wires)
    return LayoutMetrics(crossings, round(length, 1), through)


def layout_metrics(doc: GraphDocument, positions: dict[str, tuple[float, float]],
                   registry: NodeRegistry | None = None) -> LayoutMetrics:
    """The metrics of ``positions`` with estimated node sizes and ports (no Qt)."""
    return measure(*estimated_wires(doc, positions, registry))
