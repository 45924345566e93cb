"""Answer metrics that need no model: facts stated, citations, refusals, length, cost.

Every metric of one question is a float in [0, 1] or ``None`` when it does not apply (no
facts expected, nothing cited, no expected evidence); means skip ``None`` values, so a
summary never holds NaN.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modrag_nodes.text.words import token_count
from modrag_studio.engine.core.datatypes import Answer, Chunk, ScoredChunk
from modrag_studio.engine.evidence.expected import ExpectedEvidence

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


# --- ranking against expected evidence -------------------------------------------------

def evidence_ranking(value: Sequence[ScoredChunk], expected: ExpectedEvidence,
                     ks: Iterable[int] = (1, 5, 10)) -> dict[str, float]:
    """hit@k, recall@k (expected items satisfied in the top k) and MRR@10 of one ranking."""
    items = sorted(value, key=lambda r: r.rank) if all(r.rank > 0 for r in value) else value
    chunks = [item.chunk for item in items]
    relevant = [expected.is_relevant(c) for c in chunks]
    scores: dict[str, float] = {}
    for k in ks:
        top = chunks[:k]
        scores[f"hit@{k}"] = 1.0 if any(relevant[:k]) else 0.0
        scores[f"recall@{k}"] = (sum(any(i.matches(c) for c in top) for i in expected.items)
                                 / len(expected.items))
    scores["mrr@10"] = next((1 / n for n, r in enumerate(relevant[:10], 1) if r), 0.0)
    return scores


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
