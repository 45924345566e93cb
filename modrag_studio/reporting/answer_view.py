"""What a finished run answered: the answer's text, each citation with the passage it points
at, and the grounding verdict. The OpenAI-compatible routes, the MCP tools and the run report
read a run through these functions, so they tell the same answer the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.datatypes import Answer, Citation, ScoredChunk
from modrag_studio.engine.run.trace import Trace

HISTORY_INPUT = "history"
NOT_QUESTIONS = ("corpus", "corpus_path", HISTORY_INPUT)


def question_input(names: list[str]) -> str | None:
    """The input a chat question goes to: question/query, else the only other text input."""
    for name in ("question", "query"):
        if name in names:
            return name
    others = [n for n in names if n not in NOT_QUESTIONS]
    return others[0] if len(others) == 1 else None


def citation_line(ref: str, doc_id: str, chunk_id: str | None) -> str:
    """``[1] manual.md (manual.md#3)``: where a citation points, for a plain-text reader."""
    where = doc_id or "?"
    return f"[{ref}] {where}" + (f" ({chunk_id})" if chunk_id else "")


def answer_of(outputs: Mapping[str, Any]) -> tuple[str, str | None]:
    """(the answer's output name, its text): the first output that is an answer (text and
    citations), else the output named ``answer``, else the only output."""
    for name, value in outputs.items():
        if isinstance(getattr(value, "text", None), str) and hasattr(value, "citations"):
            return name, value.text
    if "answer" in outputs:
        name = "answer"
    elif len(outputs) == 1:
        name = next(iter(outputs))
    else:
        return "", None
    value = outputs[name]
    text = getattr(value, "text", value)
    return name, text if isinstance(text, str) else None


def answer_value(outputs: Mapping[str, Any]) -> Answer | None:
    """The run's answer (the first output that is an ``Answer``), or None."""
    return next((v for v in outputs.values() if isinstance(v, Answer)), None)


@dataclass(frozen=True)
class CitedPassage:
    """One citation of the answer and the passage of the evidence it points at."""

    ref: str
    doc_id: str
    chunk_id: str | None
    valid: bool
    source: str = ""  # the document's file name (never a server path)
    title: str = ""
    text: str = ""
    score: float | None = None
    rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _passage(citation: Citation, evidence: list[ScoredChunk]) -> ScoredChunk | None:
    if citation.chunk_id:
        found = next((e for e in evidence if e.chunk_id == citation.chunk_id), None)
        if found is not None:
            return found
    if citation.doc_id:
        return next((e for e in evidence if e.doc_id == citation.doc_id), None)
    return None


def cited_passages(answer: Answer) -> list[CitedPassage]:
    """The answer's citations in order, each with its passage (text empty when the cited
    block is not in the answer's evidence)."""
    cited = []
    for citation in answer.citations:
        item = _passage(citation, answer.evidence)
        chunk = item.chunk if item is not None else None
        cited.append(CitedPassage(
            ref=citation.ref, doc_id=citation.doc_id, chunk_id=citation.chunk_id,
            valid=citation.valid,
            source=Path(chunk.source).name if chunk is not None and chunk.source else "",
            title=str(chunk.metadata.get("title") or chunk.metadata.get("heading") or "")
            if chunk is not None else "",
            text=chunk.text if chunk is not None else "",
            score=item.score if item is not None else None,
            rank=item.rank if item is not None else None))
    return cited


@dataclass(frozen=True)
class GroundingVerdict:
    """The last verdict of the run's grounding (or self-) check on the answer.

    ``verdict``: the check's route ("grounded", "ungrounded", "absent", "supported", ...) or
    "refused" when the answer returned is the refusal that replaced a rejected one."""

    verdict: str
    reason: str = ""
    node_id: str = ""
    attempts: int = 1
    refused: bool = False
    claims: list[dict[str, Any]] = field(default_factory=list)
    #: sentences of the model's answer the check cut (no evidence backs them)
    cut: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def grounding_of(trace: Trace, answer: Answer | None = None) -> GroundingVerdict | None:
    """The run's grounding verdict from its trace (None when no check ran)."""
    checks = [v for v in trace.visits if v.details.get("verdict") is not None
              and v.status in ("done", "cached", "pinned")]
    if not checks:
        return None
    last = checks[-1]
    refused = bool(answer is not None and answer.fallback)
    claims = last.details.get("claims")
    return GroundingVerdict(
        verdict="refused" if refused else str(last.details["verdict"]),
        reason=str(last.details.get("reason") or (answer.check_reason if answer else "")),
        node_id=last.node_id,
        attempts=sum(1 for v in checks if v.node_id == last.node_id),
        refused=refused,
        claims=[dict(c) for c in claims] if isinstance(claims, list) else [],
        cut=[str(c) for c in last.details.get("cut") or []])
