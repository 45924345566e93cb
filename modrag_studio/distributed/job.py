"""One indexing job, locally or on Ray, for ``modrag index`` and the studio's Index dialog.

``run_index_job`` runs a graph's ingest part and returns a summary; progress arrives as
``IndexProgress`` events, status lines (a head node started or stopped) as text, and a
``CancelToken`` stops it. After a Ray job the merged BM25 index is put into the node cache
under the key a local run computes, so a later ``modrag run`` / ``modrag eval`` of the graph
does not build it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.composition import default_registry
from modrag_studio.distributed.progress import IndexProgress, LocalProgress
from modrag_studio.distributed.ray_index import RayIndexOptions
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError, RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.hooks import RunHook


class IndexFailed(ModragError):
    """A node of a local indexing run failed (the message names it)."""


@dataclass
class IndexRequest:
    """What to index: the graph, its inputs (the corpus), where (None: this process; else a
    ``--ray`` address) and the node cache a later local run reads."""

    doc: GraphDocument
    inputs: dict[str, Any]
    ray: str | None = None
    options: RayIndexOptions = field(default_factory=RayIndexOptions)
    cache_dir: Path | None = None
    base_dir: Path | None = None  # where relative paths resolve (default: the graph's folder)


def run_index_job(request: IndexRequest, *, cancel: CancelToken | None = None,
                  on_progress: Callable[[IndexProgress], None] | None = None,
                  on_status: Callable[[str], None] | None = None,
                  hooks: Iterable[RunHook] = ()) -> dict[str, Any]:
    """Index and return the summary (mode, documents, chunks, seconds, stages, store count,
    BM25 chunks). Raises IngestGraphError (no usable ingest part), RunCancelled,
    RayUnavailable, IndexFailed or another ModragError."""
    from modrag_nodes.vectorstore.api import ChromaStore
    from modrag_studio.distributed.plan import IngestGraphError, ingest_plan

    plan = ingest_plan(request.doc)
    cancel = cancel or CancelToken()
    if request.ray and plan.store is not None and plan.store.type_id != ChromaStore.type_id:
        raise IngestGraphError(f"node '{plan.store.node_id}' ({plan.store.type_id}): indexing "
                               "on Ray writes Chroma stores only; index this graph without "
                               "--ray")
    if request.ray:
        return _on_ray(request, plan, cancel, on_progress, on_status)
    return _locally(request, plan, cancel, on_progress, hooks)


def node_cache(cache_dir: Path | None) -> Any:
    """The node cache of local runs (the given folder, else the user's cache folder)."""
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.paths import cache_home

    return NodeCache(disk_dir=Path(cache_dir or cache_home()))


def _locally(request: IndexRequest, plan: Any, cancel: CancelToken,
             on_progress: Callable[[IndexProgress], None] | None,
             hooks: Iterable[RunHook]) -> dict[str, Any]:
    from modrag_studio.distributed.plan import index_locally
    from modrag_studio.engine.run.executor import Executor

    executor = Executor(default_registry(), cache=node_cache(request.cache_dir))
    stages = [plan.loader.node_id, *(s.node_id for s in plan.chain), *plan.sinks]
    all_hooks = list(hooks)
    if on_progress is not None:
        all_hooks.append(LocalProgress(stages, on_progress))
    started = time.perf_counter()
    results = index_locally(request.doc, plan, request.inputs, executor, hooks=all_hooks,
                            cancel=cancel, base_dir=request.base_dir)
    for result in results.values():
        if result.status == "cancelled" or cancel.cancelled:
            raise RunCancelled("indexing cancelled")
        if result.trace.failures() or not result.ok:
            raise IndexFailed(result.trace.failure_summary(f"the run ended {result.status}"))
    last = next(iter(results.values()))
    chunks = last.output_of(plan.chain[-1].node_id, "chunks")
    summary: dict[str, Any] = {"mode": "local", "documents": len({c.doc_id for c in chunks}),
                               "chunks": len(chunks),
                               "seconds": round(time.perf_counter() - started, 2)}
    if plan.store is not None:
        index = results[plan.store.node_id].output_of(plan.store.node_id, "index")
        summary.update(store_count=index.count, collection=index.collection)
    if plan.bm25 is not None:
        summary["bm25_chunks"] = results[plan.bm25.node_id].output_of(
            plan.bm25.node_id, "index").n_chunks
    return summary


def _on_ray(request: IndexRequest, plan: Any, cancel: CancelToken,
            on_progress: Callable[[IndexProgress], None] | None,
            on_status: Callable[[str], None] | None) -> dict[str, Any]:
    from modrag_studio.engine.core.paths import graph_base_dir, using_graph_folder

    with using_graph_folder(graph_base_dir(request.doc, request.base_dir)):
        return _on_ray_here(request, plan, cancel, on_progress, on_status)


def _on_ray_here(request: IndexRequest, plan: Any, cancel: CancelToken,
                 on_progress: Callable[[IndexProgress], None] | None,
                 on_status: Callable[[str], None] | None) -> dict[str, Any]:
    """The Ray job with relative paths resolving against the graph's folder."""
    from modrag_studio.distributed.plan import (
        corpus_root,
        embedder_of_plan,
        with_splitter_embedders,
    )
    from modrag_studio.distributed.ray_index import index_on_ray
    from modrag_studio.distributed.session import ray_session

    root = corpus_root(plan, request.inputs)
    plan = with_splitter_embedders(request.doc, plan)
    embedder = (embedder_of_plan(request.doc, plan, request.inputs)
                if plan.store is not None else None)
    with ray_session(request.ray, cancel=cancel, on_status=on_status):
        summary = index_on_ray(plan, root, embedder, request.options, cancel=cancel,
                               on_progress=on_progress)
    result: dict[str, Any] = {"mode": f"ray {request.ray}", "documents": summary.documents,
                              "chunks": summary.chunks, "embedded": summary.embedded,
                              "seconds": round(summary.seconds, 2), "stages": summary.stages}
    if plan.store is not None:
        result.update(store_count=summary.store_count,
                      collection=plan.store.params["collection"])
    if summary.bm25 is not None:
        result["bm25_chunks"] = summary.bm25.n_chunks
        result["bm25_cache_key"] = seed_bm25(request, plan.bm25.node_id, summary.bm25)
    return result


def seed_bm25(request: IndexRequest, node_id: str, index: Any) -> str:
    """Store the merged index as node ``node_id``'s cached result (see ``cache_seed``)."""
    from modrag_studio.distributed.cache_seed import seed_node_cache

    keys = seed_node_cache(request.doc, request.inputs, node_cache(request.cache_dir),
                           {node_id: {"index": index}}, base_dir=request.base_dir)
    return keys[node_id]


def summary_text(summary: dict[str, Any]) -> str:
    """One line: what the job indexed, where and how long it took."""
    parts = [f"{summary['documents']} documents", f"{summary['chunks']} chunks"]
    if summary.get("store_count") is not None:
        parts.append(f"{summary['store_count']} vectors in '{summary['collection']}'")
    if summary.get("bm25_chunks") is not None:
        parts.append(f"BM25 over {summary['bm25_chunks']} chunks")
    return f"indexed ({summary['mode']}, {summary['seconds']:.1f} s): " + ", ".join(parts)
