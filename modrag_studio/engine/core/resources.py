"""Models and memos that runs reuse: one bounded, evictable service (part of the node API).

Loading an embedder, a reranker or a chat model takes seconds, so nodes keep what they load
for the next run. They keep it here and nowhere else: ``ctx.resources`` is the service of the
run in progress (a node's helpers take it as an argument); an executor brings its own (a
studio session, a server process, one run) and the process has a default
(:func:`process_resources`, for work outside a run that names none). The service is
bounded (least recently used models go first) and can be emptied on demand (the studio's
"Unload models"), it holds the memos an evaluation opens for its precomputed query vectors
and searches, and the stores its runs opened (handles, closed when it is emptied). An
evaluation that runs several questions at once says so (:meth:`Resources.concurrent`), so
that a model that can serve requests together (llama.cpp's slots) is loaded with that many.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
DEFAULT_MAX_MODELS = 6  # MODRAG_MAX_MODELS overrides; the least recently used goes first


@dataclass
class Resident:
    """One object the service holds: what it is, about how much memory it took, its use."""

    kind: str
    key: Hashable
    name: str
    size_bytes: int
    loaded_at: float
    last_used: float
    uses: int = 1
    value: Any = field(default=None, repr=False)
    release: Callable[[Any], None] | None = field(default=None, repr=False)

    def describe(self) -> str:
        return f"{self.kind}: {self.name} (about {self.size_bytes / 2**20:.0f} MB)"


class MemoStack:
    """Memos opened for the length of a ``with`` block; readers see the innermost last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._memos: list[dict[Any, Any]] = []

    @contextmanager
    def open(self) -> Iterator[dict[Any, Any]]:
        """Open a new, empty memo for the block."""
        memo: dict[Any, Any] = {}
        with self.lock:
            self._memos.append(memo)
        try:
            yield memo
        finally:
            with self.lock:
                self._memos.remove(memo)

    def open_memos(self) -> list[dict[Any, Any]]:
        """The memos open now, innermost last."""
        with self.lock:
            return list(self._memos)


