"""What a node visit says on its span: the OpenInference span kind and attributes, the
OpenTelemetry GenAI names alongside where they exist, and our own extras under ``modrag.``.

Everything here reads the trace visit (``NodeVisit``: status, cache reason, the ``details``
a node noted) and the visit's input and output values; nothing here runs inside a node.
Content (document text, messages, questions and answers) is written only when the content
switch is on; ids, scores, ranks, roles, models and token counts always are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openinference.semconv.trace import (
    DocumentAttributes,
    EmbeddingAttributes,
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)

from modrag_studio.engine.core.datatypes import Answer, ChatMessage, Prompt, Query, ScoredChunk
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.run.trace import NodeVisit

Attributes = dict[str, Any]

CHAIN = OpenInferenceSpanKindValues.CHAIN.value
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
RERANKER = OpenInferenceSpanKindValues.RERANKER.value
EMBEDDING = OpenInferenceSpanKindValues.EMBEDDING.value
LLM = OpenInferenceSpanKindValues.LLM.value
EVALUATOR = OpenInferenceSpanKindValues.EVALUATOR.value

#: OpenTelemetry GenAI semantic-convention names (their module is still "incubating" in the
#: Python package, so the names are spelled here).
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_FINISH_REASONS = "gen_ai.response.finish_reasons"

#: At most this many documents per list on a span (the rest are counted, not listed).
MAX_DOCUMENTS = 50
#: Content longer than this is cut (an attribute is not a file).
MAX_TEXT = 8000

_KINDS = {"retriever": RETRIEVER, "reranker": RERANKER, "embedding": EMBEDDING, "llm": LLM,
          "evaluator": EVALUATOR}


def span_kind(node_type: type[NodeType] | None) -> str:
    """The OpenInference span kind a node type declares (``NodeType.span_kind``): CHAIN
    unless it retrieves, reranks or fuses, embeds, or calls a chat model for its output."""
    declared = node_type.span_kind if node_type is not None else None
    return _KINDS[declared] if declared is not None else CHAIN


def visit_attributes(visit: NodeVisit, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                     *, content: bool, node_type: type[NodeType] | None = None) -> Attributes:
    """Every attribute of one node visit's span (``node_type``: the visit's type, which
    declares the span kind; None for a type the registry does not know)."""
    kind = span_kind(node_type)
    attrs: Attributes = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: kind,
        "modrag.node.id": visit.node_id,
        "modrag.node.type": visit.type_id,
        "modrag.iteration": visit.iteration,
        "modrag.status": visit.status,
        "modrag.cached": visit.cached,
    }
    for key, value in (("modrag.cache_reason", visit.cache_reason),
                       ("modrag.cache_key", visit.cache_key),
                       ("modrag.skip_reason", visit.skip_reason),
                       ("modrag.loop", visit.details.get("loop")),
                       ("modrag.pinned", visit.details.get("pinned"))):
        if value:
            attrs[key] = str(value)
    if "bypassed" in visit.details:
        attrs["modrag.bypassed"] = json.dumps(visit.details["bypassed"])
    if visit.warnings:
        attrs["modrag.warnings"] = [str(w) for w in visit.warnings]
    attrs.update(_values(visit, content))
    builder = _BY_KIND.get(kind)
    if builder is not None:
        attrs.update(builder(visit, inputs, outputs, content))
    return attrs


def _values(visit: NodeVisit, content: bool) -> Attributes:
    """input.value / output.value: the visit's value summaries (previews only with content)."""
    attrs: Attributes = {}
    for side, summaries in (("input", visit.inputs), ("output", visit.outputs)):
        if not summaries:
            continue
        shown = {port: s.model_dump(exclude_none=True) if content else
                 {k: v for k, v in s.model_dump(exclude_none=True).items() if k != "preview"}
                 for port, s in summaries.items()}
        attrs[f"{side}.value"] = _cut(json.dumps(shown, ensure_ascii=False))
        attrs[f"{side}.mime_type"] = OpenInferenceMimeTypeValues.JSON.value
    return attrs


