"""``modrag run --expect`` and ``modrag eval --attribute``: where the evidence was lost."""

from __future__ import annotations

import argparse
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.evidence.attribution import Attribution, attribute
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.evaluation.funnel import EvalAttribution

__all__ = ["EvalAttribution", "add_attribute_option", "add_expect_option", "add_to_report",
           "expected_from_args", "format_funnel", "run_evidence"]


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


def add_to_report(data: dict[str, Any], funnel: EvalAttribution) -> None:
    """Put ``attribution`` (summary) and ``first_loss`` (per query) into a report dict."""
    data["attribution"] = funnel.summary()
    data["first_loss"] = dict(funnel.first_loss)


def format_funnel(summary: dict[str, dict[str, int]]) -> str:
    lines = [f"{'node':<22}{'reached':>9}{'lost here':>11}{'never reached':>15}"]
    for node, c in summary.items():
        lines.append(f"{node:<22}{c['reached']:>9}{c['lost_here']:>11}{c['never_reached']:>15}")
    return "\n".join(lines)
