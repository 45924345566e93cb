"""Runs graphs off the GUI thread (a ``ui.jobs`` background job) and turns executor hook
calls into the controller's signals on the GUI thread.

The worker only calls the engine and reports; it never touches a widget. Progress and
streamed text are throttled so a chatty node cannot flood the event loop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal

from modrag_nodes.calls.api import replaying
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.pins import pins_of
from modrag_studio.engine.run.trace import NodeVisit, Trace
from modrag_studio.run_tracing import ExportSettings, TracingSwitch
from modrag_studio.ui.jobs.background import BackgroundJob, Task
from modrag_studio.ui.run.process import ProcessRunner

THROTTLE_S = 0.05


#: what the worker reports, by channel (the controller re-emits each as its own signal)
HOOK_CHANNELS = ("run_started", "node_started", "node_progress", "node_finished")


class QtRunHook(RunHook):
    """A ``RunHook`` that reports events to the GUI thread (``report(channel, *args)``: a
    job's ``Task.report``), throttling progress and stream text."""

    def __init__(self, report: Callable[..., None], throttle_s: float = THROTTLE_S) -> None:
        self.report = report
        self.throttle_s = throttle_s
        self._last_progress: dict[str, float] = {}
        self._stream_buf: dict[str, list[str]] = {}
        self._last_stream: dict[str, float] = {}

    def on_run_start(self, *, run_id: str, graph_name: str, inputs: dict[str, Any],
                     node_ids: list[str], **kwargs: Any) -> None:
        self.report("run_started", run_id, list(node_ids))

    def on_node_start(self, *, run_id: str, node_id: str, type_id: str, iteration: int,
                      **kwargs: Any) -> None:
        self.report("node_started", node_id, iteration)

    def on_node_progress(self, *, run_id: str, node_id: str, fraction: float | None,
                         message: str, **kwargs: Any) -> None:
        now = time.monotonic()
        final = fraction is not None and fraction >= 1.0
        if not final and now - self._last_progress.get(node_id, 0.0) < self.throttle_s:
            return
        self._last_progress[node_id] = now
        self.report("node_progress", node_id, fraction, message)

    def on_node_stream(self, *, run_id: str, node_id: str, text: str, **kwargs: Any) -> None:
        self._stream_buf.setdefault(node_id, []).append(text)
        now = time.monotonic()
        if now - self._last_stream.get(node_id, 0.0) >= self.throttle_s:
            self._flush(node_id, now)

    def _flush(self, node_id: str, now: float | None = None) -> None:
        parts = self._stream_buf.pop(node_id, None)
        self._last_stream[node_id] = now if now is not None else time.monotonic()
        if parts:
            self.report("node_stream", node_id, "".join(parts))

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict[str, Any],
                    outputs: dict[str, Any], **kwargs: Any) -> None:
        self._flush(visit.node_id)
        self.report("node_finished", visit.model_copy(), dict(outputs))


@dataclass
class RunRequest:
    """What to run: the document, its inputs, and the run mode."""

    doc: GraphDocument
    inputs: dict[str, Any] = field(default_factory=dict)
    target: str | None = None
    rerun: list[str] = field(default_factory=list)
    start_from: str | None = None
    label: str = "Run"
    base_dir: Path | None = None  # where relative paths resolve (the graph file's folder)
    pins_graph: str | None = None  # use the pins of this graph (``engine.pins.graph_key``)
    #: what the caller attaches for those who watch the run (the playground: origin,
    #: conversation and turn, which the run history records)
    context: dict[str, Any] = field(default_factory=dict)
    #: answer the run's model calls from this recorded-calls file (no model loaded)
    replay_calls: str | None = None


class RunGuard(Protocol):
    """One step of the pre-run chain (``RunController.guards``): False stops the run."""

    def allows(self, request: RunRequest) -> bool: ...


def choose_mode(registry: NodeRegistry, mode: str = "auto") -> str:
    """'process' (a worker process) or 'thread' (a worker thread in the GUI process).

    ``auto`` (or ``$MODRAG_RUN_MODE``) picks the process for the built-in registry, whose node
    types the worker can load by itself, and a thread for a custom registry.
    """
    mode = os.environ.get("MODRAG_RUN_MODE", mode) if mode == "auto" else mode
    if mode in ("process", "thread"):
        return mode
    return "process" if registry is default_registry() else "thread"


