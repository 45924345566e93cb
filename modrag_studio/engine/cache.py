"""Node result cache: keyed by type, version, params and upstream keys; memory and disk."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_FORMAT = 1


def stable_hash(data: Any) -> str:
    """sha256 of the canonical JSON of ``data`` (sorted keys; unknown objects by ``repr``)."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def node_signature(
    *,
    type_id: str,
    version: int,
    params: dict[str, Any],
    inputs: dict[str, list[tuple[str, str]]],
    fingerprint: str | None,
) -> dict[str, Any]:
    """Everything a node's result depends on; inputs map port -> [(source, key), ...]."""
    return {
        "type": type_id,
        "version": version,
        "params": params,
        "inputs": {port: [list(pair) for pair in pairs] for port, pairs in inputs.items()},
        "fingerprint": fingerprint,
    }


def signature_key(signature: dict[str, Any]) -> str:
    keyed = dict(signature)
    keyed["inputs"] = {p: [k for _, k in pairs] for p, pairs in signature["inputs"].items()}
    return stable_hash(keyed)


def explain_change(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """Why a node re-ran: which params, upstream ports or fingerprints differ from last time."""
    if old is None:
        return "first run"
    reasons: list[str] = []
    if old.get("type") != new["type"] or old.get("version") != new["version"]:
        reasons.append(f"node type changed ({old.get('type')} v{old.get('version')})")
    elif old.get("code") != new.get("code"):
        reasons.append("node code changed")
    old_params, new_params = old.get("params", {}), new["params"]
    changed = sorted(k for k in set(old_params) | set(new_params)
                     if old_params.get(k) != new_params.get(k))
    if changed:
        reasons.append("params changed: " + ", ".join(changed))
    old_inputs, new_inputs = old.get("inputs", {}), new["inputs"]
    upstream = []
    for port in sorted(set(old_inputs) | set(new_inputs)):
        if old_inputs.get(port) != new_inputs.get(port):
            sources = {src for src, _ in new_inputs.get(port, [])} or {"(disconnected)"}
            upstream.append(f"{port} from {', '.join(sorted(sources))}")
    if upstream:
        reasons.append("upstream changed: " + "; ".join(upstream))
    if old.get("fingerprint") != new["fingerprint"]:
        reasons.append("source data changed")
    return "; ".join(reasons) if reasons else "no cached result (evicted or never stored)"


class NodeCache:
    """Thread-safe cache of node outputs: an LRU in memory and pickles on disk (optional)."""

    def __init__(self, disk_dir: str | os.PathLike[str] | None = None, memory_items: int = 512):
        self.disk_dir = Path(disk_dir) if disk_dir is not None else None
        self.memory_items = memory_items
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._signatures: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.RLock()
        self._key_locks: dict[str, list] = {}
        self.warnings: list[str] = []

    # single flight -------------------------------------------------------------
    def acquire_key(self, key: str, should_stop) -> bool:
        """Hold ``key`` so concurrent runs compute a result once; False if ``should_stop()``."""
        with self._lock:
            entry = self._key_locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        while not entry[0].acquire(timeout=0.05):
            if should_stop():
                self._drop_key_ref(key)
                return False
        return True

    def release_key(self, key: str) -> None:
        with self._lock:
            entry = self._key_locks[key]
            entry[0].release()
        self._drop_key_ref(key)

    def _drop_key_ref(self, key: str) -> None:
        with self._lock:
            entry = self._key_locks[key]
            entry[1] -= 1
            if entry[1] == 0:
                del self._key_locks[key]

    # results -----------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key]
        loaded = self._read_disk(key)
        if loaded is not None:
            self._remember(key, loaded)
        return loaded

    def put(self, key: str, outputs: dict[str, Any], *, disk: bool = True) -> None:
        self._remember(key, outputs)
        if disk and self.disk_dir is not None:
            self._write_disk(key, outputs)

    def clear_memory(self) -> None:
        with self._lock:
            self._memory.clear()

    def _remember(self, key: str, outputs: dict[str, Any]) -> None:
        with self._lock:
            self._memory[key] = outputs
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_items:
                self._memory.popitem(last=False)

    def _path(self, key: str) -> Path:
        assert self.disk_dir is not None
        return self.disk_dir / "results" / key[:2] / f"{key}.pkl"

    def _read_disk(self, key: str) -> dict[str, Any] | None:
        if self.disk_dir is None:
            return None
        path = self._path(key)
        if not path.exists():
            return None
        try:
            with path.open("rb") as fh:
                envelope = pickle.load(fh)
            if not isinstance(envelope, dict) or envelope.get("format") != _FORMAT:
                raise ValueError("unknown cache entry format")
            if envelope.get("key") != key or not isinstance(envelope.get("outputs"), dict):
                raise ValueError("cache entry does not match its key")
            return envelope["outputs"]
        except Exception as exc:
            message = f"ignored a corrupted cache entry {path.name} ({exc}); recomputing"
            self.warnings.append(message)
            log.warning(message)
            path.unlink(missing_ok=True)
            return None

    def _write_disk(self, key: str, outputs: dict[str, Any]) -> None:
        """Pickle straight into a temp file (no second copy of a large result in memory),
        then rename it into place; an unpicklable result stays in memory only."""
        path = self._path(key)
        envelope = {"format": _FORMAT, "key": key, "outputs": outputs}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        except OSError as exc:
            log.warning("could not write cache entry %s: %s", path, exc)
            return
        written = False
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(envelope, fh, protocol=5)
            os.replace(tmp, path)
            written = True
        except OSError as exc:
            log.warning("could not write cache entry %s: %s", path, exc)
        except Exception as exc:
            log.info("result %s kept in memory only (not picklable: %s)", key[:12], exc)
        finally:
            if not written:
                Path(tmp).unlink(missing_ok=True)

    # signatures (for "why did this re-run") ----------------------------------
    def last_signature(self, scope: str, node_id: str) -> dict[str, Any] | None:
        with self._lock:
            if (scope, node_id) in self._signatures:
                return self._signatures[(scope, node_id)]
        if self.disk_dir is None:
            return None
        path = self.disk_dir / "signatures" / f"{stable_hash([scope, node_id])}.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def remember_signature(self, scope: str, node_id: str, signature: dict[str, Any]) -> None:
        with self._lock:
            unchanged = self._signatures.get((scope, node_id)) == signature
            self._signatures[(scope, node_id)] = signature
        if self.disk_dir is None or unchanged:
            return
        path = self.disk_dir / "signatures" / f"{stable_hash([scope, node_id])}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(signature, fh, default=repr)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not record node signature: %s", exc)
