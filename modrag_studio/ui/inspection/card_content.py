"""What a card next to a node shows, as data: cells, rows, pages and a text body, chosen by
the output value's type (chunks, documents, scores, an answer with its citations and claims,
metrics). ``overlays`` draws them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from modrag_studio.engine.core.datatypes import (
    Answer,
    Chunk,
    Claim,
    Document,
    Prompt,
    ScoredChunk,
)
from modrag_studio.engine.core.formatting import short as _short
from modrag_studio.ui.inspection.grounding_marks import ungrounded_spans

MIDDLE = Qt.TextElideMode.ElideMiddle  # ids: see elide_id (stem start and "#n" kept)
TEXT = QColor("#e6e9ef")
MUTED = QColor("#9aa3b2")
UP, DOWN = QColor("#6fd08c"), QColor("#f07178")
ACCENTS = {"chunks": QColor("#4fb3bf"), "documents": QColor("#7aa2f7"),
           "scores": QColor("#e0af68"), "answer": QColor("#9ece6a"),
           "metrics": QColor("#bb9af7"), "prompt": QColor("#7dcfff")}


@dataclass
class Cell:
    text: str
    width: float
    color: QColor = field(default_factory=lambda: QColor(TEXT))
    bold: bool = False
    lines: int = 1
    align: Qt.AlignmentFlag = Qt.AlignmentFlag.AlignLeft
    elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight  # ids: ElideMiddle


@dataclass
class CardContent:
    """What one card shows: a title, a row count and a way to build any page of rows."""

    kind: str
    title: str
    total: int
    rows: Callable[[int, int], list[list[Cell]]]
    header: list[Cell] | None = None
    body: str = ""          # free text (answers), drawn above rows
    body_width: float = 330.0
    marks: list[tuple[int, int]] = field(default_factory=list)  # body spans drawn in red


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else None


def content_for(value: Any, port: str = "") -> CardContent | None:
    """The card for an output value, decided by its type; None when it has no overlay."""
    if isinstance(value, Answer):
        return answer_content(value)
    if isinstance(value, Prompt):
        return prompt_content(value)
    if not isinstance(value, list) or not value:
        return None
    head = _first(value)
    if isinstance(head, ScoredChunk):
        return score_content(value)
    if isinstance(head, Chunk):
        return chunk_content(value)
    if isinstance(head, Document):
        return document_content(value)
    return None


def chunk_content(chunks: list[Chunk]) -> CardContent:
    def rows(start: int, count: int) -> list[list[Cell]]:
        return [[Cell(c.chunk_id, 60, ACCENTS["chunks"], bold=True, elide=MIDDLE),
                 Cell(_short(c.text, 90), 180, lines=2)] for c in chunks[start:start + count]]
    return CardContent("chunks", f"{len(chunks):,} chunks", len(chunks), rows)


def document_content(docs: list[Document]) -> CardContent:
    def rows(start: int, count: int) -> list[list[Cell]]:
        return [[Cell(d.doc_id, 60, ACCENTS["documents"], bold=True, elide=MIDDLE),
                 Cell(_short(d.title or d.text, 90), 180, lines=2)]
                for d in docs[start:start + count]]
    return CardContent("documents", f"{len(docs):,} documents", len(docs), rows)


def rank_move(final_rank: int, source_rank: int | None) -> tuple[str, QColor]:
    """'↑3' when a chunk moved up three places from that input list, '↓2' down, '=' same."""
    if source_rank is None:
        return "–", MUTED
    moved = source_rank - final_rank
    if moved > 0:
        return f"#{source_rank} ↑{moved}", UP
    if moved < 0:
        return f"#{source_rank} ↓{-moved}", DOWN
    return f"#{source_rank} =", MUTED


def score_content(scored: list[ScoredChunk]) -> CardContent:
    sources: list[str] = []
    moved = any(len(item.sources) > 1 or (item.sources and item.retriever not in item.sources)
                for item in scored[:50])
    for item in scored[:50] if moved else []:
        for name in item.sources:
            if name not in sources and name != item.retriever:  # not its own ranking
                sources.append(name)
    sources = sources[:3]
    header = [Cell("#", 24, MUTED), Cell("chunk", 70, MUTED), Cell("score", 56, MUTED)]
    # a retriever inside a subgraph (sub/inner) by its own id
    header += [Cell(_short(name.rsplit("/", 1)[-1], 10), 64, MUTED) for name in sources]

    def rows(start: int, count: int) -> list[list[Cell]]:
        out = []
        for offset, item in enumerate(scored[start:start + count]):
            rank = item.rank or start + offset + 1
            row = [Cell(str(rank), 24, MUTED), Cell(item.chunk_id, 70, bold=True, elide=MIDDLE),
                   Cell(f"{item.score:.4g}", 56, ACCENTS["scores"])]
            for name in sources:
                src = item.sources.get(name)
                text, color = rank_move(rank, src.rank if src else None)
                row.append(Cell(text, 64, color))
            out.append(row)
        return out
    kind = scored[0].score_kind
    return CardContent("scores", f"{len(scored):,} scored ({kind})", len(scored), rows, header)


def answer_content(answer: Answer | str, streaming: bool = False) -> CardContent:
    if isinstance(answer, str):
        text, cites, claims = answer, [], []
    else:
        text, cites, claims = answer.text, answer.citations, answer.claims
    items: list[Any] = [*cites, *claims]

    def rows(start: int, count: int) -> list[list[Cell]]:
        out = []
        for item in items[start:start + count]:
            if isinstance(item, Claim):
                out.append(claim_row(item))
                continue
            where = item.doc_id + (f" · {item.chunk_id}" if item.chunk_id else "")
            color = ACCENTS["answer"] if item.valid else DOWN
            out.append([Cell(f"[{item.ref}]", 34, color, bold=True),
                        Cell(_short(where, 40), 206, MUTED)])
        return out
    title = "Answer (streaming…)" if streaming else (
        f"Answer · {len(cites)} citation{'s' if len(cites) != 1 else ''}")
    ungrounded = [c for c in claims if c.verdict in ("missing", "mismatch")]
    if ungrounded:
        title += f" · {len(ungrounded)} ungrounded"
    body = _short(text, 600) or "…"
    return CardContent("answer", title, len(items), rows, body=body, body_width=240.0,
                       marks=[] if getattr(answer, "fallback", False)
                       else ungrounded_spans(body, ungrounded))


def prompt_content(prompt: Prompt) -> CardContent:
    """The prompt's size (what the model reads before answering: its time to the first word)
    and its evidence blocks in order, with how many were dropped to fit the budget."""
    blocks = prompt.evidence

    def rows(start: int, count: int) -> list[list[Cell]]:
        return [[Cell(f"[{n}]", 34, ACCENTS["prompt"], bold=True),
                 Cell(item.chunk_id, 206, MUTED, elide=MIDDLE)]
                for n, item in enumerate(blocks[start:start + count], start=start + 1)]
    title = f"Prompt · ≈{prompt.token_estimate:,} tokens · {len(blocks)} blocks"
    if prompt.dropped:
        title += f" ({len(prompt.dropped)} dropped for the budget)"
    return CardContent("prompt", title, len(blocks), rows)


def claim_row(claim: Claim) -> list[Cell]:
    """One claim of a grounding check: ✓ where the evidence says it, ✗ not found."""
    where = {"cited": f"block [{claim.block}]", "evidence": f"uncited block [{claim.block}]",
             "question": "only in the question", "missing": "in no document",
             "mismatch": f"block [{claim.block}], not about {claim.about}"}.get(
                 claim.verdict, claim.verdict)
    bad = claim.verdict in ("missing", "mismatch")
    return [Cell("✗" if bad else "✓", 34, DOWN if bad else UP, bold=True),
            Cell(_short(f"{claim.text} · {where}", 40), 206, DOWN if bad else MUTED)]


def metrics_content(metrics: dict[str, float], title: str = "Evaluation") -> CardContent:
    items = sorted(metrics.items())

    def rows(start: int, count: int) -> list[list[Cell]]:
        return [[Cell(name, 110, MUTED),
                 Cell(f"{value:.3f}" if isinstance(value, float) else str(value), 70,
                      ACCENTS["metrics"], bold=True)] for name, value in items[start:start + count]]
    return CardContent("metrics", title, len(items), rows)
