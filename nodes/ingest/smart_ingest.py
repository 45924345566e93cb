"""Smart ingest: analyse each document, pick a split strategy and size, check the chunks,
fall back to the next strategy when a check fails.

``ingest.smart`` does it all per document in one node. The same steps exist as nodes for an
explicit graph: ``ingest.analyze`` (documents -> plan) -> ``ingest.split`` (documents + plan
-> chunks) -> ``ingest.quality_check`` (routes chunks to ``passed``, or the next plan to
``failed``, which a loop edge sends back to ``ingest.split``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from modrag_nodes.ingest.analysis import analyze_text, check_chunks, choose_plan, combine
from modrag_nodes.ingest.contracts import (
    STRATEGIES,
    DocumentAnalysis,
    DocumentIngest,
    IngestPlan,
    IngestReport,
    Strategy,
    StrategyAttempt,
)
from modrag_nodes.ingest.splitters import split_with
from modrag_studio.engine.core.node import (
    Chunk,
    Document,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole


class PlanParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target_size: int = Field(1000, ge=50, description="Chunk size when paragraphs say nothing")
    min_size: int = Field(300, ge=20, description="Smallest chunk size the rules may pick")
    max_size: int = Field(2000, ge=50, description="Largest chunk size the rules may pick")
    overlap_ratio: float = Field(0.1, ge=0, lt=0.5, description="Overlap as a share of size")
    fallback_order: list[Strategy] = Field(
        default_factory=lambda: list(STRATEGIES),
        description="Strategies tried after the chosen one fails a check, in this order")

    @field_validator("fallback_order")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class CheckParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_empty_ratio: float = Field(0.1, ge=0, le=1, description="Most chunks with no words")
    min_avg_chars: int = Field(50, ge=0, description="Smallest acceptable average chunk length")
    max_avg_chars: int = Field(3000, ge=1, description="Largest acceptable average length")


class SmartParams(PlanParams, CheckParams):
    pass


def plan_for(analysis: DocumentAnalysis, params: PlanParams) -> IngestPlan:
    return choose_plan(analysis, target_size=params.target_size, min_size=params.min_size,
                       max_size=params.max_size, overlap_ratio=params.overlap_ratio,
                       fallback_order=params.fallback_order)


def check(chunks: list[Chunk], plan: IngestPlan, params: CheckParams) -> StrategyAttempt:
    """Quality checks of ``chunks``; short documents lower the minimum average length."""
    return check_chunks(chunks, plan.strategy, plan.chunk_size,
                        text_chars=_mean_doc_extent(chunks),
                        max_empty_ratio=params.max_empty_ratio,
                        min_avg_chars=params.min_avg_chars, max_avg_chars=params.max_avg_chars)


def _mean_doc_extent(chunks: list[Chunk]) -> int | None:
    extent: dict[str, int] = {}
    for chunk in chunks:
        extent[chunk.doc_id] = max(extent.get(chunk.doc_id, 0), chunk.end)
    return int(sum(extent.values()) / len(extent)) if extent else None


def split_by_plan(documents: list[Document], plan: IngestPlan,
                  ctx: NodeContext | None = None) -> list[Chunk]:
    chunks: list[Chunk] = []
    for number, doc in enumerate(documents):
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress(number, len(documents), f"{plan.strategy}: {doc.doc_id}")
        chunks.extend(split_with(plan.strategy, doc, plan.chunk_size, plan.overlap))
    return chunks


def smart_split(doc: Document, params: SmartParams) -> tuple[list[Chunk], DocumentIngest]:
    """Chunks of one document by the rule-chosen strategy, or by the first fallback whose
    chunks pass every check; when none passes, the attempt with the fewest failed checks."""
    analysis = analyze_text(doc.doc_id, doc.text)
    plan: IngestPlan | None = plan_for(analysis, params)
    first_reason = plan.reason
    tried: list[tuple[StrategyAttempt, list[Chunk], str]] = []
    while plan is not None:
        chunks = split_with(plan.strategy, doc, plan.chunk_size, plan.overlap)
        attempt = check(chunks, plan, params)
        tried.append((attempt, chunks, plan.reason))
        if attempt.passed:
            break
        plan = plan.next_plan(attempt)
    attempt, chunks, reason = min(tried, key=lambda t: (len(t[0].failed_checks),
                                                        tried.index(t)))
    if not attempt.passed:
        reason = (f"no strategy passed every check; kept {attempt.strategy} "
                  f"({', '.join(attempt.failed_checks)})")
    elif len(tried) > 1:
        reason = f"{first_reason}; then {reason}"
    for chunk in chunks:
        chunk.metadata["strategy"] = attempt.strategy
    return chunks, DocumentIngest(doc_id=doc.doc_id, strategy=attempt.strategy,
                                  chunk_size=attempt.chunk_size, chunks=len(chunks),
                                  reason=reason, tried=[t[0] for t in tried],
                                  analysis=analysis)


def smart_ingest(documents: list[Document], params: SmartParams,
                 ctx: NodeContext | None = None) -> tuple[list[Chunk], IngestReport]:
    report = IngestReport()
    chunks: list[Chunk] = []
    for number, doc in enumerate(documents):
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress(number, len(documents), doc.doc_id)
        doc_chunks, record = smart_split(doc, params)
        chunks.extend(doc_chunks)
        report.documents.append(record)
        if len(record.tried) > 1:
            report.fallbacks_used += 1
        if not any(t.passed for t in record.tried):
            report.warnings.append(f"{doc.doc_id}: {record.reason}")
    report.strategies = dict(Counter(d.strategy for d in report.documents))
    report.chunks = len(chunks)
    return chunks, report


class SmartIngest(NodeType):
    type_id = "ingest.smart"
    key_params = ("target_size",)
    evidence_role = EvidenceRole("splits", outputs=("chunks",))
    category = "Chunking"
    title = "Smart ingest"
    description = ("Analyses each document (headings, lists, tables, code, paragraphs), picks "
                   "a split strategy and chunk size, checks chunk quality and falls back to "
                   "the next strategy when a check fails.")
    Params = SmartParams
    inputs = (InputPort("documents", list[Document], description="Documents to split"),)
    outputs = (OutputPort("chunks", list[Chunk], "Chunks (metadata.strategy says how)"),
               OutputPort("report", IngestReport, "Per-document strategy, reason, attempts"))

    def run(self, ctx: NodeContext, params: SmartParams, documents: list[Document]
            ) -> dict[str, Any]:
        chunks, report = smart_ingest(documents, params, ctx)
        ctx.progress(1, 1, f"{len(chunks)} chunks")
        for warning in report.warnings[:20]:
            ctx.warn(warning)
        top = max(report.strategies.items(), key=lambda kv: kv[1])[0] if report.strategies \
            else ""
        first = report.documents[0] if report.documents else None
        ctx.note(strategy=top if len(report.documents) != 1 else first.strategy,
                 reason=first.reason if first and len(report.documents) == 1
                 else f"per document; {report.fallbacks_used} used a fallback",
                 tried=[t.strategy for t in first.tried] if first else [],
                 **report.summary())
        return {"chunks": chunks, "report": report}


class AnalyzeDocuments(NodeType):
    type_id = "ingest.analyze"
    key_params = ("target_size",)
    category = "Chunking"
    title = "Analyse documents"
    description = ("Measures structure (headings, lists, tables, code blocks per 1,000 chars, "
                   "paragraph length, newline density) and plans a split strategy and size.")
    Params = PlanParams
    inputs = (InputPort("documents", list[Document], description="Documents to analyse"),)
    outputs = (OutputPort("plan", IngestPlan, "Strategy, chunk size, reason and fallbacks"),
               OutputPort("analyses", list[DocumentAnalysis], "One analysis per document"))

    def run(self, ctx: NodeContext, params: PlanParams, documents: list[Document]
            ) -> dict[str, Any]:
        analyses = []
        for number, doc in enumerate(documents):
            ctx.check_cancelled()
            ctx.progress(number, len(documents), doc.doc_id)
            analyses.append(analyze_text(doc.doc_id, doc.text))
        plan = plan_for(combine(analyses), params)
        ctx.note(strategy=plan.strategy, chunk_size=plan.chunk_size, reason=plan.reason,
                 fallbacks=list(plan.fallbacks))
        return {"plan": plan, "analyses": analyses}


class SplitByPlan(NodeType):
    type_id = "ingest.split"
    evidence_role = EvidenceRole("splits", inputs=("documents",), outputs=("chunks",))
    category = "Chunking"
    title = "Split by plan"
    description = "Splits documents with the strategy and chunk size of an ingest plan."
    inputs = (InputPort("documents", list[Document], description="Documents to split"),
              InputPort("plan", IngestPlan, description="From ingest.analyze or a fallback"))
    outputs = (OutputPort("chunks", list[Chunk], "Chunks"),
               OutputPort("plan", IngestPlan, "The plan used (for ingest.quality_check)"))

    def run(self, ctx: NodeContext, params: Any, documents: list[Document],
            plan: IngestPlan) -> dict[str, Any]:
        chunks = split_by_plan(documents, plan, ctx)
        ctx.progress(1, 1, f"{len(chunks)} chunks")
        ctx.note(strategy=plan.strategy, chunk_size=plan.chunk_size, reason=plan.reason,
                 tried=[t.strategy for t in plan.tried], chunks=len(chunks))
        return {"chunks": chunks, "plan": plan}


class QualityCheck(NodeType):
    type_id = "ingest.quality_check"
    category = "Chunking"
    title = "Chunk quality check"
    description = ("Routes chunks to 'passed' when they pass the checks (at least one chunk, "
                   "few empty chunks, average length in range); otherwise sends the next "
                   "fallback plan to 'failed' (loop it back to ingest.split). With no fallback "
                   "left the chunks pass with a warning.")
    Params = CheckParams
    routes = True
    inputs = (InputPort("chunks", list[Chunk], description="Chunks to check"),
              InputPort("plan", IngestPlan, description="The plan that made them"))
    outputs = (OutputPort("passed", list[Chunk], "Chunks that passed"),
               OutputPort("failed", IngestPlan, "The next plan to try"),
               OutputPort("plan", IngestPlan, "The final plan with every attempt (on pass)"))

    def run(self, ctx: NodeContext, params: CheckParams, chunks: list[Chunk],
            plan: IngestPlan) -> dict[str, Any]:
        attempt = check(chunks, plan, params)
        tried = [t.strategy for t in plan.tried] + [plan.strategy]
        if attempt.passed:
            ctx.note(route="passed", strategy=plan.strategy, tried=tried,
                     reason=f"{plan.strategy} passed: {attempt.chunks} chunks, avg "
                            f"{attempt.avg_chars:.0f} chars")
            final = plan.model_copy(update={"tried": [*plan.tried, attempt]})
            return {"passed": chunks, "plan": final}
        nxt = plan.next_plan(attempt)
        if nxt is None:
            message = (f"{plan.strategy} failed {', '.join(attempt.failed_checks)} and no "
                       "fallback is left; passing its chunks")
            ctx.warn(message)
            ctx.note(route="passed", strategy=plan.strategy, tried=tried, reason=message)
            final = plan.model_copy(update={"tried": [*plan.tried, attempt]})
            return {"passed": chunks, "plan": final}
        ctx.note(route="failed", strategy=plan.strategy, tried=tried, reason=nxt.reason)
        return {"failed": nxt}
