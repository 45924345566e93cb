"""What a tuner asks of its questions: one graph scored on named questions, per question.

Every score a tune takes goes through one :class:`Scorer` call that names the questions and
the stage (``search``: a trial or the base while choosing; ``test``: the final comparison)
and the split it belongs to (``-1``: the held-out split or the choice on every question;
``0..``: a cross-validation fold). So the questions a search saw can be checked against the
questions its choice is tested on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.runner import evaluate_graph
from modrag_studio.evaluation.tuning.questions import subset

Stage = Literal["search", "test"]
Row = dict[str, Any]


@dataclass
class Scored:
    """Per question id, its metric row (``None``: the graph did not produce the output)."""

    rows: dict[str, Row | None]
    known_metrics: list[str] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return sum(1 for row in self.rows.values() if row is None)

    def mean(self, metric: str) -> float | None:
        values = [row[metric] for row in self.rows.values() if row is not None]
        return sum(values) / len(values) if values else None

    def means(self) -> dict[str, float]:
        rows = [r for r in self.rows.values() if r is not None]
        return {m: sum(r[m] for r in rows) / len(rows) for m in self.known_metrics
                if rows and all(isinstance(r.get(m), int | float) for r in rows)}


class Scorer(Protocol):
    def __call__(self, graph: GraphDocument, query_ids: Sequence[str], *, stage: Stage,
                 split: int) -> Scored: ...


def graph_digest(graph: GraphDocument) -> str:
    return hashlib.sha256(json.dumps(graph.model_dump(mode="json"), sort_keys=True,
                                     default=repr).encode()).hexdigest()


def ranking_part(doc: GraphDocument, output: str) -> GraphDocument:
    """The graph up to ``output``'s node (what the tuner runs per trial: the model that
    writes the answer never runs while choosing how to rank)."""
    node_id = output.partition(".")[0]
    keep = Topology.of(doc).upstream(node_id) | {node_id}
    return doc.model_copy(update={
        "nodes": [n for n in doc.nodes if n.id in keep],
        "edges": [e for e in doc.edges if e.source_node in keep and e.target_node in keep
                  and e.loop is None],
        "variants": None, "layout": None}, deep=True)


class GraphScorer:
    """Runs the graph up to the tuned output (``ranking_part``) on the questions through
    ``evaluate_graph`` and keeps each (graph, question) row, so a graph is never run twice on
    one question in a tune."""

    def __init__(self, dataset: BeirDataset, output: str, *, executor: Executor,
                 cancel: CancelToken | None = None, **eval_kwargs: Any) -> None:
        self.dataset, self.output, self.executor = dataset, output, executor
        self.cancel, self.eval_kwargs = cancel, eval_kwargs
        self._rows: dict[tuple[str, str], Row | None] = {}
        self._known: list[str] = []

    def _check(self) -> None:
        if self.cancel is not None and self.cancel.cancelled:
            raise RunCancelled("tuning cancelled")

    def __call__(self, graph: GraphDocument, query_ids: Sequence[str], *, stage: Stage,
                 split: int) -> Scored:
        digest = graph_digest(graph)
        todo = [q for q in query_ids if (digest, q) not in self._rows]
        if todo:
            self._check()
            report = evaluate_graph(ranking_part(graph, self.output),
                                    subset(self.dataset, todo), [self.output],
                                    executor=self.executor, cancel=self.cancel,
                                    **self.eval_kwargs)
            self._check()
            rows = {r["query_id"]: r for r in report.per_query.get(self.output, [])}
            self._known = self._known or list(report.outputs.get(self.output, {}))
            for q in todo:
                self._rows[(digest, q)] = rows.get(q)
        return Scored({q: self._rows[(digest, q)] for q in query_ids}, list(self._known))
