"""The ingest part of a graph as a Ray Data pipeline.

read (files, or JSONL in blocks of lines) -> split (the graph's splitter nodes) -> embed (an
actor pool, one model per actor) -> write (idempotent upserts to a Chroma server by chunk id,
with the content hash in the metadata; a local Chroma folder is written by the driver, its
only writer) -> the driver merges the BM25 shards and stamps the collection like
``store.chroma`` does, so a later local run of the graph finds the store in sync.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.distributed.plan import IngestPlan, StepSpec
from modrag_studio.distributed.progress import IndexProgress
from modrag_studio.distributed.ray_support import require_ray
from modrag_studio.distributed.stages import (
    COUNTER_NAME,
    EmbedActor,
    ProgressCounter,
    bm25_tokenizer,
    read_units,
    split_block,
    upsert_rows,
    write_block,
)
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.errors import ModragError, NodeConfigError, RunCancelled
from modrag_studio.engine.core.node import CancelToken


class RayIndexError(ModragError):
    """The Ray pipeline failed (the message names the stage or node)."""


@dataclass
class RayIndexOptions:
    embed_actors: int = 1
    actor_cpus: float = 1.0
    block_lines: int = 500  # JSONL lines per read block
    embed_batch: int = 64  # chunks per embedding call
    progress_bars: bool = False  # Ray Data's own per-operator bars
    pid_file: str | None = None  # embedding actors append their pid (tests kill one)


@dataclass
class IndexSummary:
    """What an indexing run did, for the CLI, the tests and the benchmark."""

    documents: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    stages: dict[str, list[int]] = field(default_factory=dict)  # stage -> [blocks, rows]
    store_count: int | None = None
    bm25: Any = None
    chunk_list: list[Chunk] = field(default_factory=list, repr=False)


def work_units(root: Path, loader: StepSpec, block_lines: int) -> list[dict[str, Any]]:
    """Files to read, a JSONL corpus cut into byte ranges of ``block_lines`` lines."""
    from modrag_nodes.ingest.api import LoadParams, match_files

    params = LoadParams.model_validate(loader.params)
    files, _ = match_files(root, params)
    units: list[dict[str, Any]] = []
    for path in files:
        rel = path.name if root.is_file() else path.relative_to(root).as_posix()
        base = {"file": str(path.resolve()), "rel": rel, "source": str(path)}
        if path.suffix.lower() != ".jsonl":
            units.append(base)
            continue
        start = position = 0
        first = line = 1
        with path.open("rb") as fh:
            for raw in fh:
                position += len(raw)
                line += 1
                if line - first == block_lines:
                    units.append({**base, "start": start, "end": position, "first_line": first})
                    start, first = position, line
        if position > start:
            units.append({**base, "start": start, "end": position, "first_line": first})
    return units


def index_on_ray(plan: IngestPlan, root: Path, embedder: Any, options: RayIndexOptions, *,
                 cancel: CancelToken | None = None,
                 on_progress: Callable[[IndexProgress], None] | None = None
                 ) -> IndexSummary:
    """Run ``plan`` on the connected Ray cluster; ``embedder`` is the store's EmbedderSpec.
    ``on_progress`` gets a snapshot of blocks and rows per stage about once a second (from a
    helper thread) and once at the end; ``cancel`` is checked whenever a block arrives."""
    ray = require_ray()
    from ray.data import DataContext

    started = time.perf_counter()
    run_key = uuid.uuid4().hex[:12]
    context = DataContext.get_current()
    context.execution_options.preserve_order = True  # the local chunk order, for BM25 ties
    context.enable_progress_bars = options.progress_bars
    if not options.progress_bars:  # nor Ray Data's per-dataset log lines on the terminal
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    units = work_units(root, plan.loader, options.block_lines)
    if not units:
        raise NodeConfigError(f"node '{plan.loader.node_id}': no file to load under {root}")
    store = _StoreTarget(plan.store, embedder) if plan.store is not None else None
    with contextlib.ExitStack() as held:
        if store is not None:
            held.enter_context(store.locked(cancel))
            store.open()
        return _run_pipeline(ray, plan, root, units, store, options, run_key, started,
                             cancel, on_progress)


def _run_pipeline(ray: Any, plan: IngestPlan, root: Path, units: list[dict[str, Any]],
                  store: _StoreTarget | None, options: RayIndexOptions, run_key: str,
                  started: float, cancel: CancelToken | None,
                  on_progress: Callable[[IndexProgress], None] | None) -> IndexSummary:
    """The Ray Data job and the driver's part (the caller holds the store's write lock)."""
    from ray.data import ActorPoolStrategy

    counter = ray.remote(ProgressCounter).options(
        name=f"{COUNTER_NAME}-{run_key}", num_cpus=0).remote()
    # The first blocks look the counter up by name: it must be registered before they run,
    # or their counts (the whole read stage) are lost.
    ray.get(counter.snapshot.remote(), timeout=60)

    ds = ray.data.from_items([{"unit": json.dumps(u)} for u in units],
                             override_num_blocks=min(len(units), 2000))
    ds = ds.map_batches(read_units, batch_size=None, fn_kwargs={
        "loader": plan.loader, "root": str(root), "run_key": run_key})
    ds = ds.map_batches(split_block, batch_size=None, fn_kwargs={
        "chain": plan.chain, "bm25": plan.bm25, "run_key": run_key})
    if store is not None:
        ds = ds.map_batches(
            EmbedActor, batch_size=options.embed_batch, batch_format="numpy",
            compute=ActorPoolStrategy(size=options.embed_actors), num_cpus=options.actor_cpus,
            fn_constructor_kwargs={
                "embedder_json": store.spec.model_dump_json(),
                "store": store.info if store.remote else None,
                "stored": None if store.remote else store.initial,
                "run_key": run_key, "threads": max(1, int(options.actor_cpus)),
                "pid_file": options.pid_file})  # Ray Data restarts dead actors, retries blocks
        if store.remote:
            ds = ds.map_batches(write_block, batch_size=None, batch_format="numpy",
                                fn_kwargs={"store": store.info, "run_key": run_key})

    summary = IndexSummary()
    tokens: list[list[str]] = []
    stop = threading.Event()
    written = [0, 0]  # blocks and rows the driver wrote to a Chroma folder

    def with_driver(counts: dict[str, list[int]]) -> dict[str, list[int]]:
        driver_writes = store is not None and not store.remote
        return {**counts, "write": list(written)} if driver_writes else counts

    def report(counts: dict[str, list[int]], done: bool = False) -> None:
        counts = with_driver(counts)
        if on_progress is not None:
            on_progress(IndexProgress.from_ray(counts, len(units), store is not None, done))

    poller = threading.Thread(target=_poll, args=(ray, counter, report, stop), daemon=True)
    poller.start()
    batches = iter(ds.iter_batches(batch_size=None, batch_format="numpy"))
    try:
        for batch in batches:
            if cancel is not None and cancel.cancelled:
                raise RunCancelled("indexing cancelled")
            if store is not None and not store.remote:
                written[1] += store.take(batch)
                written[0] += 1
            if store is not None:
                summary.embedded += int(batch["embedded"].sum())
                store.note_dim(batch)
            summary.chunk_list.extend(Chunk.model_validate_json(c) for c in batch["chunk"])
            if plan.bm25 is not None:
                tokens.extend(json.loads(t) for t in batch["tokens"])
        if store is not None and not store.remote:
            written[1] += store.settle(summary.chunk_list)
    except KeyboardInterrupt:
        raise RunCancelled("indexing cancelled (Ctrl-C)") from None
    except (RunCancelled, ModragError):
        raise
    except Exception as exc:
        raise RayIndexError(f"the Ray indexing job failed: {_job_failure(exc)}") from exc
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # stops the streaming job: its pending blocks are cancelled
        stop.set()
        poller.join(timeout=5)
        summary.stages = with_driver(_snapshot(ray, counter))
        ray.kill(counter)

    chunks = summary.chunk_list
    _check_unique(chunks)
    summary.chunks = len(chunks)
    summary.documents = len({c.doc_id for c in chunks})
    if store is not None:
        summary.store_count = store.finish(chunks)
    if plan.bm25 is not None:
        summary.bm25 = merge_bm25(plan.bm25, chunks, tokens)
    summary.seconds = time.perf_counter() - started
    report(summary.stages, done=True)
    return summary


def merge_bm25(step: StepSpec, chunks: list[Chunk], tokens: list[list[str]]) -> Any:
    """One BM25 index from the shards' token lists (in the local chunk order)."""
    from modrag_nodes.retrieval.api import BM25Index

    p = step.params
    return BM25Index.from_tokens(chunks, tokens, tokenizer=bm25_tokenizer(step),
                                 engine=p["engine"], k1=p["k1"], b=p["b"],
                                 epsilon=p["epsilon"], fields=p["fields"])


