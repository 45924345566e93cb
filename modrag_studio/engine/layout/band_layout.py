"""Layered layout wrapped into bands (rows of columns), with wires kept in free lanes (no Qt).

Steps (Sugiyama's, with the canvas's ports in mind):

1. Layers: each node's column (graphviz ``dot``'s ranks when given, else longest path).
2. Bands: a graph wider than a screen is cut into rows of columns; for two rows the cut is
   where the fewest wires pass. A source node (model, embedder, graph input) joins the band
   holding most of its consumers, just left of the first one.
3. Lanes: a wire spanning several columns gets a dummy slot in each column it passes, so
   the nodes leave it a free lane; a wire to a later band leaves at the bottom of its band
   and enters the next band at the top, with lanes where its curve crosses either band.
4. Order: barycentre sweeps over port positions plus adjacent swaps (transpose), keeping
   the order with the fewest crossings.
5. Height: each slot is pulled level with the ports it connects to (a few sweeps), and the
   column's slots are packed without overlap by isotonic regression (pool adjacent
   violators), so most wires run straight.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.layout.geometry import (
    DOT_NODE_WIDTH,
    NODE_BASE_HEIGHT,
    PORT_ROW_HEIGHT,
    LayoutOptions,
    layer_of,
    node_height,
    node_ports,
    wrap_bands,
)
from modrag_studio.engine.layout.wire_routing import bezier

PORT_TOP = NODE_BASE_HEIGHT - PORT_ROW_HEIGHT / 2  # first port's y below a node's top
LANE_HEIGHT = 8.0      # a dummy slot: room for one wire
LANE_GAP = 12.0        # between a lane and its neighbours in a column
HEAVY_LANE = 20.0      # a lane weight that keeps nodes off long wires (see _pack)
ORDER_SWEEPS = 8
HEIGHT_SWEEPS = 6


@dataclass
class _Slot:
    """A node, or a dummy carrying a long wire through a column."""

    key: str
    height: float
    node: str | None = None  # None for a dummy


@dataclass
class _Link:
    """A wire between slots in adjacent columns (port offsets below each slot's top)."""

    left: str
    right: str
    left_offset: float
    right_offset: float


@dataclass(frozen=True)
class _Lane:
    """The wire a dummy slot carries: its ends (slot keys, None: the next band below or
    the band above), port offsets and x positions."""

    source: str | None
    source_offset: float
    source_x: float
    target: str | None
    target_offset: float
    target_x: float


@dataclass
class _Band:
    columns: list[list[_Slot]]
    links: list[_Link] = field(default_factory=list)
    exits: set[str] = field(default_factory=set)    # slots with a wire to a later band
    entries: set[str] = field(default_factory=set)  # slots with a wire from an earlier band
    where: dict[str, int] = field(default_factory=dict)  # column of each slot
    leaving: dict[int, list[_Link]] = field(default_factory=dict)  # links by left column
    lanes: dict[str, _Lane] = field(default_factory=dict)  # by dummy slot
    edge_lanes: list[tuple[int, _Slot, bool]] = field(default_factory=list)
    # lanes of wires to or from another band: column, slot, at the top (else the bottom)


def band_layout(doc: GraphDocument, registry: NodeRegistry | None,
                options: LayoutOptions, ranks: dict[str, int] | None = None,
                cut: int | None = None, *,
                lane_weight: float = 1.0) -> dict[str, tuple[float, float]]:
    """Top-left positions by node id (see the module docstring); ``cut``: the first column
    of the second band (default: by width, cut where the fewest wires pass);
    ``lane_weight``: see :func:`_pack` (heavier lanes push nodes off long wires)."""
    depth = _compact(ranks if ranks is not None else layer_of(doc))
    edges = _forward_edges(doc, registry, depth)
    bands = band_ranges(doc, registry, options, depth) if cut is None else _two(cut, depth)
    band_of, column = _place(doc, depth, edges, bands)
    positions: dict[str, tuple[float, float]] = {}
    top = 0.0
    for index in range(len(bands)):
        band = _build_band(doc, registry, index, band_of, column, edges, options.column_width)
        _order(band)
        for col, slot, at_top in band.edge_lanes:  # wires from above enter at the top
            band.columns[col].insert(0 if at_top else len(band.columns[col]), slot)
        ys = _heights(band, options, lane_weight)
        low, high = _outside(band, ys, 0.0)  # the nodes' extent (lanes may stick out)
        for col, slots in enumerate(band.columns):
            for slot in slots:
                if slot.node is not None:
                    positions[slot.node] = (col * options.column_width,
                                            round(top + ys[slot.key] - low, 1))
        top += high - low + options.band_gap
    return positions


def band_ranges(doc: GraphDocument, registry: NodeRegistry | None, options: LayoutOptions,
                depth: dict[str, int]) -> list[range]:
    """Column ranges of the bands: rows near ``options.aspect``; two rows cut where the
    fewest wires pass (middle third, ties nearest the middle)."""
    depth = _compact(depth)
    count = max(depth.values(), default=-1) + 1
    totals = [0.0] * count
    for node_id, col in depth.items():
        totals[col] += node_height(doc, node_id, registry) + options.row_gap
    bands = wrap_bands(totals, options.column_width, options.band_gap, options.aspect)
    if len(bands) != 2:
        return bands
    return _two(min(cut_candidates(doc, depth, 1), key=lambda c: abs(c - count / 2)), depth)


def cut_candidates(doc: GraphDocument, depth: dict[str, int], keep: int) -> list[int]:
    """The ``keep`` cuts of the middle third with the fewest wires passing."""
    depth = _compact(depth)
    count = max(depth.values(), default=-1) + 1
    edges = _forward_edges(doc, None, depth)
    cuts = range(max(1, count // 3), max(2, count - count // 3 + 1))

    def passing(cut: int) -> int:
        return sum(1 for a, _, b, _ in edges if depth[a] < cut <= depth[b])
    return sorted(cuts, key=lambda c: (passing(c), abs(c - count / 2)))[:keep]


def _two(cut: int, depth: dict[str, int]) -> list[range]:
    count = max(depth.values(), default=-1) + 1
    return [range(0, cut), range(cut, count)] if 0 < cut < count else [range(count)]


def _compact(depth: dict[str, int]) -> dict[str, int]:
    """Ranks renumbered 0, 1, 2, ... without empty columns."""
    order = {r: i for i, r in enumerate(sorted(set(depth.values())))}
    return {n: order[r] for n, r in depth.items()}


def _forward_edges(doc: GraphDocument, registry: NodeRegistry | None,
                   depth: dict[str, int]) -> list[tuple[str, float, str, float]]:
    """(source, source port offset, target, target port offset) of left-to-right wires."""
    ports = {n: node_ports(doc, n, registry) for n in depth}
    found = []
    for edge in doc.edges:
        a, b = edge.source_node, edge.target_node
        if edge.loop is not None or a not in depth or b not in depth or depth[a] >= depth[b]:
            continue
        outs, ins = ports[a][1], ports[b][0]
        out_row = outs.index(edge.source_port) if edge.source_port in outs else 0
        in_row = ins.index(edge.target_port) if edge.target_port in ins else 0
        found.append((a, PORT_TOP + out_row * PORT_ROW_HEIGHT,
                      b, PORT_TOP + in_row * PORT_ROW_HEIGHT))
    return found


def _place(doc: GraphDocument, depth: dict[str, int], edges: list[tuple[str, float, str, float]],
           bands: list[range]) -> tuple[dict[str, int], dict[str, int]]:
    """Band and column (within the band) of each node; sources join their consumers."""
    band_of = {n: next(i for i, r in enumerate(bands) if d in r) for n, d in depth.items()}
    column = {n: d - bands[band_of[n]].start for n, d in depth.items()}
    has_input = {b for _, _, b, _ in edges}
    consumers: dict[str, list[str]] = defaultdict(list)
    for a, _, b, _ in edges:
        consumers[a].append(b)
    for node_id in doc.node_ids():
        targets = consumers.get(node_id)
        if node_id in has_input or not targets or len(bands) < 2:
            continue
        votes = defaultdict(int)
        for target in targets:
            votes[band_of[target]] += 1
        band = max(sorted(votes), key=votes.__getitem__)  # ties: the earlier band
        band_of[node_id] = band
        column[node_id] = min(column[t] for t in targets if band_of[t] == band) - 1
    for index in range(len(bands)):  # a source left of column 0 shifts its band right
        low = min((c for n, c in column.items() if band_of[n] == index), default=0)
        for node_id in column:
            if band_of[node_id] == index:
                column[node_id] -= min(low, 0)
    return band_of, column


def _build_band(doc: GraphDocument, registry: NodeRegistry | None, index: int,
                band_of: dict[str, int], column: dict[str, int],
                edges: list[tuple[str, float, str, float]], column_width: float) -> _Band:
    members = [n for n in doc.node_ids() if band_of[n] == index]
    count = max((column[n] for n in members), default=-1) + 1
    band = _Band(columns=[[] for _ in range(count)])
    for node_id in members:
        band.columns[column[node_id]].append(
            _Slot(node_id, node_height(doc, node_id, registry), node_id))
    for number, (a, a_off, b, b_off) in enumerate(edges):
        start, end = column[a] * column_width + DOT_NODE_WIDTH, column[b] * column_width
        if band_of[a] < index == band_of[b]:
            band.entries.add(b)
            lane = _Lane(None, 0.0, start, b, b_off, end)
            _edge_lanes(band, f"\0{number}>", lane, column[b], column_width, True)
        if band_of[a] == index < band_of[b]:
            band.exits.add(a)
            lane = _Lane(a, a_off, start, None, b_off, end)
            _edge_lanes(band, f"\0{number}<", lane, column[a], column_width, False)
        if band_of[a] != index or band_of[b] != index or column[a] >= column[b]:
            continue
        previous, offset = a, a_off
        for col in range(column[a] + 1, column[b]):
            key = f"\0{number}:{col}"
            band.columns[col].append(_Slot(key, LANE_HEIGHT))
            band.lanes[key] = _Lane(a, a_off, start, b, b_off, end)
            band.links.append(_Link(previous, key, offset, LANE_HEIGHT / 2))
            previous, offset = key, LANE_HEIGHT / 2
        band.links.append(_Link(previous, b, offset, b_off))
    band.where = {s.key: c for c, slots in enumerate(band.columns) for s in slots}
    for link in band.links:
        band.leaving.setdefault(band.where[link.left], []).append(link)
    return band


def _edge_lanes(band: _Band, prefix: str, lane: _Lane, own: int, column_width: float,
                top: bool) -> None:
    """Lanes for a wire to or from another band in each column its curve passes, but the
    column ``own`` of its end in this band: at the top for a wire from the band above."""
    low, high = sorted((lane.source_x, lane.target_x))
    for col in range(len(band.columns)):
        left = col * column_width
        if col == own or left + DOT_NODE_WIDTH < low or left > high:
            continue
        key = f"{prefix}{col}"
        slot = _Slot(key, LANE_HEIGHT)
        band.lanes[key] = lane
        band.edge_lanes.append((col, slot, top))


def _crossings(band: _Band, column: int | None = None) -> int:
    """Crossing wire pairs between adjacent columns, by port position; a wire leaving for
    a later band counts as going to the bottom, one arriving as coming from the top.
    With ``column``: only the crossings that reordering that column can change."""
    columns = range(len(band.columns)) if column is None else (column - 1, column)
    rank = {s.key: r for c in range(min(columns, default=0), max(columns, default=-1) + 2)
            if 0 <= c < len(band.columns) for r, s in enumerate(band.columns[c])}
    total = 0
    for col in columns:
        pairs = [(rank[link.left] + link.left_offset / 1000,
                  rank[link.right] + link.right_offset / 1000)
                 for link in band.leaving.get(col, [])]
        for i, (a1, b1) in enumerate(pairs):
            total += sum(1 for a2, b2 in pairs[i + 1:] if (a1 - a2) * (b1 - b2) < 0)
        for key in band.exits:
            if band.where[key] == col and (column is None or col == column):
                total += sum(1 for a, _ in pairs if a > rank[key])
        for key in band.entries:
            if band.where[key] == col + 1 and (column is None or col + 1 == column):
                total += sum(1 for _, b in pairs if b < rank[key])
    return total


def _order(band: _Band) -> None:
    """Orders each column's slots in place (barycentre sweeps + transpose)."""
    left: dict[str, list[tuple[str, float]]] = defaultdict(list)
    right: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for link in band.links:
        right[link.left].append((link.right, link.left_offset))
        left[link.right].append((link.left, link.right_offset))

    def sweep(columns: range, near: dict[str, list[tuple[str, float]]], bias: float,
              edge_set: set[str]) -> None:
        for col in columns:
            rank = {s.key: r for slots in band.columns for r, s in enumerate(slots)}
            keys = {}
            for position, slot in enumerate(band.columns[col]):
                found = [rank[other] for other, _ in near.get(slot.key, [])]
                if slot.key in edge_set:
                    found.append(bias * (len(band.columns[col]) + 1))
                keys[slot.key] = (sum(found) / len(found) if found else position, position)
            band.columns[col].sort(key=lambda s, k=keys: k[s.key])

    count = len(band.columns)
    best = [list(c) for c in band.columns]
    best_cross = _crossings(band)
    for index in range(ORDER_SWEEPS):
        if index % 2 == 0:
            sweep(range(1, count), left, -1.0, band.entries)
        else:
            sweep(range(count - 2, -1, -1), right, 1.0, band.exits)
        cross = _crossings(band)
        if cross < best_cross:
            best, best_cross = [list(c) for c in band.columns], cross
    band.columns = best
    _transpose(band)


def _transpose(band: _Band) -> None:
    """Swaps neighbouring slots while that lowers the crossings."""
    improved = True
    while improved:
        improved = False
        for col, slots in enumerate(band.columns):
            current = _crossings(band, col)
            for i in range(len(slots) - 1):
                slots[i], slots[i + 1] = slots[i + 1], slots[i]
                cross = _crossings(band, col)
                if cross < current:
                    current, improved = cross, True
                else:
                    slots[i], slots[i + 1] = slots[i + 1], slots[i]


def _pack(wanted: list[float], slots: list[_Slot], gap: float,
          lane_weight: float = 1.0) -> list[float]:
    """Tops closest (weighted least squares) to ``wanted`` keeping order and ``gap`` between
    nodes (``LANE_GAP`` next to a lane); a lane weighs ``lane_weight`` nodes, so a heavy one
    stays on its wire and the nodes make way."""
    offsets, total = [], 0.0
    for index, slot in enumerate(slots):
        offsets.append(total)
        after = slots[index + 1] if index + 1 < len(slots) else None
        lane = slot.node is None or (after is not None and after.node is None)
        total += slot.height + (LANE_GAP if lane else gap)
    blocks: list[list[float]] = []  # [mean, weight, slots pooled]
    for target, offset, slot in zip(wanted, offsets, slots, strict=True):
        blocks.append([target - offset, lane_weight if slot.node is None else 1.0, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight, size = blocks.pop()
            blocks[-1][0] = (blocks[-1][0] * blocks[-1][1] + mean * weight) / (
                blocks[-1][1] + weight)
            blocks[-1][1] += weight
            blocks[-1][2] += size
    levels = [mean for mean, _, size in blocks for _ in range(int(size))]
    return [level + offset for level, offset in zip(levels, offsets, strict=True)]


def _lane_extent(lane: _Lane, column: int, ys: dict[str, float], column_width: float,
                 outside: tuple[float, float]) -> tuple[float, float]:
    """Top and bottom of the wire drawn for ``lane`` where it passes ``column``'s nodes;
    ``outside``: the y of the band above's bottom and of the band below's top."""
    start_y = outside[0] if lane.source is None else ys[lane.source] + lane.source_offset
    end_y = (outside[1] + lane.target_offset if lane.target is None
             else ys[lane.target] + lane.target_offset)
    start, end = (lane.source_x, start_y), (lane.target_x, end_y)
    tangent = min(abs(end[0] - start[0]), DOT_NODE_WIDTH)
    left, right = column * column_width, column * column_width + DOT_NODE_WIDTH
    inside = [y for x, y in bezier(start, end, tangent, 48) if left <= x <= right]
    if not inside:
        middle = (start[1] + end[1]) / 2
        return middle, middle
    return min(inside), max(inside)


def _heights(band: _Band, options: LayoutOptions, lane_weight: float) -> dict[str, float]:
    """Top of each slot: wires pulled level, columns packed (see :func:`_pack`); in the
    last sweeps a lane covers its wire's drawn curve across the column, and a final sweep
    moves nodes only to clear the lanes."""
    gap, column_width = options.row_gap, options.column_width
    ys: dict[str, float] = {}
    for slots in band.columns:
        for slot, top in zip(slots, _pack([0.0] * len(slots), slots, gap), strict=True):
            ys[slot.key] = top
    pulls: dict[str, list[tuple[str, float, int]]] = defaultdict(list)  # other, delta, side
    for link in band.links:
        pulls[link.right].append((link.left, link.left_offset - link.right_offset, -1))
        pulls[link.left].append((link.right, link.right_offset - link.left_offset, 1))
    count = len(band.columns)
    for index in range(HEIGHT_SWEEPS + 1):
        side = -1 if index % 2 == 0 else 1
        columns = range(count) if side < 0 else range(count - 1, -1, -1)
        both = index >= HEIGHT_SWEEPS - 2
        clearing = index == HEIGHT_SWEEPS  # last: nodes only make way for lanes
        for col in columns:
            slots = band.columns[col]
            outside = _outside(band, ys, options.band_gap)
            wanted = []
            for slot in slots:
                lane = band.lanes.get(slot.key)
                if clearing and lane is None:
                    wanted.append(ys[slot.key])
                    continue
                if both and lane is not None:
                    low, high = _lane_extent(lane, col, ys, column_width, outside)
                    slot.height = high - low + LANE_HEIGHT
                    wanted.append(low - LANE_HEIGHT / 2)
                    continue
                found = sorted(ys[o] + d for o, d, s in pulls.get(slot.key, [])
                               if both or s == side)
                if both and slot.key in band.entries:  # wires from above: enter at the top
                    found = [outside[0] + options.band_gap]
                wanted.append(_median(found) if found else ys[slot.key])
            packed = _pack(wanted, slots, gap, lane_weight if both else 1.0)
            for slot, top in zip(slots, packed, strict=True):
                ys[slot.key] = top
    return ys


def _outside(band: _Band, ys: dict[str, float], band_gap: float) -> tuple[float, float]:
    """Where the band above ends and the band below starts, in this band's coordinates."""
    nodes = [(ys[s.key], ys[s.key] + s.height) for c in band.columns for s in c
             if s.node is not None]
    if not nodes:
        return -band_gap, band_gap
    return min(t for t, _ in nodes) - band_gap, max(b for _, b in nodes) + band_gap


def _median(values: list[float]) -> float:
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
