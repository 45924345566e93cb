"""LanceDB access shared by ``store.lancedb`` and ``retrieve.vector``: connections, tables and
a Chroma-shaped view of a table for the searches.

A table holds one row per chunk: ``id``, ``vector`` (float32, fixed size), ``text`` and the
fields of ``records.chunk_metadata``. What the last synchronisation wrote (the embedder, the
stamps, the count) is JSON in the metadata of the ``id`` field, so it lives and dies with the
table's versions. LanceDB never embeds anything here: no embedding function is registered
and every vector is computed by our embedders.
"""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.handles import StoreDriver
from modrag_nodes.vectorstore.records import chunk_metadata
from modrag_studio.engine.core.node import Chunk, NodeConfigError

BACKEND = "lancedb"
META_KEY = b"modrag"
TABLE_SUFFIX = ".lance"
FIELDS = ("doc_id", "start", "end", "index", "source", "chunk_meta", "content_hash",
          "record_hash")
IN_BATCH = 1000  # ids per "id IN (...)" filter

_dbs: dict[str, Any] = {}
_tables: dict[tuple[str, str], Any] = {}
_counts: dict[tuple[str, str], tuple[int, int]] = {}
_lock = threading.Lock()


def connect(folder: str | Path) -> Any:
    """A shared connection to a LanceDB folder (made when missing); every read sees the
    latest committed version, also one another process wrote."""
    import lancedb

    key = str(folder)
    with _lock:
        if key not in _dbs:
            try:
                Path(key).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise NodeConfigError(
                    f"param 'path': cannot create LanceDB folder {key}: {exc}") from exc
            _dbs[key] = lancedb.connect(key, read_consistency_interval=timedelta(0))
        return _dbs[key]


def forget() -> None:
    """Drop cached connections and tables (a later call opens the folder again)."""
    with _lock:
        _dbs.clear()
        _tables.clear()
        _counts.clear()


def close_location(key: tuple[Any, ...]) -> None:
    """Drop the connection of one folder and its tables and counts (a later call opens the
    folder again)."""
    folder = str(key[1])
    with _lock:
        _dbs.pop(folder, None)
        for cached in [k for k in _tables if k[0] == folder]:
            _tables.pop(cached, None)
        for cached in [k for k in _counts if k[0] == folder]:
            _counts.pop(cached, None)


def table_dir(folder: str | Path, name: str) -> Path:
    return Path(folder) / f"{name}{TABLE_SUFFIX}"


def open_table(folder: str | Path, name: str) -> Any | None:
    """The table, or None when it does not exist (a missing folder is not created)."""
    if not table_dir(folder, name).is_dir():
        return None
    cache = (str(folder), name)
    with _lock:
        hit = _tables.get(cache)
    if hit is not None:
        return hit
    try:
        table = connect(folder).open_table(name)
    except ValueError as exc:
        if "not found" in str(exc):
            return None
        raise
    except Exception as exc:  # unreadable manifest or data files
        raise NodeConfigError(f"cannot open LanceDB table '{name}' in {folder}: "
                              f"{error_text(exc)}; the table may be corrupted or written by "
                              "another LanceDB version") from exc
    with _lock:
        _tables[cache] = table
    return table


def error_text(exc: BaseException) -> str:
    """LanceDB's error without the Rust source locations it appends."""
    text = re.sub(r",?\s*/\S+\.rs:\d+:\d+", "", str(exc)).strip()
    return f"{type(exc).__name__}: {text}"


def drop_table(folder: str | Path, name: str) -> None:
    connect(folder).drop_table(name)
    with _lock:
        _tables.pop((str(folder), name), None)


def create_table(folder: str | Path, name: str, dim: int, metadata: dict[str, Any]) -> Any:
    import pyarrow as pa

    schema = pa.schema([
        pa.field("id", pa.string(), metadata={META_KEY: json.dumps(metadata)}),
        pa.field("vector", pa.list_(pa.float32(), int(dim))),
        pa.field("text", pa.string()),
        pa.field("doc_id", pa.string()), pa.field("start", pa.int64()),
        pa.field("end", pa.int64()), pa.field("index", pa.int64()),
        pa.field("source", pa.string()), pa.field("chunk_meta", pa.string()),
        pa.field("content_hash", pa.string()), pa.field("record_hash", pa.string()),
    ])
    table = connect(folder).create_table(name, schema=schema, exist_ok=True)
    with _lock:
        _tables[(str(folder), name)] = table
    return table


def metadata_of(table: Any) -> dict[str, Any]:
    raw = (table.schema.field("id").metadata or {}).get(META_KEY)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def set_metadata(table: Any, metadata: dict[str, Any]) -> None:
    table.replace_field_metadata("id", {META_KEY.decode(): json.dumps(metadata)})


def rows(chunks: list[Chunk], vectors: dict[str, Any] | None) -> Any:
    """An Arrow table of these chunks' rows (without ``vector`` and ``text`` when
    ``vectors`` is None: a relabelling)."""
    import numpy as np
    import pyarrow as pa

    columns: dict[str, Any] = {"id": [c.chunk_id for c in chunks]}
    if vectors is not None:
        matrix = np.stack([vectors[c.chunk_id] for c in chunks]).astype(np.float32)
        columns["vector"] = pa.FixedSizeListArray.from_arrays(matrix.reshape(-1),
                                                              matrix.shape[1])
        columns["text"] = [c.text for c in chunks]
    fields = [chunk_metadata(c) for c in chunks]
    for name in FIELDS:
        columns[name] = [f[name] for f in fields]
    return pa.table(columns)


