"""The tuner: search a space of graph changes on the tuning questions, then test the choice
against the base on questions the search never saw: a held-out part (the paired test
``modrag compare`` uses) or, on small sets, repeated k-fold cross-validation of the choice
(``crossval``).

Every trial runs on one executor, so what trials share upstream (a chunking, an index) is
computed once and re-used from the node cache. A trial that changes what a vector store
indexes writes to a collection of its own (the base collection's name plus a hash of what
feeds the store), so trials never re-index or delete each other's chunks and a second tune
re-uses them. The winner is called better only when its tested gain has p < 0.05, and
worse when its tested loss has.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.edit.variants import VariantError, apply_variant
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.compare import compare_rows, compared_metrics
from modrag_studio.evaluation.metric_registry import METRICS, PRIMARY, Direction
from modrag_studio.evaluation.statistics import TEST_NAME
from modrag_studio.evaluation.tuning.crossval import check_cv, cross_validate, spread
from modrag_studio.evaluation.tuning.power import (
    DEFAULT_FOLDS,
    DEFAULT_REPEATS,
    choose_method,
)
from modrag_studio.evaluation.tuning.questions import (
    MIN_HELD_OUT,
    QuestionSplit,
    split_questions,
)
from modrag_studio.evaluation.tuning.scoring import GraphScorer, Scored, Scorer
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
    split: QuestionSplit | None  # the held-out method's split (None: cross-validation)
    base: Trial
    trials: list[Trial] = field(default_factory=list)
    best: Trial | None = None
    #: The held-out method's test (its ``metrics``); {} under cross-validation.
    held_out: dict[str, Any] = field(default_factory=dict)
    verdict: str = ""
    seconds: float = 0.0
    method: str = "held-out"
    #: The test the verdict rests on, either method: ``metrics`` (per metric: a, b, delta,
    #: ci95, p_value, n), the test's name and its questions.
    test: dict[str, Any] = field(default_factory=dict)

    @property
    def better(self) -> bool:
        return self.verdict == "better"

    @property
    def questions(self) -> int:
        """The questions the choice was made on (the tuning part, or all of them)."""
        return len(self.split.tuning) if self.split is not None else self.test.get(
            "questions", 0)

    def to_dict(self) -> dict[str, Any]:
        split = None if self.split is None else {
            "seed": self.split.seed, "tuning": len(self.split.tuning),
            "held_out": len(self.split.held_out)}
        return {"output": self.output, "metric": self.metric, "space": self.space,
                "sampler": self.sampler, "method": self.method, "split": split,
                "base": self.base.to_dict(), "trials": [t.to_dict() for t in self.trials],
                "best": self.best.to_dict() if self.best else None,
                "held_out": self.held_out, "test": self.test, "verdict": self.verdict,
                "significance": SIGNIFICANCE, "seconds": round(self.seconds, 2)}


OnTrial = Callable[[Trial, int, int], None]
OnFold = Callable[[int, int], None]


@dataclass
class Search:
    """One search of the space on some questions: the base, the trials, the best."""

    base: Trial
    trials: list[Trial]
    best: Trial | None
    sampler: str


def search(doc: GraphDocument, query_ids: list[str], space: SearchSpace, *, scorer: Scorer,
           registry: NodeRegistry, budget: int, metric: str, seed: int, sampler: Sampler,
           split: int = -1, on_trial: OnTrial | None = None) -> Search:
    """The base and up to ``budget`` trials scored on ``query_ids`` only (stage
    ``search``); the best trial above the base, or None."""
    proposer = make_proposer(space, budget, seed, sampler)

    def score(trial: Trial, graph: GraphDocument) -> None:
        t0 = time.perf_counter()
        _score(trial, scorer(graph, query_ids, stage="search", split=split), metric)
        trial.seconds = time.perf_counter() - t0

    base = Trial(0, {}, VariantSpec(name="base"))
    score(base, doc)
    if base.failures and base.failures == len(query_ids):
        raise TuneError("the base graph produced the tuned output for none of the tuning "
                        "questions; fix the base first (modrag eval shows why)")
    total = min(budget, space.size)
    if on_trial is not None:
        on_trial(base, 0, total)
    trials: list[Trial] = []
    seen: dict[str, Trial] = {variant_key(base.variant): base}
    for values in take(proposer, budget):
        trial = Trial(len(trials) + 1, space.settings(values),
                      space.variant(values, f"trial-{len(trials) + 1}", registry, doc))
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
                score(trial, graph)
        proposer.tell(values, trial.score)
        trials.append(trial)
        if on_trial is not None:
            on_trial(trial, trial.number, total)
    return Search(base, trials, best_trial(base, trials), proposer.name)


def tune(doc: GraphDocument, dataset: BeirDataset, output: str, space: SearchSpace, *,
         executor: Executor, budget: int = 12, metric: str = PRIMARY, seed: int = 0,
         held_out: float = 0.3, min_held_out: int = MIN_HELD_OUT, sampler: Sampler = "auto",
         method: str = "held-out", folds: int = DEFAULT_FOLDS,
         repeats: int = DEFAULT_REPEATS, cancel: CancelToken | None = None,
         on_trial: OnTrial | None = None, on_fold: OnFold | None = None,
         scorer: Scorer | None = None, **eval_kwargs: Any) -> TuneResult:
    """Tune ``doc``'s ``output`` (``node.port``) on ``dataset``; ``eval_kwargs`` go to each
    ``evaluate_graph`` (query/corpus inputs, extra inputs, hit_k, setup hooks, progress).

    ``method``: ``held-out`` (search on a seeded tuning part, test on the rest),
    ``cross-validation`` (the choice on every question; the search itself tested by
    repeated k-fold, see ``crossval``) or ``auto`` (``power.choose_method``)."""
    if budget < 1:
        raise TuneError(f"--budget {budget}: at least one trial")
    if METRICS.direction(metric) == "lower":
        raise TuneError(f"--metric {metric}: lower is better there, and the search keeps the "
                        "highest score")
    registry = executor.registry
    query_ids = dataset.evaluated_query_ids()
    try:
        method = choose_method(len(query_ids), held_out, method, min_held_out)
    except ValueError as exc:
        raise TuneError(str(exc)) from exc
    scorer = scorer or GraphScorer(dataset, output, executor=executor, cancel=cancel,
                                   **eval_kwargs)
    names = list(dict.fromkeys([metric, *compared_metrics(eval_kwargs.get("hit_k", 10))]))
    started = time.perf_counter()
    options = {"scorer": scorer, "registry": registry, "budget": budget, "metric": metric,
               "sampler": sampler}
    if method == "cross-validation":
        check_cv(len(query_ids), folds, repeats)
        found = search(doc, query_ids, space, seed=seed, on_trial=on_trial, **options)

        def choose(train: list[str], split: int, fold_seed: int) -> GraphDocument | None:
            best = search(doc, train, space, seed=fold_seed, split=split, **options).best
            return None if best is None else trial_graph(doc, best.variant, registry)

        test = cross_validate(doc, query_ids, choose, scorer, names, folds=folds,
                              repeats=repeats, seed=seed, on_fold=on_fold)
        result = TuneResult(output, metric, space.names(), found.sampler, None, found.base,
                            found.trials, found.best, method=method, test=test)
    else:
        split = split_questions(query_ids, held_out, seed, min_held_out)
        found = search(doc, split.tuning, space, seed=seed, on_trial=on_trial, **options)
        result = TuneResult(output, metric, space.names(), found.sampler, split, found.base,
                            found.trials, found.best, method=method)
        if found.best is not None:
            result.held_out = _held_out(doc, found.best, split.held_out, scorer, names,
                                        metric, registry)
            result.test = {**result.held_out, "method": method, "test": TEST_NAME}
    if result.best is None:
        result.verdict = "base is best"
    else:
        result.verdict = verdict(result.test["metrics"][metric], METRICS.direction(metric))
    result.seconds = time.perf_counter() - started
    return result


def _score(trial: Trial, scored: Scored, metric: str) -> None:
    if metric not in scored.known_metrics:
        known = ", ".join(sorted(scored.known_metrics)) or "none: the output was not produced"
        raise TuneError(f"--metric {metric}: not a metric of the tuned output (metrics: "
                        f"{known})")
    trial.metrics = scored.means()
    trial.score = scored.mean(metric)
    trial.failures = scored.failures


def best_trial(base: Trial, trials: list[Trial]) -> Trial | None:
    """The best-scoring trial above the base (ties: the earlier, i.e. the smaller change
    under the grid's order); None when no trial beats the base on the tuning part."""
    scored = [t for t in trials if t.score is not None and not t.error]
    top = max(scored, key=lambda t: (t.score, -t.number), default=None)
    if top is None or base.score is None or top.score <= base.score:
        return None
    return top


def _held_out(doc: GraphDocument, best: Trial, held: list[str], scorer: Scorer,
              names: list[str], metric: str, registry: NodeRegistry) -> dict[str, Any]:
    base_rows = scorer(doc, held, stage="test", split=-1).rows
    best_rows = scorer(trial_graph(doc, best.variant, registry), held, stage="test",
                       split=-1).rows
    pairs = [(base_rows[q] or {}, best_rows[q] or {}) for q in held]
    compared = compare_rows(pairs, names, metric, missing=0.0)
    compared["questions"] = len(held)
    compared["spread"] = spread([(a.get(metric) or 0.0, b.get(metric) or 0.0)
                                 for a, b in pairs])
    compared["failures"] = {"base": sum(r is None for r in base_rows.values()),
                            "best": sum(r is None for r in best_rows.values())}
    return compared


def verdict(stats: dict[str, Any], direction: Direction = "higher") -> str:
    """``better`` / ``worse`` only when the held-out difference is significant (a gain is a
    positive delta, or a negative one for a metric where lower is better)."""
    delta, p = stats.get("delta"), stats.get("p_value")
    if delta is None or p is None:
        return "not tested"
    if p >= SIGNIFICANCE or delta == 0:
        return "no significant difference"
    return "better" if (delta > 0) == (direction == "higher") else "worse"


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
    vector_stores = registry.type_ids(where=lambda t: t.store_role == "vector")
    for node in graph.nodes:
        if node.type not in vector_stores:
            continue
        fields = registry.get(node.type).Params.model_fields
        param = next((p for p in STORE_NAME_PARAMS if p in fields), None)
        if param is None:
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
