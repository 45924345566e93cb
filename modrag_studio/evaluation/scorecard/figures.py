"""The scorecard's figures, computed from an evaluation's rows without running anything:
the headline (facts right, refusals, grounded-label precision), the evidence funnel, the
worst questions with their cause, and the suggested change.

The headline is the honest one, in the model's own words (what the pipeline appended does
not count): an answerable question is *right* when its answer states every expected fact and
was not refused; an answer *shown as grounded* is one not refused; grounded-label precision
is the share of those that are right (an answer to an unanswerable question never is).
``bench/grounding_replay.py`` reports its replays with the same :func:`headline`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from modrag_studio.evaluation.metric_registry import FACT_RECALL
from modrag_studio.evaluation.report import QuestionResult


class Judged(Protocol):
    """One answered question as the headline counts it."""

    answerable: bool
    refused: bool

    @property
    def right(self) -> bool: ...


@dataclass(frozen=True)
class Headline:
    """The counts behind the headline figures."""

    answerable: int = 0
    facts_right: int = 0
    unanswerable: int = 0
    unanswerable_refused: int = 0
    wrongly_refused: int = 0  # answerable questions refused
    shown: int = 0            # answers shown as grounded (not refused)
    shown_right: int = 0

    @property
    def precision(self) -> float | None:
        """Grounded-label precision (None when every answer was refused)."""
        return self.shown_right / self.shown if self.shown else None

    def lines(self) -> dict[str, str]:
        """Each figure as text ("7/10"), named as the reports name them."""
        precision = "-" if self.precision is None else f"{self.precision:.2f}"
        share = self.wrongly_refused / max(1, self.answerable)
        return {
            "facts right": f"{self.facts_right}/{self.answerable}",
            "grounded-label precision": f"{precision} ({self.shown_right}/{self.shown})",
            "unanswerable refused": f"{self.unanswerable_refused}/{self.unanswerable}",
            "answerable wrongly refused": f"{self.wrongly_refused}/{self.answerable} "
                                          f"({share:.0%})",
        }

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "precision": self.precision}


def headline(items: Iterable[Judged]) -> Headline:
    """The headline counts of answered questions."""
    answerable = unanswerable = right = refused_u = wrongly = shown = shown_right = 0
    for item in items:
        is_right = bool(item.right)
        if item.answerable:
            answerable += 1
            right += is_right
            wrongly += item.refused
        else:
            unanswerable += 1
            refused_u += item.refused
        if not item.refused:
            shown += 1
            shown_right += is_right
    return Headline(answerable, right, unanswerable, refused_u, wrongly, shown, shown_right)


@dataclass(frozen=True)
class RowOutcome:
    """An evaluation row as the headline counts it."""

    row: QuestionResult

    @property
    def answerable(self) -> bool:
        return self.row.answerable

    @property
    def refused(self) -> bool:
        return self.row.refused

    @property
    def right(self) -> bool:
        return is_right(self.row)


def is_right(row: QuestionResult) -> bool:
    """Answerable, not refused, every expected fact stated in the model's own words."""
    return (row.answerable and not row.refused and not row.error
            and row.metrics.get(FACT_RECALL.name) == 1.0)


def row_headline(rows: Iterable[QuestionResult]) -> Headline:
    return headline(RowOutcome(row) for row in rows)


@dataclass(frozen=True)
class EvidenceTrail:
    """Where one question's expected evidence went (its attribution, in short)."""

    first_loss: str | None
    verdict: str


@dataclass(frozen=True)
class WorstQuestion:
    id: str
    question: str
    answer: str
    problem: str  # what went wrong, in a few words
    cause: str    # why, from the evidence's path


def _badness(row: QuestionResult) -> tuple[int, float] | None:
    """Sort key of a wrong row (None: the row is fine). Failures first, then answers shown
    as grounded that are wrong (they mislead), then answerable questions refused."""
    if row.error:
        return (0, 0.0)
    if not row.answerable:
        return None if row.refused else (1, 0.0)
    if is_right(row):
        return None
    recall = row.metrics.get(FACT_RECALL.name) or 0.0
    return (2, recall) if row.refused else (1, recall)


