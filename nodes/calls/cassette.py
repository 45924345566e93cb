"""A cassette: the model calls of a run, recorded to one JSON file and answered from it.

``Cassette.record(path)`` makes every chat and embedder call as usual and keeps its request
and response; ``save()`` writes them (atomically). ``Cassette.replay(path)`` answers each call
from the file without constructing the backend or loading the model; a call that is not in the
file raises ``CallNotRecorded`` with the closest recorded request and a unified diff.
``Cassette.replay(path, live_check=True)`` makes every call live and lists the calls whose
response changed (``drift``). ``using(cassette)`` makes a cassette the process's active one:
``modrag_nodes.llm.client.chat`` and ``modrag_nodes.embedding.spec.embed_texts`` go through it.

Guarantees: a replayed chat answer is the recorded text exactly; replayed vectors are the
recorded float32 bytes; a request asked several times is answered with its recordings in
order (the last one again when they run out); calls from several threads are safe.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from modrag_nodes.calls.requests import (
    chat_request,
    closest,
    embed_request,
    request_diff,
    request_key,
)
from modrag_studio.engine.core.node import ModragError, NodeConfigError

FORMAT = "modrag-calls"
VERSION = 1
KINDS = ("chat", "embed")
Mode = Literal["record", "replay", "live-check"]
#: ``ChatResult`` fields a recording keeps (timings are the replay's own).
CHAT_FIELDS = ("text", "model", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
               "stopped", "drafted_tokens", "accepted_tokens")


class CallNotRecorded(NodeConfigError):
    """A replayed run asked for a call its cassette does not hold."""


@dataclass
class Drift:
    """A call whose live response differs from the recorded one (``--live-check``)."""

    key: str
    kind: str
    node: str
    recorded: str
    live: str

    def describe(self) -> str:
        return (f"{self.kind} call {self.key} ({self.node or 'no node'}): recorded "
                f"{self.recorded!r}, live {self.live!r}")


@dataclass
class Cassette:
    path: Path
    mode: Mode
    kinds: tuple[str, ...] = KINDS
    calls: list[dict[str, Any]] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    new: list[str] = field(default_factory=list)  # live-check: requests the file lacks
    live_calls: int = 0
    missed: int = 0  # replay: calls the file lacks (each failed its node)
    _cursor: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # making one ------------------------------------------------------------------------
    @classmethod
    def record(cls, path: str | Path, kinds: tuple[str, ...] = KINDS) -> Cassette:
        unknown = set(kinds) - set(KINDS)
        if unknown or not kinds:
            raise ValueError(f"call kinds to record: {', '.join(sorted(unknown)) or 'none'} "
                             f"(known: {', '.join(KINDS)})")
        return cls(Path(path), "record", tuple(kinds))

    @classmethod
    def replay(cls, path: str | Path, *, live_check: bool = False) -> Cassette:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ModragError(f"recorded calls {path}: cannot read: {exc.strerror or exc}"
                              ) from exc
        except json.JSONDecodeError as exc:
            raise ModragError(f"recorded calls {path}: not JSON ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ModragError(f"recorded calls {path}: not a '{FORMAT}' file")
        if data.get("version") != VERSION:
            raise ModragError(f"recorded calls {path}: version {data.get('version')!r}; "
                              f"this build reads version {VERSION}")
        return cls(path, "live-check" if live_check else "replay",
                   tuple(data.get("kinds", KINDS)), list(data.get("calls", [])))

    @property
    def replayed(self) -> int:
        """How many calls were answered from the file (or checked against it)."""
        return sum(self._cursor.values())

    def handles(self, kind: str) -> bool:
        """Whether calls of ``kind`` go through this cassette (a cassette recorded without
        embedder calls leaves the embedders live)."""
        return kind in self.kinds

    # the two call kinds ------------------------------------------------------------------
    def chat(self, spec: Any, messages: list[Any], live: Callable[[], Any], *,
             result_type: Callable[..., Any], node: str = "",
             on_token: Callable[[str], None] | None = None) -> Any:
        """The result of one chat call: ``live()``'s (it makes the real call), or, replayed,
        ``result_type`` built from the recorded fields (the chat client's ``ChatResult``)."""
        request = chat_request(spec, messages)
        if self.mode == "replay":
            response = self._recorded(request, node)
            if on_token is not None and response["text"]:
                on_token(response["text"])
            return result_type(**{k: response[k] for k in CHAT_FIELDS if k in response})
        result = live()
        response = {k: getattr(result, k) for k in CHAT_FIELDS}
        self._keep(request, response, node, shown=result.text)
        return result

    def embed(self, spec: Any, texts: list[str], role: str, live: Callable[[], Any], *,
              node: str = "") -> Any:
        """The float32 (n, dim) vectors of one embedder call; ``live()`` makes the real one."""
        import numpy as np

        request = embed_request(spec, texts, role)
        if self.mode == "replay":
            response = self._recorded(request, node)
            raw = base64.b64decode(response["data"])
            return np.frombuffer(raw, dtype=np.float32).reshape(response["shape"]).copy()
        vectors = np.ascontiguousarray(np.asarray(live(), dtype=np.float32))
        response = {"dtype": "float32", "shape": list(vectors.shape),
                    "data": base64.b64encode(vectors.tobytes()).decode("ascii")}
        self._keep(request, response, node, shown=f"{vectors.shape} vectors")
        return vectors

    # recording, replaying, checking ----------------------------------------------------------
    def _keep(self, request: dict[str, Any], response: dict[str, Any], node: str,
              shown: str) -> None:
        key = request_key(request)
        with self._lock:
            self.live_calls += 1
            if self.mode == "record":
                self.calls.append({"key": key, "node": node, "request": request,
                                   "response": response})
                return
            matches = [c for c in self.calls if c["key"] == key]
            if not matches:
                self.new.append(f"{request['kind']} call {key} ({node or 'no node'})")
                return
            position = self._cursor.get(key, 0)
            self._cursor[key] = position + 1
            recorded = matches[min(position, len(matches) - 1)]["response"]
            if recorded != response:
                before = recorded.get("text", f"{recorded.get('shape')} vectors")
                self.drift.append(Drift(key, request["kind"], node, before, shown))

    def _recorded(self, request: dict[str, Any], node: str) -> dict[str, Any]:
        key = request_key(request)
        with self._lock:
            matches = [c for c in self.calls if c["key"] == key]
            if not matches:
                self.missed += 1
                raise CallNotRecorded(self._miss(request, node))
            position = self._cursor.get(key, 0)
            self._cursor[key] = position + 1
            return matches[min(position, len(matches) - 1)]["response"]

    def _miss(self, request: dict[str, Any], node: str) -> str:
        head = (f"{request['kind']} call{f' of node {node}' if node else ''} is not in the "
                f"recorded calls {self.path} (key {request_key(request)})")
        near = closest(request, [c["request"] for c in self.calls])
        if near is None:
            return f"{head}; the file holds no calls"
        position, other = near
        where = self.calls[position].get("node") or "no node"
        return (f"{head}; the closest recorded request (call {position + 1} of "
                f"{len(self.calls)}, node {where}) differs:\n{request_diff(other, request)}")

    # the file ------------------------------------------------------------------------------
    def to_json(self) -> str:
        data = {"format": FORMAT, "version": VERSION,
                "recorded": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "kinds": list(self.kinds), "calls": self.calls}
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    def save(self) -> None:
        """Write the recorded calls atomically (a replay has nothing to write)."""
        from modrag_studio.engine.core.document import atomic_write_text

        if self.mode == "record":
            atomic_write_text(self.path, self.to_json())

    def summary(self) -> str:
        """One line on what the cassette did in this run."""
        if self.mode == "record":
            kinds = {k: sum(c["request"]["kind"] == k for c in self.calls) for k in self.kinds}
            told = ", ".join(f"{n} {k}" for k, n in kinds.items())
            return f"recorded {len(self.calls)} model calls ({told}) to {self.path}"
        if self.mode == "replay":
            missed = f"; {self.missed} not in the file" if self.missed else ""
            return (f"replayed {self.replayed} model calls from {self.path} (no model "
                    f"loaded){missed}")
        changed = len(self.drift)
        return (f"live check of {self.path}: {self.live_calls} calls made, {changed} "
                f"changed, {len(self.new)} not in the file")


_ACTIVE: Cassette | None = None
_ACTIVE_LOCK = threading.Lock()


def active(kind: str) -> Cassette | None:
    """The active cassette when it handles calls of ``kind``."""
    tape = _ACTIVE
    return tape if tape is not None and tape.handles(kind) else None


@contextmanager
def using(cassette: Cassette) -> Iterator[Cassette]:
    """Make ``cassette`` the active one for the block (one at a time per process)."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        if _ACTIVE is not None:
            raise ModragError(f"recorded calls: {_ACTIVE.path} is already in use in this "
                              "process")
        _ACTIVE = cassette
    try:
        yield cassette
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE = None


def replaying(path: str | Path | None) -> AbstractContextManager[Cassette | None]:
    """``using`` a replay of the file at ``path``; nothing when ``path`` is empty."""
    return using(Cassette.replay(path)) if path else nullcontext()
