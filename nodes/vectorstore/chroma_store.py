"""Chroma access shared by the store and retrieval nodes: clients, collections, records.

Chroma never embeds anything here: collections are opened with ``embedding_function=None``
and every vector is computed by our embedders and passed explicitly.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_nodes.vectorstore.handles import StoreDriver
from modrag_nodes.vectorstore.records import META_COUNT as META_COUNT
from modrag_nodes.vectorstore.records import META_CREATOR as META_CREATOR
from modrag_nodes.vectorstore.records import META_DIM as META_DIM
from modrag_nodes.vectorstore.records import META_EMBEDDER as META_EMBEDDER
from modrag_nodes.vectorstore.records import META_MODEL_ID as META_MODEL_ID
from modrag_nodes.vectorstore.records import META_STAMP as META_STAMP
from modrag_nodes.vectorstore.records import META_SYNCED_FROM as META_SYNCED_FROM
from modrag_nodes.vectorstore.records import batches as batches
from modrag_nodes.vectorstore.records import chunk_from_record as chunk_from_record
from modrag_nodes.vectorstore.records import chunk_metadata as chunk_metadata
from modrag_nodes.vectorstore.records import content_stamp as content_stamp
from modrag_nodes.vectorstore.records import embedder_metadata
from modrag_nodes.vectorstore.records import input_stamp as input_stamp
from modrag_studio.engine.core.node import NodeConfigError

PAGE = 5000

_clients: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def client_for(index_or_location: VectorIndex | tuple[Any, ...]) -> Any:
    """A shared Chroma client for a ``VectorIndex`` or a location key.

    Location keys are ``("chroma-persistent", path)`` or
    ``("chroma-http", host, port, ssl)``.
    """
    key = location_key(index_or_location) if isinstance(index_or_location, VectorIndex) \
        else index_or_location
    with _lock:
        if key not in _clients:
            _clients[key] = _make_client(key)
        return _clients[key]


def location_key(index: VectorIndex) -> tuple[Any, ...]:
    if index.backend == "chroma-http":
        return ("chroma-http", index.host, index.port, index.ssl)
    return ("chroma-persistent", str(index.path))


def forget_clients() -> None:
    """Drop cached clients (a later call opens the folder or server again)."""
    with _lock:
        _clients.clear()
        _collections.clear()
        _counts.clear()
        for _, conn in _watchers.values():
            conn.close()
        _watchers.clear()
        _seen.clear()


def close_location(key: tuple[Any, ...]) -> None:
    """Drop the client of one location and its collections, counts and change watcher (the
    run's resources closing the store they held; a later call opens it again)."""
    with _lock:
        _clients.pop(key, None)
        for cached in [k for k in _collections if k[:len(key)] == key]:
            _collections.pop(cached, None)
        for cached in [k for k in _counts if k[:len(key)] == key]:
            _counts.pop(cached, None)
        _seen.pop(key, None)
        watcher = _watchers.pop(key[1], None) if key[0] == "chroma-persistent" else None
    if watcher is not None:
        watcher[1].close()


# Change detection --------------------------------------------------------------------------
_watchers: dict[str, tuple[tuple[int, int], Any]] = {}
_collections: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_counts: dict[tuple[Any, ...], tuple[Any, int]] = {}


def store_version(key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A token that changes whenever anything (this process or another) commits a change to
    a persistent store's database, or None when there is no such token (a server, an
    unreadable folder): callers must then look at the collection itself.

    It is SQLite's ``data_version`` seen from a read-only connection kept open here, with the
    file's identity, size and modification time; reading it costs microseconds.
    """
    if key[0] != "chroma-persistent":
        return None
    import sqlite3

    db = Path(key[1]) / SQLITE_FILE
    try:
        stat = db.stat()
    except OSError:
        return None
    identity = (stat.st_dev, stat.st_ino)
    with _lock:
        watcher = _watchers.get(key[1])
        try:
            if watcher is None or watcher[0] != identity:
                if watcher is not None:
                    watcher[1].close()
                conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1.0,
                                       check_same_thread=False)
                watcher = _watchers[key[1]] = (identity, conn)
            version = watcher[1].execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            return None
    return (*identity, stat.st_size, stat.st_mtime_ns, version)


def open_collection(key: tuple[Any, ...], name: str) -> tuple[Any | None, Any]:
    """The collection (None when missing) and the store version it was read at; the same
    handle is reused while the persistent store is unchanged (see ``store_version``). After
    a change another process made, the folder is opened anew (see ``_reopen_after_others``)."""
    version = store_version(key)
    if version is not None:
        with _lock:
            hit = _collections.get((*key, name))
        if hit is not None and hit[0] == version:
            return hit[1], version
        _reopen_after_others(key, version)
    with _lock:
        fresh = key not in _clients
    collection = get_collection(client_for(key), name)
    if version is not None and fresh:
        # Opening a folder writes to its database (Chroma's start-up bookkeeping), which
        # moves the version: that change is this process's own, not another's to reopen for
        # (each open had made the next call open the folder again).
        version = store_version(key) or version
        with _lock:
            _seen[key] = version
    if version is not None and collection is not None:
        with _lock:
            _collections[(*key, name)] = (version, collection)
    return collection, version


# What this process last saw of a folder: (store version, whether this process made it)
_seen: dict[tuple[Any, ...], Any] = {}


def refresh(key: tuple[Any, ...]) -> None:
    """Open a Chroma folder anew when another process wrote it since this one last looked."""
    version = store_version(key)
    if version is not None:
        _reopen_after_others(key, version)


def note_own_write(key: tuple[Any, ...]) -> None:
    """Record the folder's version after this process wrote it (under the write lock)."""
    version = store_version(key)
    if version is not None:
        with _lock:
            _seen[key] = version


def _reopen_after_others(key: tuple[Any, ...], version: Any) -> None:
    """Drop this process's client of a Chroma folder another process has written since.

    An embedded client keeps each collection's vector index in memory: after another
    process deleted and added records, its searches still returned the deleted ids while
    ``get`` and the metadata were new (a server answered from a re-indexed folder with
    stale chunks until it restarted). Opening the folder again reads the index from disk.
    The first version seen in this process is taken as the one it opened.
    """
    with _lock:
        seen = _seen.get(key)
        _seen[key] = version
        if seen is None or seen == version or key not in _clients:
            return
        _clients.pop(key, None)
        for cached in [k for k in _collections if k[:len(key)] == key]:
            _collections.pop(cached, None)
        for cached in [k for k in _counts if k[:len(key)] == key]:
            _counts.pop(cached, None)
    _forget_failed_system(Path(key[1]))  # Chroma's own per-folder system cache


def count_at(key: tuple[Any, ...], name: str, collection: Any, version: Any) -> int:
    """``collection.count()``, remembered while the store stays at ``version``."""
    if version is None:
        return collection.count()
    with _lock:
        hit = _counts.get((*key, name))
    if hit is not None and hit[0] == version:
        return hit[1]
    count = collection.count()
    with _lock:
        _counts[(*key, name)] = (version, count)
    return count


def _make_client(key: tuple[Any, ...]) -> Any:
    import chromadb

    if key[0] == "chroma-http":
        _, host, port, ssl = key
        try:
            return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=_settings())
        except Exception as exc:  # the client checks the server when it is created
            scheme = "https" if ssl else "http"
            raise NodeConfigError(
                f"cannot reach the Chroma server at {scheme}://{host}:{port} "
                f"({type(exc).__name__}: {exc}); check params 'host' and 'port'"
            ) from exc
    path = Path(key[1])
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NodeConfigError(f"param 'path': cannot create Chroma folder {path}: {exc}") from exc
    _check_not_locked(path)
    failure: Exception | None = None
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return chromadb.PersistentClient(path=str(path), settings=_settings())
        except Exception as exc:  # another process may be creating the same new folder
            failure = exc
            _forget_failed_system(path)
            if attempt + 1 < OPEN_ATTEMPTS:
                time.sleep(0.5 * (attempt + 1))
    raise NodeConfigError(
        f"cannot open the Chroma folder {path}: {_diagnose(path)} ({type(failure).__name__}: "
        f"{failure}); nothing in the folder was changed"
    ) from failure


