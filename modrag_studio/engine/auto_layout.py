"""Automatic left-to-right layout for graphs saved without a ``layout`` block (no Qt)."""

from __future__ import annotations

from collections import defaultdict

from modrag_studio.engine.document import GraphDocument, Layout, NodeLayout
from modrag_studio.engine.errors import UnknownNodeType
from modrag_studio.engine.registry import NodeRegistry
from modrag_studio.engine.topology import Topology

COLUMN_WIDTH = 230.0
ROW_GAP = 40.0
NODE_BASE_HEIGHT = 60.0
PORT_ROW_HEIGHT = 24.0


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


def auto_layout(
    doc: GraphDocument,
    registry: NodeRegistry | None = None,
    *,
    column_width: float = COLUMN_WIDTH,
    row_gap: float = ROW_GAP,
) -> dict[str, tuple[float, float]]:
    """Top-left positions by node id: columns by topological depth, rows without overlap.

    Within a column nodes are ordered by the mean row of their parents (one barycentre
    pass), which keeps most wires short and uncrossed; columns are centred vertically.
    """
    depth = layer_of(doc)
    topo = Topology.of(doc)
    file_order = {n: i for i, n in enumerate(doc.node_ids())}
    columns: dict[int, list[str]] = defaultdict(list)
    for node_id in doc.node_ids():
        columns[depth[node_id]].append(node_id)
    rank: dict[str, float] = {}
    positions: dict[str, tuple[float, float]] = {}
    for col in sorted(columns):
        members = columns[col]

        def barycentre(node_id: str) -> tuple[float, int]:
            parents = [rank[e.source_node] for e in topo.incoming.get(node_id, [])
                       if e.source_node in rank]
            mean = sum(parents) / len(parents) if parents else float(file_order[node_id])
            return mean, file_order[node_id]

        members.sort(key=barycentre)
        heights = [node_height(doc, n, registry) for n in members]
        total = sum(heights) + row_gap * (len(members) - 1)
        y = -total / 2
        for index, (node_id, height) in enumerate(zip(members, heights, strict=True)):
            positions[node_id] = (col * column_width, round(y, 1))
            rank[node_id] = float(index)
            y += height + row_gap
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
