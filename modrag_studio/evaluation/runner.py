"""Runs a graph once per query of a BEIR dataset and scores one or more ranked outputs
(an ``EvalReport`` of ``report.py`` with a ``DatasetSource``)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import ScoredChunk
from modrag_studio.engine.core.document import GraphDocument, dumps
from modrag_studio.engine.core.graph_io import graph_input_names
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.loop import EvalError, Question, QuestionRun, run_questions
from modrag_studio.evaluation.metrics import doc_ranking, score_ranking
from modrag_studio.evaluation.query_batch import query_side_nodes
from modrag_studio.evaluation.report import DatasetSource, EvalReport, QuestionResult


def graph_sha256(doc: GraphDocument) -> str:
    """Hash of the runnable part of the graph (layout and stored variants excluded)."""
    runnable = doc.without_layout().model_copy(update={"variants": None})
    return hashlib.sha256(dumps(runnable).encode("utf-8")).hexdigest()


def parse_output(spec: str, doc: GraphDocument) -> tuple[str, str]:
    """``node_id.port`` as (node id, port); EvalError naming ``spec`` when no such node."""
    node_id, sep, port = spec.partition(".")
    if not sep or node_id not in doc.node_ids():
        raise EvalError(f"--output '{spec}': expected node_id.port of a node in the graph")
    return node_id, port


def pick_inputs(doc: GraphDocument, query_input: str | None, corpus_input: str | None,
                registry: NodeRegistry | None = None) -> tuple[str, str | None]:
    """The graph inputs taking the query and the corpus folder (None: no corpus input);
    named ones are checked, otherwise 'corpus'/'corpus_path' and 'query'/'question' or the
    only other input."""
    names = graph_input_names(doc, registry or default_registry())
    corpus = corpus_input or next((n for n in names if n in ("corpus", "corpus_path")), None)
    if corpus is not None and corpus not in names:
        raise EvalError(f"the graph has no input '{corpus}' (inputs: {', '.join(names)})")
    candidates = [n for n in names if n != corpus]
    query = query_input or next((n for n in ("query", "question") if n in candidates),
                                candidates[0] if len(candidates) == 1 else None)
    if query is None or query not in names:
        raise EvalError("cannot tell which graph input takes the query; use --query-input "
                        f"(inputs: {', '.join(names) or 'none'})")
    return query, corpus


def start_report(doc: GraphDocument, dataset: BeirDataset, outputs: list[str], hit_k: int,
                 limit: int | None, query_input: str | None, corpus_input: str | None,
                 ndcg_gain: str = "linear", registry: NodeRegistry | None = None,
                 ) -> tuple[list[tuple[str, str]], str, str | None, list[str], EvalReport]:
    """What an evaluation needs before its first query: the outputs as (node, port), the
    query and corpus inputs, the query ids and the empty report."""
    targets = [parse_output(spec, doc) for spec in outputs]
    if not targets:
        raise EvalError("give at least one --output node_id.port to score")
    query_name, corpus_name = pick_inputs(doc, query_input, corpus_input, registry)
    query_ids = dataset.evaluated_query_ids()[: limit or None]
    if not query_ids:
        raise EvalError(f"no query of {dataset.root} has relevant documents in split "
                        f"'{dataset.split}'")
    source = DatasetSource(str(dataset.root), dataset.split, dataset.qrels_sha256,
                           len(query_ids))
    report = EvalReport(graph_name=doc.metadata.name, graph_sha256=graph_sha256(doc),
                        source=source, hit_k=hit_k, ndcg_gain=ndcg_gain,
                        outputs={spec: {} for spec in outputs},
                        missing_docs=dataset.missing_relevant_docs(query_ids))
    return targets, query_name, corpus_name, query_ids, report


def evaluate_graph(
    doc: GraphDocument,
    dataset: BeirDataset,
    outputs: list[str],
    *,
    executor: Executor,
    hit_k: int = 10,
    ndcg_gain: str = "linear",
    limit: int | None = None,
    query_input: str | None = None,
    corpus_input: str | None = None,
    extra_inputs: dict[str, str] | None = None,
    cancel: CancelToken | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[str, Any], None] | None = None,
    batch_queries: bool = True,
    setup_hooks: Sequence[RunHook] = (),
) -> EvalReport:
    """Run ``doc`` per query; score each ``node_id.port`` output (a list of ScoredChunk).

    ``on_result(query_id, run_result)`` sees each query's run (e.g. evidence attribution;
    with it, every run visits the indexing nodes too, see ``run_questions``' ``hold_shared``);
    ``batch_queries``: embed all query texts in batches first (see ``query_batch``).
    """
    _targets, query_name, corpus_name, query_ids, report = start_report(
        doc, dataset, outputs, hit_k, limit, query_input, corpus_input, ndcg_gain,
        executor.registry)
    runner = QueryRunner(doc, dataset, executor, outputs, query_name=query_name,
                         corpus_name=corpus_name, extra_inputs=dict(extra_inputs or {}),
                         hit_k=hit_k, ndcg_gain=ndcg_gain, cancel=cancel, on_result=on_result)

    def score(index: int, run: QuestionRun) -> bool:
        outcome = runner.score(run.question.id, run.result)
        outcome.add_to(report)
        if on_progress is not None:
            on_progress(index + 1, len(query_ids))
        return not outcome.failures

    started = time.perf_counter()
    questions = [Question(q, dataset.queries[q]) for q in query_ids]
    run_questions(doc, questions, executor=executor, query_name=query_name, on_run=score,
                  base_inputs=runner.base_inputs(), cancel=cancel,
                  batch_queries=batch_queries, setup_hooks=setup_hooks,
                  hold_shared=on_result is None)  # attribution reads whole runs
    report.seconds = time.perf_counter() - started
    return report.finish()


@dataclass
class QueryOutcome:
    """One query's row (its scores per output spec), and the outputs it did not produce."""

    row: QuestionResult
    failures: list[dict[str, str]] = field(default_factory=list)
    #: The nodes that failed in this query's run, with their error messages.
    failed_nodes: dict[str, str] = field(default_factory=dict)

    def add_to(self, report: EvalReport) -> None:
        """Append this query's row and its failures to ``report``."""
        report.add(self.row, self.failures)