class _StoreTarget:
    """The graph's Chroma collection, written through the store node's guarded path: its write
    lock is held from reading the stored state to stamping the collection, a read-only
    context refuses the job, the collection is opened (created, rebuilt or refused) by
    ``open_for_write`` and the delete-share guard runs before anything is deleted."""

    def __init__(self, step: StepSpec, embedder: Any) -> None:
        from modrag_nodes.vectorstore.api import ChromaParams, location

        self.params = ChromaParams.model_validate(step.params)
        self.step = step
        self.spec = embedder
        self.key = location(self.params)
        self.remote = self.key[0] == "chroma-http"
        self.info = {"key": list(self.key), "collection": self.params.collection}
        self.dim = 0
        self.written = 0
        self.before: dict[str, Any] | None = None

    def locked(self, cancel: CancelToken | None) -> Any:
        """The collection's write lock (the one ``store.chroma`` takes)."""
        from modrag_nodes.vectorstore.api import collection_lock

        return collection_lock(self.key, self.params.collection,
                               should_stop=lambda: cancel is not None and cancel.cancelled)

    def open(self) -> None:
        """Open the collection and mark it as being written (hold ``locked()``)."""
        from modrag_nodes.vectorstore.api import (
            META_DIM,
            client_for,
            embedder_metadata,
            open_for_write,
            stored_state,
        )
        from modrag_studio.engine.trust.store_mode import refuse_write

        refuse_write(f"store.chroma: collection '{self.params.collection}' would be written "
                     "by a Ray indexing job")
        client = client_for(self.key)
        self.collection = collection = open_for_write(
            client, self.params, self.spec,
            lambda text: logging.getLogger(__name__).warning("node '%s': %s",
                                                             self.step.node_id, text))
        self.before = dict(collection.metadata or {})
        self.initial = {} if self.remote else stored_state(collection)
        # Hold blocks back while what is stored but not yet seen exceeds the delete guard.
        self.missing = set(self.initial) if self.params.delete_missing else set()
        self.pending: list[Mapping[str, Any]] | None = [] if self.missing else None
        self._flush_when_safe()
        dim = (collection.metadata or {}).get(META_DIM)
        collection.modify(metadata=embedder_metadata(self.spec, dim, "", "writing"))

    def take(self, batch: Mapping[str, Any]) -> int:
        """Write a block of embedded rows to a Chroma folder (returns the rows written). While
        the rows seen so far still leave more of the collection to delete than the delete
        guard lets through, blocks are held back: a slip of the corpus path writes nothing."""
        if self.pending is None:
            written = upsert_rows(self.collection, batch)
            self.written += written
            return written
        self.missing.difference_update(str(i) for i in batch["chunk_id"])
        self.pending.append(batch)
        return self._flush_when_safe()

    def _flush_when_safe(self, deleting: int | None = None) -> int:
        from modrag_nodes.vectorstore.api import delete_share_ok

        deleting = len(self.missing) if deleting is None else deleting
        if self.pending is None or not delete_share_ok(self.params, deleting,
                                                       len(self.initial)):
            return 0
        pending, self.pending = self.pending, None
        return sum(self.take(batch) for batch in pending)

    def settle(self, chunks: list[Chunk]) -> int:
        """After the last block: the delete guard on the whole input, then the held-back
        blocks (returns the rows written)."""
        if self.pending is None or not self.params.delete_missing:
            return self._flush_when_safe(0)
        present = {c.chunk_id for c in chunks}
        deleting = sum(1 for i in self.initial if i not in present)
        self._guard(deleting, len(self.initial))
        return self._flush_when_safe(deleting)

    def _guard(self, deleting: int, stored: int) -> None:
        from modrag_nodes.vectorstore.api import check_delete_share

        try:
            check_delete_share(self.params, deleting, stored)
        except NodeConfigError as exc:
            self.restore()
            raise NodeConfigError(f"node '{self.step.node_id}': {exc}") from exc

    def note_dim(self, batch: Mapping[str, Any]) -> None:
        if not self.dim and batch["embedded"].any():
            self.dim = int(batch["dim"].max() if "dim" in batch else batch["vector"].shape[1])

    def finish(self, chunks: list[Chunk]) -> int:
        """Delete what the input no longer has (param 'delete_missing', within the delete
        guard) and stamp the collection as ``store.chroma`` would after synchronising these
        chunks."""
        from modrag_nodes.vectorstore.api import (
            META_DIM,
            batches,
            client_for,
            content_stamp,
            embedder_metadata,
            input_stamp,
            max_batch,
            stored_state,
        )

        collection = self.collection
        present = {c.chunk_id for c in chunks}
        stored = stored_state(collection)
        if self.params.delete_missing:
            gone = sorted(i for i in stored if i not in present)
            self._guard(len(gone), len(stored))
            for ids in batches(gone, max_batch(client_for(self.key))):
                collection.delete(ids=ids)
            stored = {i: h for i, h in stored.items() if i in present}
        dim = self.dim or int((collection.metadata or {}).get(META_DIM) or 0)
        if not dim:
            from modrag_nodes.embedding.api import embedding_dim

            dim = embedding_dim(self.spec)
        count = collection.count()
        collection.modify(metadata=embedder_metadata(
            self.spec, dim, content_stamp(stored, self.spec.model_id),
            input_stamp(chunks, self.spec.model_id, self.params.delete_missing), count))
        return count

    def restore(self) -> None:
        """A job that stopped before changing anything gives the collection back its
        metadata (still in sync with what synchronised it last); after any write it stays
        marked "writing", so the next run synchronises again."""
        if self.before is not None and not self.written and not self.remote:
            self.collection.modify(metadata=self.before)


