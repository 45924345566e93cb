"""Pinned node outputs: a node's last outputs kept so later runs use them instead of
running the node (and what only feeds it).

Pins are never part of the graph file (values can be large, and a shipped graph must never
run on stale values by surprise). They live in this user's data folder,
``$MODRAG_DATA_DIR/pins/<graph>/<node>.pin``, one signed pickle per node (the same per-user
HMAC key as the node cache, so a planted file is refused before it is unpickled). A graph is
known by its file's absolute path, or ``name:<graph name>`` before it is saved. Headless
runs read pins only when asked (``modrag run --use-pins``); the studio always does.
"""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.cache.signing import dump_signed, load_signed
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.paths import data_home

log = logging.getLogger(__name__)
_FORMAT = "modrag-pin-1"
NOT_TRANSFERABLE = "not transferable from the run process>"


@dataclass(frozen=True)
class Pin:
    """One node's pinned outputs; ``key`` stands for them in downstream cache keys."""

    node_id: str
    type_id: str
    outputs: dict[str, Any]
    key: str
    pinned_at: float
    #: Set: not the user's pin but a result held for the runs of one evaluation (a node that
    #: does not depend on the question); the visit is told as a cache hit for this reason.
    held: str = ""


def graph_key(doc: GraphDocument | None = None, path: str | os.PathLike[str] | None = None,
              name: str = "untitled") -> str:
    """Which graph pins belong to: the file's absolute path, else ``name:<graph name>``."""
    if path is None and doc is not None:
        path = doc.source_path
    if path is not None:
        return str(Path(path).resolve())
    return f"name:{doc.metadata.name if doc is not None else name}"


def pins_of(graph: str | None) -> dict[str, Pin] | None:
    """The pins of ``graph`` in the default store (None for None: a run without pins)."""
    return PinStore().load(graph) if graph is not None else None


class PinStore:
    """Reads and writes pins under ``root`` (default: ``data_home()/pins``)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else data_home() / "pins"

    def folder(self, graph: str) -> Path:
        return self.root / stable_hash(graph)[:24]

    def _path(self, graph: str, node_id: str) -> Path:
        return self.folder(graph) / f"{node_id}.pin"

    def pin(self, graph: str, node_id: str, type_id: str, outputs: Mapping[str, Any],
            source_key: str = "") -> Pin:
        """Keep ``outputs`` as ``node_id``'s pinned result (replacing an older pin)."""
        for port, value in outputs.items():
            if isinstance(value, str) and value.endswith(NOT_TRANSFERABLE):
                raise ModragError(f"cannot pin '{node_id}': output '{port}' could not be "
                                  "brought back from the run process (not picklable)")
        pin = Pin(node_id, type_id, dict(outputs),
                  stable_hash(["pin", graph, node_id, source_key or secrets.token_hex(8)]),
                  time.time())
        self.put(graph, pin)
        return pin

    def put(self, graph: str, pin: Pin) -> None:
        """Store ``pin`` as it is (undoing an unpin puts the same pin back)."""
        node_id = pin.node_id
        envelope = {"format": _FORMAT, "graph": graph, "node_id": node_id,
                    "type_id": pin.type_id, "key": pin.key, "pinned_at": pin.pinned_at,
                    "outputs": pin.outputs}
        path = self._path(graph, node_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "graph.txt").write_text(graph + "\n", encoding="utf-8")
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                dump_signed(envelope, fh)
            os.replace(tmp, path)
        except Exception as exc:
            Path(tmp).unlink(missing_ok=True)
            raise ModragError(f"cannot pin '{node_id}': {exc}") from None

    def unpin(self, graph: str, node_id: str) -> bool:
        """Remove ``node_id``'s pin; False when it had none."""
        path = self._path(graph, node_id)
        existed = path.exists()
        path.unlink(missing_ok=True)
        return existed

    def get(self, graph: str, node_id: str) -> Pin | None:
        path = self._path(graph, node_id)
        if not path.exists():
            return None
        try:
            data = load_signed(path)
            if not isinstance(data, dict) or data.get("format") != _FORMAT \
                    or data.get("graph") != graph or data.get("node_id") != node_id:
                raise ValueError("the file does not hold this node's pin")
        except Exception as exc:
            log.warning("ignored pin %s: %s", path, exc)
            return None
        return Pin(node_id, data["type_id"], data["outputs"], data["key"], data["pinned_at"])

    def pinned_ids(self, graph: str) -> list[str]:
        folder = self.folder(graph)
        return sorted(p.stem for p in folder.glob("*.pin")) if folder.is_dir() else []

    def load(self, graph: str, node_ids: list[str] | None = None) -> dict[str, Pin]:
        """Every readable pin of ``graph`` (only ``node_ids`` when given), by node id."""
        wanted = self.pinned_ids(graph) if node_ids is None else node_ids
        pins = {node_id: self.get(graph, node_id) for node_id in wanted}
        return {node_id: pin for node_id, pin in pins.items() if pin is not None}
