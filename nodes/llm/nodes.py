"""Chat model, generate and chat nodes: the LLM side of a graph.

"Chat model" turns its params into an ``LLMSpec`` on a wire; "Generate" sends a ``Prompt`` to
that model and streams the answer through the run's progress hook; "Chat" answers a plain text.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.llm.client import ChatResult, LLMSpec, backend_names, chat
from modrag_studio.engine.datatypes import Answer, ChatMessage, Prompt, Query
from modrag_studio.engine.errors import NodeConfigError
from modrag_studio.engine.lineage import EvidenceRole
from modrag_studio.engine.node import NodeContext, NodeType
from modrag_studio.engine.ports import InputPort, OutputPort


class ChatModelParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: str = Field("embedded", description="'embedded' (in-process model) or 'ollama'")
    model: str = Field("", description="Model name; empty = the backend's default "
                       "(embedded: the packaged SmolLM2-135M-Instruct)")
    host: str = Field("", description="Ollama host; empty = $OLLAMA_HOST or 127.0.0.1:11434")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 = greedy (deterministic)")
    max_tokens: int = Field(256, ge=1, le=32768, description="Most tokens to generate")
    context_length: int = Field(2048, ge=128, le=262144, description="Context window (tokens)")
    seed: int | None = Field(0, description="Sampling seed; empty = random")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="Request timeout (Ollama)")
    retries: int = Field(3, ge=0, le=10, description="Connection retries (Ollama)")
    system_prompt: str = Field("", description="System message used when the prompt has none")
    repetition_penalty: float = Field(
        1.15, ge=1.0, le=2.0,
        description="Above 1 discourages repeating tokens (1 = off); small models loop without it",
    )


class ChatModel(NodeType):
    type_id = "llm.model"
    title = "Chat model"
    category = "Generation"
    description = "Chooses the language model (embedded or Ollama) and its options."
    Params = ChatModelParams
    outputs = (OutputPort("llm", LLMSpec, description="Model and options for LLM nodes"),)

    def health(self, params: ChatModelParams) -> str | None:
        if params.backend == "embedded":
            from modrag_nodes.llm.embedded import DEFAULT_MODEL, resolve_model

            name = params.model.strip() or DEFAULT_MODEL
            return f"embedded model {name} at {resolve_model(params.model)}"
        if params.backend == "ollama":
            from modrag_nodes.llm.ollama_backend import check_model

            if not params.model.strip():
                raise NodeConfigError("param model: empty; name the Ollama model to use")
            return check_model(params.host.strip() or None, params.model.strip())
        if params.backend not in backend_names():
            raise NodeConfigError(f"param backend: unknown LLM backend '{params.backend}'")
        return None

    def run(self, ctx: NodeContext, params: ChatModelParams) -> dict[str, Any]:
        known = backend_names()
        if params.backend not in known:
            raise NodeConfigError(
                f"param backend: unknown LLM backend '{params.backend}' "
                f"(available: {', '.join(known)})"
            )
        spec = LLMSpec(
            backend=params.backend, model=params.model.strip(), host=params.host.strip() or None,
            temperature=params.temperature, max_tokens=params.max_tokens,
            context_length=params.context_length, seed=params.seed, timeout_s=params.timeout_s,
            retries=params.retries, system=params.system_prompt,
            extra={"repetition_penalty": params.repetition_penalty}
            if params.repetition_penalty != 1.0 else {},
        )
        return {"llm": spec}


def note_result(ctx: NodeContext, result: ChatResult, spec: LLMSpec) -> None:
    """Put token counts, time to first token and load time into the trace."""
    ctx.note(**result.trace_details())
    if spec.temperature > 0:
        ctx.note(cache="not reused: sampling (temperature > 0)")
    if result.duration_s > 0 and result.completion_tokens:
        ctx.note(tokens_per_s=round(result.completion_tokens / result.duration_s, 2))
    if result.stopped == "length":
        ctx.warn(f"the answer was cut at max_tokens ({result.completion_tokens} tokens)")


def _sampled(inputs: Mapping[str, Any]) -> str | None:
    """A fresh cache-key part when the model samples (temperature > 0): never reuse a sample."""
    spec = inputs.get("llm")
    if isinstance(spec, LLMSpec) and spec.temperature > 0:
        return f"sampled:{uuid.uuid4().hex}"
    return None


class GenerateParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stream: bool = Field(True, description="Stream tokens to the canvas while generating")


class Generate(NodeType):
    type_id = "llm.generate"
    evidence_role = EvidenceRole("passes", inputs=("prompt",))
    title = "Generate"
    category = "Generation"
    description = ("Sends the prompt to the chat model and returns the answer with the evidence "
                   "it was given; tokens stream as they are written.")
    Params = GenerateParams
    inputs = (
        InputPort("prompt", Prompt, description="Messages and evidence"),
        InputPort("llm", LLMSpec, description="From a Chat model node"),
        InputPort("query", Query, required=False, description="The question (kept on the answer)"),
    )
    outputs = (OutputPort("answer", Answer),)

    def fingerprint(self, params: Any, inputs: Mapping[str, Any],
                    run_inputs: Mapping[str, Any]) -> str | None:
        return _sampled(inputs)

    def run(self, ctx: NodeContext, params: GenerateParams, prompt: Prompt, llm: LLMSpec,
            query: Query | None = None) -> dict[str, Any]:
        if not prompt.messages:
            raise NodeConfigError("input prompt: the prompt has no messages")
        result = chat(llm, prompt.messages, ctx=ctx, stream=params.stream)
        note_result(ctx, result, llm)
        answer = Answer(text=result.text.strip(), evidence=list(prompt.evidence),
                        model=result.model, query=query.text if query is not None else "")
        return {"answer": answer}


class ChatTextParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instruction: str = Field("", description="Optional system instruction")


class ChatText(NodeType):
    type_id = "llm.chat"
    title = "Chat"
    category = "Generation"
    description = "Answers a plain text with the chat model (no evidence); handy for demos."
    Params = ChatTextParams
    inputs = (
        InputPort("text", str, description="The user message"),
        InputPort("llm", LLMSpec, description="From a Chat model node"),
    )
    outputs = (OutputPort("text", str),)

    def fingerprint(self, params: Any, inputs: Mapping[str, Any],
                    run_inputs: Mapping[str, Any]) -> str | None:
        return _sampled(inputs)

    def run(self, ctx: NodeContext, params: ChatTextParams, text: str,
            llm: LLMSpec) -> dict[str, Any]:
        messages = [ChatMessage(role="user", content=text)]
        if params.instruction:
            messages.insert(0, ChatMessage(role="system", content=params.instruction))
        result = chat(llm, messages, ctx=ctx)
        note_result(ctx, result, llm)
        return {"text": result.text.strip()}
