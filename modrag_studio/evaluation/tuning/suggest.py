"""Dimensions worth tuning on chosen nodes, with values to start from (the studio's Tune
dialog fills its space table from these; each is a ``--space`` string once chosen)."""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Any

from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.variants import VariantError, apply_variant

SKIPPED_PARAMS = {"label", "on_error", "device", "batch_size", "model", "collection", "path",
                  "persist_dir", "table", "name", "description", "default", "pattern"}


@dataclass(frozen=True)
class Suggestion:
    """One dimension: its ``--space`` name, the base value and values to try."""

    name: str
    current: str
    values: str

    def space(self, values: str | None = None) -> str:
        return f"{self.name}={values if values is not None else self.values}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _numbers(current: float, lower: float | None, upper: float | None,
             integer: bool) -> list[Any]:
    if integer:
        base = int(current) or 1
        picks = [max(1, base // 2), base, base * 2]
    else:
        picks = [round(current * 0.5, 3), current, round(min(current * 1.5, upper or 1e9), 3)]
    kept = [p for p in picks if (lower is None or p >= lower) and (upper is None or p <= upper)]
    return list(dict.fromkeys(kept))


def _param_suggestion(node_id: str, name: str, field: Any, current: Any) -> Suggestion | None:
    annotation = field.annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        choices = list(typing.get_args(annotation))
        return Suggestion(f"{node_id}.{name}", _text(current), ",".join(map(_text, choices)))
    if annotation is bool:
        return Suggestion(f"{node_id}.{name}", _text(current), "false,true")
    if annotation in (int, float) and isinstance(current, int | float):
        lower = upper = None
        for item in field.metadata:
            lower = getattr(item, "ge", None) if getattr(item, "ge", None) is not None else lower
            upper = getattr(item, "le", None) if getattr(item, "le", None) is not None else upper
        values = _numbers(current, lower, upper, annotation is int)
        return Suggestion(f"{node_id}.{name}", _text(current), ",".join(map(_text, values)))
    return None


def suggest(doc: GraphDocument, node_ids: list[str], registry: NodeRegistry
            ) -> list[Suggestion]:
    """Numbers, choices and switches of each node, its swappable types (same category,
    ports that fit its wires) and, where it can be turned off, its bypass."""
    found: list[Suggestion] = []
    for node_id in node_ids:
        node = doc.node(node_id)
        node_type = registry.get(node.type)
        params_type = getattr(node_type, "Params", None)
        if params_type is not None:
            effective = params_type.model_validate(node.params).model_dump()
            for name, field in params_type.model_fields.items():
                if name in SKIPPED_PARAMS:
                    continue
                suggestion = _param_suggestion(node_id, name, field, effective.get(name))
                if suggestion is not None:
                    found.append(suggestion)
        swaps = [t.type_id for t in registry if t.category == node_type.category
                 and t.type_id != node.type and _fits(doc, VariantSpec(
                     name="s", swap={node_id: t.type_id}), registry)]
        if swaps:
            found.append(Suggestion(node_id, node.type, ",".join([node.type, *swaps])))
        if node.type.split(".")[0] not in ("graph", "load", "split", "embed", "store") \
                and _fits(doc, VariantSpec(name="b", bypass={node_id: not node.bypass}),
                          registry):
            found.append(Suggestion(f"{node_id}.bypass", _text(node.bypass), "false,true"))
    return found


def _fits(doc: GraphDocument, variant: VariantSpec, registry: NodeRegistry) -> bool:
    try:
        apply_variant(doc, variant, registry)
    except (VariantError, ValueError):
        return False
    return True
