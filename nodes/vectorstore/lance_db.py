"""``store.lancedb``: keeps a LanceDB table (embedded, in a folder) in step with a list of
chunks, incrementally, with the ports and synchronisation of ``store.chroma``.

The synchronisation (what is embedded, relabelled or deleted, the delete-share guard, the
read-only refusal) is the one of ``vectorstore.sync``; the one-writer lock is
``write_lock.collection_lock``; this module opens the table and writes it. Searches are exact
(no approximate index is built), by cosine distance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.embedding.contracts import EmbeddedChunks
from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import handles, sync
from modrag_nodes.vectorstore import lance_store as ls
from modrag_nodes.vectorstore import records as rec
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.write_lock import collection_lock, no_writer
from modrag_studio.engine.core.node import (
    Chunk,
    FolderPath,
    ModragError,
    NodeConfigError,
    NodeContext,
    OutputPort,
)
from modrag_studio.engine.trust.store_mode import refuse_write, stores_read_only

TYPE_ID = "store.lancedb"
_TABLE = r"^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$"


class LanceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: FolderPath = Field(
        "", description="Folder of the LanceDB database (empty: <data dir>/lancedb)")
    collection: str = Field(
        "modrag", min_length=3, max_length=512, pattern=_TABLE,
        description="Table name: 3-512 of A-Z a-z 0-9 . _ -, starting and ending with a "
        "letter or digit",
    )
    delete_missing: bool = sync.delete_missing_field()
    max_delete_share: float = sync.max_delete_share_field()
    on_embedder_change: sync.EmbedderChange = sync.on_embedder_change_field()


def location(params: LanceParams, work_dir: Path | None = None) -> tuple[str, str]:
    """The store's location key ``("lancedb", folder)`` (``work_dir``: the run's work folder
    by default)."""
    return (ls.BACKEND, str(sync.store_folder(params.path, "lancedb", work_dir)))


class LanceDBStore(sync.StoreNode):
    type_id = TYPE_ID
    key_params = ("collection",)
    corpus_params = ("collection",)
    title = "LanceDB vector store"
    description = (
        "Indexes chunks in a LanceDB table (embedded, in a local folder), embedding only new "
        "or changed chunks and deleting removed ones; the same ports and synchronisation as "
        "the Chroma store, so either feeds the vector retriever."
    )
    Params = LanceParams
    outputs = (OutputPort("index", VectorIndex, "Handle to the synchronised table"),)

    def store_writes(self, params: LanceParams, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        """What the trust list says this store changes outside its graph's folder (see
        ``sync.store_writes``)."""
        return sync.store_writes(params, params.path, outside, label="LanceDB",
                                 folder="lancedb")

    def health(self, params: LanceParams) -> str | None:
        from modrag_nodes.vectorstore.store_health import folder_health

        folder = Path(location(params)[1])
        return folder_health(folder, params.collection, "LanceDB",
                             lambda: ls.folder_problem(folder, params.collection),
                             lambda: _describe_table(folder, params.collection))

    def opened(self, params: LanceParams) -> tuple[Mapping[str, Any], Callable[[], int]] | None:
        key = location(params)
        collection, version = ls.open_collection(key, params.collection)
        if collection is None:
            return None
        return (collection.metadata,
                lambda: ls.count_at(key, params.collection, collection, version))

    def run(self, ctx: NodeContext, params: LanceParams, chunks: list[Chunk] | None = None,
            embedder: EmbedderSpec | None = None,
            embedded: EmbeddedChunks | None = None) -> dict[str, Any]:
        chunks, spec, given = sync.resolve_inputs(chunks, embedder, embedded)
        key = location(params, ctx.work_dir)
        handles.hold(key, ctx.resources)  # closed with the run's resources
        folder = key[1]
        if not Path(folder).is_dir():
            refuse_write(f"{TYPE_ID}: LanceDB folder {folder} does not exist")
        try:
            with (no_writer(key, params.collection) if stores_read_only() else
                  collection_lock(key, params.collection,
                                  should_stop=lambda: ctx.cancel.cancelled)):
                target = open_for_write(folder, params, spec, ctx.warn)
                done = sync.synchronise(ctx, params, target, chunks, spec, given,
                                        type_id=TYPE_ID, location=folder)
        except ModragError:
            raise
        except Exception as exc:  # LanceDB's own (I/O, a damaged table)
            problem = ls.folder_problem(Path(folder), params.collection) or "the table may " \
                "be corrupted or written by another LanceDB version"
            raise NodeConfigError(
                f"{TYPE_ID}: cannot write table '{params.collection}' in LanceDB folder "
                f"{folder}: {problem} ({ls.error_text(exc)})") from exc
        return {"index": VectorIndex(
            backend="lancedb", path=folder, collection=params.collection, embedder=spec,
            model_id=spec.model_id, dim=done.dim, count=done.count, stamp=done.stamp)}


def open_for_write(folder: str, params: LanceParams, spec: EmbedderSpec,
                   warn: Callable[[str], None]) -> _Target:
    """The table a writer synchronises (made at its first write when missing, rebuilt or
    refused when it was built with another embedder), refused while stores are read-only;
    the caller holds the table's write lock."""
    table = ls.open_table(folder, params.collection)
    if table is None:
        refuse_write(f"{TYPE_ID}: collection '{params.collection}' does not exist")
        return _Target(folder, params.collection, None)
    stored_id = ls.metadata_of(table).get(rec.META_MODEL_ID)
    if sync.must_rebuild(params, stored_id, spec, TYPE_ID, warn):
        ls.drop_table(folder, params.collection)
        return _Target(folder, params.collection, None)
    return _Target(folder, params.collection, table)


