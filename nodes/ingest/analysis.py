"""Rule-based document analysis, strategy choice and chunk quality checks (plain functions).

Rules, in order (rates are per 1,000 characters):
1. ``markdown`` when there are at least 2 headings and 0.3 or more per 1,000 characters:
   sections are the natural unit and the heading path is worth keeping.
2. ``recursive`` when the text is line-structured (list items + table rows at 5 or more per
   1,000 characters) or holds code blocks: lines must not be cut mid-way.
3. ``sentence`` when paragraphs are long (average above 1,500 characters) or there are
   almost no line breaks (under 2 per 1,000 characters): prose with no usable structure.
4. ``recursive`` otherwise.

Chunk size: about three average paragraphs (``target_size`` when paragraphs are longer
than that: paragraphs are then no useful unit), clamped to ``[min_size,
max_size]`` and rounded to 50; halved for CJK text (a CJK character carries about two Latin
characters' content); line-structured text uses at most 800.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from modrag_nodes.ingest.contracts import STRATEGIES, DocumentAnalysis, IngestPlan, StrategyAttempt
from modrag_nodes.ingest.markdown import headings
from modrag_nodes.text.scripts import CJK, cjk_count
from modrag_studio.engine.core.node import Chunk

_LIST_ITEM = re.compile(r"^\s{0,6}(?:[-*+\u2022]|\d{1,3}[.)])\s+\S", re.MULTILINE)
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$|^[^\t\n]+(?:\t[^\t\n]*){2,}$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)", re.MULTILINE)
_WHITESPACE = re.compile(r"\s+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_CONTENT = re.compile(rf"[0-9A-Za-z\u00c0-\u024f\u0370-\u04ff{CJK}]")  # letters and digits


def analyze_text(doc_id: str, text: str) -> DocumentAnalysis:
    """Structure markers, paragraph figures, newline density and CJK share of ``text``."""
    chars = len(text)
    per_k = 1000.0 / max(chars, 1)
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    result = DocumentAnalysis(
        doc_id=doc_id,
        chars=chars,
        headings=len(headings(text)),
        list_items=len(_LIST_ITEM.findall(text)),
        table_rows=len(_TABLE_ROW.findall(text)),
        code_blocks=len(_FENCE.findall(text)) // 2,
        paragraphs=len(paragraphs),
        lines=text.count("\n") + 1 if text else 0,
        avg_paragraph_chars=(sum(len(p.strip()) for p in paragraphs) / len(paragraphs)
                             if paragraphs else 0.0),
        newline_density=text.count("\n") * per_k,
        cjk_ratio=_cjk_ratio(text),
    )
    result.headings_per_1k = result.headings * per_k
    result.list_items_per_1k = result.list_items * per_k
    result.table_rows_per_1k = result.table_rows * per_k
    result.code_blocks_per_1k = result.code_blocks * per_k
    return result


def _cjk_ratio(text: str) -> float:
    cjk = cjk_count(text)
    return cjk / max(len(_WHITESPACE.sub("", text)), 1) if cjk else 0.0


def combine(analyses: Sequence[DocumentAnalysis], doc_id: str = "*") -> DocumentAnalysis:
    """One analysis of a whole corpus (counts summed, rates over all characters)."""
    chars = sum(a.chars for a in analyses)
    per_k = 1000.0 / max(chars, 1)
    paragraphs = sum(a.paragraphs for a in analyses)
    total = DocumentAnalysis(
        doc_id=doc_id, chars=chars,
        headings=sum(a.headings for a in analyses),
        list_items=sum(a.list_items for a in analyses),
        table_rows=sum(a.table_rows for a in analyses),
        code_blocks=sum(a.code_blocks for a in analyses),
        paragraphs=paragraphs, lines=sum(a.lines for a in analyses),
        avg_paragraph_chars=(sum(a.avg_paragraph_chars * a.paragraphs for a in analyses)
                             / max(paragraphs, 1)),
        newline_density=sum(a.newline_density * a.chars / 1000 for a in analyses) * per_k,
        cjk_ratio=(sum(a.cjk_ratio * a.chars for a in analyses) / max(chars, 1)),
    )
    total.headings_per_1k = total.headings * per_k
    total.list_items_per_1k = total.list_items * per_k
    total.table_rows_per_1k = total.table_rows * per_k
    total.code_blocks_per_1k = total.code_blocks * per_k
    return total


def choose_plan(analysis: DocumentAnalysis, *, target_size: int = 1000, min_size: int = 300,
                max_size: int = 2000, overlap_ratio: float = 0.1,
                fallback_order: Sequence[str] = STRATEGIES) -> IngestPlan:
    """The strategy, chunk size and fallbacks the rules pick for ``analysis``."""
    a = analysis
    line_structured = a.list_items_per_1k + a.table_rows_per_1k >= 5
    if a.headings >= 2 and a.headings_per_1k >= 0.3:
        strategy, why = "markdown", (f"{a.headings} headings ({a.headings_per_1k:.2f} per "
                                     "1k chars)")
    elif line_structured or a.code_blocks:
        strategy, why = "recursive", (
            f"line-structured: {a.list_items_per_1k + a.table_rows_per_1k:.1f} list items/"
            f"table rows per 1k chars, {a.code_blocks} code blocks")
    elif a.avg_paragraph_chars > 1500 or a.newline_density < 2:
        strategy, why = "sentence", (f"long paragraphs (avg {a.avg_paragraph_chars:.0f} chars),"
                                     f" {a.newline_density:.1f} newlines per 1k chars")
    else:
        strategy, why = "recursive", (f"plain paragraphs (avg {a.avg_paragraph_chars:.0f} "
                                      "chars)")
    size = float(target_size)
    if 0 < a.avg_paragraph_chars <= target_size:
        size = 3 * a.avg_paragraph_chars
    if a.cjk_ratio > 0.3:
        size /= 2
    size = min(max(size, min_size), max_size)
    if line_structured:
        size = min(size, max(800, min_size))
    chunk_size = int(round(size / 50.0) * 50) or min_size
    order = [s for s in fallback_order if s in STRATEGIES]
    fallbacks = [s for s in order if s != strategy]
    cjk = ", CJK text" if a.cjk_ratio > 0.3 else ""
    return IngestPlan(strategy=strategy, chunk_size=chunk_size,
                      overlap=int(chunk_size * overlap_ratio),
                      reason=f"{why}{cjk}; chunk size {chunk_size}",
                      fallbacks=fallbacks, analysis=analysis)


def check_chunks(chunks: Sequence[Chunk], strategy: str, chunk_size: int, *,
                 text_chars: int | None = None, max_empty_ratio: float = 0.1,
                 min_avg_chars: int = 50, max_avg_chars: int = 3000) -> StrategyAttempt:
    """Quality of one strategy's chunks: at least one chunk, empty-chunk ratio, average
    length. ``text_chars`` (the source length) lowers the minimum average for short texts."""
    count = len(chunks)
    empty = sum(1 for c in chunks if not _CONTENT.search(c.text))
    avg = sum(len(c.text) for c in chunks) / count if count else 0.0
    ratio = empty / count if count else 0.0
    failed: list[str] = []
    if count == 0:
        failed.append("no chunks")
    else:
        if ratio > max_empty_ratio:
            failed.append(f"empty-chunk ratio {ratio:.2f} > {max_empty_ratio:.2f}")
        floor = min(min_avg_chars, text_chars) if text_chars is not None else min_avg_chars
        if avg < floor:
            failed.append(f"average length {avg:.0f} < {floor}")
        if avg > max_avg_chars:
            failed.append(f"average length {avg:.0f} > {max_avg_chars}")
    return StrategyAttempt(strategy=strategy, chunk_size=chunk_size, chunks=count,
                           avg_chars=round(avg, 1), empty_ratio=round(ratio, 3),
                           failed_checks=failed)
