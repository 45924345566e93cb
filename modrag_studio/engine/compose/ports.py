"""The ports of a subgraph node, typed by the inner ports its boundary names.

A subgraph node has no registered type: its type is made from its boundary, so the canvas,
validation and the editor treat it like any node (``type_of``).
"""

from __future__ import annotations

from typing import Any

from modrag_studio.engine.core.document import SUBGRAPH_TYPE, GraphDocument, NodeSpec
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry

SUBGRAPH_CATEGORY = "Subgraph"


def is_subgraph(spec: NodeSpec) -> bool:
    return spec.type == SUBGRAPH_TYPE


def type_of(spec: NodeSpec, registry: NodeRegistry) -> type[NodeType]:
    """The node type of ``spec``: the registered one, or a subgraph's made from its boundary.
    Raises UnknownNodeType for an unregistered type."""
    if is_subgraph(spec):
        return subgraph_type(spec, registry)
    return registry.get(spec.type)


def _inner_port(doc: GraphDocument, endpoint: str, registry: NodeRegistry,
                kind: str) -> InputPort | OutputPort | None:
    node_id, _, port = endpoint.rpartition(".")
    try:
        node_type = type_of(doc.node(node_id), registry)
    except (KeyError, UnknownNodeType):
        return None
    return node_type.input_port(port) if kind == "in" else node_type.output_port(port)


def subgraph_type(spec: NodeSpec, registry: NodeRegistry) -> type[NodeType]:
    """A node type whose ports are ``spec``'s boundary (an input is required when an inner
    port it feeds is, takes several values when they all do; unknown inner ports: Any)."""
    if spec.subgraph is None:
        return _made_type(spec, GraphDocument(), registry)
    inner = spec.subgraph.graph
    return inner.memo(f"type:{spec.id}:{spec.title}:{id(registry)}",
                      lambda: _made_type(spec, inner, registry))


def _made_type(spec: NodeSpec, inner: GraphDocument, registry: NodeRegistry) -> type[NodeType]:
    boundary = inner.boundary
    inputs: list[InputPort] = []
    outputs: list[OutputPort] = []
    for entry in boundary.inputs if boundary else ():
        ports = [p for ep in entry.to
                 if isinstance(p := _inner_port(inner, ep, registry, "in"), InputPort)]
        first = ports[0] if ports else None
        inputs.append(InputPort(
            entry.name, type=first.type if first else Any,
            required=any(p.required for p in ports),
            multiple=bool(ports) and all(p.multiple for p in ports),
            description=f"to {', '.join(entry.to)}" + (f": {first.description}"
                                                       if first and first.description else "")))
    for out in boundary.outputs if boundary else ():
        port = _inner_port(inner, out.source, registry, "out")
        outputs.append(OutputPort(
            out.name, type=port.type if port is not None else Any,
            description=f"from {out.source}" + (f": {port.description}"
                                                if port is not None and port.description
                                                else "")))
    title = spec.title or inner.metadata.name
    return type(f"Subgraph[{spec.id}]", (NodeType,), {
        "type_id": SUBGRAPH_TYPE, "category": SUBGRAPH_CATEGORY, "title": title,
        "description": inner.metadata.description or "A subgraph: its nodes run in its place.",
        "inputs": tuple(inputs), "outputs": tuple(outputs), "__module__": __name__,
    })


def subgraph_note(spec: NodeSpec) -> str:
    """A line about a subgraph node: how many nodes it holds, the component it follows."""
    sub = spec.subgraph
    if sub is None:
        return ""
    count = len(sub.graph.nodes)
    held = f" Holds {count} node{'s' if count != 1 else ''}"
    if sub.link is None:
        return held + " (detached: not linked to a component file)."
    return held + f", linked to {sub.link.path} (version {sub.link.sha256[:12]})."