# retrieval and reranking -----------------------------------------------------------------
def _retriever(visit: NodeVisit, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
               content: bool) -> Attributes:
    attrs = _documents(SpanAttributes.RETRIEVAL_DOCUMENTS, _ranked(outputs), content)
    query = _query_text(inputs.get("query"))
    if content and query:
        attrs[SpanAttributes.INPUT_VALUE] = _cut(query)
        attrs[SpanAttributes.INPUT_MIME_TYPE] = OpenInferenceMimeTypeValues.TEXT.value
    return attrs


def _reranker(visit: NodeVisit, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
              content: bool) -> Attributes:
    given: list[ScoredChunk] = []
    for name in ("candidates", "rankings", "chunks"):
        given += _flat(inputs.get(name))
    result = _ranked(outputs)
    attrs = _documents(RerankerAttributes.RERANKER_INPUT_DOCUMENTS, given, content)
    attrs.update(_documents(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, result, content))
    attrs[RerankerAttributes.RERANKER_TOP_K] = len(result)
    query = _query_text(inputs.get("query"))
    if content and query:
        attrs[RerankerAttributes.RERANKER_QUERY] = _cut(query)
    model = visit.details.get("embedder") or visit.details.get("model")
    if model:
        attrs[RerankerAttributes.RERANKER_MODEL_NAME] = str(model)
    ranks = [{"chunk_id": item.chunk.chunk_id, "rank": item.rank or n,
              "inputs": {name: source.rank for name, source in item.sources.items()}}
             for n, item in enumerate(result[:MAX_DOCUMENTS], 1) if item.sources]
    if ranks:  # rank per input through fusion and rerank
        attrs["modrag.ranks_by_input"] = json.dumps(ranks)
    return attrs


def _ranked(outputs: Mapping[str, Any]) -> list[ScoredChunk]:
    for name in ("results", "chunks", "kept"):
        found = _flat(outputs.get(name))
        if found:
            return found
    return []


def _flat(value: Any) -> list[ScoredChunk]:
    """Scored chunks in a value: a list of them, or a list of such lists (fusion's rankings)."""
    if not isinstance(value, list):
        return []
    found: list[ScoredChunk] = []
    for item in value:
        if isinstance(item, ScoredChunk):
            found.append(item)
        elif isinstance(item, list):
            found += [x for x in item if isinstance(x, ScoredChunk)]
    return found


def _documents(prefix: str, items: list[ScoredChunk], content: bool) -> Attributes:
    attrs: Attributes = {f"modrag.{prefix}.count": len(items)} if items else {}
    for n, item in enumerate(items[:MAX_DOCUMENTS]):
        base = f"{prefix}.{n}."
        attrs[base + DocumentAttributes.DOCUMENT_ID] = item.chunk.chunk_id
        attrs[base + DocumentAttributes.DOCUMENT_SCORE] = float(item.score)
        metadata = {"doc_id": item.chunk.doc_id, "rank": item.rank or n + 1,
                    "score_kind": item.score_kind}
        if item.retriever:
            metadata["retriever"] = item.retriever
        if item.chunk.source:
            metadata["source"] = item.chunk.source
        if item.sources:
            metadata["ranks_by_input"] = {k: s.rank for k, s in item.sources.items()}
        attrs[base + DocumentAttributes.DOCUMENT_METADATA] = json.dumps(metadata,
                                                                        ensure_ascii=False)
        if content:
            attrs[base + DocumentAttributes.DOCUMENT_CONTENT] = _cut(item.chunk.text)
    return attrs


# embedding ---------------------------------------------------------------------------------
def _embedding(visit: NodeVisit, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
               content: bool) -> Attributes:
    attrs: Attributes = {GEN_AI_OPERATION: "embeddings"}
    model = visit.details.get("model_id") or _model_id(inputs.get("embedder"))
    if model:
        attrs[SpanAttributes.EMBEDDING_MODEL_NAME] = str(model)
        attrs[GEN_AI_REQUEST_MODEL] = str(model)
    chunks = inputs.get("chunks")
    if isinstance(chunks, list):
        attrs["modrag.embedding.count"] = len(chunks)
        if content:
            for n, chunk in enumerate(chunks[:MAX_DOCUMENTS]):
                text = getattr(chunk, "text", None)
                if isinstance(text, str):
                    key = (f"{SpanAttributes.EMBEDDING_EMBEDDINGS}.{n}."
                           f"{EmbeddingAttributes.EMBEDDING_TEXT}")
                    attrs[key] = _cut(text)
    return attrs


