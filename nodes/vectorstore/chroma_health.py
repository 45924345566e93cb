"""Whether a Chroma location is usable, checked without opening a client (``health``)."""

from __future__ import annotations

import os
from pathlib import Path

from modrag_nodes.vectorstore.chroma_store import SQLITE_FILE, folder_problem
from modrag_studio.engine.core.errors import NodeConfigError


def folder_health(folder: Path) -> str:
    """A persistent store's folder: there and writable with a SQLite database, or creatable."""
    if not folder.exists():
        parent = next((p for p in folder.parents if p.exists()), None)
        if parent is None or not os.access(parent, os.W_OK):
            raise NodeConfigError(f"Chroma folder {folder} does not exist and {parent} is "
                                  "not writable")
        return f"Chroma folder {folder} (created on the first run)"
    if not folder.is_dir():
        raise NodeConfigError(f"Chroma folder {folder} is a file, not a folder")
    problem = folder_problem(folder)
    if problem is not None:
        raise NodeConfigError(f"Chroma folder {folder}: {problem}")
    db = folder / SQLITE_FILE
    if not db.exists():
        return f"Chroma folder {folder} (empty)"
    return f"Chroma folder {folder} ({db.stat().st_size / 1e6:.1f} MB)"


def server_health(host: str, port: int, ssl: bool, timeout_s: float = 5.0) -> str:
    """A Chroma server answers its heartbeat."""
    import httpx

    url = f"{'https' if ssl else 'http'}://{host}:{port}"
    try:
        response = httpx.get(f"{url}/api/v2/heartbeat", timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise NodeConfigError(f"cannot reach the Chroma server at {url} "
                              f"({type(exc).__name__}); check params 'host' and 'port'") from exc
    if not response.is_success:
        raise NodeConfigError(f"the Chroma server at {url} answered its heartbeat with HTTP "
                              f"{response.status_code}")
    return f"Chroma server at {url} answers"
