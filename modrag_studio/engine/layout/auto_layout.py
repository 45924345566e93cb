"""Automatic left-to-right layout for graphs saved without a ``layout`` block (no Qt).

Several layouts compete (:func:`candidates`): the band layout of
:mod:`~modrag_studio.engine.layout.band_layout` (lanes for long wires, wrapped into rows where the
fewest wires pass), graphviz ``dot``'s own (when installed) and the barycentre layout; the
one with the fewest crossings, wires over nodes and the shortest wires wins
(:func:`layout_cost`; ``bench/bench_layout.py`` measures them).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import defaultdict
from dataclasses import replace

from modrag_studio.engine.core.document import GraphDocument, Layout, NodeLayout
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.layout.band_layout import (
    HEAVY_LANE,
    band_layout,
    band_ranges,
    cut_candidates,
)
from modrag_studio.engine.layout.geometry import (
    COLUMN_WIDTH,
    DEFAULT_OPTIONS,
    DOT_NODE_WIDTH,
    PORT_ROW_HEIGHT,
    LayoutOptions,
    layer_of,
    node_height,
    node_ports,
    wrap_bands,
)
from modrag_studio.engine.layout.metrics import layout_metrics


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


def auto_layout(doc: GraphDocument, registry: NodeRegistry | None = None,
                options: LayoutOptions = DEFAULT_OPTIONS, *,
                engine: str = "auto") -> dict[str, tuple[float, float]]:
    """Top-left positions by node id. ``engine``: "auto" (the most readable of the
    candidates, see :func:`candidates`), "dot" (the same, failing without graphviz),
    "bands" (:func:`~modrag_studio.engine.layout.band_layout.band_layout` on longest-path layers)
    or "layers" (:func:`layered_layout`, the barycentre layout)."""
    if engine == "layers":
        return layered_layout(doc, registry, options)
    if engine == "bands":
        return band_layout(doc, registry, options)
    if engine == "dot" and dot_centres(doc, registry, column_gap=50, row_gap=40) is None:
        raise RuntimeError("graphviz 'dot' is not installed or failed")
    if not doc.nodes:
        return {}
    # candidates often coincide (a cut or lane weight that changes nothing): each distinct
    # layout is scored once, the first of equals wins as before
    distinct: dict[tuple, dict[str, tuple[float, float]]] = {}
    for found in candidates(doc, registry, options):
        distinct.setdefault(tuple(sorted(found.items())), found)
    return min(distinct.values(), key=lambda found: layout_cost(doc, found, registry))


def layered_layout(doc: GraphDocument, registry: NodeRegistry | None = None,
                   options: LayoutOptions = DEFAULT_OPTIONS) -> dict[str, tuple[float, float]]:
    """Top-left positions by node id: columns by topological depth, rows without overlap.

    Columns are ordered to keep wires uncrossed and centred vertically. A graph much wider
    than ``options.aspect`` (a long chain) wraps into rows of columns, read left to right and
    top to bottom, ``options.band_gap`` apart so the cards drawn under nodes after a run have
    room.
    """
    depth = layer_of(doc)
    columns = order_columns(doc, depth)
    heights = [[node_height(doc, n, registry) for n in members] for members in columns]
    totals = [sum(h) + options.row_gap * (len(h) - 1) for h in heights]
    positions: dict[str, tuple[float, float]] = {}
    top = 0.0
    for band in wrap_bands(totals, options.column_width, options.band_gap, options.aspect):
        tallest = max(totals[c] for c in band)
        for slot, col in enumerate(band):
            y = top + (tallest - totals[col]) / 2
            for node_id, height in zip(columns[col], heights[col], strict=True):
                positions[node_id] = (slot * options.column_width, round(y, 1))
                y += height + options.row_gap
        top += tallest + options.band_gap
    return positions


DOT_TIMEOUT_S = 10.0
CROSSING_COST = 400.0
THROUGH_COST = 1000.0  # a wire drawn over a node hides it: worse than a crossing
CANVAS_SIZE = (700.0, 460.0)  # the canvas of a 1280x800 window with its docks
MIN_FIT_SCALE = 0.4
SMALL_FIT_COST = 40_000.0      # per unit of scale below MIN_FIT_SCALE
MAX_ONE_ROW_ASPECT = 3.0  # one row is a candidate up to this width over height


def _dot_source(doc: GraphDocument, registry: NodeRegistry | None, row_gap: float,
                column_gap: float, options: str = "") -> tuple[str, dict[str, str]]:
    """The graph in the dot language, each node a table with its ports in drawn order."""
    names = {n: f"n{i}" for i, n in enumerate(doc.node_ids())}
    lines = ["digraph G {", f"rankdir=LR; splines=spline; newrank=true; {options}",
             f"nodesep={row_gap / 72:.3f}; ranksep={column_gap / 72:.3f};",
             "node [shape=plaintext, margin=0];"]
    half = DOT_NODE_WIDTH / 2
    for node_id, name in names.items():
        ins, outs = node_ports(doc, node_id, registry)
        head = node_height(doc, node_id, registry) - PORT_ROW_HEIGHT * max(len(ins), len(outs), 1)
        rows = [f'<TR><TD COLSPAN="2" HEIGHT="{head:.0f}" WIDTH="{DOT_NODE_WIDTH:.0f}"></TD></TR>']
        for index in range(max(len(ins), len(outs), 1)):
            left = f' PORT="i{index}"' if index < len(ins) else ""
            right = f' PORT="o{index}"' if index < len(outs) else ""
            rows.append(f'<TR><TD{left} HEIGHT="{PORT_ROW_HEIGHT:.0f}" WIDTH="{half:.0f}"></TD>'
                        f'<TD{right} HEIGHT="{PORT_ROW_HEIGHT:.0f}" WIDTH="{half:.0f}"></TD></TR>')
        table = ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">'
                 + "".join(rows) + "</TABLE>>")
        lines.append(f"{name} [label={table}];")
    for edge in doc.edges:
        if edge.source_node not in names or edge.target_node not in names:
            continue
        ins = node_ports(doc, edge.target_node, registry)[0]
        outs = node_ports(doc, edge.source_node, registry)[1]
        tail = names[edge.source_node]
        if edge.source_port in outs:
            tail += f":o{outs.index(edge.source_port)}:e"
        head = names[edge.target_node]
        if edge.target_port in ins:
            head += f":i{ins.index(edge.target_port)}:w"
        extra = " [constraint=false]" if edge.loop is not None else ""
        lines.append(f"{tail} -> {head}{extra};")
    lines.append("}")
    return "\n".join(lines), names


def dot_centres(doc: GraphDocument, registry: NodeRegistry | None, *, column_gap: float,
                row_gap: float, options: str = "") -> dict[str, tuple[float, float]] | None:
    """Node centres from graphviz ``dot`` (y down), or None when it is missing or fails."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    source, names = _dot_source(doc, registry, row_gap, column_gap, options)
    try:
        proc = subprocess.run([exe, "-Tplain"], input=source, capture_output=True, text=True,
                              timeout=DOT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    by_name = {name: node_id for node_id, name in names.items()}
    centres: dict[str, tuple[float, float]] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "node" and parts[1] in by_name:
            centres[by_name[parts[1]]] = (float(parts[2]) * 72, -float(parts[3]) * 72)
    return centres if set(centres) == set(names) else None


def _quiet_cut(doc: GraphDocument, column_of: dict[str, int], count: int) -> list[range]:
    """Two rows split where the fewest wires run from the first row to the second.

    Only cuts in the middle third are tried; ties go to the cut nearest the middle.
    """
    def wires_over(cut: int) -> int:
        return sum(1 for e in doc.edges if e.source_node in column_of
                   and e.target_node in column_of
                   and min(column_of[e.source_node], column_of[e.target_node]) < cut
                   <= max(column_of[e.source_node], column_of[e.target_node]))
    cuts = range(max(1, count // 3), max(2, count - count // 3 + 1))
    best = min(cuts, key=lambda c: (wires_over(c), abs(c - count / 2)))
    return [range(0, best), range(best, count)]


def _banded(doc: GraphDocument, registry: NodeRegistry | None,
            centres: dict[str, tuple[float, float]], options: LayoutOptions,
            quiet_cut: bool = False) -> dict[str, tuple[float, float]]:
    """Top-left positions: dot's layers as columns, wrapped into rows near ``options.aspect``
    (``quiet_cut``: two rows split where fewest wires pass, see :func:`_quiet_cut`)."""
    xs = sorted({round(x) for x, _ in centres.values()})
    column = {x: i for i, x in enumerate(xs)}
    heights = {n: node_height(doc, n, registry) for n in centres}
    tops = {n: y - heights[n] / 2 for n, (_, y) in centres.items()}
    extent: dict[int, tuple[float, float]] = {}
    for node_id, (x, _) in centres.items():
        col = column[round(x)]
        low, high = extent.get(col, (math.inf, -math.inf))
        extent[col] = (min(low, tops[node_id]), max(high, tops[node_id] + heights[node_id]))
    totals = [extent[c][1] - extent[c][0] for c in range(len(xs))]
    positions: dict[str, tuple[float, float]] = {}
    top = 0.0
    bands = wrap_bands(totals, options.column_width, options.band_gap, options.aspect)
    if quiet_cut and len(bands) == 2:
        bands = _quiet_cut(doc, {n: column[round(x)] for n, (x, _) in centres.items()},
                           len(xs))
    for band in bands:
        low = min(extent[c][0] for c in band)
        high = max(extent[c][1] for c in band)
        for node_id, (x, _) in centres.items():
            col = column[round(x)]
            if col in band:
                positions[node_id] = ((col - band.start) * options.column_width,
                                      round(top + tops[node_id] - low, 1))
        top += high - low + options.band_gap
    return positions


def _aspect(doc: GraphDocument, registry: NodeRegistry | None,
            positions: dict[str, tuple[float, float]]) -> float:
    xs = [x for x, _ in positions.values()]
    ys = [y for _, y in positions.values()]
    bottom = max(y + node_height(doc, n, registry) for n, (_, y) in positions.items())
    return (max(xs) - min(xs) + DOT_NODE_WIDTH) / max(bottom - min(ys), 1.0)


def layout_cost(doc: GraphDocument, positions: dict[str, tuple[float, float]],
                registry: NodeRegistry | None) -> float:
    """Lower is more readable: wire length, plus 400 px per crossing and 1000 per wire over a
    node, plus a penalty when the whole graph would be drawn smaller than ``MIN_FIT_SCALE``
    on the canvas of a 1280x800 window (text too small to read at "fit")."""
    found = layout_metrics(doc, positions, registry)
    left = min(x for x, _ in positions.values())
    top = min(y for _, y in positions.values())
    right = max(x for x, _ in positions.values()) + DOT_NODE_WIDTH
    bottom = max(y + node_height(doc, n, registry) for n, (_, y) in positions.items())
    fit = min(CANVAS_SIZE[0] / (right - left + 120), CANVAS_SIZE[1] / (bottom - top + 120))
    small = max(0.0, MIN_FIT_SCALE - fit) * SMALL_FIT_COST
    return (found.wire_length + CROSSING_COST * found.crossings
            + THROUGH_COST * found.through_nodes + small)


def dot_ranks(centres: dict[str, tuple[float, float]]) -> dict[str, int]:
    """dot's layers (columns) by node id, from its node centres."""
    xs = {x: i for i, x in enumerate(sorted({round(x) for x, _ in centres.values()}))}
    return {n: xs[round(x)] for n, (x, _) in centres.items()}


def candidates(doc: GraphDocument, registry: NodeRegistry | None,
               options: LayoutOptions = DEFAULT_OPTIONS) -> list[dict[str, tuple[float, float]]]:
    """Layouts competing on :func:`layout_cost`.

    The band layout (:mod:`~modrag_studio.engine.layout.band_layout`) on longest-path layers and,
    with graphviz, on ``dot``'s layers, each with the three quietest cuts when it wraps into
    two rows and with light and heavy lanes; ``dot``'s own layout (ports kept in order,
    ``ordering=out``) wrapped into rows near ``options.aspect``, the same in one row (when
    no wider than ``MAX_ONE_ROW_ASPECT``); and the barycentre layout.
    """
    found = [layered_layout(doc, registry, options)]
    centres = dot_centres(doc, registry,
                          column_gap=max(options.column_width - DOT_NODE_WIDTH, 20),
                          row_gap=options.row_gap, options="ordering=out;")
    layerings = [layer_of(doc)]
    if centres is not None:
        layerings.append(dot_ranks(centres))
        found.append(_banded(doc, registry, centres, options))
        found.append(_banded(doc, registry, centres, options, quiet_cut=True))
        one_row = _banded(doc, registry, centres, replace(options, aspect=math.inf))
        if _aspect(doc, registry, one_row) <= MAX_ONE_ROW_ASPECT:
            found.append(one_row)
    for ranks in layerings:
        two = len(band_ranges(doc, registry, options, ranks)) == 2
        for cut in cut_candidates(doc, ranks, 3) if two else [None]:
            for weight in (1.0, HEAVY_LANE):
                found.append(band_layout(doc, registry, options, ranks, cut,
                                         lane_weight=weight))
    return found


def with_auto_layout(doc: GraphDocument, registry: NodeRegistry | None = None, *,
                     engine: str = "auto") -> GraphDocument:
    """``doc`` with a layout block; nodes that already have a position keep it.
    ``engine`` as for :func:`auto_layout` ("bands": one quick candidate, no search)."""
    layout = doc.layout or Layout()
    missing = [n for n in doc.node_ids() if n not in layout.nodes]
    if not missing and doc.layout is not None:
        return doc
    positions = auto_layout(doc, registry, engine=engine)
    if layout.nodes:
        # place only the missing nodes, to the right of what is already laid out
        right = max(n.x for n in layout.nodes.values()) + COLUMN_WIDTH
        positions = {n: (right + x, y) for n, (x, y) in positions.items()}
    nodes = dict(layout.nodes)
    for node_id in missing:
        x, y = positions[node_id]
        nodes[node_id] = NodeLayout(x=x, y=y)
    return doc.model_copy(update={"layout": layout.model_copy(update={"nodes": nodes})})
