"""``store.chroma``: keeps a Chroma collection in step with a list of chunks, incrementally.

Only chunks whose text is new or changed are embedded; chunks whose text is unchanged but whose
ids, offsets or metadata changed are relabelled without embedding; chunks no longer present
are deleted. The collection metadata records the embedder's model id and dimension.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from modrag_nodes.embedding.contracts import EmbeddedChunks, content_hash, record_hash
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.embedding.tokens import warn_over_window
from modrag_nodes.ingest.loaders import recently_unreadable
from modrag_nodes.vectorstore import chroma_store as cs
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.write_lock import collection_lock
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.errors import NodeConfigError
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.paths import FolderPath, resolve_path, work_home
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.evidence.lineage import EvidenceRole
from modrag_studio.engine.trust.store_mode import deletes_allowed, refuse_write, stores_read_only

_COLLECTION = r"^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$"
DEFAULT_DELETE_SHARE = 0.5


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
    delete_missing: bool = Field(
        True, description="Delete stored chunks that are not in the input (off: only add)"
    )
    max_delete_share: float = Field(
        DEFAULT_DELETE_SHARE, ge=0.0, le=1.0, description="Stop when a synchronisation would "
        "delete more than this share of the collection (1: never stop)")
    on_embedder_change: Literal["refuse", "rebuild"] = Field(
        "refuse",
        description="When the collection was built with another embedder: refuse, or delete "
        "and rebuild it",
    )

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
    if params.path.strip():
        folder = resolve_path(params.path.strip()).resolve()
    else:
        folder = (work_dir or work_home()) / "chroma"
    return ("chroma-persistent", str(folder))


class ChromaStore(NodeType):
    type_id = "store.chroma"
    evidence_role = EvidenceRole("indexes", inputs=("chunks",))
    title = "Chroma vector store"
    category = "Retrieval"
    description = (
        "Indexes chunks in a Chroma collection (a local folder or a Chroma server), embedding "
        "only new or changed chunks and deleting removed ones."
    )
    Params = ChromaParams
    inputs = (
        InputPort("chunks", list[Chunk], required=False,
                  description="Chunks to index (embedded here, only what is missing)"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="Embedding model (default: packaged all-MiniLM-L6-v2)"),
        InputPort("embedded", EmbeddedChunks, required=False,
                  description="Chunks already embedded (instead of 'chunks')"),
    )
    outputs = (OutputPort("index", VectorIndex, "Handle to the synchronised collection"),)

    def store_writes(self, params: ChromaParams, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        """What the trust list says this store changes outside its graph's folder: the
        shared default Chroma folder (param 'path' empty: every such graph writes the same
        one) and, for a collection outside the folder (or on a server), a delete share above
        the default guard's. ``outside(path)`` says whether a path is outside the folder."""
        found: list[tuple[str, str]] = []
        shared = params.backend == "persistent" and not params.path.strip()
        if shared:
            found.append(("path", f"writes collection '{params.collection}' in the shared "
                                  f"Chroma folder {work_home() / 'chroma'}"))
        elsewhere = shared or params.backend == "http" or outside(params.path.strip())
        if elsewhere and params.delete_missing \
                and params.max_delete_share > DEFAULT_DELETE_SHARE:
            found.append(("max_delete_share", f"may delete up to "
                          f"{params.max_delete_share:.0%} of collection "
                          f"'{params.collection}' without asking"))
        return found

    def health(self, params: ChromaParams) -> str | None:
        from modrag_nodes.vectorstore.chroma_health import folder_health, server_health

        key = location(params)
        if key[0] == "chroma-http":
            return server_health(params.host, params.port, params.ssl)
        return folder_health(Path(key[1]))

    def fingerprint(self, params: ChromaParams, inputs: Mapping[str, Any],
                    run_inputs: Mapping[str, Any]) -> str:
        """``in-sync`` when the collection holds exactly what these inputs would make it hold
        (the last synchronisation had the same inputs and its record count still stands), so a
        cached handle is reused; otherwise a one-off value, so the node runs and synchronises.
        A persistent store is read again only after something committed to it (see
        ``chroma_store.store_version``), so repeated runs such as an evaluation's queries check
        it once.
        """
        stale = f"stale:{uuid.uuid4().hex}"
        try:
            key = location(params)
            collection, version = cs.open_collection(key, params.collection)
            if collection is None:
                return stale
            meta = collection.metadata or {}
            expected = _expected_stamp(params, inputs)
            if expected and meta.get(cs.META_SYNCED_FROM) == expected[0] \
                    and expected[1] in (None, meta.get(cs.META_STAMP)) \
                    and meta.get(cs.META_COUNT) == cs.count_at(key, params.collection,
                                                               collection, version):
                return f"in-sync:{meta.get(cs.META_STAMP, '')}"
        except Exception:  # an unreachable server and the like: run, and let run() explain
            pass
        return stale

    def run(self, ctx: NodeContext, params: ChromaParams, chunks: list[Chunk] | None = None,
            embedder: EmbedderSpec | None = None,
            embedded: EmbeddedChunks | None = None) -> dict[str, Any]:
        chunks, spec, given = _resolve_inputs(chunks, embedder, embedded)
        key = location(params, ctx.work_dir)
        client = cs.client_for(key)
        with collection_lock(key, params.collection, should_stop=lambda: ctx.cancel.cancelled):
            return _synchronise(ctx, params, key, client, chunks, spec, given)


