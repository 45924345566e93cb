"""Every subgraph of a document inlined in one pass, in time linear in the expanded graph.

The result is the one ``inline(..., prefix=True)`` gives when applied to the first subgraph
node, again and again, until none is left: each subgraph node's inner nodes take its place
(``sub_id/inner_id``), and its wires are replaced by one block (the inner wires, then the
replacements of the wires that touched it, in their order) where the first of them was. A
subgraph that cannot be inlined (no graph, a wire to a port its boundary lacks, a wire to
itself, nested deeper than ids can name) is dropped with its wires and named in a problem.

Applying ``inline`` again and again rebuilds the whole document per subgraph (8,000
instances took minutes); here the wires sit in a linked list with order labels, so a block
goes in where the first of its wires was without moving anything else (``_Wires``).
"""

from __future__ import annotations

import itertools

from pydantic import ValidationError

from modrag_studio.engine.compose.inline import SubgraphError
from modrag_studio.engine.compose.ports import is_subgraph
from modrag_studio.engine.core.document import Boundary, EdgeSpec, GraphDocument, NodeSpec
from modrag_studio.engine.core.validation import Problem

MAX_ID_PARTS = 8  # a node id names at most 8 levels: a/b/c/d/e/f/g/h


def owner_of(node_id: str) -> str:
    return node_id.split("/", 1)[0]


class NestedTooDeep(SubgraphError):
    """A subgraph's inner nodes would have ids of more levels than an id can name."""


def too_deep(node_id: str) -> str:
    depth = node_id.count("/") + 1
    return (f"subgraph '{node_id}' is nested {depth} deep: subgraphs nest at most "
            f"{MAX_ID_PARTS - 1} deep (a node id names at most {MAX_ID_PARTS} levels); "
            "expand one level (Edit > Expand Subgraph)")


SPACING = 1 << 40  # between the order labels of neighbouring wires after a relabelling


class _Wires:
    """The wires as they are rewritten, in a linked list: each with an integer order label
    (a block put where a wire was takes labels between its neighbours'; when they run out,
    every wire is labelled afresh, ``SPACING`` apart) and found by node."""

    def __init__(self, edges: list[EdgeSpec]) -> None:
        self.edge: dict[int, EdgeSpec] = {}
        self.label: dict[int, int] = {-1: 0}  # -1: the head, before every wire
        self.next: dict[int, int | None] = {-1: None}
        self.prev: dict[int, int] = {}
        self.tail = -1
        self.by_node: dict[str, set[int]] = {}
        self.keys = itertools.count()
        self.insert_after(-1, edges)

    def insert_after(self, after: int, edges: list[EdgeSpec]) -> None:
        following = self.next[after]
        low = self.label[after]
        high = self.label[following] if following is not None else low + SPACING * (
            len(edges) + 1)
        if high - low <= len(edges):
            self._relabel()
            low = self.label[after]
            high = self.label[following] if following is not None else low + SPACING * (
                len(edges) + 1)
        step = (high - low) / (len(edges) + 1)
        for index, edge in enumerate(edges, 1):
            key = next(self.keys)
            self.edge[key], self.label[key] = edge, low + int(step * index)
            self.prev[key], self.next[key], self.next[after] = after, self.next[after], key
            if self.next[key] is not None:
                self.prev[self.next[key]] = key
            else:
                self.tail = key
            after = key
            for node in {edge.source_node, edge.target_node}:
                self.by_node.setdefault(node, set()).add(key)

    def remove(self, key: int) -> None:
        edge = self.edge.pop(key)
        before, after = self.prev.pop(key), self.next.pop(key)
        self.next[before] = after
        if after is not None:
            self.prev[after] = before
        else:
            self.tail = before
        del self.label[key]
        for node in {edge.source_node, edge.target_node}:
            self.by_node[node].discard(key)

    def _relabel(self) -> None:
        key, label = self.next[-1], 0
        while key is not None:
            label += SPACING
            self.label[key] = label
            key = self.next[key]

    def touching(self, node_id: str) -> list[int]:
        """The keys of the wires to or from ``node_id``, in their order."""
        return sorted(self.by_node.get(node_id, ()), key=self.label.__getitem__)

    def ordered(self) -> list[EdgeSpec]:
        out, key = [], self.next[-1]
        while key is not None:
            out.append(self.edge[key])
            key = self.next[key]
        return out