def id_filter(ids: list[str]) -> str:
    """``id IN ('a', 'b')`` with quotes doubled."""
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    return f"id IN ({quoted})"


def select(table: Any, columns: list[str], ids: list[str] | None = None) -> list[dict]:
    """These columns of every row (``ids``: of these rows only, read in batches)."""
    if ids is None:
        return table.search().select(columns).limit(None).to_arrow().to_pylist()
    found: list[dict] = []
    for start in range(0, len(ids), IN_BATCH):
        part = ids[start:start + IN_BATCH]
        found += table.search().where(id_filter(part)).select(columns).limit(None) \
            .to_arrow().to_pylist()
    return found


def stored_state(table: Any | None) -> dict[str, tuple[str, str]]:
    """``{id: (content_hash, record_hash)}`` of every row."""
    if table is None:
        return {}
    return {r["id"]: (r["content_hash"] or "", r["record_hash"] or "")
            for r in select(table, ["id", "content_hash", "record_hash"])}


# Searching ---------------------------------------------------------------------------------
def open_collection(key: tuple[Any, ...], name: str) -> tuple[LanceCollection | None, Any]:
    """The table as a ``LanceCollection`` (None when missing) and its version."""
    table = open_table(key[1], name)
    if table is None:
        return None, None
    version = table.version
    return LanceCollection(table, name), (version,)


def count_at(key: tuple[Any, ...], name: str, collection: LanceCollection, version: Any
             ) -> int:
    """The row count, remembered while the table stays at ``version``."""
    cache = (str(key[1]), name)
    with _lock:
        hit = _counts.get(cache)
    if hit is not None and version is not None and hit[0] == version[0]:
        return hit[1]
    count = collection.count()
    if version is not None:
        with _lock:
            _counts[cache] = (version[0], count)
    return count


class LanceCollection:
    """A LanceDB table with the part of a Chroma collection's interface the searches use
    (``metadata``, ``count``, ``query``, ``get``): cosine distances, Chroma's result layout."""

    def __init__(self, table: Any, name: str) -> None:
        self.table, self.name = table, name

    @property
    def metadata(self) -> dict[str, Any]:
        return metadata_of(self.table)

    def count(self) -> int:
        return self.table.count_rows()

    def query(self, query_embeddings: Any, n_results: int, include: list[str]
              ) -> dict[str, list]:
        import numpy as np

        vectors = np.asarray(query_embeddings, dtype=np.float32)
        columns = ["id", *(["text"] if "documents" in include else []),
                   *(FIELDS if "metadatas" in include else [])]
        found = (self.table.search(list(vectors)).distance_type("cosine").limit(n_results)
                 .select([*columns, "_distance"]).to_arrow().to_pylist()) if len(vectors) else []
        out: dict[str, list] = {"ids": [[] for _ in vectors], "distances": [[] for _ in vectors]}
        if "documents" in include:
            out["documents"] = [[] for _ in vectors]
        if "metadatas" in include:
            out["metadatas"] = [[] for _ in vectors]
        for row in found:  # sorted by query, then distance
            q = row.get("query_index", 0) if len(vectors) > 1 else 0
            out["ids"][q].append(row["id"])
            out["distances"][q].append(float(row["_distance"]))
            if "documents" in out:
                out["documents"][q].append(row["text"])
            if "metadatas" in out:
                out["metadatas"][q].append({f: row[f] for f in FIELDS})
        for q in range(len(vectors)):  # the order of Chroma: by distance, ties by id
            order = sorted(range(len(out["ids"][q])),
                           key=lambda i, q=q: (out["distances"][q][i], out["ids"][q][i]))
            for field in out:
                out[field][q] = [out[field][q][i] for i in order]
        return out

    def get(self, ids: list[str], include: list[str]) -> dict[str, list]:
        columns = ["id", *(["text"] if "documents" in include else []),
                   *(["vector"] if "embeddings" in include else []),
                   *(FIELDS if "metadatas" in include else [])]
        by_id = {r["id"]: r for r in select(self.table, columns, ids)}
        kept = [i for i in ids if i in by_id]
        out: dict[str, list] = {"ids": kept}
        if "embeddings" in include:
            out["embeddings"] = [by_id[i]["vector"] for i in kept]
        if "documents" in include:
            out["documents"] = [by_id[i]["text"] for i in kept]
        if "metadatas" in include:
            out["metadatas"] = [{f: by_id[i][f] for f in FIELDS} for i in kept]
        return out


# Health ------------------------------------------------------------------------------------
def folder_problem(folder: Path, name: str) -> str | None:
    """What is visibly wrong with an existing LanceDB folder (read-only, a table that is
    not one), or None."""
    table = table_dir(folder, name)
    if not os.access(folder, os.W_OK) or (table.exists() and not os.access(table, os.W_OK)):
        return "the folder is read-only"
    if table.exists() and not (table / "_versions").is_dir():
        return f"{table.name} has no _versions folder (the table is corrupted)"
    return None


def location_key(index: VectorIndex) -> tuple[str, str]:
    return (BACKEND, str(index.path))


#: The searches' way in (``handles``): tables in a local folder.
DRIVER = StoreDriver(backends=(BACKEND,), location_key=location_key,
                     open_collection=open_collection, count_at=count_at, forget=forget,
                     close=close_location, folder_backends=(BACKEND,))
