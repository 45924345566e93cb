"""Where ModRAG Studio keeps its caches and default data (overridable by environment)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """Node result cache: ``$MODRAG_CACHE_DIR`` or ``~/.cache/modrag-studio``."""
    env = os.environ.get("MODRAG_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "modrag-studio"


def data_home() -> Path:
    """Folder for indexes and other node data: ``$MODRAG_DATA_DIR`` or ``~/.local/share``."""
    env = os.environ.get("MODRAG_DATA_DIR")
    return Path(env) if env else Path.home() / ".local" / "share" / "modrag-studio"
