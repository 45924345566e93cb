"""Incremental synchronisation shared by the vector stores (``store.chroma``, ``store.lancedb``).

A store node hands ``synchronise`` a ``SyncTarget`` (its opened collection or table) and the
chunks; the plan, the read-only refusal, the delete-share guard, the embedding of only new or
changed chunks, the "being written" mark and the final stamp are the same for every store.
Only chunks whose text is new or changed are embedded; chunks whose text is unchanged but
whose ids, offsets or metadata changed are relabelled without embedding; chunks no longer
present are deleted (``delete_missing``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field

from modrag_nodes.embedding.contracts import EmbeddedChunks, content_hash, record_hash
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.embedding.tokens import warn_over_window
from modrag_nodes.ingest.loaders import recently_unreadable
from modrag_nodes.vectorstore import records as rec
from modrag_studio.engine.core.node import (
    Chunk,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    Resources,
    resolve_path,
    work_home,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole
from modrag_studio.engine.trust.store_mode import deletes_allowed, refuse_write, stores_read_only

DEFAULT_DELETE_SHARE = 0.5
FLUSH_CHUNKS = 256  # chunks embedded between two writes: an interruption loses at most these
Plan = dict[str, list[str]]


# Params every store has ----------------------------------------------------------------------
def delete_missing_field() -> Any:
    return Field(True, description="Delete stored chunks that are not in the input (off: only "
                 "add)")


def max_delete_share_field() -> Any:
    return Field(DEFAULT_DELETE_SHARE, ge=0.0, le=1.0, description="Stop when a "
                 "synchronisation would delete more than this share of the collection (1: "
                 "never stop)")


def on_embedder_change_field() -> Any:
    return Field("refuse", description="When the collection was built with another embedder: "
                 "refuse, or delete and rebuild it")


EmbedderChange = Literal["refuse", "rebuild"]


class SyncParams(Protocol):
    """The params ``synchronise`` and the guards read (every store's Params has them)."""

    collection: str
    delete_missing: bool
    max_delete_share: float
    on_embedder_change: EmbedderChange


class SyncTarget(Protocol):
    """An opened collection (or table) a synchronisation writes; the caller holds its lock."""

    name: str

    def stored_state(self) -> dict[str, tuple[str, str]]:
        """``{id: (content_hash, record_hash)}`` of every stored record."""

    def sources(self, ids: list[str]) -> dict[str, str]:
        """The ``source`` of each of these stored records."""

    def metadata(self) -> dict[str, Any]: ...

    def set_metadata(self, metadata: dict[str, Any]) -> None: ...

    def write(self, ctx: NodeContext, chunks: list[Chunk], plan: Plan,
              vectors: dict[str, Any]) -> None:
        """Delete ``plan['deleted']``, upsert added and updated records with ``vectors``, and
        rewrite the stored fields of ``plan['relabelled']``, checking for cancellation."""


@dataclass
class Synced:
    """What a synchronisation left: the vectors' dimension, the record count and stamp."""

    dim: int
    count: int
    stamp: str


# Inputs --------------------------------------------------------------------------------------
def resolve_inputs(
    chunks: list[Chunk] | None, embedder: EmbedderSpec | None, embedded: EmbeddedChunks | None
) -> tuple[list[Chunk], EmbedderSpec, EmbeddedChunks | None]:
    """The chunks to index, their embedder and, when given, their vectors."""
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


# Guards --------------------------------------------------------------------------------------
def delete_share_ok(params: SyncParams, deleting: int, stored: int) -> bool:
    """Whether deleting ``deleting`` of ``stored`` records passes the delete-share guard."""
    return deleting <= 2 or deletes_allowed() or deleting <= params.max_delete_share * stored


def check_delete_share(params: SyncParams, deleting: int, stored: int, type_id: str) -> None:
    """Stop a synchronisation that would delete more than ``max_delete_share`` of the
    ``stored`` records of the collection (a corpus path pointing at the wrong place), unless
    deletions are allowed (``--allow-delete``); every writer checks here before deleting."""
    if delete_share_ok(params, deleting, stored):
        return
    raise NodeConfigError(
        f"{type_id}: this would delete {deleting} of the {stored} chunks in collection "
        f"'{params.collection}' (more than {params.max_delete_share:.0%}); check the corpus "
        "path, then allow it with --allow-delete (CLI) or raise param 'max_delete_share'")


def must_rebuild(params: SyncParams, stored_id: str | None, spec: EmbedderSpec, type_id: str,
                 warn: Callable[[str], None]) -> bool:
    """Whether a collection built with ``stored_id`` is to be rebuilt for ``spec`` (refused
    by param 'on_embedder_change' = 'refuse', and while stores are read-only)."""
    if stored_id in (None, "", spec.model_id):
        return False
    if params.on_embedder_change == "refuse":
        raise NodeConfigError(
            f"collection '{params.collection}' was built with embedder {stored_id}, but this "
            f"node embeds with {spec.model_id}; use another param 'collection' or set param "
            "'on_embedder_change' to 'rebuild'"
        )
    refuse_write(f"{type_id}: collection '{params.collection}' would be rebuilt")
    warn(f"collection '{params.collection}' was built with {stored_id}; rebuilding it "
         f"with {spec.model_id}")
    return True


def store_folder(path: str, default: str, work_dir: Path | None = None) -> Path:
    """A store's folder: param ``path`` (relative to the graph's folder), else the shared
    ``<work folder>/<default>`` (``work_dir``: the run's work folder by default)."""
    if path.strip():
        return resolve_path(path.strip()).resolve()
    return (work_dir or work_home()) / default


def store_writes(params: SyncParams, path: str, outside: Callable[[str], bool], *,
                 label: str, folder: str, remote: bool = False) -> list[tuple[str, str]]:
    """What the trust list says a store writes outside its graph's folder: the shared default
    folder (``<data dir>/<folder>``, param 'path' empty; ``label`` names the store) and, for a
    collection outside the graph's folder (or on a server), a delete share above the default
    guard's. ``outside(path)`` says whether a path is outside the graph's folder."""
    found: list[tuple[str, str]] = []
    shared = not remote and not path.strip()
    if shared:
        found.append(("path", f"writes collection '{params.collection}' in the shared "
                              f"{label} folder {store_folder('', folder)}"))
    elsewhere = shared or remote or outside(path.strip())
    if elsewhere and params.delete_missing and params.max_delete_share > DEFAULT_DELETE_SHARE:
        found.append(("max_delete_share", f"may delete up to {params.max_delete_share:.0%} of "
                      f"collection '{params.collection}' without asking"))
    return found


# Planning --------------------------------------------------------------------------------------
def plan(chunks: list[Chunk], stored: dict[str, tuple[str, str]], delete_missing: bool) -> Plan:
    out: Plan = {"added": [], "updated": [], "relabelled": [], "unchanged": [], "deleted": []}
    for chunk in chunks:
        old = stored.get(chunk.chunk_id)
        if old is None:
            out["added"].append(chunk.chunk_id)
        elif old[0] != content_hash(chunk.text):
            out["updated"].append(chunk.chunk_id)
        elif old[1] != record_hash(chunk):
            out["relabelled"].append(chunk.chunk_id)
        else:
            out["unchanged"].append(chunk.chunk_id)
    if delete_missing:
        present = {c.chunk_id for c in chunks}
        out["deleted"] = sorted(i for i in stored if i not in present)
    return out


def keep_unreadable(target: SyncTarget, planned: Plan, ctx: NodeContext) -> int:
    """Move out of ``planned['deleted']`` the records of files that failed to load this time
    (a read error is not a deletion); returns how many were kept."""
    failed = recently_unreadable()
    if not planned["deleted"] or not failed:
        return 0
    sources = target.sources(planned["deleted"])
    keep = {i for i, source in sources.items() if source in failed}
    if keep:
        planned["deleted"] = [i for i in planned["deleted"] if i not in keep]
        files = sorted({sources[i] for i in keep})
        ctx.warn(f"kept {len(keep)} chunk(s) of {len(files)} file(s) that failed to load: "
                 + ", ".join(Path(f).name for f in files[:5]))
    return len(keep)


def final_state(stored: dict[str, tuple[str, str]], chunks: list[Chunk], planned: Plan
                ) -> dict[str, tuple[str, str]]:
    final = dict(stored)
    for record_id in planned["deleted"]:
        final.pop(record_id, None)
    for chunk in chunks:
        final[chunk.chunk_id] = (content_hash(chunk.text), record_hash(chunk))
    return final


def check_dim(name: str, stored: Any, spec: EmbedderSpec, vectors: dict[str, Any],
              given: EmbeddedChunks | None, resources: Resources) -> int:
    """The vectors' dimension; refused when it differs from the collection's (``stored``).
    A model loaded to tell it is kept in the run's ``resources``."""
    if vectors:
        dim = len(next(iter(vectors.values())))
    elif given is not None:
        dim = given.dim
    elif stored:
        dim = int(stored)
    else:
        from modrag_nodes.embedding.models import embedding_dim  # loads the model

        dim = embedding_dim(spec, resources)
    if stored and int(stored) != dim:
        raise NodeConfigError(
            f"collection '{name}' holds {stored}-dimensional vectors but "
            f"{spec.model_id} makes {dim}-dimensional ones"
        )
    return dim


def embed_missing(ctx: NodeContext, spec: EmbedderSpec, chunks: list[Chunk],
                  given: EmbeddedChunks | None, ids: list[str]) -> dict[str, Any]:
    """The vector of each chunk in ``ids``: taken from ``given``, else embedded now."""
    if not ids:
        return {}
    if given is not None:
        rows = {c.chunk_id: row for row, c in enumerate(given.chunks)}
        return {chunk_id: given.vectors[rows[chunk_id]] for chunk_id in ids}
    by_id = {c.chunk_id: c for c in chunks}
    texts = [by_id[i].text for i in ids]
    matrix = embed_texts(spec, texts, role="passage", ctx=ctx)
    return dict(zip(ids, matrix, strict=True))


class EmbedProgress:
    """The node's context for one part of the chunks to embed: progress counts every chunk
    of the synchronisation, with the rate and the time left, and the chunks already stored
    (a resumed index says how many it keeps)."""

    def __init__(self, ctx: NodeContext, total: int, stored: int) -> None:
        self._ctx = ctx
        self.total, self.stored = total, stored
        self.before = 0  # chunks of the earlier parts
        self.started = time.perf_counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def progress(self, done: float, total: float | None = None, message: str = "") -> None:
        from modrag_studio.engine.core.formatting import duration

        count = self.before + int(done if total else done * (total or 0))
        elapsed = time.perf_counter() - self.started
        rate = count / elapsed if elapsed > 0 else 0.0
        left = f", {duration((self.total - count) / rate)} left" if rate else ""
        kept = f"; {self.stored:,} already stored" if self.stored else ""
        self._ctx.progress(count, self.total, f"embedded {count:,}/{self.total:,} chunks "
                                              f"({rate:.1f}/s{left}){kept}")


class Uncancelled:
    """The node's context for writing a part already embedded: a cancel stops the index
    after the part is stored (the work is paid for), at the next part's first batch."""

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def check_cancelled(self) -> None:
        return None


def embed_and_write(ctx: NodeContext, spec: EmbedderSpec, chunks: list[Chunk],
                    given: EmbeddedChunks | None, planned: Plan, target: SyncTarget,
                    stored_dim: Any) -> int | None:
    """Embed the added and updated chunks in parts of ``FLUSH_CHUNKS`` (longest first, so a
    part pads little) and write each part as soon as it is embedded, under the "being
    written" mark: a cancelled, failed or killed index keeps what it embedded, and the next
    one embeds only the rest. Returns the vectors' dimension (None: nothing embedded)."""
    by_id = {c.chunk_id: c for c in chunks}
    ordered = sorted(planned["added"] + planned["updated"], key=lambda i: -len(by_id[i].text))
    added = set(planned["added"])
    progress = EmbedProgress(ctx, len(ordered), len(planned["unchanged"]))
    dim = None
    for start in range(0, len(ordered), FLUSH_CHUNKS):
        part = ordered[start:start + FLUSH_CHUNKS]
        progress.before = start
        vectors = embed_missing(progress, spec, chunks, given, part)  # type: ignore[arg-type]
        if dim is None:
            dim = check_dim(target.name, stored_dim, spec, vectors, given, ctx.resources)
            target.set_metadata(rec.embedder_metadata(spec, dim, "", rec.WRITING))
        target.write(Uncancelled(ctx), chunks, {"added": [i for i in part if i in added],
                                   "updated": [i for i in part if i not in added],
                                   "relabelled": [], "unchanged": [], "deleted": []}, vectors)
    return dim


# The synchronisation -------------------------------------------------------------------------
def synchronise(ctx: NodeContext, params: SyncParams, target: SyncTarget, chunks: list[Chunk],
                spec: EmbedderSpec, given: EmbeddedChunks | None, *, type_id: str,
                location: str) -> Synced:
    """Plan from the stored state, embed, write, record what the collection now holds; the
    caller holds the collection's write lock throughout."""
    stored = target.stored_state()
    planned = plan(chunks, stored, params.delete_missing)
    kept = keep_unreadable(target, planned, ctx)
    if any(planned[k] for k in ("added", "updated", "relabelled", "deleted")):
        refuse_write(f"{type_id}: collection '{params.collection}' would change "
                     f"({len(planned['added'])} added, {len(planned['updated'])} updated, "
                     f"{len(planned['deleted'])} deleted)")
    check_delete_share(params, len(planned["deleted"]), len(stored), type_id)

    to_embed = planned["added"] + planned["updated"]
    resumed = target.metadata().get(rec.META_SYNCED_FROM) == rec.WRITING
    if resumed and to_embed:
        ctx.progress(0.0, None, f"resuming an interrupted index: {len(planned['unchanged']):,} "
                                f"chunks already embedded are kept, {len(to_embed):,} to embed")
    if given is None:
        warn_over_window(ctx, spec, [c.text for c in chunks])  # every chunk: the same count
    started = time.perf_counter()
    stored_dim = target.metadata().get(rec.META_DIM)
    dim = embed_and_write(ctx, spec, chunks, given, planned, target, stored_dim)
    embed_s = time.perf_counter() - started
    if dim is None:
        dim = check_dim(target.name, stored_dim, spec, {}, given, ctx.resources)

    synced_from = rec.input_stamp(chunks, spec.model_id, params.delete_missing)
    changed = bool(to_embed or planned["relabelled"] or planned["deleted"])
    if changed:
        # Mark the collection as being written: a cancelled or failed write leaves it
        # matching no inputs, so the next run synchronises again (and embeds only what
        # embed_and_write did not store yet).
        target.set_metadata(rec.embedder_metadata(spec, dim, "", rec.WRITING))
        target.write(ctx, chunks, {**planned, "added": [], "updated": []}, {})
        final = target.stored_state()  # what is there now, not what was planned
    else:
        final = final_state(stored, chunks, planned)
    stamp = rec.content_stamp(final, spec.model_id)
    count = len(final)
    meta = rec.embedder_metadata(spec, dim, stamp, synced_from, count)
    if changed or (target.metadata() != meta and not stores_read_only()):
        target.set_metadata(meta)
    ctx.note(collection=params.collection, location=location, model_id=spec.model_id,
             dim=dim, added=len(planned["added"]), updated=len(planned["updated"]),
             relabelled=len(planned["relabelled"]), deleted=len(planned["deleted"]),
             unchanged=len(planned["unchanged"]), embedded=len(to_embed),
             kept_unreadable=kept, embed_seconds=round(embed_s, 3), count=count,
             resumed_with=len(planned["unchanged"]) if resumed else 0)
    return Synced(dim=dim, count=count, stamp=stamp)


# Whether a cached handle may be reused ---------------------------------------------------------
_memo: OrderedDict[tuple[int, str, bool], tuple[list[Chunk], tuple[str, str | None]]] = \
    OrderedDict()
_memo_lock = threading.Lock()


def expected_stamp(params: SyncParams, inputs: Mapping[str, Any]
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
    synced_from = rec.input_stamp(chunks, spec.model_id, params.delete_missing)
    content = rec.content_stamp({c.chunk_id: ("", record_hash(c)) for c in chunks},
                                spec.model_id) if params.delete_missing else None
    with _memo_lock:
        _memo[key] = (chunks, (synced_from, content))
        while len(_memo) > 8:
            _memo.popitem(last=False)
    return synced_from, content


def stale() -> str:
    """A one-off fingerprint: the node runs (and synchronises)."""
    return f"stale:{uuid.uuid4().hex}"


def in_sync_fingerprint(params: SyncParams, inputs: Mapping[str, Any],
                        meta: Mapping[str, Any], count: Callable[[], int]) -> str:
    """``in-sync:<stamp>`` when a collection whose metadata is ``meta`` holds exactly what
    these inputs would make it hold (the last synchronisation had the same inputs and its
    record count, ``count()``, still stands), else ``stale()``."""
    expected = expected_stamp(params, inputs)
    if expected and meta.get(rec.META_SYNCED_FROM) == expected[0] \
            and expected[1] in (None, meta.get(rec.META_STAMP)) \
            and meta.get(rec.META_COUNT) == count():
        return f"in-sync:{meta.get(rec.META_STAMP, '')}"
    return stale()


class StoreNode(NodeType):
    """What every vector store node shares: its inputs, its evidence role and the in-sync
    fingerprint; a store says how to read its collection's metadata and count (``opened``)."""

    evidence_role = EvidenceRole("indexes", inputs=("chunks",))
    store_role = "vector"
    category = "Retrieval"
    inputs = (
        InputPort("chunks", list[Chunk], required=False,
                  description="Chunks to index (embedded here, only what is missing)"),
        InputPort("embedder", EmbedderSpec, required=False,
                  description="Embedding model (default: packaged all-MiniLM-L6-v2)"),
        InputPort("embedded", EmbeddedChunks, required=False,
                  description="Chunks already embedded (instead of 'chunks')"),
    )

    def opened(self, params: Any) -> tuple[Mapping[str, Any], Callable[[], int]] | None:
        """The collection's metadata and a function counting its records, or None when the
        collection does not exist."""
        raise NotImplementedError

    def fingerprint(self, params: Any, inputs: Mapping[str, Any],
                    run_inputs: Mapping[str, Any]) -> str:
        """``in-sync`` when the collection holds exactly what these inputs would make it hold
        (``in_sync_fingerprint``), so a cached handle is reused; otherwise a one-off value,
        so the node runs and synchronises."""
        try:
            found = self.opened(params)
        except Exception:  # an unreachable server, a damaged table: run() explains
            return stale()
        if found is None:
            return stale()
        try:
            return in_sync_fingerprint(params, inputs, found[0], found[1])
        except Exception:
            return stale()
