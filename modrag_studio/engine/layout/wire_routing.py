"""Wires around nodes (no Qt): an orthogonal route for a wire whose curve would cross a node.

The canvas draws a wire as a horizontal cubic curve from an output port (right edge of its
node) to an input port (left edge). When that curve passes over another node, :func:`route`
finds the shortest path made of horizontal and vertical runs that keeps ``margin`` clear of
every node, with a cost per bend so routes stay simple; the canvas draws it with rounded
corners. Candidate runs lie on the nodes' inflated edges, between them (the middle of a
channel) and on the ports' own rows, which is the classic sparse orthogonal visibility grid.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

Point = tuple[float, float]
Box = tuple[float, float, float, float]  # left, top, right, bottom

_EAST, _WEST, _SOUTH, _NORTH = 0, 1, 2, 3
_STEPS = ((1, 0, _EAST), (-1, 0, _WEST), (0, 1, _SOUTH), (0, -1, _NORTH))
_OPPOSITE = {_EAST: _WEST, _WEST: _EAST, _SOUTH: _NORTH, _NORTH: _SOUTH}


@dataclass(frozen=True)
class RouteOptions:
    """Clearances and costs of :func:`route`, in scene pixels."""

    margin: float = 10.0     # kept clear around every node
    stub: float = 18.0       # straight run out of a port before the first bend (> margin)
    bend_cost: float = 60.0  # a bend is worth this much wire length
    window: float = 400.0    # nodes farther than this from the wire's box are ignored


DEFAULT_ROUTE = RouteOptions()


@cache
def _bernstein(steps: int) -> tuple[tuple[float, float, float, float], ...]:
    return tuple(((1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t * t, t ** 3)
                 for t in (i / steps for i in range(steps + 1)))


def bezier(start: Point, end: Point, tangent: float, steps: int = 16) -> list[Point]:
    """The canvas's own wire: a cubic curve leaving and entering horizontally."""
    (x1, y1), (x2, y2) = start, end
    c1x, c2x = x1 + tangent, x2 - tangent
    return [(a * x1 + b * c1x + c * c2x + d * x2, (a + b) * y1 + (c + d) * y2)
            for a, b, c, d in _bernstein(steps)]


def densify(points: Sequence[Point], step: float = 8.0) -> list[Point]:
    """The polyline with extra points every ``step`` pixels (long straight runs included)."""
    dense = list(points[:1])
    for (ax, ay), (bx, by) in zip(points, points[1:], strict=False):
        count = max(1, int((abs(bx - ax) + abs(by - ay)) / step))
        dense.extend((ax + (bx - ax) * k / count, ay + (by - ay) * k / count)
                     for k in range(1, count + 1))
    return dense


def crosses_a_node(points: Sequence[Point], boxes: Sequence[Box], inset: float = 4.0) -> bool:
    """Whether the polyline passes inside a box (shrunk by ``inset``)."""
    points = densify(points)
    if not points:
        return False
    low_x, high_x = min(p[0] for p in points), max(p[0] for p in points)
    low_y, high_y = min(p[1] for p in points), max(p[1] for p in points)
    for left, top, right, bottom in boxes:
        # a box beside the polyline's bounds holds none of its points: not looked into
        if right - inset <= low_x or left + inset >= high_x or bottom - inset <= low_y \
                or top + inset >= high_y:
            continue
        if any(left + inset < x < right - inset and top + inset < y < bottom - inset
               for x, y in points):
            return True
    return False


def route(start: Point, end: Point, obstacles: Sequence[Box],
          options: RouteOptions = DEFAULT_ROUTE) -> list[Point] | None:
    """Corner points of an orthogonal route from an output port to an input port.

    ``obstacles`` are node boxes (the wire's own two nodes included: a wire going back to
    an earlier column must pass around them). Returns ``None`` when a port is boxed in (nodes
    overlapping it), so the caller keeps its curve.
    """
    path = _route(start, end, obstacles, options)
    if path is None and options.margin > 2.0:  # nodes close to a port: hug them instead
        path = _route(start, end, obstacles, replace(options, margin=2.0, stub=6.0))
    return path