def _synchronise(ctx: NodeContext, params: ChromaParams, key: tuple[Any, ...], client: Any,
                 chunks: list[Chunk], spec: EmbedderSpec, given: EmbeddedChunks | None
                 ) -> dict[str, Any]:
    """Plan from the stored state, embed, write, record what the collection now holds; the
    caller holds the collection's write lock throughout."""
    collection = open_for_write(client, params, spec, ctx.warn)
    stored = cs.stored_state(collection)
    plan = _plan(chunks, stored, params.delete_missing)
    kept = _keep_unreadable(collection, plan, ctx)
    if any(plan[k] for k in ("added", "updated", "relabelled", "deleted")):
        refuse_write(f"store.chroma: collection '{params.collection}' would change "
                     f"({len(plan['added'])} added, {len(plan['updated'])} updated, "
                     f"{len(plan['deleted'])} deleted)")
    check_delete_share(params, len(plan["deleted"]), len(stored))

    vectors: dict[str, Any] = {}
    to_embed = plan["added"] + plan["updated"]
    started = time.perf_counter()
    if to_embed and given is not None:
        rows = {c.chunk_id: row for row, c in enumerate(given.chunks)}
        vectors = {chunk_id: given.vectors[rows[chunk_id]] for chunk_id in to_embed}
    elif to_embed:
        by_id = {c.chunk_id: c for c in chunks}
        warn_over_window(ctx, spec, [by_id[i].text for i in to_embed])
        matrix = embed_texts(spec, [by_id[i].text for i in to_embed], role="passage", ctx=ctx)
        vectors = dict(zip(to_embed, matrix, strict=True))
    embed_s = time.perf_counter() - started
    dim = _check_dim(collection, spec, vectors, given)

    synced_from = cs.input_stamp(chunks, spec.model_id, params.delete_missing)
    changed = bool(to_embed or plan["relabelled"] or plan["deleted"])
    if changed:
        # Mark the collection as being written: a cancelled or failed write leaves it
        # matching no inputs, so the next run synchronises again.
        collection.modify(metadata=cs.embedder_metadata(spec, dim, "", "writing"))
        _write(ctx, client, collection, chunks, plan, vectors)
        final = cs.stored_state(collection)  # what is there now, not what was planned
    else:
        final = _final_state(stored, chunks, plan)
    stamp = cs.content_stamp(final, spec.model_id)
    count = len(final)
    meta = cs.embedder_metadata(spec, dim, stamp, synced_from, count)
    if changed or ((collection.metadata or {}) != meta and not stores_read_only()):
        collection.modify(metadata=meta)
    ctx.note(collection=params.collection, location=_describe(key), model_id=spec.model_id,
             dim=dim, added=len(plan["added"]), updated=len(plan["updated"]),
             relabelled=len(plan["relabelled"]), deleted=len(plan["deleted"]),
             unchanged=len(plan["unchanged"]), embedded=len(to_embed),
             kept_unreadable=kept, embed_seconds=round(embed_s, 3), count=count)
    index = VectorIndex(
        backend="chroma-http" if key[0] == "chroma-http" else "chroma-persistent",
        path=key[1] if key[0] == "chroma-persistent" else None,
        host=params.host if key[0] == "chroma-http" else None,
        port=params.port if key[0] == "chroma-http" else None,
        ssl=params.ssl, collection=params.collection, embedder=spec,
        model_id=spec.model_id, dim=dim, count=count, stamp=stamp,
    )
    return {"index": index}


_memo: OrderedDict[tuple[int, str, bool], tuple[list[Chunk], tuple[str, str | None]]] = \
    OrderedDict()
_memo_lock = threading.Lock()


