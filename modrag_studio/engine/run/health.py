"""Pre-flight check of a graph: is it valid, and can its models, stores and servers be used here?

The same report backs ``GET /health`` of the server and ``modrag check`` on the command line.
Each node type that depends on something outside the graph (a model file, a server, a store
folder) answers through ``NodeType.health``; nothing is downloaded or computed.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.redact import scrub
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import errors_only
from modrag_studio.engine.trust.reach import APPROVED_ENV, unapproved_hosts


class ComponentHealth(BaseModel):
    ok: bool
    detail: str = ""


class HealthReport(BaseModel):
    ok: bool
    graph: ComponentHealth
    nodes: dict[str, ComponentHealth] = Field(default_factory=dict)


def check_health(doc: GraphDocument, registry: NodeRegistry) -> HealthReport:
    """Validate the graph, then ask every node that can (stores, embedders, LLMs) to check in."""
    problems = errors_only(validate(doc, registry))
    doc = expand(doc).doc  # subgraphs: their inner nodes check in
    graph_health = ComponentHealth(
        ok=not problems,
        detail="; ".join(str(p) for p in problems) or f"valid ({len(doc.nodes)} nodes)",
    )
    nodes: dict[str, ComponentHealth] = {}
    for spec in doc.nodes:
        if spec.type not in registry:
            continue  # reported by validation
        node = registry.instance(spec.type)
        if type(node).health is NodeType.health:
            continue
        if hosts := unapproved_hosts(spec, registry):  # never contact a host not approved
            nodes[spec.id] = ComponentHealth(ok=False, detail=(
                f"not checked: host {', '.join(hosts)} is not approved (add it to "
                f"${APPROVED_ENV} or trust the graph in the studio)"))
            continue
        try:
            params = registry.get(spec.type).Params.model_validate(spec.params)
            detail = node.health(params)
        except Exception as exc:
            nodes[spec.id] = ComponentHealth(ok=False,
                                             detail=scrub(str(exc)) or type(exc).__name__)
            continue
        if detail is not None:
            nodes[spec.id] = ComponentHealth(ok=True, detail=detail)
    ok = graph_health.ok and all(n.ok for n in nodes.values())
    return HealthReport(ok=ok, graph=graph_health, nodes=nodes)
