"""Chunks that fit the embedder: a splitter wired to an embedder cuts every chunk longer than
the embedder's window (counted with the embedder's own tokenizer) until each piece fits.

A chunk over the window is cut again at the same boundaries the recursive splitter uses
(paragraphs, lines, sentences, words, then characters), at a character size scaled by the
chunk's own characters per token, and each piece is counted again; a piece is never longer
than the embedder reads, so no tail goes unembedded. Pieces keep their chunk's metadata
(heading path, page) and every chunk of a document that had a cut is numbered again
(``{doc_id}#{index}`` in order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from modrag_nodes.ingest.spans import Span, page_of, recursive_spans
from modrag_studio.engine.core.node import Chunk, Document

MIN_TOKENS = 8  # a limit below this leaves no room for text beside the special tokens
MARGIN = 0.9  # a cut aims a little under the limit: a text's density is not uniform

Counter = Callable[[list[str]], list[int]]


def window_counter(spec: Any, resources: Any = None) -> tuple[Counter, int] | None:
    """(tokens per text as ``spec``'s model counts them, its window), or None when its
    tokenizer is not at hand (a server's model). A model it loads is kept in ``resources``
    (the run's; the process's when None)."""
    from modrag_nodes.embedding.tokens import spec_token_counts

    probe = spec_token_counts(spec, ["probe"], resources)
    if probe is None:
        return None

    def count(texts: list[str]) -> list[int]:
        counted = spec_token_counts(spec, texts, resources)
        return counted[0] if counted is not None else [0] * len(texts)

    return count, probe[1]


def fitting_spans(text: str, span: Span, tokens: int, count: Counter, limit: int) -> list[Span]:
    """``span`` of ``text`` (``tokens`` long) cut into spans of at most ``limit`` tokens."""
    done: list[Span] = []
    todo: list[tuple[Span, int]] = [(span, tokens)]
    while todo:
        (start, end), n = todo.pop()
        if n <= limit or end - start <= 1:
            done.append((start, end))
            continue
        size = max(1, min(end - start - 1, int((end - start) * limit / n * MARGIN)))
        pieces = recursive_spans(text, size, 0, start, end) or [(start, end)]
        if pieces == [(start, end)]:  # nothing trimmed, nothing cut: halve it
            middle = (start + end) // 2
            pieces = [(start, middle), (middle, end)]
        counts = count([text[a:b] for a, b in pieces])
        todo.extend(reversed(list(zip(pieces, counts, strict=True))))
    return done


def fit_chunks(chunks: Sequence[Chunk], documents: Sequence[Document], count: Counter,
               limit: int) -> tuple[list[Chunk], int]:
    """(the chunks with each over ``limit`` tokens cut to fit, how many were cut)."""
    limit = max(MIN_TOKENS, limit)
    counts = count([c.text for c in chunks])
    over = {i for i, n in enumerate(counts) if n > limit}
    if not over:
        return list(chunks), 0
    docs = {d.doc_id: d for d in documents}
    cut_docs = {chunks[i].doc_id for i in over}
    out: list[Chunk] = []
    numbers: dict[str, int] = {}
    for i, chunk in enumerate(chunks):
        if chunk.doc_id not in cut_docs:
            out.append(chunk)
            continue
        spans = (fitting_spans(chunk.text, (0, len(chunk.text)), counts[i], count, limit)
                 if i in over else [(0, len(chunk.text))])
        for a, b in spans:
            index = numbers.get(chunk.doc_id, 0)
            numbers[chunk.doc_id] = index + 1
            out.append(_piece(chunk, a, b, index, docs.get(chunk.doc_id)))
    return out, len(over)


def _piece(chunk: Chunk, a: int, b: int, index: int, doc: Document | None) -> Chunk:
    """Characters ``a:b`` of ``chunk`` as chunk number ``index`` of its document."""
    start, end = chunk.start + a, chunk.start + b
    metadata = dict(chunk.metadata)
    if doc is not None and "page" in metadata:
        metadata.pop("page_end", None)
        first = page_of(doc, start)
        last = page_of(doc, max(start, end - 1))
        if first is not None:
            metadata["page"] = first
            if last != first:
                metadata["page_end"] = last
    return chunk.model_copy(update={"chunk_id": f"{chunk.doc_id}#{index}",
                                    "text": chunk.text[a:b], "start": start, "end": end,
                                    "index": index, "metadata": metadata})


def fit_to_embedder(ctx: Any, chunks: list[Chunk], documents: list[Document], spec: Any,
                    max_tokens: int = 0) -> list[Chunk]:
    """``chunks`` fitted to ``spec``'s window (or ``max_tokens`` when smaller and set);
    noted on the node (``cut_to_window``, ``window``); a warning when the embedder's
    tokenizer is not at hand, so the chunks could not be counted."""
    counter = window_counter(spec, ctx.resources)
    if counter is None:
        ctx.warn(f"the chunks were not fitted to embedder {spec.model_id}: its tokenizer is "
                 "not available here (a server's model); lower chunk_size if its window is "
                 "small")
        return chunks
    count, window = counter
    limit = min(max_tokens, window) if max_tokens else window
    fitted, cut = fit_chunks(chunks, documents, count, limit)
    ctx.note(window=limit, cut_to_window=cut)
    return fitted
