"""``split.semantic``: chunk boundaries where consecutive sentence embeddings diverge.

Each sentence is embedded together with ``buffer`` neighbours on each side (smoothing);
the cosine distance between consecutive sentences is compared with a threshold (a
percentile of the document's distances, mean + k standard deviations, or an absolute
value). Groups are then kept between ``min_chunk`` and ``chunk_size`` characters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.ingest.spans import Span, make_chunks, recursive_spans, sentence_spans
from modrag_studio.engine.core.node import (
    Chunk,
    Document,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

EmbedFn = Callable[[list[str]], Any]
Method = Literal["percentile", "stddev", "absolute"]


def consecutive_distances(vectors: Any) -> list[float]:
    """Cosine distance between each row and the next."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    if len(matrix) < 2:
        return []
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.maximum(norms, 1e-12)
    return [float(1.0 - d) for d in np.sum(unit[:-1] * unit[1:], axis=1)]


def threshold_of(distances: Sequence[float], method: Method, amount: float) -> float:
    import numpy as np

    if not distances:
        return float("inf")
    values = np.asarray(distances)
    if method == "percentile":
        return float(np.percentile(values, amount))
    if method == "stddev":
        return float(values.mean() + amount * values.std())
    return float(amount)


def breakpoints(distances: Sequence[float], method: Method, amount: float) -> list[int]:
    """Indexes ``i`` such that a chunk ends after sentence ``i``."""
    limit = threshold_of(distances, method, amount)
    return [i for i, d in enumerate(distances) if d > limit]


def sentence_windows(text: str, buffer: int = 1) -> tuple[list[Span], list[str]]:
    """The sentences of ``text`` and, for each, the text embedded for it (the sentence with
    ``buffer`` neighbours on each side)."""
    sentences = sentence_spans(text)
    windows = []
    for i in range(len(sentences)):
        lo, hi = max(0, i - buffer), min(len(sentences), i + buffer + 1)
        windows.append(text[sentences[lo][0]:sentences[hi - 1][1]])
    return sentences, windows


def spans_from_vectors(text: str, sentences: list[Span], vectors: Any, *,
                       method: Method = "percentile", amount: float = 90.0,
                       chunk_size: int = 2000, min_chunk: int = 100
                       ) -> tuple[list[Span], list[float]]:
    """Spans cut after each breakpoint sentence, and the distances that were used."""
    if len(sentences) < 2:
        return _fit_sizes(text, list(sentences), chunk_size, min_chunk), []
    distances = consecutive_distances(vectors)
    cuts = set(breakpoints(distances, method, amount))
    groups: list[Span] = []
    begin = 0
    for i in range(len(sentences)):
        if i in cuts or i == len(sentences) - 1:
            groups.append((sentences[begin][0], sentences[i][1]))
            begin = i + 1
    return _fit_sizes(text, groups, chunk_size, min_chunk), distances


def semantic_spans(text: str, embed: EmbedFn, *, method: Method = "percentile",
                   amount: float = 90.0, buffer: int = 1, chunk_size: int = 2000,
                   min_chunk: int = 100) -> tuple[list[Span], list[float]]:
    """Spans of ``text`` cut at embedding breakpoints, and the distances that were used."""
    sentences, windows = sentence_windows(text, buffer)
    vectors = embed(windows) if len(sentences) >= 2 else []
    return spans_from_vectors(text, sentences, vectors, method=method, amount=amount,
                              chunk_size=chunk_size, min_chunk=min_chunk)


def _fit_sizes(text: str, groups: list[Span], size: int, min_chunk: int) -> list[Span]:
    """Join groups shorter than ``min_chunk`` to the next one (while the result fits), and
    cut groups longer than ``size`` recursively."""
    joined: list[Span] = []
    for group in groups:
        if joined and (joined[-1][1] - joined[-1][0] < min_chunk
                       and group[1] - joined[-1][0] <= size):
            joined[-1] = (joined[-1][0], group[1])
        else:
            joined.append(group)
    if len(joined) > 1 and joined[-1][1] - joined[-1][0] < min_chunk \
            and joined[-1][1] - joined[-2][0] <= size:
        last = joined.pop()
        joined[-1] = (joined[-1][0], last[1])
    out: list[Span] = []
    for group in joined:
        if group[1] - group[0] > size:
            out.extend(recursive_spans(text, size, 0, group[0], group[1]))
        else:
            out.append(group)
    return out


def split_semantic(doc: Document, embed: EmbedFn, **options: Any) -> list[Chunk]:
    spans, _ = semantic_spans(doc.text, embed, **options)
    return make_chunks(doc, spans, splitter="semantic")


class SemanticParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Method = Field("percentile", description="How the breakpoint threshold is set")
    threshold: float = Field(90.0, ge=0, description="Percentile (0-100), number of standard "
                                                     "deviations, or absolute cosine distance")
    buffer: int = Field(1, ge=0, le=5, description="Neighbour sentences embedded with each one")
    chunk_size: int = Field(2000, ge=50, le=100_000, description="Largest chunk, in characters")
    min_chunk: int = Field(100, ge=0, description="Smaller groups join the next one")


class SemanticSplitter(NodeType):
    type_id = "split.semantic"
    key_params = ("method", "threshold")
    evidence_role = EvidenceRole("splits", inputs=("documents",))
    category = "Chunking"
    title = "Semantic splitter"
    description = ("Cuts where the embeddings of consecutive sentences diverge (default "
                   "embedder: the packaged all-MiniLM-L6-v2).")
    Params = SemanticParams
    inputs = (
        InputPort("documents", list[Document], description="Documents to split"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="Embedder for sentences (default all-MiniLM-L6-v2)"),
    )
    outputs = (OutputPort("chunks", list[Chunk], "Chunks with offsets into their document"),)

    def run(self, ctx: NodeContext, params: SemanticParams, documents: list[Document],
            embedder: EmbedderSpec | None = None) -> dict[str, Any]:
        spec = embedder or EmbedderSpec()
        prepared = [sentence_windows(doc.text, params.buffer) for doc in documents]
        texts = [w for sentences, windows in prepared if len(sentences) >= 2 for w in windows]
        ctx.progress(0, 1, f"embedding {len(texts)} sentences with {spec.model_id}")
        vectors = embed_texts(spec, texts, role="passage", ctx=ctx) if texts else []
        chunks: list[Chunk] = []
        cursor = 0
        for doc, (sentences, windows) in zip(documents, prepared, strict=True):
            ctx.check_cancelled()
            own: Any = []
            if len(sentences) >= 2:
                own = vectors[cursor:cursor + len(windows)]
                cursor += len(windows)
            spans, _ = spans_from_vectors(doc.text, sentences, own, method=params.method,
                                          amount=params.threshold,
                                          chunk_size=params.chunk_size,
                                          min_chunk=params.min_chunk)
            chunks.extend(make_chunks(doc, spans, splitter="semantic"))
        ctx.progress(1, 1, f"{len(chunks)} chunks")
        ctx.note(documents=len(documents), chunks=len(chunks), sentences=len(texts),
                 embedder=spec.model_id)
        return {"chunks": chunks}
