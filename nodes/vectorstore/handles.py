"""One way in for the searches, whichever store wrote a ``VectorIndex``: its location key,
its collection (a Chroma collection, or a LanceDB table behind the same interface) and the
record count at a store version.

Each store's driver module (a ``*_store`` module of this package) declares a ``DRIVER``: the
backends it writes (``VectorIndex.backend``, the first item of a location key) and how to
open and count them. The drivers are found here by that convention, so a new store is its
node module and its driver module, and nothing here names one.

A store a run opens is held by the run's resources (``hold``: a handle of kind
``"vector store"`` under its location key), and closed through its driver when they are
emptied (``Resources.unload``, the studio's "Unload models") or close their handles.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from modrag_nodes.vectorstore.contracts import VectorIndex
from modrag_studio.engine.core.node import Resources


@dataclass(frozen=True)
class StoreDriver:
    """What a vector store's driver gives the searches (its module's ``DRIVER``).

    ``backends``: the ``VectorIndex.backend`` values it writes; ``folder_backends``: those
    kept in a local folder (locked against a second writer); ``location_key(index)``: the
    key its clients are cached by (``(backend, ...)``); ``open_collection(key, name)``: the
    collection (None when missing) and its store version; ``count_at``: the record count at
    that version; ``forget``: drop every cached client, connection and table; ``close``:
    drop those of one location key (the run's resources closing the store they held).
    """

    backends: tuple[str, ...]
    location_key: Callable[[VectorIndex], tuple[Any, ...]]
    open_collection: Callable[[tuple[Any, ...], str], tuple[Any | None, Any]]
    count_at: Callable[[tuple[Any, ...], str, Any, Any], int]
    forget: Callable[[], None]
    close: Callable[[tuple[Any, ...]], None]
    folder_backends: tuple[str, ...] = ()


GET_PAGE = 5000  # ids read back per call
_drivers: dict[str, StoreDriver] = {}
_lock = threading.Lock()


def drivers() -> dict[str, StoreDriver]:
    """Every store driver by backend (the ``DRIVER`` of each ``*_store`` module here,
    imported once)."""
    with _lock:
        if not _drivers:
            from modrag_nodes import vectorstore

            for info in pkgutil.iter_modules(vectorstore.__path__):
                if info.name.endswith("_store"):
                    module = importlib.import_module(f"{vectorstore.__name__}.{info.name}")
                    driver = getattr(module, "DRIVER", None)
                    if isinstance(driver, StoreDriver):
                        _drivers.update((backend, driver) for backend in driver.backends)
        return _drivers


def driver_of(backend: str) -> StoreDriver:
    found = drivers().get(backend)
    if found is None:
        raise ValueError(f"no vector store driver writes backend '{backend}' "
                         f"(known: {', '.join(sorted(drivers()))})")
    return found


def folder_backends() -> set[str]:
    """The backends whose location key is ``(backend, folder)``."""
    return {b for driver in drivers().values() for b in driver.folder_backends}


def location_key(index: VectorIndex) -> tuple[Any, ...]:
    return driver_of(index.backend).location_key(index)


HANDLE_KIND = "vector store"  # the kind of the handles a run's resources hold


def hold(key: tuple[Any, ...], resources: Resources | None) -> None:
    """Hold the store at ``key`` in ``resources`` (the run's): its driver closes it when they
    are emptied. Nothing is held when ``resources`` is None (work outside a run)."""
    if resources is not None:
        driver = driver_of(key[0])
        resources.handle(HANDLE_KIND, key, lambda: key, driver.close)


def open_collection(key: tuple[Any, ...], name: str, resources: Resources | None = None
                    ) -> tuple[Any | None, Any]:
    """The collection (None when missing) and the store version it was read at; the store
    is held by ``resources`` (the run's) from now on."""
    hold(key, resources)
    return driver_of(key[0]).open_collection(key, name)


def count_at(key: tuple[Any, ...], name: str, collection: Any, version: Any) -> int:
    return driver_of(key[0]).count_at(key, name, collection, version)


def forget() -> None:
    """Drop every cached client, connection and table."""
    for driver in set(drivers().values()):
        driver.forget()


def stored_vectors(index: VectorIndex, ids: list[str], resources: Resources | None = None
                   ) -> Any | None:
    """The stored vectors of ``ids`` as float32 rows in that order, when the collection (a
    Chroma collection or a LanceDB table) holds every one of them; None otherwise."""
    import numpy as np

    from modrag_nodes.vectorstore.records import batches

    collection, _ = open_collection(location_key(index), index.collection, resources)
    if collection is None:
        return None
    found: dict[str, Any] = {}
    for part in batches(list(dict.fromkeys(ids)), GET_PAGE):
        page = collection.get(ids=part, include=["embeddings"])
        vectors = page.get("embeddings")
        if vectors is None:
            return None
        found.update(zip(page["ids"], vectors, strict=False))
    if any(i not in found for i in ids):
        return None
    return np.asarray([found[i] for i in ids], dtype=np.float32)
