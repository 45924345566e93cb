"""The one evaluation report: what a graph scored, question by question, on a question source.

Every evaluation produces an :class:`EvalReport`: a BEIR dataset run (``runner.evaluate_graph``,
also on Ray, in grids and in the tuner) and an evaluation-set run
(``answer_eval.evaluate_answers``, the studio's Run set). Its rows are one
:class:`QuestionResult` per question: the ranking metrics of each scored output, the answer
metrics when an answer output was scored, the judge's scores and the errors.

Its JSON (:meth:`EvalReport.to_dict`, read back by :func:`report_from_dict`) is a contract
(report files, ``modrag compare`` inputs, the ``--min`` gates) whose shape follows the source.
A dataset report::

    {"graph": {"name", "sha256"}, "dataset": {"path", "split", "qrels_sha256", "queries"},
     "hit_k", "ndcg_gain", "seconds", "nodes": {"bm25.results": {"ndcg@10", ...}, ...},
     "failures": [{"query_id", "output", "reason"}], "warnings": [...], "missing_docs": {...},
     "per_query": {"bm25.results": [{"query_id", "ndcg@10", ..., "top_docs", "relevant"}]}}

An evaluation-set report::

    {"graph": {...}, "evalset": {"path", "sha256", "questions"}, "answer_output", "seconds",
     "answers": {"fact_recall", ..., "mean_latency_s", ...}, "nodes": {...},
     "failures": [{"id", "reason"}], "judge_unparsed": [...],
     "per_question": [{"id", "question", "answerable", "answer", "metrics", "ranking", ...}]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.evaluation.answer_metrics import mean
from modrag_studio.evaluation.metric_registry import METRICS, MetricRegistry

#: The fields of an evaluation-set row, in the order of its JSON (the judge's, when there is
#: one, comes last).
ROW_FIELDS = ("id", "question", "answerable", "answer", "refused", "metrics", "missed_facts",
              "citations", "invalid_citations", "ranking", "error", "run_id")
_NOT_METRICS = ("query_id", "top_docs", "relevant")


@dataclass(frozen=True)
class DatasetSource:
    """A BEIR dataset's qrels split; ``queries``: how many of its queries are evaluated."""

    path: str
    split: str
    qrels_sha256: str
    queries: int

    def identity(self) -> dict[str, Any]:
        """What makes two reports' scores comparable (known without the dataset at hand)."""
        return {"path": self.path, "split": self.split, "qrels_sha256": self.qrels_sha256}


@dataclass(frozen=True)
class EvalsetSource:
    """An evaluation set (JSON Lines) and the hash of its content."""

    path: str
    sha256: str

    def identity(self) -> dict[str, Any]:
        """What makes two reports' scores comparable: the set's content."""
        return {"path": self.path, "sha256": self.sha256}


QuestionSource = DatasetSource | EvalsetSource


