"""A folder scored in one action: questions generated from it and verified, the graph run on
them, the evidence of each followed through the run, and one change tested by the tuner.

Steps (each reports through ``on_status`` and stops at the cancel token):

1. fit the graph to the folder: params written for the graph's default corpus (``run_notes``)
   are told as warnings, and a store or graph name among them gets a name of its own for this
   folder, so scoring never rewrites (or refuses to delete) the default corpus's records;
2. generate the evaluation set (``generation.generate_evalset``) and save it, or read one;
3. run the graph on it (``answer_eval.evaluate_answers``), each run's evidence followed
   (``funnel.EvalAttribution``, the question's expected evidence);
4. tune: a small search of the query-side settings upstream of the evidence the prompt
   reads, the choice cross-validated (``tuning.tune``); the change is suggested only when
   the test calls it significantly better.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.paths import graph_base_dir
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.run_notes import corpus_notes
from modrag_studio.engine.trust.reach import path_like_inputs
from modrag_studio.evaluation.answer_eval import answer_output_name, evaluate_answers
from modrag_studio.evaluation.compare import ranked_outputs
from modrag_studio.evaluation.evalset import EvalQuestion, EvalSet, load_evalset, save_evalset
from modrag_studio.evaluation.funnel import EvalAttribution
from modrag_studio.evaluation.generation import GenerationConfig, generate_evalset
from modrag_studio.evaluation.metric_registry import PRIMARY
from modrag_studio.evaluation.runner import pick_inputs
from modrag_studio.evaluation.scorecard.figures import (
    EvidenceTrail,
    Scorecard,
    Suggestion,
    scorecard_figures,
)

#: Params naming a store's or a graph's own records: renamed per folder, never shared.
NAME_PARAMS = ("collection", "table", "name")
TUNE_METRIC = PRIMARY
TUNE_BUDGET = 9  # every combination of two settings of three values each
MAX_DIMENSIONS = 2
CUT_PARAMS = ("top_k", "top_n")  # how many passages go on: tried first

Status = Callable[[str], None]
Progress = Callable[[str, int, int], None]  # (stage, done, total)


class ScorecardError(ModragError):
    """The folder cannot be scored as asked (the message names the cause)."""


@dataclass
class ScorecardRequest:
    """What to score: the graph, its inputs (the corpus among them), the questions (a set
    file, or ``generation`` to write one to ``questions_path``) and the tuner's seed."""

    doc: GraphDocument
    inputs: dict[str, Any]
    questions_path: Path
    generation: GenerationConfig | None = None  # None: read ``questions_path``
    seed: int = 0
    tune: bool = True


def fit_to_corpus(doc: GraphDocument, registry: NodeRegistry,
                  inputs: Mapping[str, Any]) -> tuple[GraphDocument, list[str]]:
    """``doc`` with its store and graph names made this corpus's own, and the warnings of the
    params written for another corpus (each naming the node and the param)."""
    notes = corpus_notes(doc, registry, dict(inputs), graph_base_dir(doc))
    if not notes:
        return doc, []
    fitted = doc.model_copy(deep=True)
    paths = path_like_inputs(doc, registry)  # the folder, not the question, names the records
    corpus = "|".join(f"{k}={v}" for k, v in sorted(inputs.items()) if k in paths)
    suffix = hashlib.sha256(corpus.encode()).hexdigest()[:8]
    warnings = []
    for note in notes:
        node, param = note.node_id or "", note.field or ""
        if param in NAME_PARAMS:
            value = f"{fitted.node(node).params[param]}_{suffix}"
            fitted.node(node).params[param] = value
            warnings.append(f"{node}.{param}: written for the graph's default corpus; this "
                            f"folder's records are kept apart as '{value}'")
        else:
            warnings.append(f"{node}.{param}: {note.message}")
    return fitted, warnings


