"""What changed in a graph between a recorded run and now, and a run's deltas against a
baseline run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.engine.core.document import GraphDocument


@dataclass
class GraphChanges:
    """Node-level differences from ``old`` (the graph as it ran) to ``new`` (the graph now)."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    retyped: dict[str, tuple[str, str]] = field(default_factory=dict)
    params: dict[str, list[str]] = field(default_factory=dict)
    rewired: list[str] = field(default_factory=list)

    @property
    def none(self) -> bool:
        return not (self.added or self.removed or self.retyped or self.params or self.rewired)

    def describe(self) -> str:
        """One line: ``nodes added: a; removed: b; params changed: c (top_k)`` or
        ``the graph is unchanged``."""
        if self.none:
            return "the graph is unchanged since this run"
        parts = []
        if self.added:
            parts.append("nodes added: " + ", ".join(self.added))
        if self.removed:
            parts.append("nodes removed: " + ", ".join(self.removed))
        if self.retyped:
            parts.append("types changed: " + ", ".join(
                f"{n} ({a} -> {b})" for n, (a, b) in self.retyped.items()))
        if self.params:
            parts.append("params changed: " + ", ".join(
                f"{n} ({', '.join(names)})" for n, names in self.params.items()))
        if self.rewired:
            parts.append("wires changed at: " + ", ".join(self.rewired))
        return "; ".join(parts)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _wires(doc: GraphDocument) -> set[tuple[str, str]]:
    return {(edge.source, edge.target) for edge in doc.edges}


def graph_changes(old: GraphDocument, new: GraphDocument) -> GraphChanges:
    """Nodes added and removed, node types swapped, params changed and wires moved."""
    changes = GraphChanges()
    old_nodes, new_nodes = {n.id: n for n in old.nodes}, {n.id: n for n in new.nodes}
    changes.added = [n for n in new_nodes if n not in old_nodes]
    changes.removed = [n for n in old_nodes if n not in new_nodes]
    for node_id, node in new_nodes.items():
        before = old_nodes.get(node_id)
        if before is None:
            continue
        if before.type != node.type:
            changes.retyped[node_id] = (before.type, node.type)
        names = sorted(k for k in {*before.params, *node.params}
                       if _canonical(before.params.get(k)) != _canonical(node.params.get(k)))
        if names:
            changes.params[node_id] = names
    moved = _wires(old) ^ _wires(new)
    changes.rewired = sorted({target.split(".", 1)[0] for _, target in moved
                              if target.split(".", 1)[0] in old_nodes
                              and target.split(".", 1)[0] in new_nodes})
    return changes


def deltas(baseline: Any, run: Any) -> dict[str, Any]:
    """A run against the baseline run (both ``RunRecord``): seconds slower (+) or faster,
    whether the outcome and the answer changed, and a short label for lists."""
    seconds = run.duration_s - baseline.duration_s
    outcome = run.status != baseline.status
    answer = run.answer.strip() != baseline.answer.strip()
    parts = [f"{seconds:+.2f} s"]
    if outcome:
        parts.append(f"{baseline.status} -> {run.status}")
    parts.append("answer changed" if answer else "same answer")
    return {"seconds": seconds, "outcome_changed": outcome, "answer_changed": answer,
            "label": ", ".join(parts)}