OPEN_ATTEMPTS = 3


def _forget_failed_system(path: Path) -> None:
    """Drop Chroma's cached system of a folder. Chroma caches it before starting it, so
    after a failed start (two processes creating one new folder at once) every later open in
    this process got the broken one ("'RustBindingsAPI' object has no attribute
    'bindings'"); and a folder another process wrote is opened anew from disk."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        settings = _settings()
        settings.persist_directory, settings.is_persistent = str(path), True
        identifier = SharedSystemClient._get_identifier_from_settings(settings)
        SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    except Exception:  # another Chroma version: nothing cached to drop, or no such cache
        pass


SQLITE_FILE = "chroma.sqlite3"
LOCK_WAIT_S = 5.0


def _check_not_locked(path: Path) -> None:
    """Fail clearly when another process holds the store's database locked (Chroma would wait)."""
    import sqlite3

    db = path / SQLITE_FILE
    if not db.is_file() or not os.access(path, os.W_OK):
        return
    try:
        conn = sqlite3.connect(str(db), timeout=LOCK_WAIT_S, isolation_level=None)
    except sqlite3.Error:
        return  # not a database: opening the client reports it
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise NodeConfigError(
                f"the Chroma folder {path} is locked by another process ({SQLITE_FILE} stayed "
                f"busy for {LOCK_WAIT_S:g} s); close the program using it or set param 'path' "
                "to another folder"
            ) from exc
    except sqlite3.DatabaseError:
        pass  # corrupted: opening the client reports it
    finally:
        conn.close()


