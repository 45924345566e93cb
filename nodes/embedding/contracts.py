"""``EmbeddedChunks``: chunks with their vectors, the model id and dimension travelling along."""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from pydantic import model_validator

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_studio.engine.core.node import Chunk, Contract


class EmbeddedChunks(Contract):
    """Chunks and their vectors (float32 numpy array, one row per chunk, same order).

    Shared between nodes by reference (not copied): consumers must not modify it.
    """

    shared_read_only: ClassVar[bool] = True

    chunks: list[Chunk]
    vectors: Any
    model_id: str
    dim: int
    embedder: EmbedderSpec | None = None
    normalized: bool = True

    @model_validator(mode="after")
    def _check_shape(self) -> EmbeddedChunks:
        shape = getattr(self.vectors, "shape", None)
        if shape is None or len(shape) != 2:
            raise ValueError("vectors must be a 2-D array (one row per chunk)")
        if shape[0] != len(self.chunks) or (shape[0] and shape[1] != self.dim):
            raise ValueError(
                f"vectors have shape {tuple(shape)}, expected ({len(self.chunks)}, {self.dim})"
            )
        return self

    @property
    def count(self) -> int:
        return len(self.chunks)

    def vector_of(self, chunk_id: str) -> Any:
        for row, chunk in enumerate(self.chunks):
            if chunk.chunk_id == chunk_id:
                return self.vectors[row]
        raise KeyError(chunk_id)

    def preview(self) -> str:
        return f"{len(self.chunks)} chunks x {self.dim} dims ({self.model_id})"


def content_hash(text: str) -> str:
    """What decides whether a chunk must be embedded again: its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def record_hash(chunk: Chunk) -> str:
    """Every stored field of a chunk (text, ids, offsets, metadata)."""
    data = json.dumps(chunk.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                      default=repr)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]