def _expected_stamp(params: ChromaParams, inputs: Mapping[str, Any]
                    ) -> tuple[str, str | None] | None:
    """``input_stamp`` of the inputs and the content stamp the collection must then have
    (None when it cannot be known: without ``delete_missing`` other records may stay),
    remembered per input list (the cache hands the same list object to every run)."""
    embedded, embedder = inputs.get("embedded"), inputs.get("embedder")
    chunks = embedded.chunks if embedded is not None else inputs.get("chunks")
    if chunks is None:
        return None
    spec = (embedded.embedder if embedded is not None else None) or embedder or EmbedderSpec()
    key = (id(chunks), spec.model_id, params.delete_missing)
    with _memo_lock:
        hit = _memo.get(key)
        if hit is not None and hit[0] is chunks:
            return hit[1]
    synced_from = cs.input_stamp(chunks, spec.model_id, params.delete_missing)
    content = cs.content_stamp({c.chunk_id: ("", record_hash(c)) for c in chunks},
                               spec.model_id) if params.delete_missing else None
    with _memo_lock:
        _memo[key] = (chunks, (synced_from, content))
        while len(_memo) > 8:
            _memo.popitem(last=False)
    return synced_from, content


def _resolve_inputs(
    chunks: list[Chunk] | None, embedder: EmbedderSpec | None, embedded: EmbeddedChunks | None
) -> tuple[list[Chunk], EmbedderSpec, EmbeddedChunks | None]:
    if embedded is not None and chunks is not None:
        raise NodeConfigError("connect either input 'chunks' or input 'embedded', not both")
    if embedded is None and chunks is None:
        raise NodeConfigError("nothing to index: connect input 'chunks' or input 'embedded'")
    if embedded is not None:
        spec = embedded.embedder or embedder or EmbedderSpec()
        if embedder is not None and embedder.model_id != embedded.model_id:
            raise NodeConfigError(
                f"input 'embedded' was made with {embedded.model_id} but input 'embedder' "
                f"is {embedder.model_id}"
            )
        return list(embedded.chunks), spec, embedded
    assert chunks is not None
    seen: set[str] = set()
    duplicates = sorted({c.chunk_id for c in chunks if c.chunk_id in seen or seen.add(c.chunk_id)})
    if duplicates:
        raise NodeConfigError(
            f"input 'chunks' has duplicate chunk ids: {', '.join(duplicates[:5])}"
        )
    return list(chunks), embedder or EmbedderSpec(), None


def open_for_write(client: Any, params: ChromaParams, spec: EmbedderSpec,
                   warn: Callable[[str], None]) -> Any:
    """The collection a writer synchronises (created when missing, rebuilt or refused when
    it was built with another embedder), refused while stores are read-only; every writer
    (this node, ``modrag index --ray``) opens it here, holding the collection's write lock."""
    collection = cs.get_collection(client, params.collection)
    if collection is None:
        refuse_write(f"store.chroma: collection '{params.collection}' does not exist")
        try:
            return cs.create_collection(client, params.collection, spec, None)
        except Exception as exc:  # created meanwhile by a writer without our lock (a server)
            collection = cs.get_collection(client, params.collection)
            if collection is None or "already exists" not in str(exc):
                raise
            return collection
    stored_id = (collection.metadata or {}).get(cs.META_MODEL_ID)
    if stored_id in (None, "", spec.model_id):
        return collection
    if params.on_embedder_change == "refuse":
        raise NodeConfigError(
            f"collection '{params.collection}' was built with embedder {stored_id}, but this "
            f"node embeds with {spec.model_id}; use another param 'collection' or set param "
            "'on_embedder_change' to 'rebuild'"
        )
    refuse_write(f"store.chroma: collection '{params.collection}' would be rebuilt")
    warn(f"collection '{params.collection}' was built with {stored_id}; rebuilding it "
             f"with {spec.model_id}")
    client.delete_collection(params.collection)
    return cs.create_collection(client, params.collection, spec, None)


def _plan(chunks: list[Chunk], stored: dict[str, tuple[str, str]],
          delete_missing: bool) -> dict[str, list[str]]:
    plan: dict[str, list[str]] = {"added": [], "updated": [], "relabelled": [], "unchanged": [],
                                  "deleted": []}
    for chunk in chunks:
        old = stored.get(chunk.chunk_id)
        if old is None:
            plan["added"].append(chunk.chunk_id)
        elif old[0] != content_hash(chunk.text):
            plan["updated"].append(chunk.chunk_id)
        elif old[1] != record_hash(chunk):
            plan["relabelled"].append(chunk.chunk_id)
        else:
            plan["unchanged"].append(chunk.chunk_id)
    if delete_missing:
        present = {c.chunk_id for c in chunks}
        plan["deleted"] = sorted(i for i in stored if i not in present)
    return plan


