"""A graph as it runs: every subgraph node replaced by its inner nodes (``sub_id/inner_id``,
nested subgraphs ``a/b/c``), with the problems that stop it (a missing or changed component,
a wire to a port a subgraph does not have)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from modrag_studio.engine.compose.components import link_problem
from modrag_studio.engine.compose.flatten import MAX_ID_PARTS, NestedTooDeep, flatten, too_deep
from modrag_studio.engine.compose.inline import SubgraphError, inline
from modrag_studio.engine.compose.ports import is_subgraph
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.paths import graph_base_dir
from modrag_studio.engine.core.validation import Problem


@dataclass(frozen=True)
class Expanded:
    """The expanded document, why it could not be expanded fully, and for every inner node
    the subgraph node (of the original document) it belongs to."""

    doc: GraphDocument
    problems: list[Problem] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)

    def inner_of(self, sub_id: str) -> list[str]:
        return [n for n, owner in self.owners.items() if owner == sub_id]


def has_subgraphs(doc: GraphDocument) -> bool:
    return any(is_subgraph(n) for n in doc.nodes)


def owner_of(node_id: str) -> str:
    """The top-level node an expanded id belongs to (``hybrid`` for ``hybrid/vector``)."""
    return node_id.split("/", 1)[0]


def expand(doc: GraphDocument, *, base_dir: str | Path | None = None) -> Expanded:
    """``doc`` with its subgraphs inlined. A document without any is returned as it is.

    The inlining is kept with the document (a document is a value: it is not changed in
    place; the memo is checked against the identity of its nodes, wires and subgraphs all
    the same); whether linked component files still hold their versions is asked every time.
    """
    if not has_subgraphs(doc):
        return Expanded(doc)
    base = graph_base_dir(doc, base_dir)
    memo = doc.memo("expanded", dict)
    key = identity(doc)
    if (inlined := memo.get(key)) is None:
        memo.clear()
        inlined = memo[key] = _inlined(doc)
    links = [problem for spec in doc.nodes if is_subgraph(spec) and "/" not in spec.id
             and (problem := link_problem(spec, base)) is not None]
    return Expanded(inlined.doc, [*links, *inlined.problems], inlined.owners)


def identity(doc: GraphDocument) -> tuple[int, ...]:
    """What an in-place change of ``doc``'s structure would change."""
    parts = [id(doc.nodes), len(doc.nodes), id(doc.edges), len(doc.edges)]
    parts += [id(e) for e in doc.edges]
    for spec in doc.nodes:
        parts += [id(spec), id(spec.params)]
        if spec.subgraph is not None:
            parts += [id(spec.subgraph), *identity(spec.subgraph.graph)]
    return tuple(parts)


def _inlined(doc: GraphDocument) -> Expanded:
    problems = [Problem("reserved-id", f"node id '{n.id}' holds '/', which names nodes inside "
                        "subgraphs; rename the node", node_id=n.id, field="id")
                for n in doc.nodes if "/" in n.id]
    if not _any_origin(doc.nodes):  # one pass, linear (instances of components, ...)
        nodes, edges, flat_problems = flatten(doc)
        current = doc.model_copy(update={"nodes": nodes, "edges": edges})
        problems += flat_problems
    else:  # a collapsed subgraph puts its nodes back where they sat (``origin``)
        current = inlined_one_at_a_time(doc, problems)
    current._source_path = doc.source_path
    owners = {n.id: owner_of(n.id) for n in current.nodes if "/" in n.id}
    return Expanded(current, problems, owners)


def inlined_one_at_a_time(doc: GraphDocument, problems: list[Problem]) -> GraphDocument:
    """``inline(..., prefix=True)`` on the first subgraph node until none is left (each
    step rebuilds the document: quadratic, kept for subgraphs with an ``origin``)."""
    current = doc
    while True:
        pending = [n for n in current.nodes if is_subgraph(n)]
        if not pending:
            break
        spec = pending[0]
        if spec.subgraph is None:
            problems.append(Problem("subgraph-empty", f"subgraph '{spec.id}' holds no graph",
                                    node_id=owner_of(spec.id), field="subgraph"))
            current = current.model_copy(update={
                "nodes": [n for n in current.nodes if n.id != spec.id]})
            continue
        try:
            if spec.id.count("/") + 1 >= MAX_ID_PARTS:
                raise NestedTooDeep(too_deep(spec.id))
            current = inline(current, spec.id, prefix=True)
        except SubgraphError as exc:
            code = "subgraph-depth" if isinstance(exc, NestedTooDeep) else "subgraph-port"
            problems.append(Problem(code, str(exc), node_id=owner_of(spec.id)))
            current = current.model_copy(update={
                "nodes": [n for n in current.nodes if n.id != spec.id],
                "edges": [e for e in current.edges
                          if spec.id not in (e.source_node, e.target_node)]})
    return current


def _any_origin(specs: list) -> bool:
    return any(spec.subgraph is not None and (spec.subgraph.origin is not None
                                              or _any_origin(spec.subgraph.graph.nodes))
               for spec in specs if is_subgraph(spec))
