"""The embedding models a kind offers, for the embedding node's model picker: a server's
list (Ollama, OpenAI-compatible, asked through the chat pickers' listings) or the packaged
default model."""

from __future__ import annotations

from modrag_nodes.embedding.embedder import DEFAULT_MODELS
from modrag_nodes.llm.pickers import PICK_TIMEOUT_S, ModelListing, ollama_listing, openai_listing

#: Params of an embedding model node whose change means the list must be asked again.
EMBED_LISTING_SOURCES = ("kind", "host")


def list_embedding_models(kind: str, host: str = "",
                          timeout_s: float = PICK_TIMEOUT_S) -> ModelListing:
    """The embedding models of ``kind``: a server's list, or the packaged default model."""
    if kind == "ollama":
        return ollama_listing(host, timeout_s)
    if kind == "openai":
        return openai_listing(host, "OPENAI_API_KEY", "", timeout_s)
    if kind in DEFAULT_MODELS:
        return ModelListing([DEFAULT_MODELS[kind]], f"the packaged {kind} model")
    return ModelListing(error=f"unknown embedding kind '{kind}'")