def _model_id(spec: Any) -> str:
    value = getattr(spec, "model_id", None) or getattr(spec, "model", None)
    return value if isinstance(value, str) else ""


# chat models -------------------------------------------------------------------------------
def _llm(visit: NodeVisit, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
         content: bool) -> Attributes:
    details = visit.details
    spec = inputs.get("llm")
    attrs: Attributes = {GEN_AI_OPERATION: "chat"}
    backend = getattr(spec, "backend", None)
    if isinstance(backend, str) and backend:
        attrs[SpanAttributes.LLM_PROVIDER] = backend
        attrs[GEN_AI_PROVIDER] = backend
    requested = getattr(spec, "model", None)
    if isinstance(requested, str) and requested:
        attrs[GEN_AI_REQUEST_MODEL] = requested
    for name, key in (("temperature", GEN_AI_TEMPERATURE), ("max_tokens", GEN_AI_MAX_TOKENS)):
        value = getattr(spec, name, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[key] = value
    answer = next((v for v in outputs.values() if isinstance(v, Answer)), None)
    model = details.get("model") or (answer.model if answer is not None else "") or requested
    if model:
        attrs[SpanAttributes.LLM_MODEL_NAME] = str(model)
        attrs[GEN_AI_RESPONSE_MODEL] = str(model)
    prompt_tokens, completion_tokens = details.get("prompt_tokens"), details.get(
        "completion_tokens")
    if isinstance(prompt_tokens, int):
        attrs[SpanAttributes.LLM_TOKEN_COUNT_PROMPT] = prompt_tokens
        attrs[GEN_AI_INPUT_TOKENS] = prompt_tokens
    if isinstance(completion_tokens, int):
        attrs[SpanAttributes.LLM_TOKEN_COUNT_COMPLETION] = completion_tokens
        attrs[GEN_AI_OUTPUT_TOKENS] = completion_tokens
    if isinstance(prompt_tokens, int) and isinstance(completion_tokens, int):
        attrs[SpanAttributes.LLM_TOKEN_COUNT_TOTAL] = prompt_tokens + completion_tokens
    for name in ("time_to_first_token_s", "generation_s", "model_load_s", "tokens_per_s"):
        value = details.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[f"modrag.llm.{name}"] = float(value)
    if details.get("stopped"):
        attrs[GEN_AI_FINISH_REASONS] = [str(details["stopped"])]
    messages = _messages(inputs, spec)
    attrs.update(_message_list(SpanAttributes.LLM_INPUT_MESSAGES, messages, content))
    reply = answer.text if answer is not None else next(
        (v for v in outputs.values() if isinstance(v, str)), None)
    if reply is not None:
        attrs.update(_message_list(SpanAttributes.LLM_OUTPUT_MESSAGES,
                                   [("assistant", reply)], content))
        if content:
            attrs[SpanAttributes.OUTPUT_VALUE] = _cut(reply)
            attrs[SpanAttributes.OUTPUT_MIME_TYPE] = OpenInferenceMimeTypeValues.TEXT.value
    return attrs


def _messages(inputs: Mapping[str, Any], spec: Any) -> list[tuple[str, str]]:
    prompt = inputs.get("prompt")
    if isinstance(prompt, Prompt):
        return [(m.role, m.content) for m in prompt.messages if isinstance(m, ChatMessage)]
    text = inputs.get("text")
    if isinstance(text, str):
        system = getattr(spec, "system", "")
        first = [("system", system)] if isinstance(system, str) and system.strip() else []
        return [*first, ("user", text)]
    return []


def _message_list(prefix: str, messages: list[tuple[str, str]], content: bool) -> Attributes:
    attrs: Attributes = {}
    for n, (role, text) in enumerate(messages):
        attrs[f"{prefix}.{n}.{MessageAttributes.MESSAGE_ROLE}"] = role
        if content:
            attrs[f"{prefix}.{n}.{MessageAttributes.MESSAGE_CONTENT}"] = _cut(text)
    return attrs


def _query_text(value: Any) -> str:
    if isinstance(value, Query):
        return value.text
    return value if isinstance(value, str) else ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text)} characters)"


_BY_KIND = {RETRIEVER: _retriever, RERANKER: _reranker, EMBEDDING: _embedding, LLM: _llm}
