"""What Ray workers run: read a block of files or JSONL lines, split it with the graph's own
splitter nodes, embed it with the graph's embedder (one model per actor), write it to Chroma.

Every stage reuses the node classes (``run()`` with a worker-side NodeContext); rows travel as
JSON of the engine's ``Document`` / ``Chunk`` contracts, so nothing is re-implemented here.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from modrag_studio.distributed.plan import StepSpec
from modrag_studio.engine.core.datatypes import Chunk, Document
from modrag_studio.engine.core.node import NodeContext, node_context
from modrag_studio.engine.core.resources import process_resources

log = logging.getLogger(__name__)
COUNTER_NAME = "modrag-index-progress"


def worker_context(node_id: str, type_id: str) -> NodeContext:
    """A NodeContext for a node run inside a Ray worker (progress is counted per block;
    models are kept in the worker process's resources)."""
    return node_context(node_id, type_id, resources=process_resources(),
                        work_dir=Path(tempfile.gettempdir()))


def run_node(step: StepSpec, **inputs: Any) -> dict[str, Any]:
    """Run one node of the graph (by its registered type) on a block of inputs."""
    from modrag_studio.composition import default_registry

    registry = default_registry()
    node_type = registry.get(step.type_id)
    params = node_type.Params.model_validate(step.params)
    return registry.instance(step.type_id).run(worker_context(step.node_id, step.type_id),
                                               params, **inputs)


def count(stage: str, rows: int, run_key: str) -> None:
    """Add a block of ``rows`` to the driver's progress counter (best effort).

    The block waits (briefly) until the counter has taken it: a message still on its way when
    the block's task ended could arrive after the driver's final count, which then missed a
    whole stage.
    """
    import ray

    try:
        counter = ray.get_actor(f"{COUNTER_NAME}-{run_key}")
        ray.get(counter.add.remote(stage, rows), timeout=COUNT_WAIT_S)
    except Exception:  # the counter is cosmetic: never fail a block for it
        pass


COUNT_WAIT_S = 5.0


# reading -------------------------------------------------------------------------------------
def read_units(batch: dict[str, Any], loader: StepSpec, root: str,
               run_key: str) -> dict[str, Any]:
    """A block of work units (a file, or a byte range of a JSONL file) -> document rows."""
    from modrag_nodes.ingest.api import LoadParams, UnreadableFile, beir_documents, load_file

    params = LoadParams.model_validate(loader.params)
    docs: list[str] = []
    problems: list[str] = []
    for unit_json in batch["unit"]:
        unit = json.loads(unit_json)
        path = Path(unit["file"])
        try:
            if "start" in unit:
                with path.open("rb") as fh:
                    fh.seek(unit["start"])
                    raw = fh.read(unit["end"] - unit["start"])
                lines = enumerate(_decode(raw, params.encoding).split("\n"),
                                  start=unit["first_line"])
                found = list(beir_documents(lines, unit["rel"], unit["source"], params))
            else:
                found = [d.model_copy(update={"source": unit["source"]})
                         for d in load_file(Path(root), path, params)]
        except (UnreadableFile, OSError, UnicodeDecodeError) as exc:
            problems.append(f"{unit['rel']}: {exc}")
            continue
        docs.extend(d.model_dump_json() for d in found if d.text.strip())
    if problems:
        raise RuntimeError(f"node '{loader.node_id}': unreadable input: {'; '.join(problems)}")
    count("read", len(docs), run_key)
    return {"doc": docs}


def _decode(raw: bytes, encoding: str) -> str:
    """A JSONL block's bytes as text, decoded and with newlines normalised like the loader."""
    codec = "utf-8-sig" if encoding.lower() in ("utf-8", "utf8") else encoding
    return raw.decode(codec).replace("\r\n", "\n").replace("\r", "\n")


# splitting -----------------------------------------------------------------------------------
def split_block(batch: dict[str, Any], chain: list[StepSpec], bm25: StepSpec | None,
                run_key: str) -> dict[str, Any]:
    """Documents -> chunks through the graph's splitter chain; with a BM25 node, each chunk's
    tokens under its tokenizer too (the shard the driver merges)."""
    value: Any = [Document.model_validate_json(d) for d in batch["doc"]]
    for step in chain:
        wired: dict[str, Any] = {}
        if step.embedder_json is not None:  # a splitter fitting chunks to the embedder
            from modrag_nodes.embedding.api import EmbedderSpec

            wired["embedder"] = EmbedderSpec.model_validate_json(step.embedder_json)
        outputs = run_node(step, **{_list_port(step): value}, **wired)
        value = next(iter(outputs.values()))
    chunks: list[Chunk] = value
    rows: dict[str, Any] = {"chunk": [c.model_dump_json() for c in chunks],
                            "chunk_id": [c.chunk_id for c in chunks]}
    if bm25 is not None:
        rows["tokens"] = [json.dumps(t) for t in bm25_tokens(bm25, chunks)]
    count("split", len(chunks), run_key)
    return rows


def _list_port(step: StepSpec) -> str:
    from modrag_studio.composition import default_registry

    node_type = default_registry().get(step.type_id)
    return next(p.name for p in node_type.inputs if p.required)


def bm25_tokenizer(bm25: StepSpec) -> Any:
    from modrag_nodes.retrieval.api import BM25IndexParams, Tokenizer

    p = BM25IndexParams.model_validate(bm25.params)
    return Tokenizer(kind=p.tokenizer, lowercase=p.lowercase, stopwords=p.stopwords,
                     stemmer=p.stemmer, pattern=p.pattern)


def bm25_tokens(bm25: StepSpec, chunks: list[Chunk]) -> list[list[str]]:
    from modrag_nodes.retrieval.api import chunk_text

    fields = bm25.params.get("fields", "text")
    return bm25_tokenizer(bm25).tokenize_many([chunk_text(c, fields) for c in chunks])


# embedding -----------------------------------------------------------------------------------
class EmbedActor:
    """Holds one embedding model; embeds the chunks of a block the store does not already hold
    with the same text and record (so a retried or repeated job embeds nothing twice)."""

    def __init__(self, embedder_json: str, store: dict[str, Any] | None,
                 stored: dict[str, tuple[str, str]] | None, run_key: str,
                 threads: int = 0, pid_file: str | None = None) -> None:
        from modrag_nodes.embedding.api import EmbedderSpec

        if threads:
            import torch

            from modrag_nodes.embedding.api import limit_threads

            torch.set_num_threads(threads)
            limit_threads(threads)
        self.spec = EmbedderSpec.model_validate_json(embedder_json)
        self.store = store  # a Chroma server: asked per block
        self.stored = stored  # a local folder: what it held when the job started
        self.run_key = run_key
        self.pid_file = pid_file  # tests kill this process to check that Ray retries blocks

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        from modrag_nodes.embedding.api import (
            EmbedChunks,
            EmbedChunksParams,
            content_hash,
            record_hash,
        )

        if self.pid_file:  # announced when busy with a block, i.e. mid-job
            with open(self.pid_file, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
            self.pid_file = None
        chunks = [Chunk.model_validate_json(c) for c in batch["chunk"]]
        stored = self._stored([c.chunk_id for c in chunks])
        todo = [i for i, c in enumerate(chunks)
                if stored.get(c.chunk_id) != (content_hash(c.text), record_hash(c))]
        started = time.perf_counter()
        dim = 0
        vectors = None
        if todo:
            out = EmbedChunks().run(worker_context("embed", EmbedChunks.type_id),
                                    EmbedChunksParams(), chunks=[chunks[i] for i in todo],
                                    embedder=self.spec)["embedded"]
            dim = out.dim
            vectors = out.vectors
        matrix = np.zeros((len(chunks), max(dim, 1)), dtype=np.float32)
        if vectors is not None:
            matrix[todo] = vectors
        embedded = np.zeros(len(chunks), dtype=bool)
        embedded[todo] = True
        count("embed", len(chunks), self.run_key)
        return {**batch, "vector": matrix, "embedded": embedded,
                "embed_s": np.full(len(chunks), (time.perf_counter() - started) / len(chunks)
                                   if chunks else 0.0)}

    def _stored(self, ids: list[str]) -> dict[str, tuple[str, str]]:
        if self.stored is not None:
            return {i: tuple(self.stored[i]) for i in ids if i in self.stored}
        collection = open_store_collection(self.store) if self.store else None
        if collection is None:
            return {}
        page = collection.get(ids=ids, include=["metadatas"])
        return {i: (str((m or {}).get("content_hash", "")), str((m or {}).get("record_hash", "")))
                for i, m in zip(page["ids"], page["metadatas"] or [], strict=False)}


def open_store_collection(store: dict[str, Any]) -> Any:
    """The store's collection (None when it does not exist yet), through the store's code."""
    from modrag_nodes.vectorstore.api import client_for, get_collection

    return get_collection(client_for(tuple(store["key"])), store["collection"])


# writing -------------------------------------------------------------------------------------
def write_block(batch: dict[str, Any], store: dict[str, Any], run_key: str) -> dict[str, Any]:
    """Upsert the embedded rows of a block by chunk id (metadata holds the content hash), then
    drop the vectors: only ids and texts go on to the driver."""
    import numpy as np

    upsert_rows(open_store_collection(store), batch)
    count("write", int(batch["embedded"].sum()), run_key)
    dim = batch["vector"].shape[1] if batch["embedded"].any() else 0
    return {**{k: v for k, v in batch.items() if k != "vector"},
            "dim": np.full(len(batch["embedded"]), dim)}


def upsert_rows(collection: Any, batch: dict[str, Any]) -> int:
    """Upsert the rows flagged ``embedded``; idempotent, so a retried block changes nothing."""
    import numpy as np

    from modrag_nodes.vectorstore.api import chunk_metadata

    rows = [i for i, flag in enumerate(batch["embedded"]) if flag]
    if not rows:
        return 0
    chunks = [Chunk.model_validate_json(batch["chunk"][i]) for i in rows]
    collection.upsert(ids=[c.chunk_id for c in chunks],
                      embeddings=np.asarray(batch["vector"][rows], dtype=np.float32),
                      documents=[c.text for c in chunks],
                      metadatas=[chunk_metadata(c) for c in chunks])
    return len(rows)


class ProgressCounter:
    """Rows and blocks per stage, added to by the workers and read by the driver."""

    def __init__(self) -> None:
        self.stages: dict[str, list[int]] = {}

    def add(self, stage: str, rows: int) -> None:
        blocks_rows = self.stages.setdefault(stage, [0, 0])
        blocks_rows[0] += 1
        blocks_rows[1] += rows

    def snapshot(self) -> dict[str, list[int]]:
        return {k: list(v) for k, v in self.stages.items()}
