"""The tuner's winner as a named variant of the graph file (the base is never changed)."""

from __future__ import annotations

from pathlib import Path

from modrag_studio.engine.core.document import GraphDocument, VariantSpec, load, save
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.variants import VariantError, apply_variant, with_variant
from modrag_studio.evaluation.tuning.tuner import Trial, TuneResult, store_collections


def winner_variant(doc: GraphDocument, result: TuneResult, name: str,
                   registry: NodeRegistry) -> VariantSpec:
    """The best trial as a variant named ``name``, with what the test on questions its
    search never saw showed in the description, and its own store collections (running it
    never re-indexes the base's)."""
    best: Trial | None = result.best
    if best is None:
        raise VariantError("no trial beat the base on the tuning questions: nothing to save")
    params = {node: dict(changes) for node, changes in best.variant.params.items()}
    graph = apply_variant(doc, best.variant, registry)
    for node_id, param, store_name in store_collections(doc, graph, registry):
        params.setdefault(node_id, {})[param] = store_name
    return best.variant.model_copy(update={"name": name, "description": describe(result),
                                           "params": params}, deep=True)


def describe(result: TuneResult) -> str:
    """What the test showed, in one line (the figures of questions the search never saw)."""
    stats = result.test["metrics"][result.metric]
    lo, hi = stats["ci95"]
    figures = (f"{stats['a']:.4f} -> {stats['b']:.4f} (delta {stats['delta']:+.4f}, "
               f"CI95 [{lo:+.4f}, {hi:+.4f}], p={stats['p_value']:.4f}, n={stats['n']}, "
               f"{result.verdict})")
    tuned = f"tuned for {result.output} {result.metric} over {', '.join(result.space)}"
    if result.method == "cross-validation":
        test = result.test
        return (f"{tuned}, chosen on all {test['questions']} questions; cross-validated "
                f"({test['folds']} folds x {test['repeats']} repeats, corrected resampled "
                f"t-test), out-of-fold questions its search never saw: {figures}")
    return f"{tuned}: held-out questions its search never saw: {figures}"


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