def flatten(doc: GraphDocument) -> tuple[list[NodeSpec], list[EdgeSpec], list[Problem]]:
    """(nodes, wires, problems) of ``doc`` with every subgraph inlined (see the module)."""
    wires = _Wires(list(doc.edges))
    problems: list[Problem] = []
    nodes: list[NodeSpec] = []
    _place(doc.nodes, "", wires, nodes, problems)
    return nodes, wires.ordered(), problems


def _place(specs: list[NodeSpec], prefix: str, wires: _Wires, out: list[NodeSpec],
           problems: list[Problem]) -> None:
    for spec in specs:
        node_id = prefix + spec.id
        if not is_subgraph(spec):
            out.append(spec if not prefix else spec.model_copy(update={"id": node_id}))
            continue
        try:
            inner = _inline_wires(spec, node_id, wires)
        except SubgraphError as exc:
            code = ("subgraph-empty" if spec.subgraph is None else "subgraph-depth"
                    if isinstance(exc, NestedTooDeep) else "subgraph-port")
            problems.append(Problem(code, str(exc), node_id=owner_of(node_id),
                                    field="subgraph" if spec.subgraph is None else None))
            continue
        _place(inner, f"{node_id}/", wires, out, problems)


def _inline_wires(spec: NodeSpec, node_id: str, wires: _Wires) -> list[NodeSpec]:
    """Replace the wires of subgraph node ``node_id`` by its block; its inner nodes. Raises
    SubgraphError (and drops the node's wires) when it cannot be inlined."""
    touching = wires.touching(node_id)
    try:
        if spec.subgraph is None:
            raise SubgraphError(f"subgraph '{node_id}' holds no graph")
        if node_id.count("/") + 1 >= MAX_ID_PARTS:
            raise NestedTooDeep(too_deep(node_id))
        block = _block(spec, node_id, [wires.edge[k] for k in touching])
    except (SubgraphError, ValidationError) as exc:
        if spec.subgraph is not None:  # an empty subgraph node keeps its wires, as inline
            for key in touching:
                wires.remove(key)
        if isinstance(exc, ValidationError):
            raise SubgraphError(f"subgraph '{node_id}' cannot be inlined: "
                                f"{exc.errors()[0].get('msg', exc)}") from None
        raise
    wires.insert_after(wires.prev[touching[0]] if touching else wires.tail, block)
    for key in touching:
        wires.remove(key)
    return spec.subgraph.graph.nodes


def _block(spec: NodeSpec, node_id: str, touching: list[EdgeSpec]) -> list[EdgeSpec]:
    """The wires replacing ``touching`` (the wires of the subgraph node, in order)."""
    assert spec.subgraph is not None
    inner = spec.subgraph.graph
    boundary = inner.boundary or Boundary()
    ins = {b.name: b.to for b in boundary.inputs}
    outs = {b.name: b.source for b in boundary.outputs}
    inner_ids = {n.id for n in inner.nodes}

    def moved(endpoint: str) -> str:
        node, _, port = endpoint.rpartition(".")
        return f"{node_id}/{node}.{port}" if node in inner_ids else endpoint

    block = [EdgeSpec(source=moved(e.source), target=moved(e.target), loop=e.loop)
             for e in inner.edges]
    for edge in touching:
        source_in, target_in = edge.source_node == node_id, edge.target_node == node_id
        if source_in and target_in:
            raise SubgraphError(f"subgraph '{node_id}' is wired to itself")
        if target_in:
            if edge.target_port not in ins:
                raise SubgraphError(f"subgraph '{node_id}' has no input '{edge.target_port}' "
                                    f"(inputs: {', '.join(ins) or 'none'})")
            block += [EdgeSpec(source=edge.source, target=moved(t), loop=edge.loop)
                      for t in ins[edge.target_port]]
        else:
            if edge.source_port not in outs:
                raise SubgraphError(f"subgraph '{node_id}' has no output '{edge.source_port}' "
                                    f"(outputs: {', '.join(outs) or 'none'})")
            block.append(EdgeSpec(source=moved(outs[edge.source_port]), target=edge.target,
                                  loop=edge.loop))
    return block
