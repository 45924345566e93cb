"""Runs a graph once per question of an evaluation set and scores the answers.

Per question: the answer metrics of ``answer_metrics`` (facts, citations, refusal, length,
latency, tokens), the ranking metrics of every node output that is a ranked list, and the
judge's scores when a judge is configured (an ``eval.judge`` node in the graph, or a judge
model given to :func:`evaluate_answers`). The report is the one ``report.EvalReport``, on
an ``EvalsetSource``; :func:`run_variants_on_evalset` runs several variants on one cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from modrag_nodes.generation.api import is_refusal
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Answer, ScoredChunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.lineage import last_outputs
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.evaluation.answer_metrics import AnsweredQuestion
from modrag_studio.evaluation.evalset import EvalQuestion, EvalSet
from modrag_studio.evaluation.loop import EvalError, Question, QuestionRun, run_questions
from modrag_studio.evaluation.metric_registry import answer_scores
from modrag_studio.evaluation.metrics import evidence_ranking
from modrag_studio.evaluation.report import EvalReport, EvalsetSource, QuestionResult
from modrag_studio.evaluation.runner import graph_sha256, pick_inputs

Judge = Callable[[str, Answer], dict[str, Any]]  # (question, answer) -> judgement
Progress = Callable[[str, int, int, QuestionResult], None]  # (label, done, total, row)


def answer_output_name(doc: GraphDocument, requested: str | None = None,
                       registry: NodeRegistry | None = None) -> str:
    """The graph output holding the answer: ``requested``, else "answer", else the only one."""
    names = graph_interface(doc, registry or default_registry()).output_names
    if requested:
        if requested not in names:
            raise EvalError(f"--answer-output '{requested}': the graph has no output of that "
                            f"name (outputs: {', '.join(names) or 'none'})")
        return requested
    if "answer" in names:
        return "answer"
    if len(names) == 1:
        return names[0]
    raise EvalError("cannot tell which graph output is the answer; use --answer-output "
                    f"(outputs: {', '.join(names) or 'none'})")


def score_question(question: EvalQuestion, answer: Answer | None, result: RunResult | None,
                   seconds: float, judge: Judge | None = None) -> QuestionResult:
    """Every metric of one question from its run (``answer`` None when none was produced)."""
    row = QuestionResult(question.id, question.question, question.answerable)
    if result is not None:
        row.run_id = result.trace.run_id
        row.ranking = ranked_outputs(result, question)
    details = [v.details for v in result.trace.visits] if result is not None else None
    if answer is None:
        row.refused = True  # no answer at all is a (bad) refusal
        row.metrics = answer_scores(AnsweredQuestion(question, None, True, seconds, details))
        return row
    row.answer = answer.text
    row.refused = is_refusal(answer)
    # the headline is the model's own words; what the pipeline appended (quotes) is apart
    judgement = _graph_judgement(result) or (judge(question.question, answer) if judge else None)
    answered = AnsweredQuestion(question, answer, row.refused, seconds, details, judgement)
    row.missed_facts = answered.facts[1]
    row.citations, row.invalid_citations = answered.citations.cited, answered.citations.invalid
    row.metrics = answer_scores(answered)
    if judgement is not None:
        row.judge = judgement
    return row


def ranked_outputs(result: RunResult, question: EvalQuestion) -> dict[str, dict[str, float]]:
    """Ranking metrics at every node output that is a list of scored chunks."""
    if not question.expected_evidence or not question.answerable:
        return {}
    out: dict[str, dict[str, float]] = {}
    for node_id, outputs in last_outputs(result).items():
        for port, value in outputs.items():
            if (isinstance(value, list) and value
                    and all(isinstance(v, ScoredChunk) for v in value)):
                out[f"{node_id}.{port}"] = evidence_ranking(value, question.expected_evidence)
    return out


def _graph_judgement(result: RunResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    if result.registry is None:
        return None
    kinds = judge_types(result.registry)
    judges = [v.node_id for v in result.trace.visits if v.type_id in kinds]
    for node_id in reversed(judges):
        try:
            value = result.output_of(node_id, "judgement")
        except KeyError:
            continue
        if isinstance(value, dict):
            return value
    return None


def judge_types(registry: NodeRegistry) -> frozenset[str]:
    """The node types that judge an answer (``span_kind`` "evaluator"): their ``judgement``
    output is the evaluation's."""
    return registry.type_ids(where=lambda t: t.span_kind == "evaluator")