class Resources:
    """Loaded models by (kind, key), least recently used first out; named memo stacks."""

    def __init__(self, *, max_models: int | None = None) -> None:
        self.max_models = max_models if max_models is not None else _max_models_from_env()
        self._held: OrderedDict[tuple[str, Hashable], Resident] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, Hashable], threading.Lock] = {}
        self._memos: dict[str, MemoStack] = {}
        self._concurrent: list[int] = []  # what each open ``concurrent`` block asked for
        self._handles: dict[tuple[str, Hashable], tuple[Any, Callable[[Any], None]]] = {}

    @property
    def concurrent_runs(self) -> int:
        """How many runs use the service at once: the most any open ``concurrent`` asked."""
        with self._lock:
            return max(self._concurrent, default=1)

    @contextmanager
    def concurrent(self, runs: int) -> Iterator[None]:
        """Within the block, ``runs`` runs use the service at once: a model that serves
        several requests together (llama.cpp's slots) is loaded with room for that many."""
        with self._lock:
            self._concurrent.append(max(1, runs))
        try:
            yield
        finally:
            with self._lock:
                self._concurrent.remove(max(1, runs))

    def model(self, kind: str, key: Hashable, load: Callable[[], T], *, name: str = "",
              size: Callable[[T], int | None] | None = None,
              release: Callable[[T], None] | None = None) -> T:
        """The object held under (``kind``, ``key``), loaded with ``load()`` the first time.

        ``size`` tells its memory in bytes (when it is not given or says None: how much the
        process grew while loading);
        ``release`` is called when it is evicted or unloaded. Two threads asking for the same
        key load it once; other keys load meanwhile.
        """
        slot = (kind, key)
        with self._lock:
            held = self._hit(slot)
            if held is not None:
                return held
            gate = self._loading.setdefault(slot, threading.Lock())
        with gate:
            with self._lock:
                held = self._hit(slot)
                if held is not None:
                    return held
            before = resident_bytes()
            value = load()
            grown = max(resident_bytes() - before, 0)
            now = time.time()
            told = size(value) if size is not None else None
            entry = Resident(kind, key, name or str(key), told or grown, now, now, value=value,
                             release=release)
            with self._lock:
                self._held[slot] = entry
                self._loading.pop(slot, None)
                evicted = self._over_bound()
        _release(evicted)
        return value

    def peek(self, kind: str, key: Hashable) -> Any | None:
        """The object held under (``kind``, ``key``), or None (nothing is loaded)."""
        with self._lock:
            entry = self._held.get((kind, key))
            return entry.value if entry is not None else None

    def drop(self, kind: str, key: Hashable) -> bool:
        """Forget one object (calling its ``release``); True when it was held."""
        with self._lock:
            entry = self._held.pop((kind, key), None)
        _release([entry] if entry else [])
        return entry is not None

    def unload(self, kind: str | None = None) -> list[Resident]:
        """Forget every object (of ``kind``, or all), release them and give the memory back
        to the system where the allocator allows; returns what was unloaded. Open handles
        of ``kind`` (all: every one) are closed too."""
        with self._lock:
            gone = [e for slot, e in self._held.items() if kind is None or slot[0] == kind]
            for entry in gone:
                del self._held[(entry.kind, entry.key)]
        _release(gone)
        self.close_handles(kind)
        return gone

    def handle(self, kind: str, key: Hashable, open_: Callable[[], T],
               close: Callable[[T], None]) -> T:
        """The open handle under (``kind``, ``key``) (a store's client, a connection),
        opened with ``open_()`` the first time and closed with ``close`` by
        :meth:`close_handles` or :meth:`unload`. Handles hold files and connections, not
        memory: they are not counted against the bound on models."""
        slot = (kind, key)
        with self._lock:
            held = self._handles.get(slot)
            if held is not None:
                return held[0]
            gate = self._loading.setdefault(slot, threading.Lock())
        with gate:
            with self._lock:
                held = self._handles.get(slot)
                if held is not None:
                    return held[0]
            value = open_()
            with self._lock:
                self._handles[slot] = (value, close)
                self._loading.pop(slot, None)
        return value

    def open_handles(self, kind: str | None = None) -> list[tuple[str, Hashable]]:
        """(kind, key) of every open handle (of ``kind``)."""
        with self._lock:
            return [slot for slot in self._handles if kind is None or slot[0] == kind]

    def close_handles(self, kind: str | None = None) -> int:
        """Close every open handle (of ``kind``); returns how many were closed."""
        with self._lock:
            gone = [(slot, self._handles.pop(slot)) for slot in list(self._handles)
                    if kind is None or slot[0] == kind]
        for _, (value, close) in gone:
            with suppress(Exception):  # a failed close must not stop the others
                close(value)
        return len(gone)

    def resident(self) -> list[Resident]:
        """What is held now, least recently used first (values not included)."""
        with self._lock:
            return [Resident(e.kind, e.key, e.name, e.size_bytes, e.loaded_at, e.last_used,
                             e.uses) for e in self._held.values()]

    def memos(self, name: str) -> MemoStack:
        """The memo stack called ``name`` (created on first use)."""
        with self._lock:
            return self._memos.setdefault(name, MemoStack())

    def _hit(self, slot: tuple[str, Hashable]) -> Any | None:
        entry = self._held.get(slot)
        if entry is None:
            return None
        entry.uses += 1
        entry.last_used = time.time()
        self._held.move_to_end(slot)
        return entry.value

    def _over_bound(self) -> list[Resident]:
        evicted = []
        while self.max_models > 0 and len(self._held) > self.max_models:
            evicted.append(self._held.popitem(last=False)[1])
        return evicted


def _max_models_from_env() -> int:
    raw = os.environ.get("MODRAG_MAX_MODELS", "")
    try:
        value = int(raw) if raw.strip() else DEFAULT_MAX_MODELS
    except ValueError:
        raise ValueError(f"MODRAG_MAX_MODELS must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"MODRAG_MAX_MODELS must be 0 (no limit) or more, got {value}")
    return value


def _release(entries: list[Resident]) -> None:
    for entry in entries:
        if entry.release is not None:
            with suppress(Exception):  # a failed release must not stop the others
                entry.release(entry.value)
        entry.value = None
    if entries:
        gc.collect()
        _trim_heap()


def _trim_heap() -> None:
    """Return freed heap pages to the system (glibc keeps them otherwise)."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def parameter_bytes(model: Any) -> int | None:
    """The weights' bytes of a model object: its own ``parameter_bytes()``, or the sum over
    torch-style ``parameters()``; None for other objects (``model`` then measures it)."""
    own = getattr(model, "parameter_bytes", None)
    if callable(own):
        return own()
    try:
        return sum(p.numel() * p.element_size() for p in model.parameters()) or None
    except (AttributeError, TypeError):
        return None


def resident_bytes() -> int:
    """This process's resident memory (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


_process_resources: Resources | None = None
_process_lock = threading.Lock()


def process_resources() -> Resources:
    """The process's own service: used where no run set another."""
    global _process_resources
    with _process_lock:
        if _process_resources is None:
            _process_resources = Resources()
        return _process_resources


def given_or_process(resources: Resources | None) -> Resources:
    """``resources`` when given, else the process's service (work outside a run)."""
    return resources if resources is not None else process_resources()
