"""Variants: a base graph plus named changes (param overrides, node swaps, re-wired inputs).

A variant is stored in the graph file's ``variants`` block and applied to a copy of the
graph before it runs. Nothing else changes, so the cache (keyed by node type, params and
inputs) gives back every node upstream of the changes: only the changed nodes and those
downstream of them run again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.core.document import EdgeSpec, GraphDocument, RewireSpec, VariantSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.core.validation import errors_only


class VariantError(ModragError):
    """A variant cannot be applied (the message names the variant, node, port or param)."""


def variant_names(doc: GraphDocument) -> list[str]:
    return [v.name for v in doc.variants or []]


def get_variant(doc: GraphDocument, name: str) -> VariantSpec:
    for variant in doc.variants or []:
        if variant.name == name:
            return variant
    known = ", ".join(variant_names(doc)) or "none"
    raise VariantError(f"no variant '{name}' in graph '{doc.metadata.name}' (variants: {known})")


def with_variant(doc: GraphDocument, variant: VariantSpec) -> GraphDocument:
    """A copy of ``doc`` that stores ``variant`` (replacing one of the same name)."""
    kept = [v for v in doc.variants or [] if v.name != variant.name]
    return doc.model_copy(update={"variants": [*kept, variant]}, deep=True)


def base_of(doc: GraphDocument) -> GraphDocument:
    """The runnable graph without its variants block (what a run and its hash see)."""
    return doc.model_copy(update={"variants": None}, deep=True)


def apply_variant(doc: GraphDocument, variant: VariantSpec | str,
                  registry: NodeRegistry) -> GraphDocument:
    """The graph with ``variant`` applied: swaps first, then params, bypasses, re-wiring.

    Raises VariantError naming the problem: an unknown node, a swap to a type whose ports do
    not fit the node's edges, a param the node's type does not have, an invalid re-wire.
    """
    if isinstance(variant, str):
        variant = get_variant(doc, variant)
    out = base_of(doc)
    out.metadata.name = f"{doc.metadata.name}:{variant.name}"
    where = f"variant '{variant.name}'"
    if _names_inner_nodes(variant):  # ``sub/inner``: the variant applies to the expanded graph
        expanded = expand(out)
        if errors := errors_only(expanded.problems):
            raise VariantError(f"{where}: " + "; ".join(str(p) for p in errors[:5]))
        out = expanded.doc
    ids = set(out.node_ids())
    for node_id, type_id in variant.swap.items():
        _swap(out, node_id, type_id, registry, where, ids)
    for node_id, params in variant.params.items():
        if node_id not in ids:
            raise VariantError(f"{where}: no node '{node_id}' to set params on")
        node = out.node(node_id)
        known = _param_names(registry, node.type)
        for name, value in params.items():
            if known is not None and name not in known:
                raise VariantError(f"{where}: node '{node_id}' ({node.type}) has no param "
                                   f"'{name}' (params: {', '.join(sorted(known))})")
            node.params[name] = value
    for node_id, off in variant.bypass.items():
        if node_id not in ids:
            raise VariantError(f"{where}: no node '{node_id}' to turn {'off' if off else 'on'}")
        out.node(node_id).bypass = bool(off)
    for rewire in variant.rewire:
        _rewire(out, rewire, where, ids)
    problems = errors_only(validate(out, registry))
    if problems:
        raise VariantError(f"{where}: " + "; ".join(str(p) for p in problems[:5]))
    return out


def _names_inner_nodes(variant: VariantSpec) -> bool:
    """Whether ``variant`` names nodes inside subgraphs (``sub_id/inner_id``)."""
    ids = [*variant.params, *variant.swap, *variant.bypass]
    ids += [e.rpartition(".")[0] for r in variant.rewire
            for e in (r.source, r.target, r.instead_of) if e]
    return any("/" in node_id for node_id in ids)


def _param_names(registry: NodeRegistry, type_id: str) -> set[str] | None:
    try:
        node_type = registry.get(type_id)
    except ModragError:
        return None
    params = getattr(node_type, "Params", None)
    return set(params.model_fields) if params is not None else None


def _swap(doc: GraphDocument, node_id: str, type_id: str, registry: NodeRegistry, where: str,
          ids: set[str]) -> None:
    """Give ``node_id`` another type whose ports fit every edge of the node."""
    if node_id not in ids:
        raise VariantError(f"{where}: no node '{node_id}' to swap")
    try:
        new_type = registry.get(type_id)
    except ModragError as exc:
        raise VariantError(f"{where}: swap of '{node_id}': {exc}") from None
    inputs = {p.name for p in new_type.inputs}
    outputs = {p.name for p in new_type.outputs}
    for edge in doc.edges:
        if edge.target_node == node_id and edge.target_port not in inputs:
            raise VariantError(f"{where}: swap of '{node_id}' to {type_id}: it has no input "
                               f"'{edge.target_port}' for the edge from {edge.source} "
                               f"(inputs: {', '.join(sorted(inputs)) or 'none'})")
        if edge.source_node == node_id and edge.source_port not in outputs:
            raise VariantError(f"{where}: swap of '{node_id}' to {type_id}: it has no output "
                               f"'{edge.source_port}' for the edge to {edge.target} "
                               f"(outputs: {', '.join(sorted(outputs)) or 'none'})")
    node = doc.node(node_id)
    known = _param_names(registry, type_id) or set()
    node.type, node.version = type_id, getattr(new_type, "version", 1)
    node.params = {k: v for k, v in node.params.items() if k in known}


def _rewire(doc: GraphDocument, rewire: RewireSpec, where: str, ids: set[str]) -> None:
    for endpoint in (rewire.source, rewire.target, rewire.instead_of):
        if endpoint is not None and endpoint.split(".", 1)[0] not in ids:
            raise VariantError(f"{where}: re-wire names '{endpoint}': no such node")
    into = [e for e in doc.edges if e.target == rewire.target]
    if rewire.instead_of is not None:
        replaced = [e for e in into if e.source == rewire.instead_of]
        if not replaced:
            raise VariantError(f"{where}: no edge {rewire.instead_of} -> {rewire.target} "
                               "to re-wire")
    else:
        replaced = into
    doc.edges[:] = [e for e in doc.edges if e not in replaced]
    doc.edges.append(EdgeSpec.model_validate({"from": rewire.source, "to": rewire.target}))


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
