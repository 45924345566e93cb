"""``VectorIndex``: a handle to a vector collection and the embedder that filled it."""

from __future__ import annotations

from typing import ClassVar

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_studio.engine.core.node import Contract

#: Which driver wrote the index (a ``handles.StoreDriver`` backend): "chroma-persistent",
#: "chroma-http", "lancedb", or a new store's.
VectorBackend = str


class VectorIndex(Contract):
    """Where the vectors live (a folder or a server), which collection, and how they were made.

    ``backend`` says which store wrote it: an embedded Chroma folder (``path``), a Chroma
    server (``host``, ``port``, ``ssl``) or a LanceDB folder (``path``; ``collection`` is the
    table). It is a handle to on-disk (or server) state, not the vectors themselves.
    """

    shared_read_only: ClassVar[bool] = True

    backend: VectorBackend = "chroma-persistent"
    path: str | None = None
    host: str | None = None
    port: int | None = None
    ssl: bool = False
    collection: str
    embedder: EmbedderSpec
    model_id: str
    dim: int
    count: int = 0
    stamp: str = ""

    @property
    def location(self) -> str:
        if self.backend == "chroma-http":
            scheme = "https" if self.ssl else "http"
            return f"{scheme}://{self.host}:{self.port}"
        return str(self.path)

    def preview(self) -> str:
        return f"{self.collection} ({self.count} vectors, {self.model_id}) at {self.location}"
