"""``modrag run --expect`` and ``modrag eval --attribute``: where the evidence was lost."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.evidence.attribution import Attribution, EvidenceFinder, attribute
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.run.executor import RunResult


def add_expect_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--expect", action="append", default=[], metavar="SPEC",
                        help="expected evidence: doc:ID, chunk:ID, text:PHRASE or re:PATTERN "
                             "(repeatable); prints where each node put it")


def add_attribute_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attribute", action="store_true",
                        help="count per node how many queries' relevant documents reached it, "
                             "were lost at it or never reached it")


def expected_from_args(specs: list[str]) -> ExpectedEvidence:
    """The ``--expect`` specs (raises EvidenceSpecError naming a bad spec)."""
    return ExpectedEvidence.parse(specs)


def run_evidence(result: RunResult, doc: GraphDocument, expected: ExpectedEvidence) -> Attribution:
    return attribute(result, doc, expected)


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
        expected = ExpectedEvidence.from_qrels(self.qrels.get(query_id, {}))
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

    def _node_counts(self, node_id: str) -> dict[str, int]:
        if node_id not in self.counts:
            # a node first seen now was not reached by the earlier queries
            self.counts[node_id] = {"reached": 0, "lost_here": 0,
                                    "never_reached": self._queries - 1}
        return self.counts[node_id]

    def summary(self) -> dict[str, dict[str, int]]:
        order = [n.id for n in self.doc.nodes]
        return {node: self.counts[node] for node in sorted(self.counts, key=order.index)}

    def hook(self) -> Callable[[str, RunResult], None]:
        return self.add


def add_to_report(data: dict[str, Any], funnel: EvalAttribution) -> None:
    """Put ``attribution`` (summary) and ``first_loss`` (per query) into a report dict."""
    data["attribution"] = funnel.summary()
    data["first_loss"] = dict(funnel.first_loss)


def format_funnel(summary: dict[str, dict[str, int]]) -> str:
    lines = [f"{'node':<22}{'reached':>9}{'lost here':>11}{'never reached':>15}"]
    for node, c in summary.items():
        lines.append(f"{node:<22}{c['reached']:>9}{c['lost_here']:>11}{c['never_reached']:>15}")
    return "\n".join(lines)
