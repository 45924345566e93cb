"""Query transform: passthrough, LLM rewrite, HyDE, decomposition, dictionary synonyms.

The drift guard embeds the question and the LLM's rewrite (or each sub-query) with the
connected embedder and keeps the question when their cosine similarity is below
``drift_threshold``; without an embedder the guard is skipped and the trace says so.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.generation.llm_call import SamplingAware, ask, require_llm
from modrag_nodes.generation.messy_parsing import clean_single_text, parse_list
from modrag_nodes.llm.client import LLMSpec
from modrag_nodes.text.numbers import NUMBER_RUN
from modrag_studio.engine.core.node import (
    Answer,
    InputPort,
    NodeContext,
    NodeType,
    OutputPort,
    Query,
)

Mode = Literal["passthrough", "rewrite", "hyde", "decompose", "synonyms"]

REWRITE_PROMPT = (
    "Rewrite the question below as one clear, self-contained search query. Keep every "
    "name and number. Do not answer it and do not add names, dates or numbers that it does "
    "not contain. Reply with the query only.\n\nQuestion: {question}"
)
HYDE_PROMPT = (
    "Write a short passage (two or three sentences) that would answer the question below, "
    "as it might appear in a reference document. Reply with the passage only.\n\n"
    "Question: {question}"
)
DECOMPOSE_PROMPT = (
    "Split the question below into at most {n} simpler search questions that together "
    "answer it. Write one question per line and nothing else.\n\nQuestion: {question}"
)
FEEDBACK_NOTE = (
    "\n\nAn earlier attempt retrieved evidence that did not support this answer:\n"
    "{feedback}\nWrite a query that would find better evidence."
)


class TransformParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Mode = Field("passthrough", description="What to do with the question")
    max_subqueries: int = Field(3, ge=1, le=20, description="decompose: at most this many")
    synonyms: dict[str, list[str]] = Field(
        default_factory=dict,
        description="synonyms: term -> alternatives (case-insensitive, whole words)",
    )
    synonym_output: Literal["variants", "expand"] = Field(
        "variants", description="synonyms: one variant per substitution, or append the "
                                "alternatives to the question text")
    max_reply_tokens: int = Field(
        64, ge=8, description="rewrite: reply token cap (decompose: per sub-query)")
    drift_guard: bool = Field(True, description="Keep the question when a rewrite drifts")
    drift_threshold: float = Field(
        0.5, ge=-1.0, le=1.0,
        description="Least cosine similarity between question and rewrite (needs an embedder)",
    )
    rewrite_prompt: str = Field(REWRITE_PROMPT, description="rewrite: prompt ({question})",
                                json_schema_extra={"multiline": True})
    hyde_prompt: str = Field(HYDE_PROMPT, description="hyde: prompt ({question})",
                             json_schema_extra={"multiline": True})
    decompose_prompt: str = Field(DECOMPOSE_PROMPT,
                                  description="decompose: prompt ({question}, {n})",
                                  json_schema_extra={"multiline": True})


class QueryTransform(SamplingAware, NodeType):
    type_id = "query.transform"
    title_param = "mode"
    key_params = ("mode",)
    title = "Query transform"
    category = "Query"
    description = (
        "Rewrites the question (LLM), writes a hypothetical answer to embed (HyDE), splits it "
        "into sub-queries, or adds dictionary synonyms; a drift guard keeps the question when "
        "a rewrite wanders off."
    )
    Params = TransformParams
    inputs = (
        InputPort("query", Query, description="The question"),
        InputPort("llm", LLMSpec, required=False, description="Model for rewrite/hyde/decompose"),
        InputPort("embedder", EmbedderSpec, required=False, description="For the drift guard"),
        InputPort("feedback", Answer, required=False,
                  description="An answer judged unsupported (loop-back from a self-check)"),
    )
    outputs = (OutputPort("query", Query, "The transformed query"),)

    def run(self, ctx: NodeContext, params: TransformParams, query: Query,
            llm: LLMSpec | None = None, embedder: EmbedderSpec | None = None,
            feedback: Answer | None = None) -> dict[str, Any]:
        question = query.text
        base = query.model_copy(update={"original": query.original or query.text})
        ctx.note(mode=params.mode, feedback=feedback is not None)
        if params.mode == "passthrough":
            if feedback is not None:
                ctx.warn("feedback arrived but mode is passthrough: the query is unchanged")
            return {"query": base}
        if params.mode == "synonyms":
            return {"query": _with_synonyms(ctx, params, base)}
        model = require_llm(llm, f"for mode '{params.mode}'")
        extra = (FEEDBACK_NOTE.replace("{feedback}", _clip(feedback.text, 500))
                 if feedback else "")
        if params.mode == "rewrite":
            reply = ask(ctx, model, "", params.rewrite_prompt.replace("{question}", question)
                        + extra, purpose="rewrite", max_tokens=params.max_reply_tokens)
            rewrite = clean_single_text(reply)
            if not rewrite:
                ctx.warn("the model's rewrite was empty; keeping the question")
                return {"query": base}
            if rewrite == question:
                return {"query": base}
            invented = invented_numbers(question, rewrite)
            if invented:
                ctx.note(kept_question=True, rejected_rewrite=rewrite,
                         reason="the rewrite adds numbers the question does not contain: "
                                + ", ".join(invented))
                return {"query": base}
            if not _keep_after_guard(ctx, params, embedder, question, [rewrite]):
                ctx.note(kept_question=True, rejected_rewrite=rewrite)
                return {"query": base}
            return {"query": base.model_copy(update={"text": rewrite})}
        if params.mode == "hyde":
            reply = ask(ctx, model, "", params.hyde_prompt.replace("{question}", question)
                        + extra, purpose="hyde")
            passage = clean_single_text(reply)
            if not passage:
                ctx.warn("the model's hypothetical answer was empty; the question is used")
                return {"query": base}
            return {"query": base.model_copy(update={"hypothetical": passage})}
        prompt = params.decompose_prompt.replace("{question}", question).replace(
            "{n}", str(params.max_subqueries))
        reply = ask(ctx, model, "", prompt + extra, purpose="decompose",
                    max_tokens=params.max_reply_tokens * params.max_subqueries)
        subqueries = [q for q in parse_list(reply, params.max_subqueries) if q != question]
        kept = _filter_drift(ctx, params, embedder, question, subqueries)
        if not kept:
            ctx.warn("no usable sub-query in the model's reply; the question is used alone")
        variants = list(dict.fromkeys([*base.variants, *kept]))
        ctx.note(subqueries=kept)
        return {"query": base.model_copy(update={"variants": variants})}


def _similarities(embedder: EmbedderSpec, question: str, texts: list[str],
                  ctx: NodeContext) -> list[float]:
    import numpy as np

    vectors = np.asarray(embed_texts(embedder, [question, *texts], role="query", ctx=ctx),
                         dtype="float64")
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    return [float(v) for v in unit[1:] @ unit[0]]


def invented_numbers(question: str, rewrite: str) -> list[str]:
    """Numbers in ``rewrite`` that ``question`` does not contain (a rewrite that answers or
    invents: "HT-2024-1107 expires on 3/15/2024" for "When does HT-2024-1107 expire?")."""
    known = set(NUMBER_RUN.findall(question))
    return [n for n in dict.fromkeys(NUMBER_RUN.findall(rewrite))
            if n not in known and not any(n in k for k in known)]


def _keep_after_guard(ctx: NodeContext, params: TransformParams, embedder: EmbedderSpec | None,
                      question: str, texts: list[str]) -> bool:
    return bool(_filter_drift(ctx, params, embedder, question, texts))


def _filter_drift(ctx: NodeContext, params: TransformParams, embedder: EmbedderSpec | None,
                  question: str, texts: list[str]) -> list[str]:
    if not texts or not params.drift_guard:
        return texts
    if embedder is None:
        ctx.note(drift_guard="skipped: no embedder connected")
        return texts
    sims = _similarities(embedder, question, texts, ctx)
    kept = [t for t, s in zip(texts, sims, strict=True) if s >= params.drift_threshold]
    rejected = [t for t in texts if t not in kept]
    ctx.note(drift_similarity=[round(s, 4) for s in sims],
             drift_threshold=params.drift_threshold, drift_rejected=rejected)
    if rejected:
        ctx.note(drift_guard=f"{len(rejected)} text(s) below cosine {params.drift_threshold} "
                             "dropped; the question is kept instead")
    return kept


def _with_synonyms(ctx: NodeContext, params: TransformParams, query: Query) -> Query:
    text = query.text
    variants: list[str] = []
    added: list[str] = []
    for term in sorted(params.synonyms, key=lambda t: (-len(t), t.lower())):
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)
        if not pattern.search(text):
            continue
        for alternative in params.synonyms[term]:
            if alternative.lower() == term.lower():
                continue
            added.append(alternative)
            variants.append(pattern.sub(lambda _m, a=alternative: a, text))
    ctx.note(synonyms_added=added)
    if params.synonym_output == "expand":
        extra = [a for a in dict.fromkeys(added) if a.lower() not in text.lower()]
        new_text = f"{text} {' '.join(extra)}" if extra else text
        return query.model_copy(update={"text": new_text})
    merged = list(dict.fromkeys([*query.variants, *(v for v in variants if v != text)]))
    return query.model_copy(update={"variants": merged})


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
