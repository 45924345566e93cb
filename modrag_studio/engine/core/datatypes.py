"""Data contracts that travel along the edges of a RAG graph.

They are pydantic models so they serialise to JSON for traces, the inspector and the
HTTP server. Nodes receive private copies (see ``isolation``), so mutating them is harmless.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.core.formatting import short as _short

ScoreKind = Literal[
    "similarity", "distance", "bm25", "rrf", "convex", "logit", "probability", "graph", "grade"
]


class Contract(BaseModel):
    """Base of every data contract: strict field names, arbitrary extra values in metadata."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    #: Large read-only handles (indexes) set this: they are shared between nodes, not copied.
    shared_read_only: ClassVar[bool] = False

    def preview(self) -> str:
        """A one-line human description used by trace summaries and canvas overlays."""
        return type(self).__name__


class Document(Contract):
    """A loaded source document."""

    doc_id: str
    text: str
    source: str = ""
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    def preview(self) -> str:
        return f"{self.doc_id}: {_short(self.title or self.text)}"


class Chunk(Contract):
    """A piece of a document, with its character offsets in the document text."""

    chunk_id: str
    doc_id: str
    text: str
    start: int = 0
    end: int = 0
    index: int = 0
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    def preview(self) -> str:
        return f"{self.chunk_id}: {_short(self.text)}"


class SourceRank(Contract):
    """Where a chunk stood in one input ranking (kept through fusion and rerank)."""

    retriever: str
    rank: int
    score: float


class ScoredChunk(Contract):
    """A retrieved chunk with its score, the score's meaning, and its rank in each input list."""

    chunk: Chunk
    score: float
    rank: int = 0
    score_kind: ScoreKind = "similarity"
    higher_is_better: bool = True
    retriever: str = ""
    sources: dict[str, SourceRank] = Field(default_factory=dict)
    #: Fields the cache's size estimate counts where they are held, not here: a ranking's
    #: chunks are the index's (or one per record of an evaluation's search memo).
    held_elsewhere: ClassVar[tuple[str, ...]] = ("chunk",)

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id

    @property
    def doc_id(self) -> str:
        return self.chunk.doc_id

    def preview(self) -> str:
        return f"#{self.rank} {self.chunk.chunk_id} {self.score:.4g}: {_short(self.chunk.text, 60)}"


class Query(Contract):
    """A user question and what query-side nodes made of it."""

    text: str
    original: str = ""
    variants: list[str] = Field(default_factory=list)
    hypothetical: str | None = None
    route: str | None = None

    def all_texts(self) -> list[str]:
        """The text followed by its variants, without duplicates."""
        seen: list[str] = []
        for text in [self.text, *self.variants]:
            if text and text not in seen:
                seen.append(text)
        return seen

    def preview(self) -> str:
        extra = f" (+{len(self.variants)} variants)" if self.variants else ""
        return _short(self.text) + extra


class ChatMessage(Contract):
    role: Literal["system", "user", "assistant"]
    content: str


class Prompt(Contract):
    """A rendered prompt: chat messages plus the evidence it was built from."""

    messages: list[ChatMessage]
    evidence: list[ScoredChunk] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    token_estimate: int = 0

    @property
    def system(self) -> str:
        return "\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def user(self) -> str:
        return self.messages[-1].content if self.messages else ""

    def preview(self) -> str:
        return f"{len(self.messages)} messages, {len(self.evidence)} evidence blocks"


class Citation(Contract):
    ref: str
    doc_id: str = ""
    chunk_id: str | None = None
    valid: bool = True


class Claim(Contract):
    """One checkable statement of an answer (a number, date, identifier or name) and where
    the evidence states it: ``cited`` (a block the answer cites), ``evidence`` (another
    block), ``question`` (only the question says it), ``mismatch`` (a block states it, but
    only beside other subjects than ``about``, the question's) or ``missing``."""

    text: str
    kind: str
    start: int = 0
    end: int = 0
    verdict: str = "missing"
    block: int | None = None
    about: str = ""


class Answer(Contract):
    """Generated text with its citations and the evidence it was given."""

    text: str
    citations: list[Citation] = Field(default_factory=list)
    invalid_citations: list[str] = Field(default_factory=list)
    evidence: list[ScoredChunk] = Field(default_factory=list)
    data: dict[str, Any] | list[Any] | None = None
    model: str = ""
    fallback: bool = False
    query: str = ""
    claims: list[Claim] = Field(default_factory=list)
    absent_terms: list[str] = Field(default_factory=list)
    check_reason: str = ""  # why a check sent it back or refused it, in plain words
    #: Text the pipeline appended to the model's answer (supporting quotes), in order: not
    #: the model's words, so answer metrics read ``own_text`` first and these apart.
    appended: list[str] = Field(default_factory=list)

    @property
    def own_text(self) -> str:
        """The answer without what the pipeline appended to it."""
        text = self.text
        for piece in reversed(self.appended):
            if piece and text.endswith(piece):
                text = text[: -len(piece)]
        return text.rstrip()

    def preview(self) -> str:
        cites = f" [{len(self.citations)} citations]" if self.citations else ""
        return _short(self.text, 100) + cites