def query_side(doc: GraphDocument, registry: NodeRegistry, query_input: str,
               funnel: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The funnel's nodes that run once per question (downstream of the query input; a
    subgraph's inner node by its subgraph): the corpus-side nodes run for the first question
    only, later ones reuse their results, so their counts would say nothing."""
    query_node = _input_node(doc, registry, query_input)
    side = Topology.of(doc).downstream(query_node)
    return {node: counts for node, counts in funnel.items()
            if node.partition("/")[0] in side}


def tuned_output(doc: GraphDocument, registry: NodeRegistry, answer_node: str) -> str | None:
    """The ranked output closest to the answer (last in run order among those upstream of
    it): the evidence the prompt is built from."""
    topology = Topology.of(doc)
    upstream = topology.upstream(answer_node)
    order = {node_id: n for n, node_id in enumerate(topology.order()[0])}
    specs = [s for s in ranked_outputs(doc, registry) if s.partition(".")[0] in upstream]
    return max(specs, key=lambda s: order.get(s.partition(".")[0], -1), default=None)


def _input_node(doc: GraphDocument, registry: NodeRegistry, name: str) -> str:
    """The node of the graph input ``name``."""
    port = graph_interface(doc, registry).input_named(name)
    if port is None:
        raise ModragError(f"the graph has no input named '{name}'")
    return port.node_id


def query_side_space(doc: GraphDocument, registry: NodeRegistry, output: str,
                     query_input: str) -> list[str]:
    """A small space (``--space`` strings): the numbers, choices and switches of the nodes
    between the query and ``output``, which change no index; how many passages go on (the
    nearest the output first), then the rest."""
    from modrag_studio.evaluation.tuning.suggest import suggest

    topology = Topology.of(doc)
    node_id = output.partition(".")[0]
    query_node = _input_node(doc, registry, query_input)
    side = (topology.upstream(node_id) | {node_id}) & topology.downstream(query_node)
    nodes = [n.id for n in doc.nodes if n.id in side]
    found = [s for s in suggest(doc, nodes, registry)
             if "." in s.name and not s.name.endswith(".bypass")
             and len(s.values.split(",")) > 1]
    rank = {node: n for n, node in enumerate(nodes)}
    # cut sizes first, the nodes nearest the output first among them
    found.sort(key=lambda s: (s.name.rpartition(".")[2] not in CUT_PARAMS,
                              -rank[s.name.partition(".")[0]]))
    return [s.space() for s in found[:MAX_DIMENSIONS]]


def suggest_change(doc: GraphDocument, evalset: EvalSet, inputs: Mapping[str, Any], *,
                   executor: Executor, answer_node: str, query_input: str, seed: int = 0,
                   cancel: CancelToken | None = None,
                   on_status: Status | None = None) -> Suggestion:
    """The tuner on a small query-side space, its choice cross-validated; the change is
    suggested only when that test finds it significantly better."""
    from modrag_studio.evaluation.tuning import (
        QuestionsError,
        dataset_from_evalset,
        parse_space,
        tune,
        winner_variant,
    )
    from modrag_studio.evaluation.tuning.crossval import CrossValidationError, check_cv
    from modrag_studio.evaluation.tuning.power import DEFAULT_FOLDS, DEFAULT_REPEATS
    from modrag_studio.evaluation.tuning.scoring import ranking_part

    registry = executor.registry
    output = tuned_output(doc, registry, answer_node)
    if output is None:
        return _not_tested("the graph has no ranked list of passages before its answer")
    specs = query_side_space(doc, registry, output, query_input)
    if not specs:
        return _not_tested(f"no setting between the question and {output} to try")
    _query, corpus_name = pick_inputs(doc, query_input, None, registry)
    try:
        dataset = dataset_from_evalset(evalset, str(inputs.get(corpus_name or "", "") or "."))
        check_cv(len(dataset.evaluated_query_ids()), DEFAULT_FOLDS, DEFAULT_REPEATS)
    except (QuestionsError, CrossValidationError) as exc:
        return _not_tested(f"too few questions name their documents to test a change ({exc})")
    doc = ranking_part(doc, output)
    space = parse_space(specs, doc, registry, _json_or_text)
    if on_status is not None:
        on_status(f"tuning {output} by {TUNE_METRIC} over {', '.join(space.names())} "
                  f"({TUNE_BUDGET} trials at most), cross-validated")
    extra = {k: v for k, v in inputs.items() if k != query_input}
    result = tune(doc, dataset, output, space, executor=executor, budget=TUNE_BUDGET,
                  metric=TUNE_METRIC, seed=seed, method="cross-validation", cancel=cancel,
                  query_input=query_input, extra_inputs=extra)
    if result.best is None:
        return Suggestion("base is best", "No change found significant: no setting tried "
                          f"({', '.join(space.names())}) ranked the expected documents in "
                          f"{output} better than the graph as it is.")
    stats = result.test["metrics"][TUNE_METRIC]
    best = result.best.variant
    settings = {**{f"{node}.{k}": v for node, changes in best.params.items()
                   for k, v in changes.items()},
                **{node: t for node, t in best.swap.items()},
                **{f"{node}.bypass": v for node, v in best.bypass.items()}}
    change = ", ".join(f"{k} = {v}" for k, v in settings.items())
    lo, hi = stats["ci95"]
    figures = (f"{TUNE_METRIC} of {output} {stats['a']:.3f} -> {stats['b']:.3f} (delta "
               f"{stats['delta']:+.3f}, CI95 [{lo:+.3f}, {hi:+.3f}], p = "
               f"{stats['p_value']:.3f}, cross-validated on {result.test['questions']} "
               "questions)")
    if not result.better:
        word = "significantly worse" if result.verdict == "worse" else "not significant"
        return Suggestion("worse" if result.verdict == "worse" else "not significant",
                          f"No change found significant: the best setting, {change}, was "
                          f"{word} on questions its search never saw: {figures}.", settings)
    variant = winner_variant(doc, result, "scorecard", registry)
    return Suggestion("significant", f"Change {change}: {figures}.", settings,
                      variant.model_dump(mode="json", exclude_defaults=True))


def _not_tested(reason: str) -> Suggestion:
    return Suggestion("not tested", f"No change found significant: {reason}.")


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def questions_of(request: ScorecardRequest, executor: Executor, cancel: CancelToken,
                 on_status: Status, on_progress: Progress | None) -> tuple[EvalSet, dict[str, Any]]:
    """The evaluation set: generated (and saved to ``questions_path``) or read from it."""
    if request.generation is None:
        evalset = load_evalset(request.questions_path)
        return evalset, {"source": "file", "questions": len(evalset)}
    if on_progress is not None:
        on_progress("questions", 0, request.generation.n)
    result = generate_evalset(
        request.doc, request.inputs, request.generation, executor=executor, cancel=cancel,
        on_progress=(None if on_progress is None else
                     lambda kept, wanted, _note: on_progress("questions", kept, wanted)),
        on_status=on_status)
    if not result.questions:
        raise ScorecardError(f"no generated question passed the checks\n{result.report.text()}")
    save_evalset(request.questions_path, result.questions)
    report = result.report
    return load_evalset(request.questions_path), {
        "source": "generated", "questions": len(result.questions),
        "requested": report.requested, "model": report.model, "calls": report.calls,
        "notes": list(report.notes)}


def build_scorecard(request: ScorecardRequest, *, executor: Executor,
                    cancel: CancelToken | None = None, on_status: Status | None = None,
                    on_progress: Progress | None = None) -> Scorecard:
    """Score the folder (see the module docstring). Raises ScorecardError / ModragError
    naming the cause, RunCancelled when cancelled."""
    cancel = cancel or CancelToken()
    status = on_status or (lambda _text: None)
    registry = executor.registry
    query_input, corpus_name = pick_inputs(request.doc, None, None, registry)
    doc, warnings = fit_to_corpus(request.doc, registry, request.inputs)
    for warning in warnings:
        status(f"warning: {warning}")
    request = ScorecardRequest(doc, dict(request.inputs), request.questions_path,
                               request.generation, request.seed, request.tune)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    evalset, generation = questions_of(request, executor, cancel, status, on_progress)
    seconds["questions"] = time.perf_counter() - started
    output = answer_output_name(doc, None, registry)
    answer_port = graph_interface(doc, registry).output_named(output)
    if answer_port is None:
        raise ModragError(f"the graph has no output named '{output}'")
    answer_node = answer_port.node_id
    funnel = EvalAttribution(doc, {}, [answer_node])
    trails: dict[str, EvidenceTrail] = {}

    def follow(question: EvalQuestion, result: RunResult) -> None:
        if question.answerable and question.expected_evidence:
            found = funnel.add_expected(question.id, result, question.expected_evidence)
            trails[question.id] = EvidenceTrail(found.first_loss, found.verdict)

    status(f"running {doc.metadata.name or 'the graph'} on {len(evalset)} questions")
    if on_progress is not None:  # the stage starts now (its first answer builds the indexes)
        on_progress("answers", 0, len(evalset))
    started = time.perf_counter()
    extra = {k: v for k, v in request.inputs.items() if k != query_input}
    report = evaluate_answers(
        doc, evalset, executor=executor, answer_output=output, query_input=query_input,
        extra_inputs=extra, cancel=cancel, on_run=follow,
        on_progress=(None if on_progress is None else
                     lambda done, total, _row: on_progress("answers", done, total)))
    cancel.raise_if_cancelled()
    seconds["answers"] = time.perf_counter() - started
    started = time.perf_counter()
    if request.tune:
        suggestion = suggest_change(doc, evalset, request.inputs, executor=executor,
                                    answer_node=answer_node, query_input=query_input,
                                    seed=request.seed, cancel=cancel, on_status=status)
    else:
        suggestion = _not_tested("the tuner was not asked to run")
    seconds["tuning"] = time.perf_counter() - started
    corpus_port = graph_interface(doc, registry).input_named(corpus_name)
    corpus = str(request.inputs.get(corpus_name or "", "") or (
        corpus_port.default or "" if corpus_port is not None else ""))
    return scorecard_figures(report.results, trails,
                             query_side(doc, registry, query_input, funnel.summary()),
                             graph=doc.metadata.name or "graph", corpus=corpus,
                             evalset=str(request.questions_path), suggestion=suggestion,
                             generation=generation, warnings=warnings, seconds=seconds)
