"""A variant applied: the graph a stored or command-line variant runs (swaps first, then
params, bypasses, re-wiring), checked as any graph is. The studio's variant edits and the trust
list (what each stored variant reaches) both build on it."""

from __future__ import annotations

from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.compose.expand import expand
from modrag_studio.engine.core.document import EdgeSpec, GraphDocument, RewireSpec, VariantSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
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