def _problem(row: QuestionResult) -> str:
    if row.error:
        return "the run failed"
    if not row.answerable:
        return "answered a question no document answers"
    if row.refused:
        return "refused, though the documents answer it"
    missed = " and ".join(f"'{fact}'" for fact in row.missed_facts) or "the expected facts"
    return f"shown as grounded, but misses {missed}"


def _cause(row: QuestionResult, trail: EvidenceTrail | None) -> str:
    if row.error:
        return row.error
    if not row.answerable:
        return ("Nothing in the corpus answers it, and no check of the graph refused the "
                "answer.")
    if trail is None:
        return "The question names no expected evidence to follow."
    if trail.first_loss:
        return trail.verdict
    if row.refused:
        return f"{trail.verdict} The answer written from it was refused."
    return f"{trail.verdict} The model's answer did not state it."


def worst_questions(rows: Sequence[QuestionResult], trails: Mapping[str, EvidenceTrail],
                    count: int = 3) -> list[WorstQuestion]:
    """The ``count`` worst rows (failures, then wrong answers shown as grounded by fact
    recall, then wrong refusals; question order breaks ties), each with its cause."""
    bad = [(key, n, row) for n, row in enumerate(rows) if (key := _badness(row)) is not None]
    bad.sort(key=lambda item: (item[0], item[1]))
    return [WorstQuestion(row.id, row.question, row.answer, _problem(row),
                          _cause(row, trails.get(row.id)))
            for _key, _n, row in bad[:count]]


def first_losses(trails: Mapping[str, EvidenceTrail]) -> dict[str, int]:
    """Per node, the questions whose evidence it lost first (a node losing what another path
    still carries to the answer is not counted)."""
    counts: dict[str, int] = {}
    for trail in trails.values():
        if trail.first_loss:
            counts[trail.first_loss] = counts.get(trail.first_loss, 0) + 1
    return counts


def most_lost(firsts: Mapping[str, int]) -> tuple[str, int] | None:
    """The node that lost most questions' evidence first, and how many (None: no loss)."""
    node = max(firsts, key=lambda n: firsts[n], default=None)
    return None if node is None or not firsts[node] else (node, firsts[node])


@dataclass
class Suggestion:
    """The one change the scorecard suggests: the tuner's choice and its verdict."""

    status: str  # "significant", "not significant", "worse", "base is best", "not tested"
    text: str
    settings: dict[str, Any] = field(default_factory=dict)
    #: The choice as a stored variant (``VariantSpec`` JSON), only when significant.
    variant: dict[str, Any] | None = None

    @property
    def significant(self) -> bool:
        return self.status == "significant" and self.variant is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Scorecard:
    """One folder scored: what was asked, how the graph did, and what to change."""

    graph: str
    corpus: str
    evalset: str
    headline: Headline
    funnel: dict[str, dict[str, int]]
    funnel_questions: int
    worst: list[WorstQuestion]
    suggestion: Suggestion
    generation: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    failures: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    first_losses: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        lost = most_lost(self.first_losses)
        return {"graph": self.graph, "corpus": self.corpus, "evalset": self.evalset,
                "headline": {**self.headline.to_dict(), "lines": self.headline.lines()},
                "funnel": self.funnel, "funnel_questions": self.funnel_questions,
                "first_losses": self.first_losses,
                "most_lost": None if lost is None else {"node": lost[0], "questions": lost[1]},
                "worst": [asdict(w) for w in self.worst],
                "suggestion": self.suggestion.to_dict(), "generation": self.generation,
                "warnings": self.warnings, "failures": self.failures,
                "seconds": {k: round(v, 1) for k, v in self.seconds.items()}}


def scorecard_figures(rows: Sequence[QuestionResult], trails: Mapping[str, EvidenceTrail],
                      funnel: dict[str, dict[str, int]], *, graph: str, corpus: str,
                      evalset: str, suggestion: Suggestion, **extra: Any) -> Scorecard:
    """The scorecard of an evaluation's rows, their evidence trails and funnel."""
    return Scorecard(graph, corpus, evalset, row_headline(rows), funnel, len(trails),
                     worst_questions(rows, trails), suggestion,
                     failures=sum(1 for r in rows if r.error),
                     first_losses=first_losses(trails), **extra)
