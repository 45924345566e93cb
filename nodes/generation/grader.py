"""Document grader: the LLM grades chunks yes/no for relevance, per chunk or per batch."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.llm_call import SamplingAware, ask
from modrag_nodes.generation.messy_parsing import parse_graded_lines, parse_yes_no
from modrag_nodes.llm.client import LLMSpec
from modrag_studio.engine.core.node import (
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
    ScoredChunk,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

GRADE_PROMPT = (
    "Question: {question}\n\n{documents}\n\n"
    "For each document, say whether it helps to answer the question. Write one line per "
    "document in the form \"[doc N] yes\" or \"[doc N] no\", and nothing else."
)
GRADE_SYSTEM = "You grade the relevance of documents to a question. You reply tersely."
GRADE_ONE_PROMPT = (
    "Document:\n{document}\n\nQuestion: {question}\n\n"
    "Does the document contain information that helps to answer the question? "
    "Answer yes or no."
)
GRADE_ONE_SYSTEM = "You judge whether a document is relevant to a question. Answer yes or no."


class GraderParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["each", "batch"] = Field(
        "each", description="each: one short call per chunk; batch: one call grades every "
        "chunk (fewer prompt tokens, but small models grade a batch badly: Qwen2.5-1.5B "
        "answered 'no' for every chunk of a batch, the one holding the answer included)")
    max_chars_per_chunk: int = Field(600, ge=50, description="Chunk text shown to the model")
    prompt: str = Field(GRADE_PROMPT, json_schema_extra={"multiline": True},
                        description="batch: grading prompt ({question}, {documents})")
    system: str = Field(GRADE_SYSTEM, description="batch: system instructions")
    prompt_each: str = Field(GRADE_ONE_PROMPT, json_schema_extra={"multiline": True},
                             description="each: grading prompt ({question}, {document})")
    system_each: str = Field(GRADE_ONE_SYSTEM, description="each: system instructions")


class DocumentGrader(SamplingAware, NodeType):
    type_id = "grade.documents"
    key_params = ("mode",)
    evidence_role = EvidenceRole("filters", outputs=("kept",), dropped_port="dropped")
    title = "Document grader"
    category = "Checks"
    description = (
        "Asks the model whether each chunk is relevant to the user's question (yes/no), one "
        "chunk per call or all at once; chunks whose grade cannot be read are kept. When none "
        "is relevant, only 'dropped' and 'none_relevant' emit."
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
        question = query.original or query.text  # a rewrite serves retrieval, not grading
        if params.mode == "each":
            grades, unreadable = _grade_each(ctx, params, question, chunks, llm)
        else:
            grades, unreadable = _grade_batch(ctx, params, question, chunks, llm)
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


def _grade_batch(ctx: NodeContext, params: GraderParams, question: str,
                 chunks: list[ScoredChunk], llm: LLMSpec) -> tuple[dict[int, bool], list[str]]:
    documents = "\n\n".join(
        f"[doc {n}] {_clip(item.chunk.text, params.max_chars_per_chunk)}"
        for n, item in enumerate(chunks, start=1)
    )
    prompt = params.prompt.replace("{question}", question).replace("{documents}", documents)
    reply = ask(ctx, llm, params.system, prompt, purpose="grade",
                max_tokens=12 * len(chunks) + 16)
    return parse_graded_lines(reply, len(chunks))


def _grade_each(ctx: NodeContext, params: GraderParams, question: str,
                chunks: list[ScoredChunk], llm: LLMSpec) -> tuple[dict[int, bool], list[str]]:
    grades: dict[int, bool] = {}
    unreadable: list[str] = []
    replies: list[str] = []
    for position, item in enumerate(chunks):
        prompt = params.prompt_each.replace("{question}", question).replace(
            "{document}", _clip(item.chunk.text, params.max_chars_per_chunk))
        reply = ask(ctx, llm, params.system_each, prompt, purpose="grade", max_tokens=4)
        replies.append(reply)
        ctx.progress(position + 1, len(chunks), f"graded {position + 1} of {len(chunks)}")
        verdict = parse_yes_no(reply)
        if verdict is None:
            unreadable.append(reply.strip())
        else:
            grades[position] = verdict
    ctx.note(grade_reply=replies)
    return grades, unreadable


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