class RunController(QObject):
    """One executor with a disk cache per window; at most one run at a time.

    Runs go to a persistent worker process (model imports and Python-heavy nodes never stall
    the GUI) or, for custom registries, a worker thread. Signals mirror the hook events
    (queued onto the GUI thread). ``history`` keeps this session's traces for the inspector.
    ``guards`` is the pre-run chain: ``run`` asks each in order and starts only if all allow.
    """

    run_started = Signal(str, list)
    node_started = Signal(str, int)
    node_progress = Signal(str, object, str)
    node_stream = Signal(str, str)
    node_finished = Signal(object, object)
    run_finished = Signal(object)
    run_error = Signal(str)
    busy_changed = Signal(bool)

    def __init__(self, registry: NodeRegistry, parent: QObject | None = None,
                 executor: Executor | None = None, mode: str = "auto") -> None:
        super().__init__(parent)
        self.executor = executor or Executor(registry, NodeCache(cache_home()))
        self.registry = self.executor.registry
        self.mode = choose_mode(self.registry, mode) if executor is None else "thread"
        self.process = ProcessRunner() if self.mode == "process" else None
        #: the trace export setting runs use (Run > Trace Export…); None: export off
        self.trace_export: ExportSettings | None = None
        self._tracing = TracingSwitch()  # thread mode's pipeline (the process has its own)
        self.guards: list[RunGuard] = []
        self.history: list[Trace] = []
        self.last_result: RunResult | None = None
        self.last_request: RunRequest | None = None
        self.streams: dict[str, str] = {}
        self.job = BackgroundJob("modrag-run", self)
        for name in HOOK_CHANNELS:
            self.job.on(name, getattr(self, name).emit)
        self.job.on("node_stream", self._on_stream)

    # control -----------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.job.busy

    def start(self, request: RunRequest) -> bool:
        """Start ``request`` on a worker thread; False when a run is already going."""
        if self.busy:
            return False
        self.last_request = request
        self.streams = {}
        self.busy_changed.emit(True)
        self.job.start(lambda task: self._work(request, task), self._ended)
        return True

    def run(self, doc: GraphDocument, inputs: Mapping[str, Any] | None = None, *,
            target: str | None = None, rerun: Iterable[str] = (),
            start_from: str | None = None, base_dir: Path | None = None,
            pins_graph: str | None = None, replay_calls: str | None = None) -> bool:
        label = ("Run to node" if target else "Re-run node" if start_from or rerun else "Run")
        request = RunRequest(doc, dict(inputs or {}), target, list(rerun), start_from, label,
                             base_dir, pins_graph, replay_calls=replay_calls)
        if not self.guards_allow(request):
            return False
        return self.start(request)

    def guards_allow(self, request: RunRequest) -> bool:
        """The pre-run chain (the trust prompt first): Run asks it, and so does every other
        way of running the graph (Run set, Compare, Index Corpus) before it starts."""
        return all(guard.allows(request) for guard in self.guards)

    def cancel(self) -> None:
        if self.busy:
            self.job.cancel()

    def warm_up(self) -> None:
        """Start the worker process early (it loads the node library in the background)."""
        if self.process is not None:
            self.process.start()

    def shutdown(self) -> None:
        """Cancel any run and stop the worker process."""
        self.job.shutdown(10)
        if self.process is not None:
            self.process.close()
        self._tracing.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Join the worker (tests, shutdown). Signals still arrive through the event loop."""
        return self.job.wait(timeout)

    # worker ------------------------------------------------------------------
    def _work(self, request: RunRequest, task: Task) -> RunResult:
        hook = QtRunHook(task.report)
        if self.process is not None:
            self.executor.check(request.doc, request.inputs)  # fail fast, same message
            return self.process.run(
                request.doc, request.inputs, hook, task.cancel, target=request.target,
                rerun=request.rerun, start_from=request.start_from,
                base_dir=request.base_dir, pins_graph=request.pins_graph,
                trace=self.trace_export.to_dict() if self.trace_export else None,
                replay_calls=request.replay_calls)
        with replaying(request.replay_calls):
            return self.executor.run(
                request.doc, request.inputs,
                hooks=[hook, *self._tracing.hooks(self.trace_export)], cancel=task.cancel,
                target=request.target, rerun=request.rerun, start_from=request.start_from,
                base_dir=request.base_dir, pins=pins_of(request.pins_graph))

    # GUI thread ----------------------------------------------------------------
    def _on_stream(self, node_id: str, text: str) -> None:
        self.streams[node_id] = self.streams.get(node_id, "") + text
        self.node_stream.emit(node_id, text)

    def _ended(self, result: RunResult | None, error: Exception | None) -> None:
        if error is not None:  # invalid graph, bad input, or an engine crash
            self.busy_changed.emit(False)
            self.run_error.emit(str(error) or type(error).__name__)
            return
        self.last_result = result
        self.history.append(result.trace)
        self.run_finished.emit(result)
        self.busy_changed.emit(False)

    def visits_of(self, node_id: str) -> list[tuple[Trace, NodeVisit]]:
        """Every visit of ``node_id`` in this session's traces, oldest first."""
        return [(t, v) for t in self.history for v in t.visits if v.node_id == node_id]