def has_judge_node(doc: GraphDocument, registry: NodeRegistry) -> bool:
    kinds = judge_types(registry)
    return any(n.type in kinds for n in doc.nodes)


def evaluate_answers(
    doc: GraphDocument,
    evalset: EvalSet,
    *,
    executor: Executor,
    answer_output: str | None = None,
    judge: Judge | None = None,
    limit: int | None = None,
    query_input: str | None = None,
    corpus_input: str | None = None,
    extra_inputs: dict[str, str] | None = None,
    cancel: CancelToken | None = None,
    on_progress: Callable[[int, int, QuestionResult], None] | None = None,
    batch_queries: bool = True,
    setup_hooks: Sequence[RunHook] = (),
    parallel: int = 1,
    on_run: Callable[[EvalQuestion, RunResult], None] | None = None,
) -> EvalReport:
    """Run ``doc`` for each question and score its answer (through the one evaluation loop,
    ``loop.run_questions``: batched query side, early stop, cancellation).

    Answers are kept in the disk cache (``memory_only_query_side`` off): generating one
    costs seconds, and a re-run after a change below the model reuses them.
    ``parallel`` > 1 asks that many questions at once (the embedded llama.cpp then decodes
    their answers in one batch, see ``docs/llm-backends.md``: faster, but a greedy answer
    may differ from the one-at-a-time run's, and from one such run to the next).
    ``on_run`` is given each question's finished run, in question order (the scorecard
    follows its evidence there).
    """
    registry = executor.registry
    output = answer_output_name(doc, answer_output, registry)
    query_name, _corpus = pick_inputs(doc, query_input, corpus_input, registry)
    questions = evalset.questions[: limit or None]
    report = EvalReport(graph_name=doc.metadata.name, graph_sha256=graph_sha256(doc),
                        source=EvalsetSource(evalset.path, evalset.sha256), answer_output=output,
                        judge_configured=judge is not None or has_judge_node(doc, registry))

    def score(index: int, run: QuestionRun) -> bool:
        question = questions[index]
        answer = run.result.shared_outputs.get(output)
        if answer is not None and not isinstance(answer, Answer):
            answer = Answer(text=str(answer))
        row = score_question(question, answer, run.result, run.seconds, judge)
        if on_run is not None:
            on_run(question, run.result)
        if answer is None:
            row.error = run.result.trace.failure_summary(f"output '{output}' not produced")
        report.add(row, [{"query_id": row.id, "output": output, "reason": row.error}]
                   if row.error else [])
        if on_progress is not None:
            on_progress(index + 1, len(questions), row)
        return answer is not None

    started = time.perf_counter()
    run_questions(doc, [Question(q.id, q.question) for q in questions], executor=executor,
                  query_name=query_name, on_run=score, base_inputs=extra_inputs,
                  cancel=cancel, batch_queries=batch_queries, memory_only_query_side=False,
                  setup_hooks=setup_hooks, concurrency=parallel)
    report.seconds = time.perf_counter() - started
    return report.finish()


def run_variants_on_evalset(
    sides: Sequence[tuple[str, GraphDocument]], evalset: EvalSet, *, executor: Executor,
    answer_output: str | None = None, judge: Judge | None = None, limit: int | None = None,
    query_input: str | None = None, corpus_input: str | None = None,
    extra_inputs: dict[str, str] | None = None, cancel: CancelToken | None = None,
    on_progress: Progress | None = None, parallel: int = 1,
) -> list[EvalReport]:
    """Run each (label, graph) on the set with one executor, so B re-runs only what changed."""
    reports = []
    for label, doc in sides:
        executor.check(doc, {})

        def progress(done: int, total: int, row: QuestionResult, label: str = label) -> None:
            if on_progress is not None:
                on_progress(label, done, total, row)

        reports.append(evaluate_answers(
            doc, evalset, executor=executor, answer_output=answer_output, judge=judge,
            limit=limit, query_input=query_input, corpus_input=corpus_input,
            extra_inputs=extra_inputs, cancel=cancel, on_progress=progress, parallel=parallel))
    return reports
