"""``store.chroma``: keeps a Chroma collection in step with a list of chunks, incrementally.

The synchronisation (what is embedded, relabelled or deleted, and the guards) is the one of
``vectorstore.sync``; this module opens the collection and writes it. The collection metadata
records the embedder's model id and dimension.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from modrag_nodes.embedding.contracts import EmbeddedChunks
from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import chroma_store as cs
from modrag_nodes.vectorstore import handles, sync
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.records import embedder_of as embedder_of
from modrag_nodes.vectorstore.sync import DEFAULT_DELETE_SHARE as DEFAULT_DELETE_SHARE
from modrag_nodes.vectorstore.sync import delete_share_ok as delete_share_ok
from modrag_nodes.vectorstore.write_lock import collection_lock, no_writer
from modrag_studio.engine.core.node import (
    Chunk,
    FolderPath,
    NodeContext,
    OutputPort,
)
from modrag_studio.engine.trust.store_mode import refuse_write, stores_read_only

_COLLECTION = r"^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$"
TYPE_ID = "store.chroma"


class ChromaParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["persistent", "http"] = Field(
        "persistent", description="Embedded Chroma in a folder, or a Chroma server"
    )
    path: FolderPath = Field(
        "", description="Folder of the embedded store (empty: <data dir>/chroma)")
    host: str = Field("localhost", description="Chroma server host (backend 'http')")
    port: int = Field(8000, ge=1, le=65535, description="Chroma server port (backend 'http')")
    ssl: bool = Field(False, description="Use https for the Chroma server")
    collection: str = Field(
        "modrag", min_length=3, max_length=512, pattern=_COLLECTION,
        description="Collection name: 3-512 of A-Z a-z 0-9 . _ -, starting and ending with a "
        "letter or digit",
    )
    delete_missing: bool = sync.delete_missing_field()
    max_delete_share: float = sync.max_delete_share_field()
    on_embedder_change: sync.EmbedderChange = sync.on_embedder_change_field()

    @field_validator("collection")
    @classmethod
    def _chroma_name(cls, value: str) -> str:
        if ".." in value:
            raise ValueError("collection name must not contain '..'")
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            return value
        raise ValueError("collection name must not be an IPv4 address")


def location(params: ChromaParams, work_dir: Path | None = None) -> tuple[Any, ...]:
    """The client key for these params (``work_dir``: the run's work folder by default)."""
    if params.backend == "http":
        return ("chroma-http", params.host, params.port, params.ssl)
    return ("chroma-persistent", str(sync.store_folder(params.path, "chroma", work_dir)))


class ChromaStore(sync.StoreNode):
    type_id = TYPE_ID
    key_params = ("backend", "collection")
    corpus_params = ("collection",)
    title = "Chroma vector store"
    description = (
        "Indexes chunks in a Chroma collection (a local folder or a Chroma server), embedding "
        "only new or changed chunks and deleting removed ones."
    )
    Params = ChromaParams
    outputs = (OutputPort("index", VectorIndex, "Handle to the synchronised collection"),)

    def store_writes(self, params: ChromaParams, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        """What the trust list says this store changes outside its graph's folder (see
        ``sync.store_writes``)."""
        return sync.store_writes(params, params.path if params.backend == "persistent" else "",
                                 outside, label="Chroma", folder="chroma",
                                 remote=params.backend == "http")

    def health(self, params: ChromaParams) -> str | None:
        from modrag_nodes.vectorstore.chroma_health import folder_health, server_health

        key = location(params)
        if key[0] == "chroma-http":
            return server_health(params.host, params.port, params.ssl)
        return folder_health(Path(key[1]), params.collection)

    def opened(self, params: ChromaParams) -> tuple[Mapping[str, Any], Callable[[], int]] | None:
        """A persistent store is read again only after something committed to it (see
        ``chroma_store.store_version``), so repeated runs such as an evaluation's queries check
        it once."""
        key = location(params)
        collection, version = cs.open_collection(key, params.collection)
        if collection is None:
            return None
        return (collection.metadata or {},
                lambda: cs.count_at(key, params.collection, collection, version))

    def run(self, ctx: NodeContext, params: ChromaParams, chunks: list[Chunk] | None = None,
            embedder: EmbedderSpec | None = None,
            embedded: EmbeddedChunks | None = None) -> dict[str, Any]:
        chunks, spec, given = sync.resolve_inputs(chunks, embedder, embedded)
        key = location(params, ctx.work_dir)
        handles.hold(key, ctx.resources)  # closed with the run's resources
        read_only = stores_read_only()
        cs.refresh(key)  # another process may have written the folder since
        client = cs.client_for(key)  # names an unusable folder before any lock file is made
        with (no_writer(key, params.collection) if read_only else
              collection_lock(key, params.collection, should_stop=lambda: ctx.cancel.cancelled)):
            collection = open_for_write(client, params, spec, ctx.warn)
            done = sync.synchronise(ctx, params, _Target(client, collection), chunks, spec,
                                    given, type_id=TYPE_ID, location=_describe(key))
            if not read_only:
                cs.note_own_write(key)
        remote = key[0] == "chroma-http"
        return {"index": VectorIndex(
            backend="chroma-http" if remote else "chroma-persistent",
            path=None if remote else key[1], host=params.host if remote else None,
            port=params.port if remote else None, ssl=params.ssl, collection=params.collection,
            embedder=spec, model_id=spec.model_id, dim=done.dim, count=done.count,
            stamp=done.stamp)}


class _Target:
    """A Chroma collection as ``sync.synchronise`` writes it."""

    def __init__(self, client: Any, collection: Any) -> None:
        self.client, self.collection, self.name = client, collection, collection.name

    def stored_state(self) -> dict[str, tuple[str, str]]:
        return cs.stored_state(self.collection)

    def sources(self, ids: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in cs.batches(ids, cs.PAGE):
            page = self.collection.get(ids=part, include=["metadatas"])
            for record_id, meta in zip(page["ids"], page["metadatas"] or [], strict=False):
                found[record_id] = str((meta or {}).get("source", ""))
        return found

    def metadata(self) -> dict[str, Any]:
        return dict(self.collection.metadata or {})

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        self.collection.modify(metadata=metadata)

    def write(self, ctx: NodeContext, chunks: list[Chunk], plan: sync.Plan,
              vectors: dict[str, Any]) -> None:
        import numpy as np

        by_id = {c.chunk_id: c for c in chunks}
        size = cs.max_batch(self.client)
        for ids in cs.batches(plan["deleted"], size):
            ctx.check_cancelled()
            self.collection.delete(ids=ids)
        for ids in cs.batches(plan["added"] + plan["updated"], size):
            ctx.check_cancelled()
            self.collection.upsert(
                ids=ids,
                embeddings=np.stack([vectors[i] for i in ids]).astype(np.float32),
                documents=[by_id[i].text for i in ids],
                metadatas=[cs.chunk_metadata(by_id[i]) for i in ids],
            )
        for ids in cs.batches(plan["relabelled"], size):
            ctx.check_cancelled()
            self.collection.update(ids=ids,
                                   metadatas=[cs.chunk_metadata(by_id[i]) for i in ids])


def open_for_write(client: Any, params: ChromaParams, spec: EmbedderSpec,
                   warn: Callable[[str], None]) -> Any:
    """The collection a writer synchronises (created when missing, rebuilt or refused when
    it was built with another embedder), refused while stores are read-only; every writer
    (this node, ``modrag index --ray``) opens it here, holding the collection's write lock."""
    collection = cs.get_collection(client, params.collection)
    if collection is None:
        refuse_write(f"{TYPE_ID}: collection '{params.collection}' does not exist")
        try:
            return cs.create_collection(client, params.collection, spec, None)
        except Exception as exc:  # created meanwhile by a writer without our lock (a server)
            collection = cs.get_collection(client, params.collection)
            if collection is None or "already exists" not in str(exc):
                raise
            return collection
    stored_id = (collection.metadata or {}).get(cs.META_MODEL_ID)
    if not sync.must_rebuild(params, stored_id, spec, TYPE_ID, warn):
        return collection
    client.delete_collection(params.collection)
    return cs.create_collection(client, params.collection, spec, None)


def check_delete_share(params: ChromaParams, deleting: int, stored: int) -> None:
    """``sync.check_delete_share`` for a Chroma collection (a Ray indexing job checks here)."""
    sync.check_delete_share(params, deleting, stored, TYPE_ID)


def _describe(key: tuple[Any, ...]) -> str:
    if key[0] == "chroma-http":
        return f"{'https' if key[3] else 'http'}://{key[1]}:{key[2]}"
    return str(key[1])
