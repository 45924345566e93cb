"""Wires drawn around nodes: the canvas's curve, or a rounded orthogonal route where the curve
would cross a node (:mod:`modrag_studio.engine.layout.wire_routing`). Pure Qt: the pipe class that
calls :func:`routed_path` lives in the canvas adapter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainterPath

from modrag_studio.engine.layout.wire_routing import Box, Point, bezier, crosses_a_node, route

CORNER_RADIUS = 14.0


def _box(rect: QRectF) -> Box:
    return (rect.left(), rect.top(), rect.right(), rect.bottom())


@lru_cache(maxsize=4096)
def _cached_route(start: Point, end: Point, obstacles: tuple[Box, ...]) -> tuple[Point, ...]:
    path = route(start, end, obstacles)
    return tuple(path) if path is not None else ()


def routed_path(start: QPointF, end: QPointF, tangent: float, own: Iterable[QRectF],
                others: Iterable[QRectF]) -> QPainterPath | None:
    """A path from ``start`` (output port) to ``end`` (input port) around the ``others`` node
    rectangles, or ``None`` when the canvas's own curve misses them all (or no route exists).
    """
    a, b = (start.x(), start.y()), (end.x(), end.y())
    other_boxes = [_box(r) for r in others]
    if not crosses_a_node(bezier(a, b, tangent), other_boxes):
        return None
    obstacles = tuple(sorted({*(_box(r) for r in own), *other_boxes}))
    corners = _cached_route(_rounded(a), _rounded(b), tuple(
        tuple(round(v, 1) for v in box) for box in obstacles))
    return rounded_polyline(corners) if corners else None


def _rounded(point: Point) -> Point:
    return (round(point[0], 1), round(point[1], 1))


def rounded_polyline(points: Sequence[Point], radius: float = CORNER_RADIUS) -> QPainterPath:
    """The polyline with its corners rounded (a quadratic arc of at most ``radius``)."""
    path = QPainterPath(QPointF(*points[0]))
    for i in range(1, len(points) - 1):
        (px, py), (cx, cy), (nx, ny) = points[i - 1], points[i], points[i + 1]
        before = max(abs(cx - px), abs(cy - py))
        after = max(abs(nx - cx), abs(ny - cy))
        r = min(radius, before / 2, after / 2)
        path.lineTo(_toward(cx, cy, px, py, r, before))
        path.quadTo(QPointF(cx, cy), _toward(cx, cy, nx, ny, r, after))
    path.lineTo(QPointF(*points[-1]))
    return path


def _toward(cx: float, cy: float, tx: float, ty: float, r: float, length: float) -> QPointF:
    if length <= 0:
        return QPointF(cx, cy)
    return QPointF(cx + (tx - cx) * r / length, cy + (ty - cy) * r / length)


def port_centre(port) -> QPointF:
    """The scene centre of a port item."""
    rect = port.boundingRect()
    pos = port.scenePos()
    return QPointF(pos.x() + rect.width() / 2, pos.y() + rect.height() / 2)
