"""Text segmentation on character spans, so every chunk knows its offsets in the document.

A span is ``(start, end)`` into the document text; chunk text is always ``text[start:end]``
(leading and trailing whitespace trimmed by moving the offsets).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from modrag_nodes.text.words import TOKEN
from modrag_studio.engine.core.node import Chunk, Document
from modrag_studio.engine.run.cancel_scope import check_cancelled

Span = tuple[int, int]
CHECK_EVERY = 2048  # pieces, windows or chunks between two looks at the run's cancel token

_ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "cf", "dr", "mr", "mrs", "ms", "prof", "fig",
                  "no", "al", "approx", "st", "jr", "sr", "inc", "ltd", "co", "eq"}
_WORD_BEFORE = re.compile(r"([A-Za-z.]+)$")
# end of a sentence: Latin punctuation + space, CJK punctuation, or a blank line
_SENTENCE_END = re.compile(
    r"(?:[.!?]+[\"')\]\u201d\u2019]*(?=\s))|(?:[\u3002\uff01\uff1f\uff1b]+[\u201d\u300d"
    r"\u300f\uff09)]*)|(?:\n[ \t]*\n)"
)


def trim(text: str, start: int, end: int) -> Span:
    """The span without surrounding whitespace (empty spans collapse to ``(start, start)``)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences of ``text[start:end]`` (Latin ``.!?``, CJK ``。！？；``, blank lines)."""
    end = len(text) if end is None else end
    spans: list[Span] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.group().startswith(".") and _is_abbreviation(text, match.start()):
            continue
        cut = match.end()
        span = trim(text, cursor, cut)
        if span[1] > span[0]:
            spans.append(span)
        cursor = cut
    tail = trim(text, cursor, end)
    if tail[1] > tail[0]:
        spans.append(tail)
    return spans


def _is_abbreviation(text: str, dot: int) -> bool:
    word = _WORD_BEFORE.search(text, max(0, dot - 12), dot)
    if not word:
        return dot > 0 and text[dot - 1].isdigit() and dot + 2 < len(text) and \
            text[dot + 2].isdigit()
    token = word.group(1).lower().rstrip(".")
    return token in _ABBREVIATIONS or len(token) == 1


def token_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Tokens: whitespace-separated words, each CJK character counting as one token."""
    end = len(text) if end is None else end
    return [m.span() for m in TOKEN.finditer(text, start, end)]


# pieces and merging ------------------------------------------------------------
def cut_pieces(text: str, start: int, end: int, pattern: re.Pattern[str]) -> Iterator[Span]:
    """Cut ``text[start:end]`` after each match of ``pattern`` (the separator stays with the
    piece before it); the pieces cover the range exactly. Pieces come one at a time: a long
    document without paragraphs is never held as a list of its words."""
    cursor = start
    for number, match in enumerate(pattern.finditer(text, start, end)):
        if number % CHECK_EVERY == 0:  # one huge document is not split past a time limit
            check_cancelled()
        if match.end() <= cursor or match.end() >= end:
            continue
        if pattern is SENTENCE and match.group().startswith(".") and \
                _is_abbreviation(text, match.start()):
            continue
        yield cursor, match.end()
        cursor = match.end()
    yield cursor, end


def merge_pieces(text: str, pieces: Iterable[Span], size: int, overlap: int) -> list[Span]:
    """Greedily join consecutive pieces into spans of at most ``size`` characters; each new
    span starts with trailing pieces of the previous one totalling at most ``overlap``."""
    chunks: list[Span] = []
    window: list[Span] = []
    for number, piece in enumerate(pieces):
        if number % CHECK_EVERY == 0:
            check_cancelled()
        if window and piece[1] - window[0][0] > size:
            chunks.append(trim(text, window[0][0], window[-1][1]))
            while window and (window[-1][1] - window[0][0] > overlap
                              or piece[1] - window[0][0] > size):
                window.pop(0)
        window.append(piece)
    if window:
        last = trim(text, window[0][0], window[-1][1])
        if not chunks or last[1] > chunks[-1][1]:
            chunks.append(last)
    return [c for c in chunks if c[1] > c[0]]


# fixed-size ---------------------------------------------------------------------
def fixed_char_spans(text: str, size: int, overlap: int) -> list[Span]:
    """Windows of ``size`` characters moving by ``size - overlap``."""
    step = max(1, size - overlap)
    spans = []
    for begin in range(0, max(len(text), 1), step):
        if begin % (CHECK_EVERY * step) == 0:
            check_cancelled()
        span = trim(text, begin, min(begin + size, len(text)))
        if span[1] > span[0] and (not spans or span[1] > spans[-1][1]):
            spans.append(span)
        if begin + size >= len(text):
            break
    return spans


