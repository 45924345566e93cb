"""The tuner's winner as a named variant of the graph file (the base is never changed)."""

from __future__ import annotations

from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument, VariantSpec, load, save
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.variants import VariantError, apply_variant, with_variant
from modrag_studio.evaluation.tuning.tuner import Trial, TuneResult, store_collections


def winner_variant(doc: GraphDocument, result: TuneResult, name: str,
                   registry: NodeRegistry) -> VariantSpec:
    """The best trial as a variant named ``name``, its held-out figures in the description
    and its own store collections (running it never re-indexes the base's)."""
    best: Trial | None = result.best
    if best is None:
        raise VariantError("no trial beat the base on the tuning questions: nothing to save")
    stats = result.held_out["metrics"][result.metric]
    lo, hi = stats["ci95"]
    description = (f"tuned for {result.output} {result.metric} over "
                   f"{', '.join(result.space)}: held-out {stats['a']:.4f} -> {stats['b']:.4f} "
                   f"(delta {stats['delta']:+.4f}, CI95 [{lo:+.4f}, {hi:+.4f}], "
                   f"p={stats['p_value']:.4f}, n={stats['n']}, {result.verdict})")
    params = {node: dict(changes) for node, changes in best.variant.params.items()}
    graph = apply_variant(doc, best.variant, registry)
    for node_id, param, store_name in store_collections(doc, graph, registry):
        params.setdefault(node_id, {})[param] = store_name
    return best.variant.model_copy(update={"name": name, "description": description,
                                           "params": params}, deep=True)


def write_variant(path: str | Path, variant: VariantSpec, *, replace: bool = False) -> None:
    """Add ``variant`` to the graph file at ``path`` (read again, so edits made since the
    tune began are kept), atomically; an existing variant of that name is replaced only
    with ``replace``."""
    current = load(path)
    names = [v.name for v in current.variants or []]
    if variant.name in names and not replace:
        raise VariantError(f"{path} already has a variant '{variant.name}'; choose another "
                           "--variant-name or pass --replace-variant")
    save(with_variant(current, variant), path)
