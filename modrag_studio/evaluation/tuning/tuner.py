"""The tuner: search a space of graph changes on the tuning questions, then test the best
one against the base on held-out questions with the paired test ``modrag compare`` uses.

Every trial runs on one executor, so what trials share upstream (a chunking, an index) is
computed once and re-used from the node cache. A trial that changes what a vector store
indexes writes to a collection of its own (the base collection's name plus a hash of what
feeds the store), so trials never re-index or delete each other's chunks and a second tune
re-uses them. The winner is called better only when its held-out gain has p < 0.05.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.errors import ModragError, RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.edit.variants import VariantError, apply_variant
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.compare import compare_rows, compared_metrics
from modrag_studio.evaluation.report import EvalReport
from modrag_studio.evaluation.runner import evaluate_graph
from modrag_studio.evaluation.tuning.questions import (
    MIN_HELD_OUT,
    QuestionSplit,
    split_questions,
    subset,
)
from modrag_studio.evaluation.tuning.search import Sampler, make_proposer, take
from modrag_studio.evaluation.tuning.space import SearchSpace, variant_key

SIGNIFICANCE = 0.05
STORE_NAME_PARAMS = ("collection", "table")  # the param naming a store's own records


class TuneError(ModragError):
    """The tune cannot start or finish as asked (the message names the cause)."""


@dataclass
class Trial:
    """One graph tried on the tuning questions."""

    number: int
    settings: dict[str, Any]
    variant: VariantSpec
    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    failures: int = 0
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "settings": self.settings,
                "changes": self.variant.model_dump(exclude={"name", "description"},
                                                   exclude_defaults=True),
                "score": None if self.score is None else round(self.score, 4),
                "metrics": {k: round(v, 4) for k, v in self.metrics.items()},
                "seconds": round(self.seconds, 2), "failures": self.failures,
                "error": self.error}


@dataclass
class TuneResult:
    output: str
    metric: str
    space: list[str]
    sampler: str
    split: QuestionSplit
    base: Trial
    trials: list[Trial] = field(default_factory=list)
    best: Trial | None = None
    held_out: dict[str, Any] = field(default_factory=dict)
    verdict: str = ""
    seconds: float = 0.0

    @property
    def better(self) -> bool:
        return self.verdict == "better"

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "metric": self.metric, "space": self.space,
                "sampler": self.sampler,
                "split": {"seed": self.split.seed, "tuning": len(self.split.tuning),
                          "held_out": len(self.split.held_out)},
                "base": self.base.to_dict(), "trials": [t.to_dict() for t in self.trials],
                "best": self.best.to_dict() if self.best else None,
                "held_out": self.held_out, "verdict": self.verdict,
                "significance": SIGNIFICANCE, "seconds": round(self.seconds, 2)}


OnTrial = Callable[[Trial, int, int], None]


def tune(doc: GraphDocument, dataset: BeirDataset, output: str, space: SearchSpace, *,
         executor: Executor, budget: int = 12, metric: str = "ndcg@10", seed: int = 0,
         held_out: float = 0.3, min_held_out: int = MIN_HELD_OUT, sampler: Sampler = "auto",
         cancel: CancelToken | None = None, on_trial: OnTrial | None = None,
         **eval_kwargs: Any) -> TuneResult:
    """Tune ``doc``'s ``output`` (``node.port``) on ``dataset``; ``eval_kwargs`` go to each
    ``evaluate_graph`` (query/corpus inputs, extra inputs, hit_k, setup hooks, progress)."""
    if budget < 1:
        raise TuneError(f"--budget {budget}: at least one trial")
    registry = executor.registry
    query_ids = dataset.evaluated_query_ids()
    split = split_questions(query_ids, held_out, seed, min_held_out)
    tuning, holdout = subset(dataset, split.tuning), subset(dataset, split.held_out)
    proposer = make_proposer(space, budget, seed, sampler)
    started = time.perf_counter()

    def evaluate(graph: GraphDocument, questions: BeirDataset) -> EvalReport:
        if cancel is not None and cancel.cancelled:
            raise RunCancelled("tuning cancelled")
        report = evaluate_graph(graph, questions, [output], executor=executor, cancel=cancel,
                                **eval_kwargs)
        if cancel is not None and cancel.cancelled:
            raise RunCancelled("tuning cancelled")
        return report

    base = Trial(0, {}, VariantSpec(name="base"))
    _score(base, evaluate(doc, tuning), output, metric)
    base.seconds = time.perf_counter() - started
    if base.failures and base.failures == len(split.tuning):
        raise TuneError(f"the base graph produced '{output}' for none of the tuning "
                        "questions; fix the base first (modrag eval shows why)")
    total = min(budget, space.size)
    if on_trial is not None:
        on_trial(base, 0, total)
    result = TuneResult(output, metric, space.names(), proposer.name, split, base)
    seen: dict[str, Trial] = {variant_key(base.variant): base}
    for values in take(proposer, budget):
        trial = Trial(len(result.trials) + 1, space.settings(values),
                      space.variant(values, f"trial-{len(result.trials) + 1}", registry, doc))
        same = seen.get(variant_key(trial.variant))
        if same is not None:  # the same graph as an earlier trial (e.g. a param of no effect)
            trial.score, trial.metrics = same.score, dict(same.metrics)
            trial.error = same.error or f"the same graph as trial {same.number}"
        else:
            seen[variant_key(trial.variant)] = trial
            try:
                graph = trial_graph(doc, trial.variant, registry)
            except VariantError as exc:
                trial.error = str(exc)
            else:
                t0 = time.perf_counter()
                _score(trial, evaluate(graph, tuning), output, metric)
                trial.seconds = time.perf_counter() - t0
        proposer.tell(values, trial.score)
        result.trials.append(trial)
        if on_trial is not None:
            on_trial(trial, trial.number, total)
    result.best = best_trial(result)
    if result.best is not None:
        result.held_out = _held_out(doc, result.best, holdout, output, metric, registry,
                                    evaluate)
        result.verdict = verdict(result.held_out["metrics"][metric])
    else:
        result.verdict = "base is best"
    result.seconds = time.perf_counter() - started
    return result


def _score(trial: Trial, report: EvalReport, output: str, metric: str) -> None:
    metrics = report.outputs.get(output, {})
    if metric not in metrics:
        known = ", ".join(sorted(metrics)) or "none: the output was not produced"
        raise TuneError(f"--metric {metric}: not a metric of '{output}' (metrics: {known})")
    trial.metrics = dict(metrics)
    trial.score = metrics[metric]
    trial.failures = len(report.failures)


def best_trial(result: TuneResult) -> Trial | None:
    """The best-scoring trial above the base (ties: the earlier, i.e. the smaller change
    under the grid's order); None when no trial beats the base on the tuning part."""
    scored = [t for t in result.trials if t.score is not None and not t.error]
    top = max(scored, key=lambda t: (t.score, -t.number), default=None)
    if top is None or result.base.score is None or top.score <= result.base.score:
        return None
    return top


def _held_out(doc: GraphDocument, best: Trial, holdout: BeirDataset, output: str,
              metric: str, registry: NodeRegistry,
              evaluate: Callable[[GraphDocument, BeirDataset], EvalReport]) -> dict[str, Any]:
    base_report = evaluate(doc, holdout)
    best_report = evaluate(trial_graph(doc, best.variant, registry), holdout)
    rows_a = {r["query_id"]: r for r in base_report.per_query.get(output, [])}
    rows_b = {r["query_id"]: r for r in best_report.per_query.get(output, [])}
    pairs = [(rows_a[q], rows_b[q]) for q in holdout.queries if q in rows_a and q in rows_b]
    names = list(dict.fromkeys([metric, *compared_metrics(base_report.hit_k)]))
    compared = compare_rows(pairs, names, metric, missing=0.0)
    compared["questions"] = len(holdout.queries)
    compared["failures"] = {"base": len(base_report.failures),
                            "best": len(best_report.failures)}
    return compared


def verdict(stats: dict[str, Any]) -> str:
    """``better`` / ``worse`` only when the held-out difference is significant."""
    delta, p = stats.get("delta"), stats.get("p_value")
    if delta is None or p is None:
        return "not tested"
    if p >= SIGNIFICANCE or delta == 0:
        return "no significant difference"
    return "better" if delta > 0 else "worse"


def trial_graph(doc: GraphDocument, variant: VariantSpec,
                registry: NodeRegistry) -> GraphDocument:
    """The graph a trial runs: ``variant`` applied, each vector store whose input changed
    writing to a collection of its own."""
    graph = apply_variant(doc, variant, registry)
    for node_id, param, name in store_collections(doc, graph, registry):
        graph.node(node_id).params[param] = name
    return graph


def trial_reach_graphs(doc: GraphDocument, space: SearchSpace,
                       registry: NodeRegistry) -> list[GraphDocument]:
    """Graphs that together reach whatever any trial of ``space`` reaches (what the trust
    list is decided on before tuning): for each node, every combination of its own
    dimensions, the other nodes unchanged; what a node reaches depends on its own type and
    params only, so this covers every trial without running the whole product."""
    graphs = []
    for node_id in dict.fromkeys(d.node_id for d in space.dimensions):
        own = SearchSpace(tuple(d for d in space.dimensions if d.node_id == node_id))
        for values in own.combinations():
            try:
                graphs.append(trial_graph(doc, own.variant(values, "trial", registry, doc),
                                          registry))
            except ModragError:  # a combination that cannot be applied never runs
                continue
    return graphs


def store_collections(base: GraphDocument, graph: GraphDocument, registry: NodeRegistry
                      ) -> list[tuple[str, str, str]]:
    """(store node, its name param, the trial's name) for each store of ``graph`` whose
    upstream differs from the base's."""
    found = []
    for node in graph.nodes:
        params_type = getattr(registry.get(node.type), "Params", None)
        fields = getattr(params_type, "model_fields", {})
        param = next((p for p in STORE_NAME_PARAMS if p in fields), None)
        if param is None or not node.type.startswith("store."):
            continue
        mine, theirs = _feeding(graph, node.id, param), _feeding(base, node.id, param)
        if mine != theirs:
            current = node.params.get(param) or fields[param].default or node.id
            digest = hashlib.sha256(mine.encode()).hexdigest()[:10]
            found.append((node.id, param, f"{current}-t{digest}"))
    return found


def _feeding(doc: GraphDocument, node_id: str, name_param: str) -> str:
    """What the store indexes: its own type and params (but its name) and every node
    upstream of it, canonically."""
    if node_id not in doc.node_ids():
        return ""
    upstream = Topology.of(doc).upstream(node_id) | {node_id}
    nodes = sorted((n.id, n.type, n.bypass, {k: v for k, v in n.params.items()
                                             if not (n.id == node_id and k == name_param)})
                   for n in doc.nodes if n.id in upstream)
    edges = sorted((e.source, e.target) for e in doc.edges
                   if e.source_node in upstream and e.target_node in upstream)
    return json.dumps([nodes, edges], sort_keys=True, default=repr)
