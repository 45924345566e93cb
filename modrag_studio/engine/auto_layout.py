"""Automatic left-to-right layout for graphs saved without a ``layout`` block (no Qt)."""

from __future__ import annotations

import math
from collections import defaultdict

from modrag_studio.engine.document import GraphDocument, Layout, NodeLayout
from modrag_studio.engine.errors import UnknownNodeType
from modrag_studio.engine.registry import NodeRegistry
from modrag_studio.engine.topology import Topology

COLUMN_WIDTH = 230.0
ROW_GAP = 40.0
NODE_BASE_HEIGHT = 60.0
PORT_ROW_HEIGHT = 24.0
BAND_GAP = 200.0    # between rows of a wrapped layout: room for the cards under nodes
ASPECT = 16 / 9     # wrap layouts much wider than this (width over height) ...
WRAP_WIDTH = 1700.0  # ... once they are wider than a screen at full size (7 columns)


def node_height(doc: GraphDocument, node_id: str, registry: NodeRegistry | None) -> float:
    """Estimated drawn height of a node: a title bar plus one row per port pair."""
    if registry is None:
        return NODE_BASE_HEIGHT + PORT_ROW_HEIGHT
    try:
        node_type = registry.get(doc.node(node_id).type)
    except (UnknownNodeType, KeyError):
        return NODE_BASE_HEIGHT + PORT_ROW_HEIGHT
    rows = max(len(node_type.inputs), len(node_type.outputs), 1)
    return NODE_BASE_HEIGHT + PORT_ROW_HEIGHT * rows


def layer_of(doc: GraphDocument) -> dict[str, int]:
    """Longest-path depth of each node over forward edges; nodes on cycles go last."""
    topo = Topology.of(doc)
    ordered, cyclic = topo.order()
    depth: dict[str, int] = {}
    for node_id in ordered:
        parents = [e.source_node for e in topo.incoming.get(node_id, []) if e.source_node in depth]
        depth[node_id] = 1 + max((depth[p] for p in parents), default=-1)
    # sources (constants, graph inputs) sit just left of their first consumer, not at column 0
    for node_id in ordered:
        if topo.incoming.get(node_id):
            continue
        children = [depth[e.target_node] for e in topo.outgoing.get(node_id, [])
                    if e.target_node in depth]
        if children:
            depth[node_id] = max(depth[node_id], min(children) - 1)
    last = max(depth.values(), default=-1) + 1
    for node_id in cyclic:
        depth[node_id] = last
    return depth


def _crossings(columns: list[list[str]], edges: list[tuple[str, str]],
               where: dict[str, tuple[int, int]]) -> int:
    """Pairs of wires that cross (wires between the same two columns)."""
    spans: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for a, b in edges:
        (ca, ra), (cb, rb) = where[a], where[b]
        if ca != cb:
            spans[(ca, cb)].append((ra, rb))
    total = 0
    for pairs in spans.values():
        for i, (a1, b1) in enumerate(pairs):
            total += sum(1 for a2, b2 in pairs[i + 1:] if (a1 - a2) * (b1 - b2) < 0)
    return total


def order_columns(doc: GraphDocument, depth: dict[str, int], sweeps: int = 4) -> list[list[str]]:
    """Nodes of each column, ordered to keep wires uncrossed (barycentre sweeps).

    The first pass orders each column by its parents' rows; then passes alternate between
    children (right to left) and parents (left to right); the order with fewest crossings wins.
    """
    file_order = {n: i for i, n in enumerate(doc.node_ids())}
    count = max(depth.values(), default=-1) + 1
    columns: list[list[str]] = [[] for _ in range(count)]
    for node_id in doc.node_ids():
        columns[depth[node_id]].append(node_id)
    edges = [(e.source_node, e.target_node) for e in doc.edges
             if e.source_node in depth and e.target_node in depth]
    parents: dict[str, list[str]] = defaultdict(list)
    children: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        if depth[a] < depth[b]:
            parents[b].append(a)
            children[a].append(b)

    def where() -> dict[str, tuple[int, int]]:
        return {n: (c, r) for c, members in enumerate(columns) for r, n in enumerate(members)}

    def sweep(indices: range, neighbours: dict[str, list[str]]) -> None:
        for col in indices:
            rows = where()
            keys = {}
            for node_id in columns[col]:
                near = [rows[n][1] for n in neighbours.get(node_id, [])]
                mean = sum(near) / len(near) if near else float(rows[node_id][1])
                keys[node_id] = (mean, file_order[node_id])
            columns[col].sort(key=keys.__getitem__)

    for col in range(count):  # first pass: file order, then parents' rows
        columns[col].sort(key=lambda n: file_order[n])
    sweep(range(1, count), parents)
    best = [list(c) for c in columns]
    best_cross = _crossings(columns, edges, where())
    for index in range(sweeps):
        if index % 2 == 0:
            sweep(range(count - 2, -1, -1), children)
        else:
            sweep(range(1, count), parents)
        cross = _crossings(columns, edges, where())
        if cross < best_cross:
            best, best_cross = [list(c) for c in columns], cross
    return best


