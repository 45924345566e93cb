"""The one evaluation loop: run a graph once per question and hand each run to a scorer.

Both evaluations go through :func:`run_questions`: ranking evaluation on a BEIR dataset
(``runner.evaluate_graph``, scoring ranked outputs against qrels) and answer evaluation on an
evaluation set (``answer_eval.evaluate_answers``, scoring answers, citations and refusals).
What the loop gives both:

- the query side embedded (and vector-searched) for every question in batches before the
  per-question runs (``query_batch``);
- an early stop when the first question fails at a node that does not depend on the
  question (a missing corpus, a locked store, a missing model): every question would fail
  alike, so the evaluation raises at once, naming the node;
- memory-only results for the query side when asked (per-question results stay out of the
  disk cache);
- the first question's results that do not depend on the question (indexes, stores, models)
  held for the others (``query_batch.held_pins``): later questions neither visit the
  indexing nodes nor re-check their files and stores;
- the garbage collector kept off what the questions build and keep (indexes, cached
  per-question results) until the evaluation ends;
- cancellation between two questions;
- several questions at once when asked (``concurrency``): after the first question, the
  others run on that many threads, and the resources are told (``Resources.concurrent``)
  so that a chat model able to serve requests together (the embedded llama.cpp's slots)
  decodes their answers in one batch; results still reach the scorer in question order.
"""

from __future__ import annotations

import contextvars
import gc
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.pins import Pin
from modrag_studio.evaluation.query_batch import (
    batched_query_embeddings,
    held_pins,
    query_side_nodes,
)

COLLECT_EVERY = 1000  # questions between two full garbage collections


class EvalError(ModragError):
    """The graph cannot be evaluated as asked (the message names the output or input)."""


@dataclass(frozen=True)
class Question:
    """One question of any source: its id and the text given to the graph's query input."""

    id: str
    text: str


@dataclass(frozen=True)
class QuestionRun:
    """One question's run: the result and the seconds it took."""

    question: Question
    result: RunResult
    seconds: float


#: Receives each question's run, in question order; returns False when the outputs it
#: scores were not produced (the first question's failure then may stop the evaluation).
OnRun = Callable[[int, QuestionRun], bool]


def run_questions(
    doc: GraphDocument,
    questions: Sequence[Question],
    *,
    executor: Executor,
    query_name: str,
    on_run: OnRun,
    base_inputs: dict[str, Any] | None = None,
    cancel: CancelToken | None = None,
    batch_queries: bool = True,
    memory_only_query_side: bool = True,
    setup_hooks: Sequence[RunHook] = (),
    hold_shared: bool = True,
    concurrency: int = 1,
) -> int:
    """Run ``doc`` for each question (its text as the input ``query_name``, with
    ``base_inputs``) and call ``on_run(index, run)``; returns how many questions ran.

    ``memory_only_query_side``: keep the results of the nodes that depend on the question
    in memory only (a ranking evaluation writes nothing per query to the disk cache); an
    answer evaluation keeps them on disk so that answers already generated are reused.
    ``setup_hooks`` watch the runs before the second question (where indexes are built or
    loaded), e.g. to tell what takes long. ``hold_shared``: later questions take the first
    one's question-independent results as held pins (their runs then lack the visits of the
    indexing nodes: turn it off for a caller that reads whole runs, such as attribution).
    ``concurrency`` > 1: after the first question, that many run at once (``on_run`` still
    sees them in order; a cancel stops those not yet started).
    """
    base = dict(base_inputs or {})
    query_side = query_side_nodes(doc, query_name, executor.registry)
    memory_only = query_side if memory_only_query_side else set()
    frozen = False
    ran = 0
    held: dict[str, Pin] = {}
    batching = ExitStack()
    try:
        if concurrency > 1:
            batching.enter_context(executor.resources.concurrent(concurrency))
        if batch_queries and questions:
            batching.enter_context(batched_query_embeddings(
                doc, executor, texts=[q.text for q in questions], query_name=query_name,
                base_inputs=base, hooks=setup_hooks, memory_only=memory_only))

        def ask(question: Question) -> QuestionRun | None:
            if cancel is not None and cancel.cancelled:
                return None
            started = time.perf_counter()
            result = executor.run(doc, {**base, query_name: question.text}, cancel=cancel,
                                  memory_only=memory_only, pins=held, checked=frozen,
                                  hooks=() if frozen else setup_hooks)
            return QuestionRun(question, result, time.perf_counter() - started)

        for index, run in enumerate(_runs_in_order(ask, questions, concurrency)):
            if run is None:
                break
            produced = on_run(index, run)
            ran += 1
            if not frozen and not produced:
                stop_if_every_question_would_fail(query_side, run.result.trace.failures())
            if not frozen and hold_shared:
                held = held_pins(doc, run.result, query_side)
            # What the questions so far built and keep (indexes, the memory cache's
            # per-question results) is moved out of the collector's reach: a full collection
            # walked all of it every few dozen questions (pauses of 0.2-0.3 s each). Every
            # COLLECT_EVERY questions the cyclic garbage of the runs is collected once.
            if frozen and ran % COLLECT_EVERY == 0:
                gc.unfreeze()
                gc.collect()
            gc.freeze()
            frozen = True
    finally:
        batching.close()
        if frozen:
            gc.unfreeze()
    return ran


def _runs_in_order(ask: Callable[[Question], QuestionRun | None], questions: Sequence[Question],
                   concurrency: int) -> Iterator[QuestionRun | None]:
    """Each question's run in question order: the first alone (its results that do not
    depend on the question become the others' held pins when the caller takes it), the rest
    ``concurrency`` at a time. Each thread runs in a copy of the caller's context (the run's
    resources and memos are found through it)."""
    if not questions:
        return
    yield ask(questions[0])
    rest = questions[1:]
    if concurrency <= 1:
        for question in rest:
            yield ask(question)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="eval-question") as pool:
        futures: list[Future[QuestionRun | None]] = [
            pool.submit(contextvars.copy_context().run, ask, q) for q in rest]
        try:
            for future in futures:
                yield future.result()
        finally:  # the caller stopped early (a cancel, an error): start no more questions
            for future in futures:
                future.cancel()


def stop_if_every_question_would_fail(query_side: set[str], failed: dict[str, str]) -> None:
    """Raise when the first question failed at a node that does not depend on the question
    (``failed``: node id -> message): every other question would fail alike."""
    for node_id, message in failed.items():
        if node_id not in query_side:
            raise EvalError(f"the first query failed at node '{node_id}', which does not "
                            f"depend on the query, so every query would fail alike: {message}")