class _Target:
    """A LanceDB table as ``sync.synchronise`` writes it; a missing table is created by the
    first metadata write, when the vectors' dimension is known."""

    def __init__(self, folder: str, name: str, table: Any | None) -> None:
        self.folder, self.name, self.table = folder, name, table

    def stored_state(self) -> dict[str, tuple[str, str]]:
        return ls.stored_state(self.table)

    def sources(self, ids: list[str]) -> dict[str, str]:
        if self.table is None:
            return {}
        return {r["id"]: r["source"] or "" for r in ls.select(self.table, ["id", "source"], ids)}

    def metadata(self) -> dict[str, Any]:
        return ls.metadata_of(self.table) if self.table is not None else {}

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        if self.table is None:
            self.table = ls.create_table(self.folder, self.name, metadata[rec.META_DIM],
                                         metadata)
        else:
            ls.set_metadata(self.table, metadata)

    def write(self, ctx: NodeContext, chunks: list[Chunk], plan: sync.Plan,
              vectors: dict[str, Any]) -> None:
        table = self.table
        if table is None:
            raise NodeConfigError(f"{TYPE_ID}: table '{self.name}' was not created")
        by_id = {c.chunk_id: c for c in chunks}
        for ids in rec.batches(plan["deleted"], ls.IN_BATCH):
            ctx.check_cancelled()
            table.delete(ls.id_filter(ids))
        for ids in rec.batches(plan["added"], 5000):  # absent: read under the lock
            ctx.check_cancelled()
            table.add(ls.rows([by_id[i] for i in ids], vectors))
        for ids in rec.batches(plan["updated"], 5000):
            ctx.check_cancelled()
            (table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(ls.rows([by_id[i] for i in ids], vectors)))
        for ids in rec.batches(plan["relabelled"], 5000):
            ctx.check_cancelled()
            table.merge_insert("id").when_matched_update_all().execute(
                ls.rows([by_id[i] for i in ids], None))


def _describe_table(folder: Path, name: str) -> str:
    table = ls.open_table(folder, name)
    if table is None:
        return f"LanceDB folder {folder} (table '{name}' made on the first run)"
    return f"LanceDB folder {folder} (table '{name}': {table.count_rows()} rows)"
