"""Where an evaluation's evidence is lost: per node, how many questions' expected evidence
reached it, was lost at it or never reached it, and each question's first loss (``modrag
eval --attribute`` on a BEIR split, the scorecard on an evaluation set)."""

from __future__ import annotations

from collections.abc import Callable

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.evidence.attribution import Attribution, EvidenceFinder, attribute
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.run.executor import RunResult


class EvalAttribution:
    """Per-node funnel over the queries of an evaluation, and each query's first loss.

    A query *reaches* a node when at least one relevant document is in the node's output; it is
    *lost here* when one arrived in the node's inputs and none is in its output; otherwise it
    *never reached* the node (a node a query's run skipped counts as never reached).
    """

    def __init__(self, doc: GraphDocument, qrels: dict[str, dict[str, int]],
                 targets: list[str]) -> None:
        self.doc = doc
        self.qrels = qrels
        self.targets = targets
        self.finder = EvidenceFinder()
        self.counts: dict[str, dict[str, int]] = {}
        self.first_loss: dict[str, str | None] = {}
        self._queries = 0

    def add(self, query_id: str, result: RunResult) -> None:
        """Count a query of a BEIR split (its relevant documents from the qrels)."""
        self.add_expected(query_id, result,
                          ExpectedEvidence.from_qrels(self.qrels.get(query_id, {})))

    def add_expected(self, query_id: str, result: RunResult,
                     expected: ExpectedEvidence) -> Attribution:
        """Count a query whose expected evidence is given; its attribution is returned."""
        found = attribute(result, self.doc, expected, targets=self.targets,
                          finder=self.finder, explain=False)
        self._queries += 1
        seen = set()
        for node in found.nodes:
            seen.add(node.node_id)
            counts = self._node_counts(node.node_id)
            counts[{"reached": "reached", "lost": "lost_here"}.get(node.status,
                                                                   "never_reached")] += 1
        for node_id, counts in self.counts.items():
            if node_id not in seen:
                counts["never_reached"] += 1
        self.first_loss[query_id] = found.first_loss
        return found

    def _node_counts(self, node_id: str) -> dict[str, int]:
        if node_id not in self.counts:
            # a node first seen now was not reached by the earlier queries
            self.counts[node_id] = {"reached": 0, "lost_here": 0,
                                    "never_reached": self._queries - 1}
        return self.counts[node_id]

    def summary(self) -> dict[str, dict[str, int]]:
        order = self.doc.node_ids()
        rank = {node_id: n for n, node_id in enumerate(order)}
        return {node: self.counts[node]
                for node in sorted(self.counts, key=lambda n: rank.get(n, len(rank)))}

    def hook(self) -> Callable[[str, RunResult], None]:
        return self.add
