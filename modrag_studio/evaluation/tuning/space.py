"""A tuner's search space: node params, node types and bypasses, each with its values.

``--space node.param=v1,v2`` sets a param, ``--space node=type.a,type.b`` swaps the node's
type, ``--space node.bypass=false,true`` turns a node off (a reranker on/off, say). Values
are split on commas outside brackets and quotes, so a JSON value (``{"dense": 2}``) may
hold commas. Every name and value is checked against the graph and the node types before
anything runs, and each error names the ``--space`` it comes from.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology


class SpaceError(ModragError):
    """A ``--space`` that names no node, param or type, or a value the param refuses."""


DimensionKind = Literal["param", "type", "bypass"]


@dataclass(frozen=True)
class Dimension:
    """One axis of the space: a node's param, its type or its bypass, and the values tried."""

    node_id: str
    kind: DimensionKind
    values: tuple[Any, ...]
    param: str = ""

    @property
    def name(self) -> str:
        return {"param": f"{self.node_id}.{self.param}", "type": self.node_id,
                "bypass": f"{self.node_id}.bypass"}[self.kind]


@dataclass(frozen=True)
class SearchSpace:
    """The dimensions (upstream first, so expensive changes vary slowest) and the graph."""

    dimensions: tuple[Dimension, ...]

    @property
    def size(self) -> int:
        total = 1
        for dim in self.dimensions:
            total *= len(dim.values)
        return total

    def names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    def combinations(self) -> Iterator[tuple[Any, ...]]:
        return itertools.product(*(d.values for d in self.dimensions))

    def settings(self, values: Sequence[Any]) -> dict[str, Any]:
        return {d.name: v for d, v in zip(self.dimensions, values, strict=True)}

    def variant(self, values: Sequence[Any], name: str, registry: NodeRegistry,
                doc: GraphDocument, description: str = "") -> VariantSpec:
        """The variant that sets ``values``; a param the node's (swapped) type lacks is left
        out, so ``fusion=fuse.convex`` with ``fusion.k=20`` is convex fusion alone."""
        swap = {d.node_id: v for d, v in zip(self.dimensions, values, strict=True)
                if d.kind == "type"}
        params: dict[str, dict[str, Any]] = {}
        bypass: dict[str, bool] = {}
        for dim, value in zip(self.dimensions, values, strict=True):
            if dim.kind == "bypass":
                bypass[dim.node_id] = bool(value)
            elif dim.kind == "param":
                type_id = swap.get(dim.node_id, doc.node(dim.node_id).type)
                if dim.param in _param_names(registry, type_id):
                    params.setdefault(dim.node_id, {})[dim.param] = value
        base_types = {n.id: n.type for n in doc.nodes}
        swap = {k: v for k, v in swap.items() if base_types.get(k) != v}
        params = {node: {k: v for k, v in changes.items()
                         if _effective(registry, doc, node, k, swap.get(node)) != v}
                  for node, changes in params.items()}
        params = {node: changes for node, changes in params.items() if changes}
        base_bypass = {n.id: n.bypass for n in doc.nodes}
        bypass = {k: v for k, v in bypass.items() if base_bypass.get(k) != v}
        return VariantSpec(name=name, description=description, params=params, swap=swap,
                           bypass=bypass)


_UNSET = object()


def _effective(registry: NodeRegistry, doc: GraphDocument, node_id: str, param: str,
               swapped_to: str | None = None) -> Any:
    """The value a param has without the change: the node's own (kept across a swap when
    the new type has it) or the (new) type's default."""
    node = doc.node(node_id)
    field = registry.get(swapped_to or node.type).Params.model_fields.get(param)
    if field is None:
        return _UNSET
    if param in node.params:
        return node.params[param]
    if field.is_required():
        return _UNSET
    return field.get_default(call_default_factory=True)


def variant_key(variant: VariantSpec) -> str:
    """What a variant changes, canonically (two settings that build the same graph match)."""
    return json.dumps({"params": variant.params, "swap": variant.swap,
                       "bypass": variant.bypass}, sort_keys=True, default=repr)