@dataclass
class QueryRunner:
    """Runs the graph for one query of a dataset and scores each ranked output.

    Holds what every query shares (graph, executor, dataset, outputs, input names and
    options); the local and the Ray evaluations both score through ``run``.
    """

    doc: GraphDocument
    dataset: BeirDataset
    executor: Executor
    outputs: list[str]
    query_name: str
    corpus_name: str | None = None
    extra_inputs: dict[str, str] = field(default_factory=dict)
    hit_k: int = 10
    ndcg_gain: str = "linear"
    cancel: CancelToken | None = None
    #: Sees each query's run result (e.g. evidence attribution).
    on_result: Callable[[str, Any], None] | None = None
    targets: list[tuple[str, str]] = field(init=False)
    #: The nodes that depend on the query: their results stay out of the disk cache.
    query_side: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.targets = [parse_output(spec, self.doc) for spec in self.outputs]
        self.query_side = query_side_nodes(self.doc, self.query_name, self.executor.registry)

    def base_inputs(self) -> dict[str, str]:
        """The graph inputs every query shares: the extra inputs and the corpus."""
        inputs = dict(self.extra_inputs)
        if self.corpus_name is not None:
            inputs.setdefault(self.corpus_name, str(self.dataset.corpus_path.resolve()))
        return inputs

    def inputs_for(self, text: str) -> dict[str, str]:
        """The graph inputs of one query: the shared ones and the query text."""
        return {**self.base_inputs(), self.query_name: text}

    def run(self, query_id: str, text: str | None = None) -> QueryOutcome:
        """Run the graph for ``query_id`` (its dataset text unless ``text`` is given) and
        score each output against the query's qrels."""
        query_text = self.dataset.queries[query_id] if text is None else text
        result = self.executor.run(self.doc, self.inputs_for(query_text), cancel=self.cancel,
                                   memory_only=self.query_side)
        return self.score(query_id, result)

    def score(self, query_id: str, result: RunResult) -> QueryOutcome:
        """Score each output of one query's run against the query's qrels."""
        if self.on_result is not None:
            self.on_result(query_id, result)
        row = QuestionResult(query_id, self.dataset.queries.get(query_id, ""),
                             run_id=result.trace.run_id)
        outcome = QueryOutcome(row, failed_nodes=result.trace.failures())
        for spec, (node_id, port) in zip(self.outputs, self.targets, strict=True):
            try:
                ranked = result.output_of(node_id, port)
            except KeyError:
                reason = result.trace.failure_summary("output not produced")
                outcome.failures.append({"query_id": query_id, "output": spec,
                                         "reason": reason})
                ranked = []
            if ranked and not isinstance(ranked[0], ScoredChunk):
                raise EvalError(f"--output '{spec}' is not a list of scored chunks")
            metrics = score_ranking(query_id, doc_ranking(ranked), self.dataset.qrels[query_id],
                                    self.hit_k, self.ndcg_gain)
            row.ranking[spec], row.top_docs[spec] = metrics.values, metrics.top_docs
            row.relevant = metrics.relevant
        return outcome