def fixed_token_spans(text: str, size: int, overlap: int) -> list[Span]:
    """Windows of ``size`` tokens (see :func:`token_spans`) moving by ``size - overlap``."""
    return token_windows(token_spans(text), size, overlap)


def token_windows(tokens: Sequence[Span], size: int, overlap: int) -> list[Span]:
    """Spans of ``size`` consecutive tokens, each starting ``size - overlap`` tokens later."""
    step = max(1, size - overlap)
    spans = []
    for begin in range(0, len(tokens), step):
        window = tokens[begin:begin + size]
        spans.append((window[0][0], window[-1][1]))
        if begin + size >= len(tokens):
            break
    return spans


# recursive ------------------------------------------------------------------------
PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
LINE = re.compile(r"\n")
SENTENCE = _SENTENCE_END
WORD = re.compile(r"\s+")
LEVELS: dict[str, re.Pattern[str]] = {
    "paragraph": PARAGRAPH, "line": LINE, "sentence": SENTENCE, "word": WORD,
}


def recursive_spans(text: str, size: int, overlap: int, start: int = 0, end: int | None = None,
                    levels: Sequence[str] = ("paragraph", "line", "sentence", "word")
                    ) -> list[Span]:
    """Split on paragraphs, then lines, sentences, words, and finally characters, keeping
    each span at most ``size`` characters and joining small pieces up to ``size``."""
    end = len(text) if end is None else end
    span = trim(text, start, end)
    if span[1] - span[0] <= size:
        return [span] if span[1] > span[0] else []
    if not levels:
        return [(a + span[0], b + span[0]) for a, b in
                fixed_char_spans(text[span[0]:span[1]], size, overlap)]
    pattern, rest = LEVELS[levels[0]], levels[1:]
    pieces = cut_pieces(text, span[0], span[1], pattern)
    first = next(pieces)
    second = next(pieces, None)
    if second is None:
        return recursive_spans(text, size, overlap, span[0], span[1], rest)
    fitted = _fitted(text, size, overlap, itertools.chain((first, second), pieces), rest)
    return merge_pieces(text, fitted, size, overlap)


def _fitted(text: str, size: int, overlap: int, pieces: Iterable[Span],
            levels: Sequence[str]) -> Iterator[Span]:
    """The pieces, each longer than ``size`` cut further at the next levels."""
    for piece in pieces:
        if piece[1] - piece[0] > size:
            yield from recursive_spans(text, size, overlap, piece[0], piece[1], levels)
        else:
            yield piece


# chunks ---------------------------------------------------------------------------
def page_of(doc: Document, offset: int) -> int | None:
    """The PDF page at ``offset`` (from ``page`` or ``page_offsets`` in the metadata)."""
    if "page" in doc.metadata:
        return doc.metadata["page"]
    offsets = doc.metadata.get("page_offsets")
    if not offsets:
        return None
    starts = [row[0] for row in offsets]
    position = bisect.bisect_right(starts, offset) - 1
    return offsets[max(position, 0)][1]


def make_chunks(doc: Document, spans: Sequence[Span],
                extra: Callable[[int, Span], dict[str, Any]] | None = None,
                splitter: str = "") -> list[Chunk]:
    """Chunks for ``spans`` of ``doc``: ids ``{doc_id}#{index}``, offsets, document metadata
    (without ``page_offsets``) plus ``page`` (and ``page_end``) when known."""
    base = {k: v for k, v in doc.metadata.items() if k != "page_offsets"}
    if doc.title and "title" not in base:
        base["title"] = doc.title
    fields = set(Chunk.model_fields)  # one set for all: a set per chunk weighs 700 bytes
    chunks = []
    for index, (start, end) in enumerate(spans):
        if index % CHECK_EVERY == 0:
            check_cancelled()
        metadata = dict(base)
        if splitter:
            metadata["splitter"] = splitter
        first = page_of(doc, start)
        if first is not None:
            metadata["page"] = first
            last = page_of(doc, max(start, end - 1))
            if last != first:
                metadata["page_end"] = last
        if extra is not None:
            metadata.update(extra(index, (start, end)))
        chunk = Chunk(chunk_id=f"{doc.doc_id}#{index}", doc_id=doc.doc_id,
                      text=doc.text[start:end], start=start, end=end, index=index,
                      source=doc.source, metadata=metadata)
        object.__setattr__(chunk, "__pydantic_fields_set__", fields)  # the same names
        chunks.append(chunk)
    return chunks