def split_values(raw: str) -> list[str]:
    """``a,b,{"x": 1, "y": 2}`` -> three values: commas inside brackets or quotes stay."""
    values, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(raw):
        if quote:
            if char == quote and raw[index - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            values.append(raw[start:index].strip())
            start = index + 1
    values.append(raw[start:].strip())
    return values


def _param_names(registry: NodeRegistry, type_id: str) -> set[str]:
    params = getattr(registry.get(type_id), "Params", None)
    return set(params.model_fields) if params is not None else set()


def parse_space(specs: Sequence[str], doc: GraphDocument, registry: NodeRegistry,
                parse_value: Callable[[str], Any]) -> SearchSpace:
    """``--space`` strings to a checked space, upstream dimensions first."""
    if not specs:
        raise SpaceError("give at least one --space node.param=v1,v2 (or node=type.a,type.b)")
    dims: list[Dimension] = []
    for spec in specs:
        dims.append(_parse_one(spec, doc, registry, parse_value))
    names = [d.name for d in dims]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SpaceError(f"--space names {', '.join(repeated)} more than once; give all "
                         "its values in one --space")
    types = {d.node_id: d for d in dims if d.kind == "type"}
    for dim in dims:
        if dim.kind == "param":
            candidates = [doc.node(dim.node_id).type]
            if dim.node_id in types:
                candidates = list(types[dim.node_id].values)
            if not any(dim.param in _param_names(registry, t) for t in candidates):
                known = sorted(set().union(*(_param_names(registry, t) for t in candidates)))
                raise SpaceError(f"--space {dim.name}: node '{dim.node_id}' "
                                 f"({', '.join(candidates)}) has no param '{dim.param}' "
                                 f"(params: {', '.join(known) or 'none'})")
            if dim.node_id not in types:
                _check_values(dim, doc, registry)
    order = {node_id: i for i, node_id in enumerate(Topology.of(doc).order()[0])}
    dims.sort(key=lambda d: (order.get(d.node_id, 0), d.kind != "type"))
    return SearchSpace(tuple(dims))


def _parse_one(spec: str, doc: GraphDocument, registry: NodeRegistry,
               parse_value: Callable[[str], Any]) -> Dimension:
    target, eq, raw = spec.partition("=")
    node_id, dot, param = target.strip().partition(".")
    if not eq or not node_id or (dot and not param) or not raw.strip():
        raise SpaceError(f"--space '{spec}': expected node.param=v1,v2,... or "
                         "node=type.a,type.b")
    if node_id not in doc.node_ids():
        raise SpaceError(f"--space '{spec}': no node '{node_id}' in the graph "
                         f"(nodes: {', '.join(doc.node_ids())})")
    texts = split_values(raw)
    if any(not t for t in texts):
        raise SpaceError(f"--space '{spec}': an empty value")
    if not dot:
        for type_id in texts:
            try:
                registry.get(type_id)
            except ModragError as exc:
                raise SpaceError(f"--space '{spec}': {exc}") from None
        return Dimension(node_id, "type", tuple(dict.fromkeys(texts)))
    values = tuple(parse_value(t) for t in texts)
    node_type = doc.node(node_id).type
    if param == "bypass" and "bypass" not in _param_names(registry, node_type):
        if not all(isinstance(v, bool) for v in values):
            raise SpaceError(f"--space '{spec}': bypass takes true and/or false")
        return Dimension(node_id, "bypass", tuple(dict.fromkeys(values)), "bypass")
    unique = tuple(v for i, v in enumerate(values) if v not in values[:i])
    return Dimension(node_id, "param", unique, param)


def _check_values(dim: Dimension, doc: GraphDocument, registry: NodeRegistry) -> None:
    """Each value validated by the node type's Params, with the node's other params."""
    node = doc.node(dim.node_id)
    params_type = registry.get(node.type).Params
    for value in dim.values:
        try:
            params_type.model_validate({**node.params, dim.param: value})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise SpaceError(f"--space {dim.name}={value!r}: {first['msg']}") from None
