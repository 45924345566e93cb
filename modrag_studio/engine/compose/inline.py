"""Collapse nodes into a subgraph node and inline a subgraph node back (pure functions).

``collapse`` makes the boundary from the wires that cross the selection: one input per outer
source (fanning out inside to every inner port it fed), one output per inner source that
feeds the outside, each named after its inner port. It records where the nodes and wires sat
(``SubgraphOrigin``), so ``inline`` restores the document exactly; after other edits the
pieces go where the subgraph node is. ``inline(..., prefix=True)`` is how a run sees a
subgraph: its inner nodes as ``sub_id/inner_id``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from modrag_studio.engine.core.document import (
    SUBGRAPH_TYPE,
    Boundary,
    BoundaryInput,
    BoundaryOutput,
    EdgeSpec,
    GraphDocument,
    GraphMetadata,
    Layout,
    NodeLayout,
    NodeSpec,
    SubgraphOrigin,
    SubgraphSpec,
)
from modrag_studio.engine.core.errors import ModragError


class SubgraphError(ModragError):
    """A selection cannot be collapsed, or a subgraph node cannot be inlined."""


def _edge(source: str, target: str, like: EdgeSpec | None = None) -> EdgeSpec:
    return EdgeSpec(source=source, target=target, loop=like.loop if like else None)


def _unique(name: str, taken: set[str], fallback: str) -> str:
    for candidate in (name, fallback):
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    index = 2
    while f"{fallback}_{index}" in taken:
        index += 1
    taken.add(f"{fallback}_{index}")
    return f"{fallback}_{index}"


def _port_key(endpoint: str) -> str:
    node, _, port = endpoint.rpartition(".")
    return f"{node}_{port}".replace("-", "_").replace("/", "_")


def collapse(doc: GraphDocument, node_ids: Iterable[str], sub_id: str, *,
             title: str | None = None) -> GraphDocument:
    """``doc`` with ``node_ids`` replaced by one subgraph node ``sub_id``."""
    chosen = set(node_ids)
    ids = doc.node_ids()
    if not chosen:
        raise SubgraphError("select at least one node to make a subgraph")
    if missing := sorted(chosen - set(ids)):
        raise SubgraphError(f"no node {', '.join(missing)} in the graph")
    if sub_id in set(ids) - chosen:
        raise SubgraphError(f"node id '{sub_id}' is already taken")
    node_index = [i for i, n in enumerate(doc.nodes) if n.id in chosen]
    inner_edges, incoming, outgoing = [], [], []
    for index, edge in enumerate(doc.edges):
        inside = (edge.source_node in chosen, edge.target_node in chosen)
        if inside == (True, True):
            inner_edges.append(index)
        elif inside == (False, True):
            incoming.append(index)
        elif inside == (True, False):
            outgoing.append(index)
    # inputs: one per outer source (a loop edge gets its own); outputs: one per inner source
    in_groups: dict[tuple[str, bool], list[int]] = {}
    for index in incoming:
        edge = doc.edges[index]
        in_groups.setdefault((edge.source, edge.loop is not None), []).append(index)
    taken: set[str] = set()
    in_names = {key: _unique(doc.edges[group[0]].target_port, taken,
                             _port_key(doc.edges[group[0]].target))
                for key, group in in_groups.items()}
    out_sources = list(dict.fromkeys(doc.edges[i].source for i in outgoing))
    taken = set()
    out_names = {src: _unique(src.rpartition(".")[2], taken, _port_key(src))
                 for src in out_sources}
    boundary = Boundary(
        inputs=[BoundaryInput(name=in_names[key], to=[doc.edges[i].target for i in group])
                for key, group in in_groups.items()],
        outputs=[BoundaryOutput(name=out_names[src], source=src) for src in out_sources])
    # the collapsed document's edges, and where each expanded edge sat (see ``_expanded_edges``)
    edges: list[EdgeSpec] = []
    touching_order: list[int] = list(inner_edges)
    for index, edge in enumerate(doc.edges):
        if index in incoming:
            key = (edge.source, edge.loop is not None)
            group = in_groups[key]
            if group[0] == index:
                edges.append(_edge(edge.source, f"{sub_id}.{in_names[key]}", edge))
                touching_order.extend(group)
        elif index in outgoing:
            edges.append(_edge(f"{sub_id}.{out_names[edge.source]}", edge.target, edge))
            touching_order.append(index)
        elif index not in inner_edges:
            edges.append(edge)
    layout = doc.layout or Layout()
    inner_layout = {n: layout.nodes[n] for n in ids if n in chosen and n in layout.nodes}
    inner = GraphDocument(
        metadata=GraphMetadata(name=title or sub_id),
        nodes=[doc.nodes[i] for i in node_index],
        edges=[doc.edges[i] for i in inner_edges],
        layout=Layout(nodes=inner_layout) if inner_layout else None,
        boundary=boundary)
    spec = NodeSpec(id=sub_id, type=SUBGRAPH_TYPE, title=title, subgraph=SubgraphSpec(
        graph=inner, origin=SubgraphOrigin(nodes=node_index, edges=touching_order)))
    nodes = [n for n in doc.nodes if n.id not in chosen]
    nodes.insert(node_index[0], spec)
    new_layout = None
    if doc.layout is not None:
        kept = {k: v for k, v in layout.nodes.items() if k not in chosen}
        if (centre := _centre(inner_layout)) is not None:
            kept[sub_id] = NodeLayout(x=centre[0], y=centre[1])
        new_layout = layout.model_copy(update={"nodes": kept})
    return doc.model_copy(update={"nodes": nodes, "edges": edges, "layout": new_layout})


def _centre(layouts: dict[str, NodeLayout]) -> tuple[float, float] | None:
    if not layouts:
        return None
    xs = [v.x for v in layouts.values()]
    ys = [v.y for v in layouts.values()]
    return (sum(xs) / len(xs), sum(ys) / len(ys))


def inline(doc: GraphDocument, sub_id: str, *, prefix: bool = False) -> GraphDocument:
    """``doc`` with subgraph node ``sub_id`` replaced by its inner nodes and wires.

    ``prefix``: inner ids become ``sub_id/inner_id`` and layout is left out (how a run sees
    it); else they keep their ids (renamed ``id_2`` only where the id was taken since).
    """
    try:
        spec = doc.node(sub_id)
    except KeyError:
        raise SubgraphError(f"no node '{sub_id}' in the graph") from None
    if spec.type != SUBGRAPH_TYPE or spec.subgraph is None:
        raise SubgraphError(f"node '{sub_id}' is not a subgraph")
    inner = spec.subgraph.graph
    taken = set(doc.node_ids()) - {sub_id}
    rename: dict[str, str] = {}
    for node in inner.nodes:
        new = f"{sub_id}/{node.id}" if prefix else node.id
        if not prefix and new in taken:
            new = _unique(new, taken, new)
        taken.add(new)
        rename[node.id] = new

    def moved(endpoint: str) -> str:
        node, _, port = endpoint.rpartition(".")
        return f"{rename.get(node, node)}.{port}"

    inner_nodes = [n.model_copy(update={"id": rename[n.id]}) if rename[n.id] != n.id else n
                   for n in inner.nodes]
    expanded, rest = _expanded_edges(doc, spec, moved)
    origin = spec.subgraph.origin
    nodes = [n for n in doc.nodes if n.id != sub_id]
    nodes = _placed(nodes, inner_nodes, origin.nodes if origin else None,
                    doc.node_ids().index(sub_id))
    first_touch = next((i for i, e in enumerate(doc.edges)
                        if sub_id in (e.source_node, e.target_node)), len(rest))
    edges = _placed(rest, expanded, origin.edges if origin else None, first_touch)
    layout = doc.layout if prefix else _inlined_layout(doc.layout, sub_id, inner, rename,
                                                       [n.id for n in nodes])
    return doc.model_copy(update={"nodes": nodes, "edges": edges, "layout": layout})


def _expanded_edges(doc: GraphDocument, spec: NodeSpec, moved) -> tuple[list[EdgeSpec],
                                                                        list[EdgeSpec]]:
    """(the edges that replace the subgraph, in the order ``collapse`` records them; the
    document's other edges). Raises for a wire to a port the boundary does not have."""
    assert spec.subgraph is not None
    inner = spec.subgraph.graph
    boundary = inner.boundary or Boundary()
    ins = {b.name: b.to for b in boundary.inputs}
    outs = {b.name: b.source for b in boundary.outputs}
    expanded = [_edge(moved(e.source), moved(e.target), e) for e in inner.edges]
    rest: list[EdgeSpec] = []
    for edge in doc.edges:
        source_in, target_in = edge.source_node == spec.id, edge.target_node == spec.id
        if target_in and not source_in:
            if edge.target_port not in ins:
                raise SubgraphError(f"subgraph '{spec.id}' has no input '{edge.target_port}' "
                                    f"(inputs: {', '.join(ins) or 'none'})")
            expanded += [_edge(edge.source, moved(t), edge) for t in ins[edge.target_port]]
        elif source_in and not target_in:
            if edge.source_port not in outs:
                raise SubgraphError(f"subgraph '{spec.id}' has no output '{edge.source_port}' "
                                    f"(outputs: {', '.join(outs) or 'none'})")
            expanded.append(_edge(moved(outs[edge.source_port]), edge.target, edge))
        elif source_in and target_in:
            raise SubgraphError(f"subgraph '{spec.id}' is wired to itself")
        else:
            rest.append(edge)
    return expanded, rest


def _placed(rest: list[Any], pieces: list[Any], where: list[int] | None, at: int) -> list[Any]:
    """``pieces`` put back at the indices ``where`` (when they still fit), else at ``at``."""
    total = len(rest) + len(pieces)
    if where is not None and len(where) == len(pieces) and len(set(where)) == len(where) \
            and all(0 <= i < total for i in where):
        out: list[Any] = [None] * total
        for index, piece in zip(where, pieces, strict=True):
            out[index] = piece
        others = iter(rest)
        return [slot if slot is not None else next(others) for slot in out]
    at = min(at, len(rest))
    return [*rest[:at], *pieces, *rest[at:]]


def _inlined_layout(layout: Layout | None, sub_id: str, inner: GraphDocument,
                    rename: dict[str, str], order: list[str]) -> Layout | None:
    if layout is None:
        return None
    nodes = {k: v for k, v in layout.nodes.items() if k != sub_id}
    inner_nodes = inner.layout.nodes if inner.layout else {}
    centre = _centre({k: v for k, v in inner_nodes.items() if k in rename})
    here = layout.nodes.get(sub_id)
    dx, dy = ((here.x - centre[0], here.y - centre[1])
              if here is not None and centre is not None else (0.0, 0.0))
    for old, new in rename.items():
        if (place := inner_nodes.get(old)) is not None:
            nodes[new] = (place if (dx, dy) == (0.0, 0.0)
                          else place.model_copy(update={"x": place.x + dx, "y": place.y + dy}))
    rank = {node_id: i for i, node_id in enumerate(order)}
    kept = [k for k in layout.nodes if k != sub_id]
    if [k for k in kept if k in rank] == sorted((k for k in kept if k in rank), key=rank.get):
        # the layout followed the node order: keep it so (a round trip writes the same file)
        nodes = dict(sorted(nodes.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    return layout.model_copy(update={"nodes": nodes})
