"""Splitter nodes: fixed, recursive, sentence and markdown (heading-aware).

Every chunk's text is ``document.text[start:end]``; ``chunk_id`` is ``{doc_id}#{index}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.ingest.markdown import markdown_spans
from modrag_nodes.ingest.spans import (
    Span,
    fixed_char_spans,
    fixed_token_spans,
    make_chunks,
    recursive_spans,
    sentence_spans,
    token_windows,
)
from modrag_nodes.ingest.window_fit import fit_to_embedder
from modrag_studio.engine.core.node import (
    Chunk,
    Document,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

Level = Literal["paragraph", "line", "sentence", "word"]


# plain functions -------------------------------------------------------------------
def split_fixed(doc: Document, size: int, overlap: int, unit: str = "chars",
                embedder_model: str = "") -> list[Chunk]:
    if unit == "embedder":
        spans = embedder_token_spans(doc.text, size, overlap, embedder_model)
    else:
        spans = (fixed_token_spans(doc.text, size, overlap) if unit == "tokens"
                 else fixed_char_spans(doc.text, size, overlap))
    return make_chunks(doc, spans, splitter=f"fixed-{unit}")


def embedder_token_spans(text: str, size: int, overlap: int, model: str = "") -> list[Span]:
    """Windows of ``size`` word pieces of an embedder's tokenizer (its two special tokens
    counted), moving by ``size - overlap``: no chunk is longer than the model reads."""
    from modrag_nodes.embedding.embedder import DEFAULT_MODEL
    from modrag_nodes.embedding.tokens import token_offsets

    return token_windows(token_offsets(text, model or DEFAULT_MODEL), max(1, size - 2), overlap)


def split_recursive(doc: Document, size: int, overlap: int,
                    levels: Sequence[str] = ("paragraph", "line", "sentence", "word")
                    ) -> list[Chunk]:
    return make_chunks(doc, recursive_spans(doc.text, size, overlap, levels=levels),
                       splitter="recursive")


def group_sentences(text: str, sentences: Sequence[Span], size: int, overlap: int,
                    max_sentences: int = 0) -> list[Span]:
    """Consecutive sentences joined up to ``size`` characters (and ``max_sentences`` when
    set); each group starts with the last ``overlap`` sentences of the previous one. A
    sentence longer than ``size`` is cut recursively on words."""
    pieces: list[Span] = []
    for sentence in sentences:
        if sentence[1] - sentence[0] > size:
            pieces.extend(recursive_spans(text, size, 0, sentence[0], sentence[1],
                                          levels=("word",)))
        else:
            pieces.append(sentence)
    groups: list[Span] = []
    window: list[Span] = []
    for piece in pieces:
        full = max_sentences and len(window) >= max_sentences
        if window and (piece[1] - window[0][0] > size or full):
            groups.append((window[0][0], window[-1][1]))
            window = window[len(window) - overlap:] if overlap else []
            while window and piece[1] - window[0][0] > size:
                window.pop(0)
        window.append(piece)
    if window and (not groups or window[-1][1] > groups[-1][1]):
        groups.append((window[0][0], window[-1][1]))
    return groups


def split_sentences(doc: Document, size: int, overlap: int = 0, max_sentences: int = 0
                    ) -> list[Chunk]:
    spans = group_sentences(doc.text, sentence_spans(doc.text), size, overlap, max_sentences)
    return make_chunks(doc, spans, splitter="sentence")


def split_markdown(doc: Document, size: int, overlap: int, min_section: int = 50
                   ) -> list[Chunk]:
    pairs = markdown_spans(doc.text, size, overlap, min_section)
    shared: dict[int, dict[str, Any]] = {}  # a section's chunks share its path and name

    def extra(index: int, span: Span) -> dict[str, Any]:
        path = pairs[index][1]
        if id(path) not in shared:
            shared[id(path)] = {"heading_path": list(path), "section": " > ".join(path)}
        return shared[id(path)]

    return make_chunks(doc, [p[0] for p in pairs], extra, splitter="markdown")


def split_with(strategy: str, doc: Document, size: int, overlap: int) -> list[Chunk]:
    """One document split by a named strategy (used by smart ingest)."""
    if strategy == "markdown":
        return split_markdown(doc, size, overlap)
    if strategy == "recursive":
        return split_recursive(doc, size, overlap)
    if strategy == "sentence":
        return split_sentences(doc, size, 1 if overlap else 0)
    if strategy == "fixed":
        return split_fixed(doc, size, overlap)
    raise ValueError(f"unknown split strategy '{strategy}'")


def split_all(ctx: NodeContext | None, documents: list[Document],
              split_one: Callable[[Document], list[Chunk]]) -> list[Chunk]:
    """Split every document, reporting progress; cancellation (and so a run time limit) is
    checked between documents and inside a long one (``spans.CHECK_EVERY``, through the
    run's cancel scope, which the executor opens)."""
    chunks: list[Chunk] = []
    total = len(documents)
    step = max(1, total // 100)
    for number, doc in enumerate(documents):
        if ctx is not None:
            ctx.check_cancelled()
            if number % step == 0:
                ctx.progress(number, total, f"{number}/{total} documents")
        chunks.extend(split_one(doc))
    if ctx is not None:
        ctx.progress(total, total, f"{len(chunks)} chunks")
    return chunks


# nodes -----------------------------------------------------------------------------
class WindowParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_tokens: int = Field(
        0, ge=0, le=100_000, description="With an embedder wired in: most tokens per chunk, "
        "counted with the embedder's own tokenizer; longer chunks are cut again (0: the "
        "embedder's window)")


class SizeParams(WindowParams):
    chunk_size: int = Field(1000, ge=10, le=100_000, description="Largest chunk, in characters")
    overlap: int = Field(100, ge=0, description="Characters shared by consecutive chunks")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> SizeParams:
        if self.overlap >= self.chunk_size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than chunk_size "
                             f"({self.chunk_size})")
        return self


class _Splitter(NodeType):
    evidence_role = EvidenceRole("splits")
    category = "Chunking"
    inputs = (
        InputPort("documents", list[Document], description="Documents to split"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="The embedder the chunks are for: each chunk is kept within "
                  "its window (param max_tokens), counted with its own tokenizer"),
    )
    outputs = (OutputPort("chunks", list[Chunk], "Chunks with offsets into their document"),)

    def split_one(self, params: Any, doc: Document) -> list[Chunk]:
        raise NotImplementedError

    def run(self, ctx: NodeContext, params: Any, documents: list[Document],
            embedder: EmbedderSpec | None = None) -> dict[str, Any]:
        chunks = split_all(ctx, documents, lambda doc: self.split_one(params, doc))
        if embedder is not None:
            chunks = fit_to_embedder(ctx, chunks, documents, embedder, params.max_tokens)
        ctx.note(documents=len(documents), chunks=len(chunks))
        return {"chunks": chunks}


class FixedParams(SizeParams):
    unit: Literal["chars", "tokens", "embedder"] = Field(
        "chars", description="Count characters, tokens (whitespace-separated words, each "
                             "CJK character one token), or the word pieces of the embedder "
                             "named in 'embedder_model'")
    embedder_model: str = Field(
        "", description="With unit 'embedder': the sentence-transformers model whose tokens "
                        "are counted (empty: all-MiniLM-L6-v2, window 256)")


class FixedSplitter(_Splitter):
    type_id = "split.fixed"
    key_params = ("chunk_size", "overlap", "unit")
    title = "Fixed-size splitter"
    description = ("Cuts documents into windows of a fixed number of characters or tokens, "
                   "with overlap.")
    Params = FixedParams

    def split_one(self, params: FixedParams, doc: Document) -> list[Chunk]:
        return split_fixed(doc, params.chunk_size, params.overlap, params.unit,
                           params.embedder_model)


class RecursiveParams(SizeParams):
    separators: list[Level] = Field(
        default_factory=lambda: ["paragraph", "line", "sentence", "word"],
        description="Boundaries tried in order (then characters); sentences include "
                    "Chinese 。！？；")


class RecursiveSplitter(_Splitter):
    type_id = "split.recursive"
    key_params = ("chunk_size", "overlap")
    title = "Recursive splitter"
    description = ("Splits on paragraphs, then lines, sentences and words, joining small "
                   "pieces up to the chunk size.")
    Params = RecursiveParams

    def split_one(self, params: RecursiveParams, doc: Document) -> list[Chunk]:
        return split_recursive(doc, params.chunk_size, params.overlap, params.separators)


class SentenceParams(WindowParams):
    chunk_size: int = Field(1000, ge=10, le=100_000, description="Largest chunk, in characters")
    max_sentences: int = Field(0, ge=0, description="Most sentences per chunk (0: no limit)")
    overlap_sentences: int = Field(0, ge=0, le=20,
                                   description="Sentences repeated from the previous chunk")


class SentenceSplitter(_Splitter):
    type_id = "split.sentence"
    key_params = ("chunk_size", "overlap_sentences")
    title = "Sentence splitter"
    description = ("Groups whole sentences (Latin .!? and Chinese 。！？；) up to the chunk "
                   "size.")
    Params = SentenceParams

    def split_one(self, params: SentenceParams, doc: Document) -> list[Chunk]:
        return split_sentences(doc, params.chunk_size, params.overlap_sentences,
                               params.max_sentences)


class MarkdownParams(SizeParams):
    chunk_size: int = Field(1500, ge=10, le=100_000, description="Largest chunk, in characters")
    min_section: int = Field(50, ge=0, description="Sections shorter than this (a heading "
                                                   "with no body) join the next section")


class MarkdownSplitter(_Splitter):
    type_id = "split.markdown"
    key_params = ("chunk_size", "overlap")
    title = "Markdown splitter"
    description = ("Heading-aware: chunks never cross a section and keep their heading path "
                   "in metadata (heading_path, section).")
    Params = MarkdownParams

    def split_one(self, params: MarkdownParams, doc: Document) -> list[Chunk]:
        return split_markdown(doc, params.chunk_size, params.overlap, params.min_section)
