"""Variants: a base graph plus named changes (param overrides, node swaps, re-wired inputs).

A variant is stored in the graph file's ``variants`` block and applied to a copy of the
graph before it runs. Nothing else changes, so the cache (keyed by node type, params and
inputs) gives back every node upstream of the changes: only the changed nodes and those
downstream of them run again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from modrag_studio.engine.compose.variant_apply import (
    VariantError,
    apply_variant,
    base_of,
    get_variant,
    variant_names,
)
from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology

__all__ = ["VariantDiff", "VariantError", "apply_variant", "base_of", "diff_graphs",
           "get_variant", "parse_variant_args", "resolve_variant", "variant_names",
           "with_variant"]


def with_variant(doc: GraphDocument, variant: VariantSpec) -> GraphDocument:
    """A copy of ``doc`` that stores ``variant`` (replacing one of the same name)."""
    kept = [v for v in doc.variants or [] if v.name != variant.name]
    return doc.model_copy(update={"variants": [*kept, variant]}, deep=True)


@dataclass
class VariantDiff:
    """What a variant changes, node by node, and which nodes must run again."""

    params: dict[str, list[str]] = field(default_factory=dict)
    swapped: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: node id -> True when ``b`` bypasses it and ``a`` does not, False the other way
    bypassed: dict[str, bool] = field(default_factory=dict)
    rewired: dict[str, list[str]] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    rerun: set[str] = field(default_factory=set)

    def changes_of(self, node_id: str) -> list[str]:
        """Short labels of what changed on one node (empty when nothing did)."""
        labels = [f"{name}" for name in self.params.get(node_id, [])]
        if node_id in self.swapped:
            labels.insert(0, f"type {self.swapped[node_id][0]} -> {self.swapped[node_id][1]}")
        if node_id in self.bypassed:
            labels.append("bypassed" if self.bypassed[node_id] else "no longer bypassed")
        labels.extend(f"input {port}" for port in self.rewired.get(node_id, []))
        return labels


def diff_graphs(a: GraphDocument, b: GraphDocument) -> VariantDiff:
    """Node-level differences of two graphs with the same node ids (e.g. base and variant).

    ``rerun`` is every changed node plus everything downstream of it in ``b``: the nodes a
    run of ``b`` executes when the cache holds a run of ``a``.
    """
    diff = VariantDiff()
    nodes_a = {n.id: n for n in a.nodes}
    for node in b.nodes:
        old = nodes_a.get(node.id)
        if old is None:
            diff.changed.add(node.id)
            continue
        if old.type != node.type:
            diff.swapped[node.id] = (old.type, node.type)
        names = sorted(k for k in {*old.params, *node.params}
                       if _canonical(old.params.get(k)) != _canonical(node.params.get(k)))
        if names:
            diff.params[node.id] = names
        if old.bypass != node.bypass:
            diff.bypassed[node.id] = node.bypass
    wires_a, wires_b = _wires(a), _wires(b)
    for target in sorted(set(wires_a) | set(wires_b)):
        if sorted(wires_a.get(target, [])) != sorted(wires_b.get(target, [])):
            node_id, port = target.split(".", 1)
            diff.rewired.setdefault(node_id, []).append(port)
    diff.changed |= {*diff.params, *diff.swapped, *diff.rewired, *diff.bypassed}
    topology = Topology.of(b)
    diff.rerun = set(diff.changed)
    for node_id in diff.changed:
        diff.rerun |= topology.downstream(node_id)
    return diff


def _wires(doc: GraphDocument) -> dict[str, list[str]]:
    wires: dict[str, list[str]] = {}
    for edge in doc.edges:
        wires.setdefault(edge.target, []).append(edge.source)
    return wires


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def parse_variant_args(specs: list[str], parse_value) -> dict[str, VariantSpec]:
    """``--variant`` values to variants, grouped by name (several may name the same one).

    ``NAME:node.param=value`` sets a param, ``NAME:node=type.id`` swaps a node's type,
    ``NAME:node.port<-node.port`` feeds an input from another output, ``NAME`` alone is a
    variant stored in the graph (returned without changes; the caller looks it up).
    """
    grouped: dict[str, dict] = {}
    for spec in specs:
        name, sep, change = spec.partition(":")
        if not name:
            raise VariantError(f"--variant '{spec}': expected NAME:node.param=value")
        entry = grouped.setdefault(name, {"name": name, "params": {}, "swap": {},
                                          "rewire": []})
        if not sep:
            continue
        if "<-" in change:
            target, _, source = change.partition("<-")
            entry["rewire"].append({"from": source.strip(), "to": target.strip()})
            continue
        target, eq, raw = change.partition("=")
        if not eq or not target:
            raise VariantError(f"--variant '{spec}': expected NAME:node.param=value, "
                               "NAME:node=type.id or NAME:node.port<-node.port")
        node_id, dot, param = target.partition(".")
        if dot:
            entry["params"].setdefault(node_id, {})[param] = parse_value(raw)
        else:
            entry["swap"][node_id] = raw
    try:
        return {name: VariantSpec.model_validate(data) for name, data in grouped.items()}
    except ValueError as exc:
        raise VariantError(f"--variant: {exc}") from None


def resolve_variant(doc: GraphDocument, spec: VariantSpec,
                    registry: NodeRegistry) -> GraphDocument:
    """Apply a command-line variant: a stored one of that name with ``spec``'s changes on top."""
    stored = next((v for v in doc.variants or [] if v.name == spec.name), None)
    if stored is not None:
        merged = stored.model_copy(deep=True)
        for node_id, params in spec.params.items():
            merged.params.setdefault(node_id, {}).update(params)
        merged.swap.update(spec.swap)
        merged.rewire.extend(spec.rewire)
        merged.bypass.update(spec.bypass)
        spec = merged
    elif not (spec.params or spec.swap or spec.rewire or spec.bypass):
        get_variant(doc, spec.name)  # raises, naming the variants there are
    return apply_variant(doc, spec, registry)
