"""The clipboard's graph fragment: selected nodes, the edges between them and their
positions as JSON text (``CLIPBOARD_KIND``), and a document with a fragment pasted in under
fresh ids."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.document import EdgeSpec, GraphDocument, Layout, NodeLayout, NodeSpec

CLIPBOARD_KIND = "modrag-studio/fragment"


def fragment_text(doc: GraphDocument, node_ids: list[str]) -> str:
    """The nodes ``node_ids`` of ``doc``, the edges between them and their positions."""
    chosen = set(node_ids)
    layout = doc.layout or Layout()
    data = {
        "kind": CLIPBOARD_KIND,
        "nodes": [n.model_dump(mode="json", exclude_none=True)
                  for n in doc.nodes if n.id in chosen],
        "edges": [e.model_dump(mode="json", by_alias=True, exclude_none=True)
                  for e in doc.edges if e.source_node in chosen and e.target_node in chosen],
        "positions": {k: [v.x, v.y] for k, v in layout.nodes.items() if k in chosen},
    }
    return json.dumps(data)


def with_fragment(doc: GraphDocument, text: str, offset: tuple[float, float], *,
                  known: Callable[[str], bool],
                  new_id: Callable[[str, set[str]], str]) -> tuple[GraphDocument, list[str]] | None:
    """``doc`` with the fragment ``text`` added, each node under ``new_id(type, taken)``
    and moved by ``offset``, and the new ids; None when ``text`` is no fragment or holds no
    node of a ``known`` type."""
    data = _fragment(text)
    if data is None:
        return None
    taken = set(doc.node_ids())
    mapping: dict[str, str] = {}
    new_nodes: list[NodeSpec] = []
    for raw in data.get("nodes", []):
        spec = NodeSpec.model_validate(raw)
        if not known(spec.type):
            continue
        fresh = new_id(spec.type, taken)
        taken.add(fresh)
        mapping[spec.id] = fresh
        new_nodes.append(spec.model_copy(update={"id": fresh}))
    if not new_nodes:
        return None
    new_edges = []
    for raw in data.get("edges", []):
        edge = EdgeSpec.model_validate(raw)
        if edge.source_node in mapping and edge.target_node in mapping:
            new_edges.append(edge.model_copy(update={
                "source": f"{mapping[edge.source_node]}.{edge.source_port}",
                "target": f"{mapping[edge.target_node]}.{edge.target_port}",
            }))
    layout = doc.layout or Layout()
    positions = dict(layout.nodes)
    for old_id, fresh in mapping.items():
        x, y = data.get("positions", {}).get(old_id, (0.0, 0.0))
        positions[fresh] = NodeLayout(x=x + offset[0], y=y + offset[1])
    pasted = doc.model_copy(update={
        "nodes": [*doc.nodes, *new_nodes], "edges": [*doc.edges, *new_edges],
        "layout": layout.model_copy(update={"nodes": positions})})
    return pasted, list(mapping.values())


def fragment_corner(text: str) -> tuple[float, float] | None:
    """Top-left position of the nodes in copied clipboard text (None: not a fragment)."""
    data = _fragment(text)
    if data is None:
        return None
    points = [p for p in (data.get("positions") or {}).values()
              if isinstance(p, list | tuple) and len(p) == 2]
    if not points:
        return None
    return min(float(p[0]) for p in points), min(float(p[1]) for p in points)


def _fragment(text: str) -> dict[str, Any] | None:
    """The fragment ``text`` holds, read from JSON (None: not a fragment)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("kind") != CLIPBOARD_KIND:
        return None
    return data
