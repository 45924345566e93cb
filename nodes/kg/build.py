"""``kg.build``: merge an extraction into the persisted graph file (incremental by chunk)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.kg.contracts import GraphExtraction, KnowledgeGraph
from modrag_nodes.kg.store import KGStore, load_store
from modrag_studio.engine.core.node import (
    Chunk,
    FolderPath,
    InputPort,
    NodeConfigError,
    NodeContext,
    NodeType,
    OutputPort,
    Resources,
    resolve_path,
    work_home,
)
from modrag_studio.engine.trust.store_mode import refuse_write, stores_read_only

_NAME = r"^[A-Za-z0-9_\-]{1,64}$"


class BuildParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    folder: FolderPath = Field("", description="Folder of the graph file (empty: <data dir>/kg, "
                                        "beside the default Chroma folder)")
    name: str = Field("graph", pattern=_NAME, description="File name without .kg.json")
    mode: Literal["incremental", "rebuild"] = Field(
        "incremental", description="incremental: update only changed, new and removed chunks; "
                                   "rebuild: start from an empty graph")
    remove_missing: bool = Field(True, description="Chunks absent from the input are removed")


def graph_path(params: BuildParams, work_dir: Path) -> Path:
    folder = resolve_path(params.folder) if params.folder else Path(work_dir) / "kg"
    return folder / f"{params.name}.kg.json"


def graph_file_writes(params: BuildParams, outside: Callable[[str], bool]
                      ) -> list[tuple[str, str]]:
    """What the trust list says a graph file write changes outside the graph's folder: the
    shared ``<data dir>/kg/<name>.kg.json`` (param 'folder' empty: every such graph rewrites
    the same file) or a file in a folder outside it."""
    if params.folder.strip() and not outside(params.folder.strip()):
        return []
    return [("folder", f"writes knowledge graph file {graph_path(params, work_home())}")]


def summarize(store: KGStore) -> dict[str, Any]:
    stats = store.stats()
    return {k: stats[k] for k in ("nodes", "edges", "chunks", "mean_degree", "max_degree",
                                  "top_degree", "node_types", "relations")}


def build_graph(extraction: GraphExtraction, path: Path, *, mode: str = "incremental",
                remove_missing: bool = True, chunks: list[Chunk] | None = None,
                resources: Resources | None = None) -> tuple[KnowledgeGraph, dict[str, Any]]:
    """Update (or create) the graph file at ``path``; returns the handle and update counts."""
    if chunks:
        extraction = extraction.model_copy(deep=True)
        for chunk in chunks:
            if chunk.chunk_id in extraction.chunk_hashes:
                extraction.chunks.setdefault(chunk.chunk_id, chunk.model_dump(mode="json"))
    store = KGStore()
    reason = "new file"
    if mode == "incremental" and path.is_file():
        try:
            store = KGStore.load(path)
        except ValueError as exc:
            raise NodeConfigError(f"param 'folder': {exc}") from exc
        reason = "updated"
        if store.extractor != extraction.extractor:
            store, reason = KGStore(), "rebuilt (the extractor or its rules changed)"
    elif mode == "rebuild":
        reason = "rebuilt"
    counts = store.update(extraction, remove_missing=remove_missing)
    if stores_read_only() and (reason != "updated" or any(
            counts[k] for k in ("new_chunks", "changed_chunks", "removed_chunks"))):
        refuse_write(f"kg.build: the graph file {path.name} would change ({reason})")
    digest = store.save(path)
    load_store(path, resources)  # warm the read cache for the search nodes of the run
    summary = summarize(store)
    return KnowledgeGraph(path=str(path), content_hash=digest, summary=summary), {
        "reason": reason, **counts}


class BuildGraph(NodeType):
    type_id = "kg.build"
    store_role = "graph"
    corpus_params = ("name",)
    title = "Build knowledge graph"
    category = "Knowledge graph"
    description = ("Merges extracted entities and relations into a networkx graph (names merged "
                   "through the alias table), saved as a JSON file; updates only the chunks "
                   "that changed.")
    Params = BuildParams
    inputs = (
        InputPort("extraction", GraphExtraction, description="From an extractor node"),
        InputPort("chunks", list[Chunk], required=False,
                  description="Chunk texts to store when the extraction has none"),
    )
    outputs = (OutputPort("graph", KnowledgeGraph, "The persisted graph (path and summary)"),)

    def store_writes(self, params: BuildParams, outside: Callable[[str], bool]
                     ) -> list[tuple[str, str]]:
        return graph_file_writes(params, outside)

    def fingerprint(self, params: BuildParams, inputs: Any, run_inputs: Any) -> str | None:
        path = graph_path(params, work_home())
        if not path.is_file():
            return f"missing:{uuid.uuid4().hex}"  # never served from the cache
        stat = path.stat()
        return f"{stat.st_mtime_ns}:{stat.st_size}"

    def run(self, ctx: NodeContext, params: BuildParams, extraction: GraphExtraction,
            chunks: list[Chunk] | None = None) -> dict[str, Any]:
        path = graph_path(params, ctx.work_dir)
        handle, counts = build_graph(extraction, path, mode=params.mode,
                                     remove_missing=params.remove_missing, chunks=chunks,
                                     resources=ctx.resources)
        summary = handle.summary
        ctx.note(path=str(path), nodes=summary["nodes"], edges=summary["edges"],
                 mean_degree=summary["mean_degree"], max_degree=summary["max_degree"],
                 top_degree=summary["top_degree"][:5], **counts)
        return {"graph": handle}

