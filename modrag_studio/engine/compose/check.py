"""Validation of a graph that may hold subgraphs: the wires into and out of each subgraph
node checked against the inner ports its boundary names (the error names the subgraph node
and port), then the expanded graph validated as any graph."""

from __future__ import annotations

from pathlib import Path

from modrag_studio.engine.compose.expand import Expanded, expand, has_subgraphs, identity
from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import GraphDocument, NodeSpec
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import check_types, type_name
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import Problem, validate


def boundary_problems(doc: GraphDocument, registry: NodeRegistry
                      ) -> tuple[list[Problem], set[tuple[str, str]]]:
    """A wire into or out of a subgraph node whose type does not fit the inner port; and the
    inputs (``node``, ``port``) of the expanded graph those wires become."""
    problems: list[Problem] = []
    covered: set[tuple[str, str]] = set()
    specs = {n.id: n for n in doc.nodes}
    types: dict[str, type[NodeType] | None] = {}

    def typed(spec: NodeSpec) -> type[NodeType] | None:
        if spec.id not in types:
            try:
                types[spec.id] = type_of(spec, registry)
            except UnknownNodeType:
                types[spec.id] = None
        return types[spec.id]

    for edge in doc.edges:
        source, target = specs.get(edge.source_node), specs.get(edge.target_node)
        if source is None or target is None or (
                source.subgraph is None and target.subgraph is None):
            continue
        source_type, target_type = typed(source), typed(target)
        if source_type is None or target_type is None:
            continue
        sub_end = "target" if target.subgraph is not None else (
            "source" if source.subgraph is not None else None)
        if sub_end is None:
            continue
        out = source_type.output_port(edge.source_port)
        inp = target_type.input_port(edge.target_port)
        sub = target if sub_end == "target" else source
        port = edge.target_port if sub_end == "target" else edge.source_port
        if (out if sub_end == "source" else inp) is None:
            kind = "input" if sub_end == "target" else "output"
            names = [p.name for p in (target_type.inputs if sub_end == "target"
                                      else source_type.outputs)]
            problems.append(Problem(
                "subgraph-port", f"subgraph '{sub.id}' has no {kind} '{port}' "
                f"({kind}s: {', '.join(names) or 'none'})", node_id=sub.id, field=port))
            continue
        if out is None or inp is None or check_types(out.type, inp.type).ok:
            continue
        if sub_end == "source":
            covered.add((edge.target_node, edge.target_port))
        else:
            covered |= _inner_targets(target, port)
        problems.append(Problem(
            "subgraph-port-type",
            f"subgraph '{sub.id}' {'input' if sub_end == 'target' else 'output'} '{port}': "
            f"{edge.source} gives {type_name(out.type)}, {edge.target} takes "
            f"{type_name(inp.type)} ({(inp if sub_end == 'target' else out).description})",
            node_id=sub.id, field=port))
    return problems, covered


def _inner_targets(spec, port: str) -> set[tuple[str, str]]:
    boundary = spec.subgraph.graph.boundary
    ends = next((b.to for b in boundary.inputs if b.name == port), []) if boundary else []
    return {(f"{spec.id}/{e.rpartition('.')[0]}", e.rpartition(".")[2]) for e in ends}


def validate_graph(doc: GraphDocument, registry: NodeRegistry, *,
                   base_dir: str | Path | None = None,
                   expanded: Expanded | None = None) -> list[Problem]:
    """Every problem of ``doc``, subgraphs included (inner problems name ``sub/inner``).
    ``expanded``: ``expand(doc)`` when the caller has it already."""
    if not has_subgraphs(doc):
        return validate(doc, registry)
    problems, covered = doc.memo(f"boundary:{id(registry)}:{hash(identity(doc))}",
                                 lambda: boundary_problems(doc, registry))
    problems = list(problems)
    expanded = expanded or expand(doc, base_dir=base_dir)
    problems += expanded.problems
    for problem in validate(expanded.doc, registry):
        # a wire across a boundary: already reported on the subgraph node's port
        if problem.code == "bad-connection" and (problem.node_id, problem.field) in covered:
            continue
        problems.append(problem)
    return problems