@dataclass
class QuestionResult:
    """What one question's run gave and how it scored."""

    id: str
    question: str = ""
    answerable: bool = True
    answer: str = ""
    refused: bool = False
    metrics: dict[str, float | None] = field(default_factory=dict)
    missed_facts: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    invalid_citations: list[str] = field(default_factory=list)
    #: Ranking metrics per scored output (``node.port``).
    ranking: dict[str, dict[str, float]] = field(default_factory=dict)
    judge: dict[str, Any] | None = None
    error: str = ""
    run_id: str = ""
    #: Scored against qrels: the top documents of each output, and the relevant documents.
    top_docs: dict[str, list[str]] = field(default_factory=dict)
    relevant: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The row of an evaluation-set report."""
        data = {name: getattr(self, name) for name in ROW_FIELDS}
        if self.judge is not None:
            data["judge"] = self.judge
        return data

    def ranking_row(self, spec: str) -> dict[str, Any]:
        """The row of a dataset report for the output ``spec``."""
        return {"query_id": self.id, **self.ranking[spec],
                "top_docs": self.top_docs.get(spec, []), "relevant": self.relevant}


@dataclass
class EvalReport:
    """One evaluation of one graph on one question source (see the module docstring)."""

    graph_name: str
    graph_sha256: str
    source: QuestionSource
    hit_k: int = 10
    ndcg_gain: str = "linear"
    #: The graph output holding the answer (answers scored), else None.
    answer_output: str | None = None
    judge_configured: bool = False
    #: The mean ranking metrics of each scored output (filled by :meth:`finish`).
    outputs: dict[str, dict[str, float]] = field(default_factory=dict)
    results: list[QuestionResult] = field(default_factory=list)
    #: ``{"query_id", "output", "reason"}``: a question whose run did not produce an output.
    failures: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    #: question id -> relevant documents its qrels name that the corpus lacks
    missing_docs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def on_evalset(self) -> bool:
        return isinstance(self.source, EvalsetSource)

    @property
    def queries(self) -> int:
        """The questions evaluated (a dataset's: asked for, even when cancelled early)."""
        if isinstance(self.source, DatasetSource):
            return self.source.queries
        return len(self.results)

    @property
    def ranked_outputs(self) -> list[str]:
        """The scored ranked outputs: those asked for, then any other a row has."""
        return list(dict.fromkeys([*self.outputs, *(s for r in self.results for s in r.ranking)]))

    @property
    def per_query(self) -> dict[str, list[dict[str, Any]]]:
        """Per output, the rows of the questions it was scored on (question order)."""
        return {spec: [r.ranking_row(spec) for r in self.results if spec in r.ranking]
                for spec in self.ranked_outputs}

    @property
    def warnings(self) -> list[str]:
        """What makes the scores less than they seem (printed on stderr by ``modrag eval``)."""
        if not self.missing_docs:
            return []
        docs = sorted({d for ids in self.missing_docs.values() for d in ids})
        shown = ", ".join(docs[:10]) + (f" and {len(docs) - 10} more" if len(docs) > 10 else "")
        return [f"the qrels name {len(docs)} relevant document(s) missing from the corpus "
                f"({shown}), for {len(self.missing_docs)} of the {self.queries} queries: "
                "they can never be retrieved and lower recall and nDCG"]

    def add(self, row: QuestionResult, failures: Sequence[dict[str, str]] = ()) -> None:
        """One question's row and the outputs its run did not produce."""
        self.results.append(row)
        self.failures.extend(failures)

    def finish(self) -> EvalReport:
        """Fill the mean ranking metrics of each scored output from the rows."""
        self.outputs = {spec: self._mean_ranking(spec) for spec in self.ranked_outputs}
        return self

    def _mean_ranking(self, spec: str) -> dict[str, float]:
        rows = [r.ranking[spec] for r in self.results if spec in r.ranking]
        if not rows:
            return {}
        means = {name: mean(row.get(name) for row in rows) for name in rows[0]}
        rounded = self.on_evalset  # (an evaluation set's report rounds its means)
        return {name: (_round(value) if rounded else value) or 0.0
                for name, value in means.items()}

    def answers_summary(self, registry: MetricRegistry = METRICS) -> dict[str, float | None]:
        """The mean of each answer metric (a ``beside`` variant right after its metric, when
        a row has it; each judge's when a judge is configured), then of each cost metric
        (``mean_<name>``)."""
        names = registry.answer_columns("answer", *(("judge",) if self.judge_configured else ()))
        for metric in registry.of_kind("answer"):
            if metric.beside and any(metric.name in r.metrics for r in self.results):
                names.insert(names.index(metric.beside) + 1, metric.name)
        summary = {n: _round(mean(r.metrics.get(n) for r in self.results)) for n in names}
        for name in registry.answer_columns("cost"):
            summary[f"mean_{name}"] = _round(mean(r.metrics.get(name) for r in self.results))
        return summary

    def unparsed_judge_replies(self) -> list[dict[str, str]]:
        return [{"id": r.id, **item} for r in self.results if r.judge
                for item in r.judge.get("unparsed", [])]

    def to_dict(self) -> dict[str, Any]:
        graph = {"name": self.graph_name, "sha256": self.graph_sha256}
        if isinstance(self.source, EvalsetSource):
            return {
                "graph": graph,
                "evalset": {**self.source.identity(), "questions": len(self.results)},
                "answer_output": self.answer_output,
                "seconds": round(self.seconds, 2),
                "answers": self.answers_summary(),
                "nodes": self.outputs,
                "failures": [{"id": f["query_id"], "reason": f["reason"]} for f in self.failures],
                "judge_unparsed": self.unparsed_judge_replies(),
                "per_question": [r.to_dict() for r in self.results],
            }
        return {
            "graph": graph,
            "dataset": {**self.source.identity(), "queries": self.source.queries},
            "hit_k": self.hit_k,
            "ndcg_gain": self.ndcg_gain,
            "seconds": round(self.seconds, 2),
            "nodes": self.outputs,
            "failures": [{"query_id": f["query_id"], "output": f["output"],
                          "reason": f["reason"]} for f in self.failures],
            "warnings": self.warnings,
            "missing_docs": self.missing_docs,
            "per_query": self.per_query,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def is_answer_report(data: Any) -> bool:
    """Whether ``data`` is the JSON of an evaluation-set report (else of a dataset report)."""
    return isinstance(data, Mapping) and "per_question" in data and "evalset" in data


def report_from_dict(data: Mapping[str, Any]) -> EvalReport:
    """An ``EvalReport`` back from its JSON (a ``modrag eval --report`` file), either kind."""
    graph = data.get("graph", {})
    report = EvalReport(graph_name=graph.get("name", ""), graph_sha256=graph.get("sha256", ""),
                        source=EvalsetSource("", ""), seconds=data.get("seconds", 0.0),
                        outputs=dict(data.get("nodes", {})))
    if is_answer_report(data):
        evalset = data["evalset"]
        report.source = EvalsetSource(evalset.get("path", ""), evalset.get("sha256", ""))
        report.answer_output = data.get("answer_output")
        report.judge_configured = any(m.name in data.get("answers", {})
                                      for m in METRICS.of_kind("judge"))
        report.results = [_row_from_dict(row) for row in data["per_question"]]
        report.failures = [{"query_id": f.get("id", ""), "output": report.answer_output or "",
                            "reason": f.get("reason", "")} for f in data.get("failures", [])]
        return report
    dataset = data["dataset"]
    report.source = DatasetSource(dataset["path"], dataset["split"], dataset["qrels_sha256"],
                                  dataset["queries"])
    report.hit_k = data.get("hit_k", 10)
    report.ndcg_gain = data.get("ndcg_gain", "exponential")  # reports before it: 2**g - 1
    report.missing_docs = data.get("missing_docs", {})
    report.failures = [{"query_id": f.get("query_id", ""), "output": f.get("output", ""),
                        "reason": f.get("reason", "")} for f in data.get("failures", [])]
    rows: dict[str, QuestionResult] = {}
    for spec, items in data.get("per_query", {}).items():
        for item in items:
            row = rows.setdefault(item["query_id"], QuestionResult(item["query_id"]))
            row.ranking[spec] = {k: v for k, v in item.items() if k not in _NOT_METRICS}
            row.top_docs[spec] = item.get("top_docs", [])
            row.relevant = item.get("relevant", [])
    report.results = list(rows.values())
    return report


def _row_from_dict(data: Mapping[str, Any]) -> QuestionResult:
    row = QuestionResult(data["id"])
    for name in (*ROW_FIELDS[1:], "judge"):
        if name in data:
            setattr(row, name, data[name])
    return row
