"""Runs graphs in a persistent worker process, so heavy imports and Python-bound node work
never hold the GUI process's interpreter lock.

The GUI side (:class:`ProcessRunner`) sends a run request and replays the worker's hook events
onto a local ``RunHook``; it returns the ``RunResult`` the worker sends back. The worker keeps
its executor (and loaded models) between runs. No Qt here: the worker never imports it.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import queue
import time
from typing import Any

from modrag_nodes.calls.api import replaying
from modrag_studio.engine.core.document import GraphDocument, from_json_dict, to_json_dict
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.pins import pins_of


class WorkerError(RuntimeError):
    """The run could not start in the worker, or the worker process stopped."""


class _SharedCancel(CancelToken):
    """A cancel token backed by a process-shared event."""

    def __init__(self, event: Any) -> None:
        self._event = event


def _portable(values: dict[str, Any]) -> dict[str, Any]:
    """The values that survive pickling (the others are replaced by a short note)."""
    out = {}
    for key, value in values.items():
        try:
            pickle.dumps(value, protocol=5)
            out[key] = value
        except Exception:
            out[key] = f"<{type(value).__name__}: not transferable from the run process>"
    return out


def _send(events: Any, item: tuple[str, Any]) -> None:
    try:
        data = pickle.dumps(item, protocol=5)
    except Exception:
        kind, payload = item
        if kind == "result":
            payload.node_inputs = {k: _portable(v) for k, v in payload.node_inputs.items()}
            payload.node_outputs = {k: _portable(v) for k, v in payload.node_outputs.items()}
            payload.outputs = _portable(payload.outputs)
        elif kind == "on_node_end":
            payload = {**payload, "inputs": {}, "outputs": _portable(payload["outputs"])}
        data = pickle.dumps((kind, payload), protocol=5)
    events.put(data)


class _QueueHook(RunHook):
    def __init__(self, events: Any) -> None:
        self.events = events

    def on_run_start(self, **kwargs: Any) -> None:
        # the registry stays here: the studio has its own, and it holds locks
        _send(self.events, ("on_run_start", {k: v for k, v in kwargs.items()
                                             if k != "registry"}))

    def on_node_start(self, **kwargs: Any) -> None:
        _send(self.events, ("on_node_start", kwargs))

    def on_node_progress(self, **kwargs: Any) -> None:
        _send(self.events, ("on_node_progress", kwargs))

    def on_node_stream(self, **kwargs: Any) -> None:
        _send(self.events, ("on_node_stream", kwargs))

    def on_node_end(self, **kwargs: Any) -> None:
        # inputs are in the final result; the GUI needs outputs now for overlays
        _send(self.events, ("on_node_end", {**kwargs, "inputs": {}}))


PARENT_CHECK_S = 1.0


def _exit_with_parent(parent: int) -> None:
    """End this worker when the studio that started it is gone (killed, crashed): an
    orphan would hold its models' memory and wait for requests forever."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="modrag-parent-watch", daemon=True).start()


def worker_main(requests: Any, events: Any, cancel_event: Any, parent: int | None = None
                ) -> None:
    """The worker process: one executor with the disk cache, serving run requests (and
    exporting their traces when a request carries the studio's trace export setting)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _exit_with_parent(parent or os.getppid())  # given: the studio may be gone already
    _lower_priority()
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.run_tracing import ExportSettings, TracingSwitch

    executor = Executor(default_registry(), NodeCache(cache_home()))
    tracing = TracingSwitch()
    while True:
        request = requests.get()
        if request is None:
            tracing.close()
            return
        if request.get("op") in ("resident", "unload"):
            _send(events, ("resident", resident_rows(executor.resources,
                                                     unload=request["op"] == "unload")))
            continue
        try:
            traced = tracing.hooks(ExportSettings.from_dict(request.get("trace")))
            with replaying(request.get("replay_calls")):
                result = executor.run(
                    from_json_dict(request["doc"]), request["inputs"],
                    hooks=[_QueueHook(events), *traced],
                    cancel=_SharedCancel(cancel_event), target=request["target"],
                    rerun=request["rerun"], start_from=request["start_from"],
                    base_dir=request.get("base_dir"), pins=pins_of(request.get("pins_graph")))
        except Exception as exc:
            _send(events, ("error", str(exc) or type(exc).__name__))
            continue
        _send(events, ("result", result))


def resident_rows(resources: Any, *, unload: bool = False) -> list[dict[str, Any]]:
    """What a resource service holds (kind, name, size_bytes), or with ``unload`` what it
    held before it let go (the worker's answer, and the studio's in thread mode)."""
    held = resources.unload() if unload else resources.resident()
    return [{"kind": r.kind, "name": r.name, "size_bytes": r.size_bytes} for r in held]


def _lower_priority(steps: int = 10) -> None:
    """Let the window win the CPU over a run: a busy core must never stall the event loop."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(steps)


