"""Answer metrics that need no model: facts stated, citations, refusals, length, cost.

Every metric of one question is a float in [0, 1] or ``None`` when it does not apply (no
facts expected, nothing cited, no expected evidence); means skip ``None`` values, so a
summary never holds NaN. The metrics themselves are declared in ``metric_registry``; they
read one question's :class:`AnsweredQuestion`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from modrag_nodes.generation.api import fact_recall
from modrag_nodes.text.words import token_count
from modrag_studio.engine.core.datatypes import Answer, Chunk
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.evaluation.evalset import EvalQuestion

# --- citations -------------------------------------------------------------------------

@dataclass
class CitationScores:
    validity: float | None
    precision: float | None
    recall: float | None
    cited: list[str]
    invalid: list[str]


def cited_chunks(answer: Answer) -> tuple[list[list[Chunk]], list[str]]:
    """For each citation, the evidence chunks it points at (a document id points at every
    chunk of that document among the evidence), and the refs that point at nothing."""
    evidence = answer.evidence
    by_chunk = {item.chunk_id: item.chunk for item in evidence}
    groups: list[list[Chunk]] = []
    invalid = list(answer.invalid_citations)
    for citation in answer.citations:
        if not citation.valid:
            if citation.ref not in invalid:
                invalid.append(citation.ref)
            continue
        if citation.ref in by_chunk:
            groups.append([by_chunk[citation.ref]])
        elif citation.ref.isdigit() and citation.chunk_id in by_chunk:
            groups.append([by_chunk[citation.chunk_id]])
        else:
            doc_id = citation.doc_id or citation.ref
            chunks = [item.chunk for item in evidence if item.doc_id == doc_id]
            if chunks:
                groups.append(chunks)
            elif citation.ref not in invalid:
                invalid.append(citation.ref)
    return groups, invalid


def citation_scores(answer: Answer, expected: ExpectedEvidence) -> CitationScores:
    """Validity (cited ids exist among the evidence), precision (cited chunks that are
    expected evidence) and recall (expected items some cited chunk satisfies)."""
    groups, invalid = cited_chunks(answer)
    total = len(groups) + len(invalid)
    cited = [c.ref for c in answer.citations]
    validity = len(groups) / total if total else None
    if not expected:
        return CitationScores(validity, None, None, cited, invalid)
    precision = (sum(any(expected.is_relevant(c) for c in g) for g in groups) / total
                 if total else None)
    cited_flat = [chunk for group in groups for chunk in group]
    satisfied = sum(any(item.matches(c) for c in cited_flat) for item in expected.items)
    recall = satisfied / len(expected.items)
    return CitationScores(validity, precision, recall, cited, invalid)


# --- one question ---------------------------------------------------------------------

@dataclass
class AnsweredQuestion:
    """What the answer, cost and judge metrics of one question are computed from.

    ``answer`` is None when the run produced none (a refusal, and a bad one); ``details``
    are the run's model-call details (None without a run); ``judgement`` the judge's.
    """

    question: EvalQuestion
    answer: Answer | None
    refused: bool
    seconds: float
    details: list[Mapping[str, Any]] | None = None
    judgement: Mapping[str, Any] | None = None

    @cached_property
    def facts(self) -> tuple[float | None, list[str]]:
        """Fact recall of the model's own words (what the pipeline appended left out) and
        the facts it missed."""
        if self.answer is None:
            return (0.0 if self.question.expected_facts else None), []
        return fact_recall(self.question.expected_facts, self.answer.own_text)

    @property
    def fact_recall(self) -> float | None:
        return self.facts[0] if self.question.answerable or self.answer is None else None

    @property
    def fact_recall_with_quotes(self) -> float | None:
        """Fact recall counting the text the pipeline appended (quotes)."""
        if self.answer is None or not self.question.answerable:
            return None
        return fact_recall(self.question.expected_facts, self.answer.text)[0]

    @cached_property
    def citations(self) -> CitationScores:
        if self.answer is None:
            return CitationScores(None, None, None, [], [])
        return citation_scores(self.answer, self.question.expected_evidence)

    @property
    def length(self) -> int:
        return answer_length(self.answer.text) if self.answer is not None else 0

    @property
    def tokens(self) -> float | None:
        return float(tokens_used(self.details)) if self.details is not None else None


# --- cost ------------------------------------------------------------------------------

def answer_length(text: str) -> int:
    """Words of Latin text plus CJK characters (a Chinese character counts as a word)."""
    return token_count(text)


def tokens_used(visit_details: Iterable[Mapping[str, Any]]) -> int:
    """Prompt plus completion tokens noted by the model calls of a run."""
    total = 0
    for details in visit_details:
        for key, value in details.items():
            if key in ("prompt_tokens", "completion_tokens") and isinstance(value, int):
                total += value
            elif (key.endswith("_tokens") and isinstance(value, list | tuple)
                  and all(isinstance(v, int) for v in value)):
                total += sum(value)
    return total


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None`` (``None`` when there are none)."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
