"""Notes a run starts with (trace problems of severity warning): a never-saved graph's relative
paths, and the params written for another corpus than the one the run's input names.

A sample graph is where a newcomer starts; pointed at their own folder through its ``corpus``
input, its loader glob, dictionaries and collection names would otherwise carry over silently.
Nodes declare those params (``NodeType.corpus_params``); nothing here knows a type id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.core.validation import Problem
from modrag_studio.engine.trust.reach import path_like_inputs


def run_notes(doc: GraphDocument, registry: NodeRegistry, inputs: dict[str, Any],
              folder: Path | None) -> list[dict[str, Any]]:
    """The notes of a run of ``doc`` with ``inputs`` (path inputs already absolute), relative
    paths resolving against ``folder`` (None: never saved)."""
    notes = [] if folder is not None else [unsaved_graph_note()]
    return notes + [p.to_dict() for p in corpus_notes(doc, registry, inputs, folder)]


def unsaved_graph_note() -> dict[str, Any]:
    return Problem("unsaved-graph", "the graph has never been saved: relative paths resolve "
                   f"against the working directory {Path.cwd()}", severity="warning").to_dict()


def corpus_notes(doc: GraphDocument, registry: NodeRegistry, inputs: dict[str, Any],
                 folder: Path | None) -> list[Problem]:
    """One warning per corpus-specific param set downstream of a path input whose value in
    this run is another file or folder than the graph's default."""
    paths = path_like_inputs(doc, registry) if inputs else set()
    topology = Topology.of(doc)
    order = {node_id: n for n, node_id in enumerate(doc.node_ids())}
    found: list[Problem] = []
    for port in graph_interface(doc, registry).inputs:
        given = inputs.get(port.name)
        if port.name not in paths or given in (None, "") or not port.default \
                or _same_path(str(given), port.default, folder):
            continue
        for node_id in sorted(topology.downstream(port.node_id), key=order.get):
            for param, value in _corpus_values(doc, registry, node_id):
                found.append(Problem(
                    "corpus-specific",
                    f"{param} = {value!r} was written for the graph's default {port.name} "
                    f"'{port.default}', and this run's {port.name} is '{given}': check that "
                    "it fits this corpus (or reset it)",
                    node_id=node_id, field=param, severity="warning"))
    return found


def _corpus_values(doc: GraphDocument, registry: NodeRegistry,
                   node_id: str) -> list[tuple[str, Any]]:
    """(param, value) of a node's corpus-specific params set to something else than their
    default."""
    spec = doc.node(node_id)
    try:
        node_type = registry.get(spec.type)
    except ModragError:
        return []
    fields = getattr(node_type.Params, "model_fields", {})
    found = []
    for param in node_type.corpus_params:
        value = spec.params.get(param)
        field = fields.get(param)
        default = field.get_default(call_default_factory=True) if field is not None else None
        if value not in (None, "", [], {}) and value != default:
            found.append((param, value))
    return found


def _same_path(given: str, default: str, folder: Path | None) -> bool:
    base = folder.resolve() if folder is not None else Path.cwd()
    try:
        return (base / given).resolve() == (base / default).resolve()
    except (OSError, RuntimeError, ValueError):
        return given == default


def visit_warnings(trace: Any) -> dict[str, list[Problem]]:
    """The warnings of each node that ran in ``trace`` (its last visit; an empty list for a
    node that ran without one), as problems placed on the node. Nodes that came from the
    cache are absent: their warnings are those of the run that computed them."""
    found: dict[str, list[Problem]] = {}
    for visit in trace.visits:
        if visit.status in ("done", "failed", "cancelled"):
            found[visit.node_id] = [Problem("run-warning", message, node_id=visit.node_id,
                                            severity="warning")
                                    for message in dict.fromkeys(visit.warnings)]
    return found


def note_problems(trace: Any) -> list[Problem]:
    """The run's own notes placed on a node (corpus-specific params), as problems."""
    return [Problem(p["code"], p["message"], node_id=p.get("node_id"), field=p.get("field"),
                    severity="warning")
            for p in trace.problems if p.get("node_id") and p.get("severity") == "warning"]