class ProcessRunner:
    """The GUI-process end of the worker; ``run`` is called from a plain worker thread.

    A cancelled run whose node does not reach a batch boundary within ``kill_after_s`` has its
    worker process stopped (the next run starts a fresh one).
    """

    def __init__(self, kill_after_s: float = 5.0) -> None:
        self.kill_after_s = kill_after_s
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._requests: Any = None
        self._events: Any = None
        self._cancel: Any = None

    @property
    def started(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> None:
        """Start the worker now (it imports the node library while the user edits)."""
        if self.started:
            return
        self._requests = self._ctx.Queue()
        self._events = self._ctx.Queue()
        self._cancel = self._ctx.Event()
        self._proc = self._ctx.Process(target=worker_main, name="modrag-run-worker",
                                       args=(self._requests, self._events, self._cancel,
                                             os.getpid()),
                                       daemon=True)
        self._proc.start()

    def run(self, doc: GraphDocument, inputs: dict[str, Any], hook: RunHook,
            cancel: CancelToken, *, target: str | None = None, rerun: list[str] | None = None,
            start_from: str | None = None, base_dir: Any = None,
            pins_graph: str | None = None, trace: dict[str, Any] | None = None,
            replay_calls: str | None = None) -> RunResult:
        """Run in the worker; ``trace``: the trace export setting (``ExportSettings``);
        ``replay_calls``: a recorded-calls file answering the model calls."""
        self.start()
        self._cancel.clear()
        self._requests.put({"doc": to_json_dict(doc), "inputs": dict(inputs), "target": target,
                            "rerun": list(rerun or []), "start_from": start_from,
                            "base_dir": str(base_dir) if base_dir is not None else None,
                            "pins_graph": pins_graph, "trace": trace,
                            "replay_calls": replay_calls})
        cancelled_at: float | None = None
        while True:
            if cancel.cancelled and cancelled_at is None:
                self._cancel.set()
                cancelled_at = time.monotonic()
            if cancelled_at is not None and time.monotonic() - cancelled_at > self.kill_after_s:
                self._proc.terminate()
                self._proc.join(5)
                self._proc = None
                raise WorkerError(f"cancelled: the running node did not stop within "
                                  f"{self.kill_after_s:.0f} s, so its run process was stopped")
            try:
                raw = self._events.get(timeout=0.05)
            except queue.Empty:
                if not self._proc.is_alive():
                    code = self._proc.exitcode
                    self._proc = None
                    raise WorkerError(f"the run process stopped unexpectedly (exit code {code})"
                                      "; the next run starts a new one") from None
                continue
            kind, payload = pickle.loads(raw)
            if kind == "result":
                return payload
            if kind == "error":
                raise WorkerError(payload)
            getattr(hook, kind)(**payload)

    def resident(self, *, unload: bool = False, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The models the worker holds (kind, name, size_bytes); with ``unload`` it lets go of
        them first and says what it held. Call between runs: the worker serves one request
        at a time. A worker not started holds nothing."""
        if not self.started:
            return []
        self._requests.put({"op": "unload" if unload else "resident"})
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                kind, payload = pickle.loads(self._events.get(timeout=0.1))
            except queue.Empty:
                if not self._proc.is_alive():
                    break
                continue
            if kind == "resident":
                return payload
        raise WorkerError("the run process did not say which models it holds (busy or stopped)")

    def close(self) -> None:
        if self._proc is None:
            return
        try:
            self._requests.put(None)
            self._proc.join(8)  # it sends the traces it holds (bounded by the export timeout)
        finally:
            if self._proc.is_alive():
                self._proc.terminate()
                self._proc.join(2)
            self._proc = None