def _keep_unreadable(collection: Any, plan: dict[str, list[str]], ctx: NodeContext) -> int:
    """Move out of ``plan['deleted']`` the records of files that failed to load this time
    (a read error is not a deletion); returns how many were kept."""
    failed = recently_unreadable()
    if not plan["deleted"] or not failed:
        return 0
    sources: dict[str, str] = {}
    for ids in cs.batches(plan["deleted"], cs.PAGE):
        page = collection.get(ids=ids, include=["metadatas"])
        for record_id, meta in zip(page["ids"], page["metadatas"] or [], strict=False):
            sources[record_id] = str((meta or {}).get("source", ""))
    keep = {i for i, source in sources.items() if source in failed}
    if keep:
        plan["deleted"] = [i for i in plan["deleted"] if i not in keep]
        files = sorted({sources[i] for i in keep})
        ctx.warn(f"kept {len(keep)} chunk(s) of {len(files)} file(s) that failed to load: "
                 + ", ".join(Path(f).name for f in files[:5]))
    return len(keep)


def delete_share_ok(params: ChromaParams, deleting: int, stored: int) -> bool:
    """Whether deleting ``deleting`` of ``stored`` records passes the delete-share guard."""
    return deleting <= 2 or deletes_allowed() or deleting <= params.max_delete_share * stored


def check_delete_share(params: ChromaParams, deleting: int, stored: int) -> None:
    """Stop a synchronisation that would delete more than ``max_delete_share`` of the
    ``stored`` records of the collection (a corpus path pointing at the wrong place), unless
    deletions are allowed (``--allow-delete``); every writer checks here before deleting."""
    if delete_share_ok(params, deleting, stored):
        return
    raise NodeConfigError(
        f"store.chroma: this would delete {deleting} of the {stored} chunks in collection "
        f"'{params.collection}' (more than {params.max_delete_share:.0%}); check the corpus "
        "path, then allow it with --allow-delete (CLI) or raise param 'max_delete_share'")


def _final_state(stored: dict[str, tuple[str, str]], chunks: list[Chunk],
                 plan: dict[str, list[str]]) -> dict[str, tuple[str, str]]:
    final = dict(stored)
    for record_id in plan["deleted"]:
        final.pop(record_id, None)
    for chunk in chunks:
        final[chunk.chunk_id] = (content_hash(chunk.text), record_hash(chunk))
    return final


def _check_dim(collection: Any, spec: EmbedderSpec, vectors: dict[str, Any],
               given: EmbeddedChunks | None) -> int:
    stored = (collection.metadata or {}).get(cs.META_DIM)
    if vectors:
        dim = len(next(iter(vectors.values())))
    elif given is not None:
        dim = given.dim
    elif stored:
        dim = int(stored)
    else:
        from modrag_nodes.embedding.models import embedding_dim  # loads the model

        dim = embedding_dim(spec)
    if stored and int(stored) != dim:
        raise NodeConfigError(
            f"collection '{collection.name}' holds {stored}-dimensional vectors but "
            f"{spec.model_id} makes {dim}-dimensional ones"
        )
    return dim


def _write(ctx: NodeContext, client: Any, collection: Any, chunks: list[Chunk],
           plan: dict[str, list[str]], vectors: dict[str, Any]) -> None:
    import numpy as np

    by_id = {c.chunk_id: c for c in chunks}
    size = cs.max_batch(client)
    for ids in cs.batches(plan["deleted"], size):
        ctx.check_cancelled()
        collection.delete(ids=ids)
    for ids in cs.batches(plan["added"] + plan["updated"], size):
        ctx.check_cancelled()
        collection.upsert(
            ids=ids,
            embeddings=np.stack([vectors[i] for i in ids]).astype(np.float32),
            documents=[by_id[i].text for i in ids],
            metadatas=[cs.chunk_metadata(by_id[i]) for i in ids],
        )
    for ids in cs.batches(plan["relabelled"], size):
        ctx.check_cancelled()
        collection.update(ids=ids, metadatas=[cs.chunk_metadata(by_id[i]) for i in ids])


def _describe(key: tuple[Any, ...]) -> str:
    if key[0] == "chroma-http":
        return f"{'https' if key[3] else 'http'}://{key[1]}:{key[2]}"
    return str(key[1])


def embedder_of(metadata: Mapping[str, Any] | None) -> EmbedderSpec | None:
    """The embedder spec recorded in a collection's metadata, if any."""
    raw = (metadata or {}).get(cs.META_EMBEDDER)
    if not raw:
        return None
    try:
        return EmbedderSpec.model_validate(json.loads(raw))
    except ValueError:
        return None
