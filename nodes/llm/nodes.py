"""Chat model, generate and chat nodes: the LLM side of a graph.

"Chat model" turns its params into an ``LLMSpec`` on a wire; "Generate" sends a ``Prompt`` to
that model and streams the answer through the run's progress hook; "Chat" answers a plain text.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from modrag_nodes.llm.client import ChatResult, LLMSpec, backend_names, chat
from modrag_nodes.llm.pickers import (
    CHAT_LISTING_SOURCES,
    PICK_TIMEOUT_S,
    ModelListing,
    best_embedded_model,
    list_chat_models,
)
from modrag_studio.engine.core.node import (
    Answer,
    ChatMessage,
    FilePath,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    Prompt,
    Query,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole


def known_backend(name: str) -> str:
    """A registered chat backend's name (a typo such as 'olama' is refused, listing them)."""
    known = backend_names()
    if name not in known:
        raise ValueError(f"unknown LLM backend '{name}' (available: {', '.join(known)})")
    return name


def _backend_choices(schema: dict[str, Any]) -> None:
    schema["enum"] = backend_names()


class ChatModelParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Annotated[str, AfterValidator(known_backend)] = Field(
        "embedded", description="'embedded' (in-process model), 'ollama' or 'openai' "
        "(an OpenAI-compatible server: LM Studio, llama.cpp server, vLLM, a hosted API)",
        json_schema_extra=_backend_choices)
    model: str = Field("", description="Model name; empty = the backend's default "
                       "(embedded: the packaged SmolLM2-135M-Instruct; "
                       "'qwen2.5-coder-1.5b-instruct' for the stronger packaged model)")
    host: str = Field("", description="Server: Ollama host (empty = $OLLAMA_HOST or "
                      "127.0.0.1:11434) or OpenAI base URL (empty = $OPENAI_BASE_URL or "
                      "http://127.0.0.1:8080/v1)")
    api_key_env: str = Field("OPENAI_API_KEY", description="openai: environment variable "
                             "holding the API key (the key itself is never saved in the graph)")
    api_key_file: FilePath = Field(
        "", description="openai: read the API key from this file instead")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 = greedy (deterministic)")
    max_tokens: int = Field(256, ge=1, le=32768, description="Most tokens to generate")
    context_length: int = Field(2048, ge=128, le=262144, description="Context window (tokens)")
    seed: int | None = Field(0, description="Sampling seed; empty = random")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="Request timeout (Ollama)")
    retries: int = Field(3, ge=0, le=10, description="Connection retries (Ollama)")
    system_prompt: str = Field("", description="System message used when the prompt has none")
    engine: Literal["auto", "xllamacpp", "transformers"] = Field(
        "auto", description="Embedded runtime: auto = llama.cpp (xllamacpp) for GGUF files "
        "when installed, else transformers")
    threads: int = Field(0, ge=0, le=256, description="Embedded: CPU threads for the model; "
                         "0 = decode on all cores but one (at most 4), the prompt on all "
                         "(at most 8)")
    repetition_penalty: float = Field(
        1.15, ge=1.0, le=2.0,
        description="Above 1 discourages repeating tokens (1 = off); small models loop without it",
    )
    reuse_prefix: bool = Field(
        True, description="Embedded (llama.cpp): keep the last prompt's KV cache and read only "
        "what a new prompt adds to the prefix they share (a retry reads only its feedback); "
        "off: every prompt is read whole, so a greedy answer never depends on the call before")
    lookup_decoding: bool = Field(
        False, description="Embedded (llama.cpp): draft the next tokens from where the last two "
        "tokens occur earlier in the prompt or answer and check them in one batch (answers "
        "copy from their evidence); faster on a machine busy with other work, slower on an "
        "idle one (docs/llm-backends.md); a greedy answer may differ where the batch rounds "
        "differently. Not used while several questions are asked at once")


class ChatModel(NodeType):
    type_id = "llm.model"
    key_params = ("backend", "model", "temperature")
    title = "Chat model"
    category = "Generation"
    description = ("Chooses the language model (embedded, Ollama or an OpenAI-compatible "
                   "server) and its options.")
    Params = ChatModelParams
    outputs = (OutputPort("llm", LLMSpec, description="Model and options for LLM nodes"),)

    @classmethod
    def new_node_params(cls) -> dict[str, Any]:
        """A new node names the best embedded model installed here (Qwen when present)."""
        return {"backend": "embedded", "model": best_embedded_model()}

    def health(self, params: ChatModelParams) -> str | None:
        if params.backend == "embedded":
            from modrag_nodes.llm.health import embedded_health

            return embedded_health(params.model, params.engine, params.threads)
        if params.backend == "ollama":
            from modrag_nodes.llm.ollama_backend import check_model

            if not params.model.strip():
                raise NodeConfigError("param model: empty; name the Ollama model to use")
            return check_model(params.host.strip() or None, params.model.strip())
        if params.backend == "openai":
            from modrag_nodes.llm.openai_backend import check_model as check_openai

            if not params.model.strip():
                raise NodeConfigError("param model: empty; name the server's model to use")
            return check_openai(params.host.strip() or None, params.model.strip(),
                                key_env=params.api_key_env, key_file=params.api_key_file)
        return None

    #: Params offered from a list (the model picker) -> the params that list depends on.
    choice_sources: ClassVar[dict[str, tuple[str, ...]]] = {"model": CHAT_LISTING_SOURCES}

    def param_listing(self, params: ChatModelParams, name: str,
                      timeout_s: float = PICK_TIMEOUT_S) -> ModelListing | None:
        """The models the configured backend offers for param ``name``; None: free text."""
        if name != "model":
            return None
        return list_chat_models(params.backend, params.host, key_env=params.api_key_env,
                                key_file=params.api_key_file, timeout_s=timeout_s)

    def param_choices(self, params: ChatModelParams, name: str) -> list[str] | None:
        """Values to offer for param ``name`` (the model picker); None: free text only."""
        listing = self.param_listing(params, name)
        return None if listing is None else listing.models

    def env_reads(self, params: ChatModelParams) -> list[tuple[str, str, str]]:
        """(param, environment variable, host it is sent to) the node reads: the API key of
        an OpenAI server, sent to the host of its base URL."""
        if params.backend == "openai" and not params.api_key_file:
            from modrag_nodes.llm.openai_backend import DEFAULT_KEY_ENV, key_destination

            # an empty name reads the default variable (``openai_backend.api_key``)
            return [("api_key_env", params.api_key_env or DEFAULT_KEY_ENV,
                     key_destination(params.host))]
        return []

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
            extra=_extra(params),
        )
        return {"llm": spec}


def _extra(params: ChatModelParams) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if params.repetition_penalty != 1.0:
        extra["repetition_penalty"] = params.repetition_penalty
    if params.backend == "openai":
        extra["api_key_env"] = params.api_key_env
        if params.api_key_file:
            extra["api_key_file"] = params.api_key_file
    if params.backend == "embedded":
        if params.engine != "auto":
            extra["engine"] = params.engine
        if params.threads:
            extra["threads"] = params.threads
        if params.reuse_prefix:
            extra["reuse_prefix"] = True
        if params.lookup_decoding:
            extra["lookup_decoding"] = True
    return extra


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
    span_kind = "llm"
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
    span_kind = "llm"
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
