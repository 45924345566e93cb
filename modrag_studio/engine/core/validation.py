"""Validation: one pure function that returns every problem of a graph at once."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from modrag_studio.engine.core.document import EdgeSpec, GraphDocument
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.graph_io import port_of_node
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.passthrough import TypeOf, bypass_routes, carried_type, edges_into
from modrag_studio.engine.core.ports import check_types, type_name
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology


@dataclass(frozen=True)
class Problem:
    """One problem, placed at a node and (when it applies) a port or param field."""

    code: str
    message: str
    node_id: str | None = None
    field: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = self.node_id or "graph"
        if self.field:
            where += f".{self.field}"
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{prefix}{where}: {self.message}"

    def to_dict(self) -> dict[str, str | None]:
        return {
            "code": self.code,
            "severity": self.severity,
            "node_id": self.node_id,
            "field": self.field,
            "message": self.message,
        }


def errors_only(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def validate(doc: GraphDocument, registry: NodeRegistry) -> list[Problem]:
    """Every problem of ``doc``: types, ports, connections, cycles, params, graph inputs."""
    problems: list[Problem] = []
    types = _resolve_types(doc, registry, problems)
    for node in doc.nodes:
        node_type = types.get(node.id)
        if node_type is not None:
            problems.extend(_param_problems(node.id, node_type, node.params))
    problems.extend(_edge_problems(doc, types))
    problems.extend(_bypass_problems(doc, types))
    problems.extend(_input_problems(doc, types))
    problems.extend(_cycle_problems(doc))
    problems.extend(_io_name_problems(doc, types))
    return problems


def _resolve_types(
    doc: GraphDocument, registry: NodeRegistry, problems: list[Problem]
) -> dict[str, type[NodeType]]:
    counts = Counter(doc.node_ids())
    for node_id, count in counts.items():
        if count > 1:
            problems.append(
                Problem("duplicate-id", f"node id used {count} times", node_id=node_id)
            )
    types: dict[str, type[NodeType]] = {}
    for node in doc.nodes:
        try:
            node_type = registry.get(node.type)
        except UnknownNodeType as exc:
            problems.append(Problem("unknown-type", str(exc), node_id=node.id, field="type"))
            continue
        if (new_id := registry.renamed(node.type)) is not None:
            problems.append(
                Problem(
                    "renamed-type",
                    f"node type '{node.type}' is now '{new_id}' (saving updates the file)",
                    node_id=node.id,
                    field="type",
                    severity="warning",
                )
            )
        if node.version > node_type.version:
            problems.append(
                Problem(
                    "newer-node-version",
                    f"'{node_type.type_id}' version {node.version} is newer than the installed "
                    f"version {node_type.version}; upgrade the node package",
                    node_id=node.id,
                    field="version",
                )
            )
        types.setdefault(node.id, node_type)
    return types


def _param_problems(node_id: str, node_type: type[NodeType], params: dict) -> list[Problem]:
    try:
        node_type.Params.model_validate(params)
    except ValidationError as exc:
        return [
            Problem(
                "invalid-param",
                err["msg"],
                node_id=node_id,
                field="params." + ".".join(str(p) for p in err["loc"]) if err["loc"] else "params",
            )
            for err in exc.errors()
        ]
    return []


def connection_problem(
    source_type: type[NodeType],
    source_port: str,
    target_type: type[NodeType],
    target_port: str,
) -> str | None:
    """Why ``source.port -> target.port`` is refused, or None when it fits."""
    out = source_type.output_port(source_port)
    if out is None:
        names = ", ".join(p.name for p in source_type.outputs) or "none"
        return f"'{source_type.type_id}' has no output port '{source_port}' (outputs: {names})"
    inp = target_type.input_port(target_port)
    if inp is None:
        names = ", ".join(p.name for p in target_type.inputs) or "none"
        return f"'{target_type.type_id}' has no input port '{target_port}' (inputs: {names})"
    if check_types(out.type, inp.type).ok:
        return None
    fitting_in = [
        p.name for p in target_type.inputs if check_types(out.type, p.type).ok
    ]
    fitting_out = [
        p.name for p in source_type.outputs if check_types(p.type, inp.type).ok
    ]
    hint = ""
    if fitting_in:
        hint += f"; inputs of '{target_type.type_id}' that take it: {', '.join(fitting_in)}"
    if fitting_out:
        hint += f"; outputs of '{source_type.type_id}' that fit: {', '.join(fitting_out)}"
    return (
        f"type mismatch: output '{source_port}' is {type_name(out.type)}, "
        f"input '{target_port}' takes {type_name(inp.type)}{hint}"
    )


def _edge_problems(doc: GraphDocument, types: dict[str, type[NodeType]]) -> list[Problem]:
    problems: list[Problem] = []
    ids = set(doc.node_ids())
    for edge in doc.edges:
        missing = [n for n in (edge.source_node, edge.target_node) if n not in ids]
        if missing:
            for node_id in missing:
                problems.append(
                    Problem(
                        "missing-node",
                        f"edge {edge.source} -> {edge.target} names node '{node_id}', "
                        "which is not in the graph",
                        node_id=node_id,
                    )
                )
            continue
        source_type, target_type = types.get(edge.source_node), types.get(edge.target_node)
        if source_type is None or target_type is None:
            continue
        reason = connection_problem(source_type, edge.source_port, target_type, edge.target_port)
        if reason is None and source_type.passes_through:
            reason = carried_problem(doc, types.get, edge, target_type)
        if reason is not None:
            problems.append(
                Problem("bad-connection", reason, node_id=edge.target_node, field=edge.target_port)
            )
    return problems


def carried_problem(doc: GraphDocument, type_of: TypeOf, edge: EdgeSpec,
                    target_type: type[NodeType]) -> str | None:
    """Why the value a reroute point carries does not fit the input ``edge`` feeds, or None."""
    carried = carried_type(edge.source_node, edge.source_port, type_of, edges_into(doc.edges))
    port = target_type.input_port(edge.target_port)
    if port is None or check_types(carried, port.type).ok:
        return None
    return (f"type mismatch through reroute point '{edge.source_node}': it carries "
            f"{type_name(carried)}, input '{edge.target_port}' takes {type_name(port.type)}")


def _bypass_problems(doc: GraphDocument, types: dict[str, type[NodeType]]) -> list[Problem]:
    """A bypassed node must hand every connected output a value of a compatible type."""
    problems: list[Problem] = []
    used = {(e.source_node, e.source_port) for e in doc.edges}
    for node in doc.nodes:
        node_type = types.get(node.id)
        if not node.bypass or node_type is None:
            continue
        for output, source in bypass_routes(node_type).items():
            if source is not None or (node.id, output) not in used:
                continue
            port = node_type.output_port(output)
            assert port is not None
            takes = ", ".join(f"{p.name} ({type_name(p.type)})" for p in node_type.inputs)
            problems.append(Problem(
                "bypass-impossible",
                f"cannot bypass '{node.id}': output '{output}' ({type_name(port.type)}) has "
                f"no input of a compatible type to pass on (inputs: {takes or 'none'}); "
                "enable the node or disconnect that output",
                node_id=node.id, field=output))
    return problems


def _input_problems(doc: GraphDocument, types: dict[str, type[NodeType]]) -> list[Problem]:
    problems: list[Problem] = []
    connected: Counter[tuple[str, str]] = Counter(
        (e.target_node, e.target_port) for e in doc.edges if e.loop is None
    )
    for node in doc.nodes:
        node_type = types.get(node.id)
        if node_type is None:
            continue
        for port in node_type.inputs:
            count = connected[(node.id, port.name)]
            if port.required and count == 0:
                problems.append(
                    Problem(
                        "unconnected-input",
                        f"required input '{port.name}' ({type_name(port.type)}) is not connected",
                        node_id=node.id,
                        field=port.name,
                    )
                )
            if not port.multiple and count > 1:
                problems.append(
                    Problem(
                        "too-many-connections",
                        f"input '{port.name}' takes one connection, it has {count}",
                        node_id=node.id,
                        field=port.name,
                    )
                )
    return problems


def _cycle_problems(doc: GraphDocument) -> list[Problem]:
    topo = Topology.of(doc)
    problems: list[Problem] = []
    _, cyclic = topo.order()
    for node_id in cyclic:
        problems.append(
            Problem(
                "cycle",
                "node is on a cycle that is not a declared loop (mark the back edge with "
                '"loop": {"max_iterations": N})',
                node_id=node_id,
            )
        )
    for edge in topo.loops:
        if not _loop_goes_back(topo, edge):
            problems.append(
                Problem(
                    "loop-not-back",
                    f"loop edge {edge.source} -> {edge.target} must go back to a node that "
                    f"'{edge.source_node}' depends on",
                    node_id=edge.source_node,
                    field=edge.source_port,
                )
            )
    return problems


def _loop_goes_back(topo: Topology, edge: EdgeSpec) -> bool:
    return edge.target_node == edge.source_node or edge.target_node in topo.upstream(
        edge.source_node
    )


def _io_name_problems(doc: GraphDocument, types: dict[str, type[NodeType]]) -> list[Problem]:
    """Two graph inputs (or outputs) with the same effective name: one problem per node,
    naming every node that shares the name."""
    problems: list[Problem] = []
    by_name: dict[tuple[str, str], list[str]] = {}
    for node in doc.nodes:
        node_type = types.get(node.id)
        port = port_of_node(node, node_type) if node_type is not None else None
        if port is not None:
            by_name.setdefault((port.role, port.name), []).append(node.id)
    for (role, name), node_ids in by_name.items():
        if len(node_ids) < 2:
            continue
        named = " and ".join(f"'{n}'" for n in node_ids)
        both = "both" if len(node_ids) == 2 else "all"
        for node_id in node_ids:
            problems.append(Problem(
                "duplicate-io-name",
                f"graph {role}s {named} are {both} named '{name}'; rename one "
                f"(runs address {role}s by name)",
                node_id=node_id, field="params.name"))
    return problems
