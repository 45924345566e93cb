"""Whether a Chroma location is usable, checked without opening a client (``health``)."""

from __future__ import annotations

from pathlib import Path

from modrag_nodes.vectorstore import store_health
from modrag_nodes.vectorstore.chroma_store import SQLITE_FILE, folder_problem
from modrag_studio.engine.core.node import NodeConfigError


def folder_health(folder: Path, collection: str = "modrag") -> str:
    """A persistent store's folder: there and writable with a SQLite database, its collection
    not being written, or creatable."""

    def describe() -> str:
        db = folder / SQLITE_FILE
        if not db.exists():
            return f"Chroma folder {folder} (empty)"
        return f"Chroma folder {folder} ({db.stat().st_size / 1e6:.1f} MB)"

    return store_health.folder_health(folder, collection, "Chroma",
                                      lambda: folder_problem(folder), describe)


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
