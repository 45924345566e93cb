"""Store-neutral record helpers shared by the Chroma and LanceDB stores: the metadata keys a
store records about its last synchronisation, the stamps, and a chunk's stored fields."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from modrag_nodes.embedding.contracts import content_hash, record_hash
from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_studio.engine.core.node import Chunk

# Keys of the collection (table) metadata the stores write.
META_MODEL_ID = "embedder_model_id"
META_DIM = "embedder_dim"
META_EMBEDDER = "embedder_spec"
META_STAMP = "content_stamp"
META_SYNCED_FROM = "synced_from"
META_COUNT = "record_count"
META_CREATOR = "created_by"
WRITING = "writing"  # META_SYNCED_FROM while a synchronisation writes


def embedder_metadata(spec: EmbedderSpec, dim: int | None, stamp: str = "",
                      synced_from: str = "", count: int | None = None) -> dict[str, Any]:
    """Collection metadata: the embedder, and what the last synchronisation wrote."""
    spec_json = spec.model_dump(mode="json", exclude={"host"})
    metadata: dict[str, Any] = {
        META_MODEL_ID: spec.model_id,
        META_EMBEDDER: json.dumps(spec_json, sort_keys=True),
        META_CREATOR: "modrag-studio",
        META_STAMP: stamp,
        META_SYNCED_FROM: synced_from,
    }
    if dim:
        metadata[META_DIM] = int(dim)
    if count is not None:
        metadata[META_COUNT] = int(count)
    return metadata


def embedder_of(metadata: Mapping[str, Any] | None) -> EmbedderSpec | None:
    """The embedder spec recorded in a collection's metadata, if any."""
    raw = (metadata or {}).get(META_EMBEDDER)
    if not raw:
        return None
    try:
        return EmbedderSpec.model_validate(json.loads(raw))
    except ValueError:
        return None


def input_stamp(chunks: list[Chunk], model_id: str, delete_missing: bool) -> str:
    """A hash of a synchronisation's inputs: the chunks (every field), embedder and mode."""
    digest = hashlib.sha256(f"{model_id}\t{delete_missing}".encode())
    for c in chunks:
        fields = (c.chunk_id, c.doc_id, c.text, c.start, c.end, c.index, c.source,
                  sorted(c.metadata.items(), key=lambda item: str(item[0])))
        digest.update(repr(fields).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def content_stamp(state: dict[str, tuple[str, str]], model_id: str) -> str:
    """A hash of what a collection holds: every id with its record hash, and the model id."""
    digest = hashlib.sha256(model_id.encode("utf-8"))
    for record_id in sorted(state):
        digest.update(f"\n{record_id}\t{state[record_id][1]}".encode())
    return digest.hexdigest()[:32]


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """The fields stored with a chunk besides its text (scalars; chunk metadata as JSON)."""
    return {
        "doc_id": chunk.doc_id,
        "start": int(chunk.start),
        "end": int(chunk.end),
        "index": int(chunk.index),
        "source": chunk.source,
        "chunk_meta": json.dumps(chunk.metadata, ensure_ascii=False, sort_keys=True,
                                 default=repr),
        "content_hash": content_hash(chunk.text),
        "record_hash": record_hash(chunk),
    }


def chunk_from_record(record_id: str, text: str | None, meta: dict[str, Any] | None) -> Chunk:
    meta = meta or {}
    try:
        extra = json.loads(meta.get("chunk_meta") or "{}")
    except ValueError:
        extra = {}
    return Chunk(
        chunk_id=record_id,
        doc_id=str(meta.get("doc_id", "")),
        text=text or "",
        start=int(meta.get("start", 0) or 0),
        end=int(meta.get("end", 0) or 0),
        index=int(meta.get("index", 0) or 0),
        source=str(meta.get("source", "")),
        metadata=extra if isinstance(extra, dict) else {},
    )


def batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
