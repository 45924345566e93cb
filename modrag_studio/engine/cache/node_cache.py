"""Node result cache: keyed by type, version, params and upstream keys; memory and disk."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from modrag_studio.engine.cache.signing import dump_signed, load_signed
from modrag_studio.engine.core.paths import env_limit, open_regular, with_path_param_keys

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
    path_params: Iterable[str] = (),
) -> dict[str, Any]:
    """Everything a node's result depends on; inputs map port -> [(source, key), ...].
    Path params naming an existing file or folder are keyed by their absolute path."""
    return {
        "type": type_id,
        "version": version,
        "params": with_path_param_keys(params, path_params),
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


def limit_from_env(name: str, default_mb: float) -> int:
    """A byte limit from ``$name`` (in MB), or ``default_mb``; InvalidSetting naming the
    variable for ``inf``, a negative number or text."""
    return int(env_limit(name, default_mb, "MB") * 1024 * 1024)


def allocated(info: os.stat_result) -> int:
    """The disk space a file takes: its allocated blocks (a 100-byte file takes a whole
    block), its size where the system reports no blocks."""
    blocks = getattr(info, "st_blocks", 0)
    return blocks * 512 if blocks else info.st_size  # 0 blocks: not yet allocated, inline


MEMORY_ENV, DISK_ENV = "MODRAG_CACHE_MEMORY_MB", "MODRAG_CACHE_DISK_MB"
DEFAULT_MEMORY_MB, DEFAULT_DISK_MB = 1024, 4096


def check_limits() -> None:
    """Raise InvalidSetting when ``$MODRAG_CACHE_MEMORY_MB`` or ``$MODRAG_CACHE_DISK_MB``
    cannot be used (front ends check at start, before anything is cached)."""
    limit_from_env(MEMORY_ENV, DEFAULT_MEMORY_MB)
    limit_from_env(DISK_ENV, DEFAULT_DISK_MB)


def approx_size(value: Any, *, sample: int = 4) -> int:
    """Rough bytes held by ``value``: arrays by ``nbytes``, texts by length, containers by a
    sample of their items spread over them (so sizing a list of 100 000 chunks costs little;
    an evaluation stores a few result lists per query, and sizing them with 64 items each
    was a third of its time; 4 items of like objects give the same estimate). Fields a type
    names in ``held_elsewhere`` are not followed (a ranking's chunks belong to its index)."""
    import sys

    seen: set[int] = set()

    def size(item: Any, depth: int) -> int:
        if id(item) in seen or depth > 12:
            return 0
        seen.add(id(item))
        nbytes = getattr(item, "nbytes", None)
        if isinstance(nbytes, int):
            return nbytes + 112
        if isinstance(item, str | bytes | bytearray | int | float | bool | None):
            return sys.getsizeof(item)
        if isinstance(item, dict):
            items = list(item.items())
            pairs = _spread(items, sample)
            measured = sum(size(k, depth + 1) + size(v, depth + 1) for k, v in pairs)
            return sys.getsizeof(item) + (measured * len(items) // max(1, len(pairs)))
        if isinstance(item, list | tuple | set | frozenset):
            items = list(item)
            part = _spread(items, sample)
            measured = sum(size(v, depth + 1) for v in part)
            return sys.getsizeof(item) + (measured * len(items) // max(1, len(part)))
        fields = getattr(item, "__dict__", None)
        if isinstance(fields, dict):
            elsewhere = getattr(type(item), "held_elsewhere", ())
            if elsewhere:  # a reference costs a pointer (a ranking's chunks: the index's)
                fields = {k: v for k, v in fields.items() if k not in elsewhere}
            return sys.getsizeof(item) + size(fields, depth + 1)
        return sys.getsizeof(item)

    return size(value, 0)


def _spread(items: list, count: int) -> list:
    """At most ``count`` items taken evenly from first to last."""
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


class NodeCache:
    """Thread-safe cache of node outputs: an LRU in memory and signed pickles on disk
    (optional), both bounded in bytes (least recently used entries go first). The memory
    side is also bounded in entries, loosely: an evaluation keeps a few small results per
    question (3,000 questions of a five-node query side fit), so that a re-score in the same
    process finds them."""

    def __init__(self, disk_dir: str | os.PathLike[str] | None = None,
                 memory_items: int = 20_000, *, memory_bytes: int | None = None,
                 disk_bytes: int | None = None):
        self.disk_dir = Path(disk_dir) if disk_dir is not None else None
        self.memory_items = memory_items
        self.memory_bytes = memory_bytes if memory_bytes is not None \
            else limit_from_env(MEMORY_ENV, DEFAULT_MEMORY_MB)
        self.disk_bytes = disk_bytes if disk_bytes is not None \
            else limit_from_env(DISK_ENV, DEFAULT_DISK_MB)
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.memory_used = 0
        self._disk_used: int | None = None  # measured on first write
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
            outputs, size = loaded
            self._remember(key, outputs, size)
            return outputs
        return None

    def contains(self, key: str) -> bool:
        """Whether ``get(key)`` would find a result (in memory, or a file on disk), without
        reading it."""
        with self._lock:
            if key in self._memory:
                return True
        return self.disk_dir is not None and self._path(key).is_file()

    def put(self, key: str, outputs: dict[str, Any], *, disk: bool = True) -> None:
        size = None
        if disk and self.disk_dir is not None:
            size = self._write_disk(key, outputs)
        self._remember(key, outputs, size)

    def clear_memory(self) -> None:
        with self._lock:
            self._memory.clear()
            self._sizes.clear()
            self.memory_used = 0

    def _remember(self, key: str, outputs: dict[str, Any], size: int | None) -> None:
        size = size if size is not None else approx_size(outputs)
        with self._lock:
            if key in self._memory:
                self.memory_used -= self._sizes.pop(key, 0)
                del self._memory[key]
            if size > self.memory_bytes:
                return  # larger than the whole budget: handed back, never kept
            self._memory[key] = outputs
            self._sizes[key] = size
            self.memory_used += size
            while self._memory and (len(self._memory) > self.memory_items
                                    or self.memory_used > self.memory_bytes):
                old, _ = self._memory.popitem(last=False)
                self.memory_used -= self._sizes.pop(old, 0)

    def _path(self, key: str) -> Path:
        assert self.disk_dir is not None
        return self.disk_dir / "results" / key[:2] / f"{key}.pkl"

    def _read_disk(self, key: str) -> tuple[dict[str, Any], int] | None:
        if self.disk_dir is None:
            return None
        path = self._path(key)
        if not os.path.lexists(path):
            return None
        try:
            envelope = load_signed(path)
            if not isinstance(envelope, dict) or envelope.get("format") != _FORMAT:
                raise ValueError("unknown cache entry format")
            if envelope.get("key") != key or not isinstance(envelope.get("outputs"), dict):
                raise ValueError("cache entry does not match its key")
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: pruned last
            return envelope["outputs"], allocated(path.stat())
        except Exception as exc:
            message = f"ignored a corrupted cache entry {path.name} ({exc}); " \
                      "recomputing"
            self.warnings.append(message)
            log.warning(message)
            with contextlib.suppress(OSError):
                self._account_disk(-allocated(path.lstat()))
            path.unlink(missing_ok=True)
            return None

    def _write_disk(self, key: str, outputs: dict[str, Any]) -> int | None:
        """Pickle straight into a temp file (no second copy of a large result in memory),
        sign it, then rename it into place; an unpicklable result stays in memory only.
        Returns the entry's size in bytes (None when not written)."""
        path = self._path(key)
        envelope = {"format": _FORMAT, "key": key, "outputs": outputs}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=TEMP_SUFFIX)
        except OSError as exc:
            log.warning("could not write cache entry %s: %s", path, exc)
            return None
        written = None
        try:
            with os.fdopen(fd, "wb") as fh:
                dump_signed(envelope, fh)
                fh.flush()
                written = allocated(os.fstat(fh.fileno()))
            if written > self.disk_bytes:
                log.info("result %s (%d bytes on disk) is over the disk cache limit; not "
                         "stored", key[:12], written)
                return written
            old = allocated(path.lstat()) if os.path.lexists(path) else 0
            os.replace(tmp, path)
            self._account_disk(written - old)
            return written
        except OSError as exc:
            log.warning("could not write cache entry %s: %s", path, exc)
        except Exception as exc:
            log.info("result %s kept in memory only (not picklable: %s)", key[:12], exc)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return written

    # disk accounting -----------------------------------------------------------
    def _account_disk(self, delta: int) -> None:
        with self._lock:
            if self._disk_used is None:
                self._disk_used = disk_usage(self.disk_dir)[0] if self.disk_dir else 0
            else:
                self._disk_used += delta
            over = self._disk_used > self.disk_bytes
        if over:
            self.prune()

    def prune(self, limit_bytes: int | None = None) -> tuple[int, int]:
        """Delete least recently used disk entries until the results fit ``limit_bytes``
        (default: the disk limit); returns (entries removed, bytes freed)."""
        if self.disk_dir is None:
            return 0, 0
        removed, freed = prune_disk(self.disk_dir, self.disk_bytes if limit_bytes is None
                                    else limit_bytes)
        with self._lock:
            self._disk_used = disk_usage(self.disk_dir)[0]
        return removed, freed

    def disk_used(self) -> int:
        with self._lock:
            if self._disk_used is None:
                self._disk_used = disk_usage(self.disk_dir)[0] if self.disk_dir else 0
            return self._disk_used

    # signatures (for "why did this re-run") ----------------------------------
    def last_signature(self, scope: str, node_id: str) -> dict[str, Any] | None:
        with self._lock:
            if (scope, node_id) in self._signatures:
                return self._signatures[(scope, node_id)]
        if self.disk_dir is None:
            return None
        path = self.disk_dir / "signatures" / f"{stable_hash([scope, node_id])}.json"
        try:
            with open_regular(path) as fh:
                return json.loads(fh.read(1 << 20).decode("utf-8"))
        except (OSError, ValueError):
            return None

    def remember_signature(self, scope: str, node_id: str, signature: dict[str, Any], *,
                           disk: bool = True) -> None:
        """Keep the node's last signature; ``disk=False`` in memory only (an evaluation's
        per-query nodes: writing one file per query was a tenth of its time)."""
        with self._lock:
            unchanged = self._signatures.get((scope, node_id)) == signature
            self._signatures[(scope, node_id)] = signature
        if self.disk_dir is None or unchanged or not disk:
            return
        path = self.disk_dir / "signatures" / f"{stable_hash([scope, node_id])}.json"
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=TEMP_SUFFIX)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(signature, fh, default=repr)
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            log.warning("could not record node signature: %s", exc)
        finally:
            if tmp is not None:  # a full disk: never leave the temp file behind
                Path(tmp).unlink(missing_ok=True)


TEMP_SUFFIX = ".tmp"


def _entries(disk_dir: Path, *, temp: bool = False) -> list[tuple[float, int, Path]]:
    """(last use, disk space taken, path) of every result entry; with ``temp`` the temp
    files of unfinished writes (in the results' folders and among the signatures) instead."""
    found = []
    results = disk_dir / "results"
    folders = [sub.path for sub in os.scandir(results)
               if sub.is_dir(follow_symlinks=False)] if results.is_dir() else []
    if temp and (disk_dir / "signatures").is_dir():
        folders.append(str(disk_dir / "signatures"))
    suffix = TEMP_SUFFIX if temp else ".pkl"
    for folder in folders:
        for entry in os.scandir(folder):
            if entry.name.endswith(suffix) and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.append((max(info.st_mtime, info.st_atime), allocated(info),
                                  Path(entry.path)))
    return found


def disk_usage(disk_dir: Path | None) -> tuple[int, int]:
    """(bytes on disk, entries) of the results stored in ``disk_dir`` (the bytes count
    allocated blocks, temp files of writes under way included)."""
    if disk_dir is None:
        return 0, 0
    entries = _entries(Path(disk_dir))
    temps = _entries(Path(disk_dir), temp=True)
    return sum(size for _, size, _ in entries + temps), len(entries)


STALE_TEMP_S = 600.0  # a temp file this old belongs to a write that was killed


def prune_disk(disk_dir: Path, limit_bytes: int) -> tuple[int, int]:
    """Delete temp files of killed writes, then the least recently used results, until the
    results (and the temp files of writes under way) take at most ``limit_bytes`` on disk."""
    import time

    stale_before = time.time() - STALE_TEMP_S
    temps = _entries(Path(disk_dir), temp=True)
    removed = freed = 0
    total = sum(size for _, size, _ in temps)
    for used, size, path in temps:
        if used < stale_before:
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size
                freed += size
    entries = sorted(_entries(Path(disk_dir)))
    total += sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= limit_bytes:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size
            freed += size
            removed += 1
    return removed, freed


def clear_disk(disk_dir: Path) -> tuple[int, int]:
    """Delete every stored result, node signature and temp file left by an unfinished write;
    returns (entries, bytes) removed."""
    removed, freed = prune_disk(disk_dir, 0)
    for _, size, path in _entries(Path(disk_dir), temp=True):
        with contextlib.suppress(OSError):
            path.unlink()
            freed += size
    signatures = Path(disk_dir) / "signatures"
    if signatures.is_dir():
        for path in signatures.glob("*.json"):
            path.unlink(missing_ok=True)
    return removed, freed