def _bands(heights: list[float], column_width: float, band_gap: float,
           aspect: float) -> list[range]:
    """Consecutive column ranges, one per row of the wrapped layout.

    The number of rows is the one whose bounding box is closest to ``aspect`` (width over
    height); a layout no wider than that, or narrower than ``WRAP_WIDTH``, stays one row.
    """
    count = len(heights)
    if count * column_width <= WRAP_WIDTH:
        return [range(count)] if count else []
    best: tuple[float, list[range]] | None = None
    for rows in range(1, count + 1):
        size = -(-count // rows)
        bands = [range(i, min(i + size, count)) for i in range(0, count, size)]
        width = size * column_width
        height = sum(max(heights[c] for c in band) for band in bands)
        height += band_gap * (len(bands) - 1)
        ratio = width / max(height, 1.0)
        if rows == 1 and ratio <= aspect:
            return bands
        miss = abs(math.log(ratio / aspect))
        if best is None or miss < best[0] - 1e-9:
            best = (miss, bands)
        if ratio < aspect:  # more rows only get taller
            break
    return best[1] if best else []


def auto_layout(
    doc: GraphDocument,
    registry: NodeRegistry | None = None,
    *,
    column_width: float = COLUMN_WIDTH,
    row_gap: float = ROW_GAP,
    band_gap: float = BAND_GAP,
    aspect: float = ASPECT,
) -> dict[str, tuple[float, float]]:
    """Top-left positions by node id: columns by topological depth, rows without overlap.

    Columns are ordered to keep wires uncrossed and centred vertically. A graph much wider
    than ``aspect`` (a long chain) wraps into rows of columns, read left to right and top to
    bottom, ``band_gap`` apart so the cards drawn under nodes after a run have room.
    """
    depth = layer_of(doc)
    columns = order_columns(doc, depth)
    heights = [[node_height(doc, n, registry) for n in members] for members in columns]
    totals = [sum(h) + row_gap * (len(h) - 1) for h in heights]
    positions: dict[str, tuple[float, float]] = {}
    top = 0.0
    for band in _bands(totals, column_width, band_gap, aspect):
        tallest = max(totals[c] for c in band)
        for slot, col in enumerate(band):
            y = top + (tallest - totals[col]) / 2
            for node_id, height in zip(columns[col], heights[col], strict=True):
                positions[node_id] = (slot * column_width, round(y, 1))
                y += height + row_gap
        top += tallest + band_gap
    return positions


def with_auto_layout(doc: GraphDocument, registry: NodeRegistry | None = None) -> GraphDocument:
    """``doc`` with a layout block; nodes that already have a position keep it."""
    layout = doc.layout or Layout()
    missing = [n for n in doc.node_ids() if n not in layout.nodes]
    if not missing and doc.layout is not None:
        return doc
    positions = auto_layout(doc, registry)
    if layout.nodes:
        # place only the missing nodes, to the right of what is already laid out
        right = max(n.x for n in layout.nodes.values()) + COLUMN_WIDTH
        positions = {n: (right + x, y) for n, (x, y) in positions.items()}
    nodes = dict(layout.nodes)
    for node_id in missing:
        x, y = positions[node_id]
        nodes[node_id] = NodeLayout(x=x, y=y)
    return doc.model_copy(update={"layout": layout.model_copy(update={"nodes": nodes})})
