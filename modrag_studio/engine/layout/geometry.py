"""Sizes and layering shared by every layout and by the layout metrics (no Qt).

Node sizes, spacing, longest-path layers and the wrapping of columns into rows: the pieces
that :mod:`~modrag_studio.engine.layout.auto_layout`,
:mod:`~modrag_studio.engine.layout.band_layout` and :mod:`~modrag_studio.engine.layout.metrics`
all read, kept here so the three import it and not each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology

COLUMN_WIDTH = 230.0
ROW_GAP = 40.0
NODE_BASE_HEIGHT = 60.0
PORT_ROW_HEIGHT = 24.0
PARAM_ROW_HEIGHT = 16.0  # a key param drawn under the ports (``NodeType.key_params``)
BAND_GAP = 200.0    # between rows of a wrapped layout: room for the cards under nodes
ASPECT = 16 / 9     # wrap layouts much wider than this (width over height) ...
WRAP_WIDTH = 1700.0  # ... once they are wider than a screen at full size (7 columns)
DOT_NODE_WIDTH = 180.0  # points (= scene pixels): about a drawn node's width


@dataclass(frozen=True)
class LayoutOptions:
    """Spacing of the automatic layout, in scene pixels."""

    column_width: float = COLUMN_WIDTH  # from one column's left edge to the next
    row_gap: float = ROW_GAP            # between nodes of a column
    band_gap: float = BAND_GAP          # between the rows of a wrapped layout
    aspect: float = ASPECT              # wrap layouts wider than this (width over height)


DEFAULT_OPTIONS = LayoutOptions()


def node_height(doc: GraphDocument, node_id: str, registry: NodeRegistry | None) -> float:
    """Estimated drawn height of a node: a title bar, one row per port pair and one per key
    param."""
    if registry is None:
        return NODE_BASE_HEIGHT + PORT_ROW_HEIGHT
    try:
        node_type = type_of(doc.node(node_id), registry)
    except (UnknownNodeType, KeyError):
        return NODE_BASE_HEIGHT + PORT_ROW_HEIGHT
    rows = max(len(node_type.inputs), len(node_type.outputs), 1)
    return (NODE_BASE_HEIGHT + PORT_ROW_HEIGHT * rows
            + PARAM_ROW_HEIGHT * len(node_type.key_params))


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


def wrap_bands(heights: list[float], column_width: float, band_gap: float,
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


def node_ports(doc: GraphDocument, node_id: str,
           registry: NodeRegistry | None) -> tuple[list[str], list[str]]:
    if registry is not None:
        try:
            node_type = type_of(doc.node(node_id), registry)
            return [p.name for p in node_type.inputs], [p.name for p in node_type.outputs]
        except (UnknownNodeType, KeyError):
            pass
    ins = [e.target_port for e in doc.edges if e.target_node == node_id]
    outs = [e.source_port for e in doc.edges if e.source_node == node_id]
    return list(dict.fromkeys(ins)), list(dict.fromkeys(outs))
