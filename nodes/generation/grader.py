"""Document grader: one LLM call grades a batch of chunks yes/no for relevance."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.llm_call import SamplingAware, ask
from modrag_nodes.generation.messy_parsing import parse_graded_lines
from modrag_nodes.llm.client import LLMSpec
from modrag_studio.engine.datatypes import Query, ScoredChunk
from modrag_studio.engine.lineage import EvidenceRole
from modrag_studio.engine.node import NodeContext, NodeType
from modrag_studio.engine.ports import InputPort, OutputPort

GRADE_PROMPT = (
    "Question: {question}\n\n{documents}\n\n"
    "For each document, say whether it helps to answer the question. Write one line per "
    "document in the form \"[doc N] yes\" or \"[doc N] no\", and nothing else."
)
GRADE_SYSTEM = "You grade the relevance of documents to a question. You reply tersely."


class GraderParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_chars_per_chunk: int = Field(600, ge=50, description="Chunk text shown to the model")
    prompt: str = Field(GRADE_PROMPT, json_schema_extra={"multiline": True},
                        description="Grading prompt ({question}, {documents})")
    system: str = Field(GRADE_SYSTEM, description="System instructions for the grader")


class DocumentGrader(SamplingAware, NodeType):
    type_id = "grade.documents"
    evidence_role = EvidenceRole("filters", outputs=("kept",), dropped_port="dropped")
    title = "Document grader"
    category = "Checks"
    description = (
        "Asks the model once whether each chunk is relevant (yes/no); chunks whose line cannot "
        "be read are kept. When none is relevant, only 'dropped' and 'none_relevant' emit."
    )
    routes = True
    Params = GraderParams
    inputs = (
        InputPort("query", Query, description="The question"),
        InputPort("chunks", list[ScoredChunk], description="Chunks to grade"),
        InputPort("llm", LLMSpec, description="The grading model"),
    )
    outputs = (
        OutputPort("kept", list[ScoredChunk], "Chunks graded relevant (or unreadable)"),
        OutputPort("dropped", list[ScoredChunk], "Chunks graded not relevant"),
        OutputPort("query", Query, "The query, when some chunk is kept (gates the branch that "
                                   "uses 'kept', since the prompt's evidence port is optional)"),
        OutputPort("none_relevant", Query, "The query, when no chunk is relevant"),
    )

    def run(self, ctx: NodeContext, params: GraderParams, query: Query,
            chunks: list[ScoredChunk], llm: LLMSpec) -> dict[str, Any]:
        if not chunks:
            ctx.note(route="none_relevant", reason="no chunks to grade")
            return {"dropped": [], "none_relevant": query}
        documents = "\n\n".join(
            f"[doc {n}] {_clip(item.chunk.text, params.max_chars_per_chunk)}"
            for n, item in enumerate(chunks, start=1)
        )
        prompt = params.prompt.replace("{question}", query.text).replace(
            "{documents}", documents)
        reply = ask(ctx, llm, params.system, prompt, purpose="grade",
                    max_tokens=12 * len(chunks) + 16)
        grades, unreadable = parse_graded_lines(reply, len(chunks))
        kept: list[ScoredChunk] = []
        dropped: list[ScoredChunk] = []
        verdicts: dict[str, str] = {}
        ungraded: list[str] = []
        for position, item in enumerate(chunks):
            verdict = grades.get(position)
            if verdict is None:
                ungraded.append(item.chunk_id)
                verdicts[item.chunk_id] = "unreadable (kept)"
                kept.append(item)
            elif verdict:
                verdicts[item.chunk_id] = "yes"
                kept.append(item)
            else:
                verdicts[item.chunk_id] = "no"
                dropped.append(item)
        if ungraded:
            ctx.warn(f"no readable grade for {len(ungraded)} chunk(s), kept: "
                     + ", ".join(ungraded))
        ctx.note(grades=verdicts, kept=len(kept), dropped=len(dropped),
                 unreadable_lines=unreadable)
        if not kept:
            ctx.note(route="none_relevant", reason="every chunk was graded not relevant")
            return {"dropped": dropped, "none_relevant": query}
        ctx.note(route="kept", reason=f"{len(kept)} of {len(chunks)} chunks kept")
        return {"kept": kept, "dropped": dropped, "query": query}


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