def _check_unique(chunks: list[Chunk]) -> None:
    seen: set[str] = set()
    twice = sorted({c.chunk_id for c in chunks if c.chunk_id in seen or seen.add(c.chunk_id)})
    if twice:
        raise NodeConfigError(f"chunk ids occur in more than one file: {', '.join(twice[:5])}; "
                              "document ids must be unique across the corpus files")


def _snapshot(ray: Any, counter: Any) -> dict[str, list[int]]:
    try:
        return ray.get(counter.snapshot.remote(), timeout=10)
    except Exception:
        return {}


def _poll(ray: Any, counter: Any, report: Callable[[dict[str, list[int]]], None],
          stop: threading.Event) -> None:
    while not stop.wait(1.0):
        report(_snapshot(ray, counter))


_WORKER_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception)): (node '.+)$")


def _job_failure(exc: BaseException) -> str:
    """What a worker's exception said (naming the node, and the file for unreadable input),
    found through Ray's wrappers: their own text ends in Ray's retry advice."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        error = pending.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        if not type(error).__module__.startswith("ray"):
            text = str(error).strip()
            if text.startswith("node '"):
                return text.splitlines()[0]
        for linked in (getattr(error, "cause", None), error.__cause__, error.__context__):
            if isinstance(linked, BaseException):
                pending.append(linked)
    for line in str(exc).splitlines():
        found = _WORKER_ERROR.match(line)
        if found:
            return found[2]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")