def _route(start: Point, end: Point, obstacles: Sequence[Box],
           options: RouteOptions) -> list[Point] | None:
    m = options.margin
    first = (start[0] + options.stub, start[1])
    last = (end[0] - options.stub, end[1])
    reach = (min(first[0], last[0]) - options.window, min(first[1], last[1]) - options.window,
             max(first[0], last[0]) + options.window, max(first[1], last[1]) + options.window)
    blocks = [(left - m, top - m, right + m, bottom + m)
              for left, top, right, bottom in obstacles
              if right + m > reach[0] and left - m < reach[2]
              and bottom + m > reach[1] and top - m < reach[3]]
    if _inside_any(first, blocks) or _inside_any(last, blocks):
        return None
    xs = _coordinates([first[0], last[0]], [(b[0], b[2]) for b in blocks])
    ys = _coordinates([first[1], last[1]], [(b[1], b[3]) for b in blocks])
    path = _shortest(xs, ys, blocks, first, last, options.bend_cost)
    if path is None:
        return None
    return _corners([start, *path, end])


def _coordinates(ports: list[float], spans: list[tuple[float, float]]) -> list[float]:
    """Port rows or columns, the inflated node edges, and the middles of the gaps between."""
    edges = sorted({*ports, *(v for span in spans for v in span)})
    middles = [(a + b) / 2 for a, b in zip(edges, edges[1:], strict=False) if b - a > 1.0]
    return sorted({*edges, *middles})


def _inside_any(point: Point, blocks: Sequence[Box]) -> bool:
    x, y = point
    return any(b[0] < x < b[2] and b[1] < y < b[3] for b in blocks)


def _shortest(xs: list[float], ys: list[float], blocks: list[Box], first: Point, last: Point,
              bend_cost: float) -> list[Point] | None:
    """Dijkstra over (grid point, heading): length plus a cost per bend; no U-turns."""
    start = (bisect_left(xs, first[0]), bisect_left(ys, first[1]))
    goal = (bisect_left(xs, last[0]), bisect_left(ys, last[1]))
    free: dict[tuple[int, int, int], bool] = {}

    def passable(i: int, j: int, di: int, dj: int) -> bool:
        key = (min(i, i + di), min(j, j + dj), 0 if di else 1)
        if key not in free:
            mid = ((xs[i] + xs[i + di]) / 2, (ys[j] + ys[j + dj]) / 2)
            free[key] = not _inside_any(mid, blocks) and not _inside_any(
                (xs[i + di], ys[j + dj]), blocks)
        return free[key]

    best: dict[tuple[int, int, int], float] = {(*start, _EAST): 0.0}
    came: dict[tuple[int, int, int], tuple[int, int, int]] = {}
    queue = [(0.0, start[0], start[1], _EAST)]
    while queue:
        cost, i, j, heading = heapq.heappop(queue)
        if cost > best.get((i, j, heading), float("inf")):
            continue
        if (i, j) == goal and heading != _WEST:
            return _unwind(came, (i, j, heading), xs, ys)
        for di, dj, step in _STEPS:
            if step == _OPPOSITE[heading]:
                continue
            ni, nj = i + di, j + dj
            if not (0 <= ni < len(xs) and 0 <= nj < len(ys)) or not passable(i, j, di, dj):
                continue
            extra = abs(xs[ni] - xs[i]) + abs(ys[nj] - ys[j])
            if step != heading:
                extra += bend_cost
            if (ni, nj) == goal and step != _EAST:
                extra += bend_cost  # the last run into the port is horizontal
            state = (ni, nj, step)
            if cost + extra < best.get(state, float("inf")):
                best[state] = cost + extra
                came[state] = (i, j, heading)
                heapq.heappush(queue, (cost + extra, ni, nj, step))
    return None


def _unwind(came: dict, state: tuple[int, int, int], xs: list[float],
            ys: list[float]) -> list[Point]:
    points = [(xs[state[0]], ys[state[1]])]
    while state in came:
        state = came[state]
        points.append((xs[state[0]], ys[state[1]]))
    return points[::-1]


def _corners(points: list[Point]) -> list[Point]:
    """Drop repeated and collinear points: only the bends stay."""
    kept: list[Point] = []
    for point in points:
        if kept and point == kept[-1]:
            continue
        if len(kept) >= 2:
            (ax, ay), (bx, by) = kept[-2], kept[-1]
            if (ax == bx == point[0]) or (ay == by == point[1]):
                kept[-1] = point
                continue
        kept.append(point)
    return kept


def routed_or_curve(start: Point, end: Point, own: Sequence[Box], others: Sequence[Box],
                    tangent: float, options: RouteOptions = DEFAULT_ROUTE
                    ) -> tuple[list[Point], bool]:
    """The wire as drawn: its curve when that misses every other node, else a route.

    Returns ``(points, routed)``; ``own`` are the boxes of the wire's two nodes.
    """
    curve = bezier(start, end, tangent)
    if not crosses_a_node(curve, others):
        return curve, False
    path = route(start, end, [*own, *others], options)
    return (path, True) if path is not None else (curve, False)
