"""Whether a store's folder is usable, checked without opening it for writing (``health``):
the checks every embedded store (Chroma, LanceDB) shares."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from modrag_nodes.vectorstore.write_lock import held_by, written_here
from modrag_studio.engine.core.node import NodeConfigError


def folder_health(folder: Path, collection: str, label: str,
                  problem: Callable[[], str | None], describe: Callable[[], str]) -> str:
    """A store folder there and writable, its collection not locked by another writer, and
    nothing wrong that ``problem()`` sees (read-only, corrupted), or a folder that can be
    created; ``describe()`` says what is there."""
    if not folder.exists():
        parent = next((p for p in folder.parents if p.exists()), None)
        if parent is None or not os.access(parent, os.W_OK):
            raise NodeConfigError(f"{label} folder {folder} does not exist and {parent} is "
                                  "not writable")
        return f"{label} folder {folder} (created on the first run)"
    if not folder.is_dir():
        raise NodeConfigError(f"{label} folder {folder} is a file, not a folder")
    found = problem()
    if found is not None:
        raise NodeConfigError(f"{label} folder {folder}: {found}")
    if written_here(folder, collection):  # this process is indexing it: busy, not broken
        return f"{describe()}; collection '{collection}' is being written by this process now"
    holder = held_by(folder, collection)
    if holder is not None:
        raise NodeConfigError(f"{label} folder {folder}: collection '{collection}' is being "
                              f"written (locked by {holder}); a run now would wait for it")
    return describe()