def folder_problem(path: Path) -> str | None:
    """What is visibly wrong with an existing Chroma folder (read-only, not a database), or
    None."""
    db = path / SQLITE_FILE
    if not os.access(path, os.W_OK) or (db.exists() and not os.access(db, os.W_OK)):
        return "the folder is read-only"
    if db.is_file():
        with db.open("rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return f"{SQLITE_FILE} is not a SQLite database (the store is corrupted)"
    return None


def _diagnose(path: Path) -> str:
    """Why a Chroma folder may fail to open: read-only, not a database, or other."""
    return folder_problem(path) or "the store may be corrupted or written by another " \
        "Chroma version"


def get_collection(client: Any, name: str) -> Any | None:
    """The collection, opened without any embedding function, or None when it does not exist."""
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None
    except ValueError as exc:  # older clients raise ValueError for a missing collection
        if "does not exist" in str(exc):
            return None
        raise


def create_collection(client: Any, name: str, spec: EmbedderSpec, dim: int | None) -> Any:
    metadata = embedder_metadata(spec, dim)
    return client.create_collection(
        name, embedding_function=None, metadata=metadata,
        configuration={"hnsw": {"space": "cosine"}},
    )


def stored_state(collection: Any) -> dict[str, tuple[str, str]]:
    """``{id: (content_hash, record_hash)}`` of every record, read in pages."""
    state: dict[str, tuple[str, str]] = {}
    offset = 0
    while True:
        page = collection.get(include=["metadatas"], limit=PAGE, offset=offset)
        ids = page["ids"]
        for record_id, meta in zip(ids, page["metadatas"] or [{}] * len(ids), strict=False):
            meta = meta or {}
            state[record_id] = (str(meta.get("content_hash", "")),
                                str(meta.get("record_hash", "")))
        if len(ids) < PAGE:
            return state
        offset += PAGE


def max_batch(client: Any) -> int:
    try:
        return max(1, min(int(client.get_max_batch_size()), 5000))
    except Exception:
        return 1000


#: The searches' way in (``handles``): embedded folders and servers.
DRIVER = StoreDriver(backends=("chroma-persistent", "chroma-http"), location_key=location_key,
                     open_collection=open_collection, count_at=count_at, forget=forget_clients,
                     close=close_location, folder_backends=("chroma-persistent",))
