"""Data contracts of the ingest family: load reports, document analyses, plans, ingest reports."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from modrag_studio.engine.core.node import Contract

Strategy = Literal["markdown", "recursive", "sentence", "fixed"]
STRATEGIES: tuple[str, ...] = ("markdown", "recursive", "sentence", "fixed")


class FileProblem(Contract):
    """A file the loader matched but could not read, and why."""

    file: str
    reason: str


class LoadReport(Contract):
    """What ``load.files`` matched, loaded, skipped and could not read."""

    path: str
    glob: str
    files_in_folder: int = Field(0, description="Files under the path before any filter")
    not_matched: int = Field(0, description="Files of a loaded type the glob left out")
    excluded: int = Field(0, description="Files the 'exclude' patterns left out")
    files_matched: int = 0
    files_loaded: int = 0
    documents: int = 0
    unreadable: list[FileProblem] = Field(default_factory=list)
    skipped: list[FileProblem] = Field(default_factory=list)

    def preview(self) -> str:
        bad = f", {len(self.unreadable)} unreadable" if self.unreadable else ""
        skipped = f", {len(self.skipped)} skipped (not documents)" if self.skipped else ""
        return (f"{self.files_loaded}/{self.files_matched} files, {self.documents} documents"
                f"{bad}{skipped}")

    def left_out(self) -> str:
        """``35 files in the folder; 2 match '*_*.md'; 33 not loaded``, or "" when the glob
        left no file of a loaded type out."""
        if not self.not_matched:
            return ""
        missing = self.files_in_folder - self.files_loaded
        return (f"{self.files_in_folder} files in the folder; {self.files_matched} match "
                f"'{self.glob}'; {missing} not loaded")


class DocumentAnalysis(Contract):
    """Structure figures of one text (or of a whole corpus when ``doc_id`` is ``*``)."""

    doc_id: str
    chars: int = 0
    headings: int = 0
    list_items: int = 0
    table_rows: int = 0
    code_blocks: int = 0
    paragraphs: int = 0
    lines: int = 0
    avg_paragraph_chars: float = 0.0
    newline_density: float = Field(0.0, description="Newlines per 1,000 characters")
    headings_per_1k: float = 0.0
    list_items_per_1k: float = 0.0
    table_rows_per_1k: float = 0.0
    code_blocks_per_1k: float = 0.0
    cjk_ratio: float = Field(0.0, description="Share of CJK characters among non-space ones")

    def preview(self) -> str:
        return (f"{self.doc_id}: {self.chars} chars, {self.headings_per_1k:.2f} headings/1k, "
                f"avg paragraph {self.avg_paragraph_chars:.0f}")


class StrategyAttempt(Contract):
    """One strategy tried on a document and the quality checks it failed (none: it passed)."""

    strategy: str
    chunk_size: int
    chunks: int = 0
    avg_chars: float = 0.0
    empty_ratio: float = 0.0
    failed_checks: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failed_checks


class IngestPlan(Contract):
    """A chosen strategy and chunk size, the reason, and the fallbacks still to try."""

    strategy: Strategy
    chunk_size: int
    overlap: int = 0
    reason: str = ""
    fallbacks: list[Strategy] = Field(default_factory=list)
    tried: list[StrategyAttempt] = Field(default_factory=list)
    analysis: DocumentAnalysis | None = None

    def next_plan(self, attempt: StrategyAttempt) -> IngestPlan | None:
        """The plan for the first fallback, recording ``attempt``; None when none is left."""
        if not self.fallbacks:
            return None
        nxt, *rest = self.fallbacks
        reason = (f"{self.strategy} failed {', '.join(attempt.failed_checks)}; "
                  f"falling back to {nxt}")
        return self.model_copy(update={"strategy": nxt, "fallbacks": rest, "reason": reason,
                                       "tried": [*self.tried, attempt]})

    def preview(self) -> str:
        return f"{self.strategy} @ {self.chunk_size} chars ({self.reason})"


class DocumentIngest(Contract):
    """What smart ingest did with one document."""

    doc_id: str
    strategy: str
    chunk_size: int
    chunks: int
    reason: str
    tried: list[StrategyAttempt] = Field(default_factory=list)
    analysis: DocumentAnalysis | None = None


class IngestReport(Contract):
    """Per-document strategy choices of ``ingest.smart`` plus totals."""

    documents: list[DocumentIngest] = Field(default_factory=list)
    strategies: dict[str, int] = Field(default_factory=dict)
    chunks: int = 0
    fallbacks_used: int = 0
    warnings: list[str] = Field(default_factory=list)

    def preview(self) -> str:
        used = ", ".join(f"{k}: {v}" for k, v in sorted(self.strategies.items()))
        return f"{len(self.documents)} documents -> {self.chunks} chunks ({used})"

    def summary(self, limit: int = 20) -> dict[str, Any]:
        """A trace-sized digest: totals and the first ``limit`` document decisions."""
        return {
            "strategies": dict(self.strategies),
            "chunks": self.chunks,
            "fallbacks_used": self.fallbacks_used,
            "documents": [
                {"doc_id": d.doc_id, "strategy": d.strategy, "chunk_size": d.chunk_size,
                 "reason": d.reason, "tried": [t.strategy for t in d.tried]}
                for d in self.documents[:limit]
            ],
        }
