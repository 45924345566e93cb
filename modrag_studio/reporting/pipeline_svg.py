"""A graph drawn as inline SVG for a page, top to bottom, each box coloured by what the node
did in a run and labelled with its time; a box links to its step (``#step-<node id>``).

Rows are the nodes' longest-path layers and each row is ordered to keep wires uncrossed (the
canvas's own layering, ``engine.layout``); loop-back wires are dashed.
"""

from __future__ import annotations

from dataclasses import dataclass

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.formatting import duration
from modrag_studio.engine.layout.auto_layout import order_columns
from modrag_studio.engine.layout.geometry import layer_of
from modrag_studio.reporting.page import Html, esc

BOX_W, BOX_H = 164.0, 48.0
GAP_X, GAP_Y = 18.0, 40.0
MARGIN = 12.0
TITLE_CHARS = 21

#: visit status -> (fill, stroke, the word under the title)
LOOK = {
    "done": ("#e3f4ea", "#1f7a4d", ""),
    "cached": ("#e4edf9", "#1d4f91", "reused"),
    "pinned": ("#e4edf9", "#1d4f91", "pinned"),
    "bypassed": ("#f3f0fa", "#6a4fa3", "bypassed"),
    "skipped": ("#f3f4f6", "#9aa3b2", "skipped"),
    "failed": ("#fbe6e3", "#a3261b", "failed"),
    "cancelled": ("#fff2d6", "#8a5a00", "stopped"),
    "": ("#ffffff", "#9aa3b2", "not run"),
}


@dataclass(frozen=True)
class StepMark:
    """What the drawing shows of one node: its status, its time, a tooltip, a highlight."""

    status: str = ""
    seconds: float = 0.0
    tooltip: str = ""
    visits: int = 0
    highlight: str = ""  # a stroke colour that marks the node (the one that lost evidence)


def _short(text: str, limit: int = TITLE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def positions(doc: GraphDocument) -> dict[str, tuple[float, float]]:
    """Top-left corner of each node's box: one row per layer, rows centred."""
    depth = layer_of(doc)
    rows = order_columns(doc, depth) if depth else []
    widest = max((len(r) for r in rows), default=0)
    full = widest * BOX_W + max(widest - 1, 0) * GAP_X
    placed = {}
    for index, row in enumerate(rows):
        width = len(row) * BOX_W + max(len(row) - 1, 0) * GAP_X
        left = MARGIN + (full - width) / 2
        for n, node_id in enumerate(row):
            placed[node_id] = (left + n * (BOX_W + GAP_X), MARGIN + index * (BOX_H + GAP_Y))
    return placed


def _wire(start: tuple[float, float], end: tuple[float, float], loop: bool) -> str:
    (x1, y1), (x2, y2) = start, end
    if loop:  # back up the graph: leave and enter on the right side
        x1, y1 = x1 + BOX_W / 2, y1 - BOX_H / 2
        x2, y2 = x2 + BOX_W / 2, y2 + BOX_H / 2
        bend = 60 + abs(y1 - y2) * 0.15
        return (f'<path d="M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} {x2 + bend:.1f},'
                f'{y2:.1f} {x2:.1f},{y2:.1f}" class="loop"/>')
    pull = max((y2 - y1) / 2, 20)
    return (f'<path d="M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + pull:.1f} {x2:.1f},{y2 - pull:.1f} '
            f'{x2:.1f},{y2:.1f}"/>')


def pipeline_svg(doc: GraphDocument, titles: dict[str, str],
                 marks: dict[str, StepMark]) -> Html:
    """The SVG element (it scales to the page's width; its text stays selectable)."""
    placed = positions(doc)
    if not placed:
        return Html("")
    width = max(x for x, _ in placed.values()) + BOX_W + MARGIN + 70
    height = max(y for _, y in placed.values()) + BOX_H + MARGIN
    wires = []
    for edge in doc.edges:
        if edge.source_node not in placed or edge.target_node not in placed:
            continue
        (sx, sy), (tx, ty) = placed[edge.source_node], placed[edge.target_node]
        wires.append(_wire((sx + BOX_W / 2, sy + BOX_H), (tx + BOX_W / 2, ty),
                           edge.loop is not None))
    boxes = []
    for node_id, (x, y) in placed.items():
        mark = marks.get(node_id, StepMark())
        fill, stroke, word = LOOK.get(mark.status, LOOK[""])
        timing = duration(mark.seconds) if mark.status == "done" else word
        if mark.visits > 1:
            timing += f" · {mark.visits} runs"
        dash = ' stroke-dasharray="4 3"' if mark.status in ("skipped", "") else ""
        edge_colour = mark.highlight or stroke
        width_px = 3 if mark.highlight else 1.4
        title = titles.get(node_id, node_id)
        boxes.append(
            f'<a href="#step-{esc(node_id)}"><g>'
            f"<title>{esc(mark.tooltip or title)}</title>"
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{BOX_W}" height="{BOX_H}" rx="8" '
            f'fill="{fill}" stroke="{edge_colour}" stroke-width="{width_px}"{dash}/>'
            f'<text x="{x + BOX_W / 2:.1f}" y="{y + 20:.1f}" class="t">{esc(_short(title))}</text>'
            f'<text x="{x + BOX_W / 2:.1f}" y="{y + 37:.1f}" class="s">{esc(timing)}</text>'
            "</g></a>")
    style = ("<style>.wires path{fill:none;stroke:#8c96a8;stroke-width:1.3}"
             ".wires path.loop{stroke:#b07a00;stroke-dasharray:5 4}"
             "text{text-anchor:middle;font-family:system-ui,sans-serif}"
             "text.t{font-size:12.5px;font-weight:600;fill:#1f2430}"
             "text.s{font-size:11px;fill:#5b6475}</style>")
    return Html(
        f'<svg class="pipeline" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'aria-label="the pipeline, one box per step">{style}'
        f'<g class="wires">{"".join(wires)}</g>{"".join(boxes)}</svg>')
