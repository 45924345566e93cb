"""A graph's interface: its named inputs and outputs, with types, descriptions and defaults.

The one place that reads ``graph.input`` / ``graph.output`` nodes. Node types say what they
are through ``NodeType.graph_role``; their names and defaults come from the node's own
``Params`` model (applied once, here), so a node added from the palette with no params set
is named exactly as its ``Params`` defaults say. The executor, validation, the server's
schemas, the CLI and the studio all read the interface from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from modrag_studio.engine.core.document import SUBGRAPH_TYPE, GraphDocument, NodeSpec
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.registry import NodeRegistry

Role = Literal["input", "output"]


@dataclass(frozen=True)
class GraphPort:
    """One named input or output of a graph, and the node that declares it."""

    node_id: str
    role: Role
    name: str
    type: Any = Any
    description: str = ""
    default: str | None = None
    multiline: bool = False

    @property
    def required(self) -> bool:
        return self.role == "input" and self.default is None


@dataclass(frozen=True)
class GraphInterface:
    """The inputs and outputs of a graph, in document order (duplicates kept: validation
    reports them)."""

    inputs: tuple[GraphPort, ...] = ()
    outputs: tuple[GraphPort, ...] = ()

    @property
    def input_names(self) -> list[str]:
        return _unique(p.name for p in self.inputs)

    @property
    def output_names(self) -> list[str]:
        return _unique(p.name for p in self.outputs)

    def port_of(self, node_id: str) -> GraphPort | None:
        return next((p for p in (*self.inputs, *self.outputs) if p.node_id == node_id), None)

    def input_named(self, name: str | None) -> GraphPort | None:
        """The first input named ``name`` (None when there is none)."""
        return next((p for p in self.inputs if p.name == name), None)

    def output_named(self, name: str | None) -> GraphPort | None:
        """The first output named ``name`` (None when there is none)."""
        return next((p for p in self.outputs if p.name == name), None)


def _unique(names: Any) -> list[str]:
    return list(dict.fromkeys(names))


def effective_params(node_type: type[NodeType], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the type's ``Params`` defaults filled in (raw values kept when the
    params do not validate, so a half-edited node still shows its name)."""
    try:
        return node_type.Params.model_validate(dict(params)).model_dump()
    except ValidationError:
        fields = node_type.Params.model_fields
        defaults = {name: f.get_default(call_default_factory=True)
                    for name, f in fields.items() if not f.is_required()}
        return {**defaults, **params}


def role_of(type_id: str, registry: NodeRegistry) -> Role | None:
    """"input" or "output" for graph input/output node types, else None (unknown types too)."""
    try:
        return registry.get(type_id).graph_role
    except UnknownNodeType:
        return None


def port_of_node(spec: NodeSpec, node_type: type[NodeType],
                 doc: GraphDocument | None = None,
                 registry: NodeRegistry | None = None) -> GraphPort | None:
    """The graph port ``spec`` declares, or None when it is not a graph input/output."""
    role = getattr(node_type, "graph_role", None)
    if role is None:
        return None
    params = effective_params(node_type, spec.params)
    default = params.get("default")
    return GraphPort(
        node_id=spec.id, role=role, name=str(params.get("name") or ""),
        type=_port_type(spec, node_type, doc, registry),
        description=str(params.get("description") or ""),
        default=None if default is None else str(default),
        multiline=bool(params.get("multiline", False)),
    )


def _port_type(spec: NodeSpec, node_type: type[NodeType], doc: GraphDocument | None,
               registry: NodeRegistry | None) -> Any:
    """An input's type is its node's output type; an output's is what is wired into it."""
    if node_type.graph_role == "input":
        return node_type.outputs[0].type if node_type.outputs else Any
    if doc is None or registry is None:
        return Any
    sources = [e for e in doc.edges if e.target_node == spec.id and e.loop is None]
    if len(sources) != 1:
        return Any
    try:
        source = doc.node(sources[0].source_node)
        if source.type == SUBGRAPH_TYPE:
            return Any  # typed by its boundary (engine.compose), not known here
        port = registry.get(source.type).output_port(sources[0].source_port)
    except (KeyError, UnknownNodeType):
        return Any
    return port.type if port is not None else Any


def graph_interface(doc: GraphDocument, registry: NodeRegistry) -> GraphInterface:
    """The inputs and outputs of ``doc`` (nodes of unknown types are left out)."""
    inputs: list[GraphPort] = []
    outputs: list[GraphPort] = []
    for spec in doc.nodes:
        if spec.type == SUBGRAPH_TYPE:  # declares no graph port (its inner nodes may)
            continue
        try:
            node_type = registry.get(spec.type)
        except UnknownNodeType:
            continue
        port = port_of_node(spec, node_type, doc, registry)
        if port is not None:
            (inputs if port.role == "input" else outputs).append(port)
    return GraphInterface(tuple(inputs), tuple(outputs))


def graph_input_names(doc: GraphDocument, registry: NodeRegistry) -> list[str]:
    """The names a run of ``doc`` accepts, in document order."""
    return graph_interface(doc, registry).input_names
