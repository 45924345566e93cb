"""Running the graph for requests: concurrency limit, time limit, streaming events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.serialize import to_jsonable
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.trust.store_mode import read_only_stores
from modrag_studio.reporting.answer_view import answer_of
from modrag_studio.server.disclosure import ClientView


class QueueFull(Exception):
    """More runs are running and waiting than the server accepts; retry later."""


class RunManager:
    """Executes runs on worker threads; tracks them so shutdown can cancel what is left.

    At most ``max_concurrent`` run at once and ``max_queued`` more wait; beyond that a run is
    refused with QueueFull. The time limit counts from the request's arrival, queue included.
    Runs execute with stores read-only (a request never changes an index).
    """

    def __init__(self, doc: GraphDocument, executor: Executor, *, max_concurrent: int,
                 timeout_s: float, max_queued: int = 32, view: ClientView | None = None) -> None:
        self.doc = doc
        self.view = view or ClientView.of(doc, executor.registry)  # what clients read
        self.executor = executor
        self.timeout_s = timeout_s
        self.max_concurrent = max_concurrent
        self.max_queued = max_queued
        self._limit = anyio.CapacityLimiter(max_concurrent)
        self._active: dict[str, CancelToken] = {}
        self._lock = threading.Lock()

    @property
    def active_runs(self) -> int:
        return len(self._active)

    def has_room(self) -> bool:
        return len(self._active) < self.max_concurrent + self.max_queued

    def cancel(self, run_id: str) -> None:
        with self._lock:
            token = self._active.get(run_id)
        if token is not None:
            token.cancel()

    def cancel_all(self) -> None:
        with self._lock:
            for token in self._active.values():
                token.cancel()

    async def run(self, inputs: dict[str, Any], hooks: list[RunHook] | None = None,
                  run_id: str | None = None) -> tuple[RunResult, bool]:
        """Run once; returns the result and whether the time limit cancelled it."""
        run_id = run_id or uuid.uuid4().hex[:12]
        token = CancelToken()
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            token.cancel()

        with self._lock:
            if len(self._active) >= self.max_concurrent + self.max_queued:
                raise QueueFull(f"{len(self._active)} runs are running or waiting")
            self._active[run_id] = token
        # the limit covers the time spent waiting for a worker; a timer of the event loop,
        # not a thread per request (50 clients started ~150 timer threads a second)
        timer = asyncio.get_running_loop().call_later(self.timeout_s, on_timeout)

        def work() -> RunResult:
            with read_only_stores():
                return self.executor.run(self.doc, inputs, hooks=hooks or [], cancel=token,
                                         run_id=run_id)

        try:
            result = await anyio.to_thread.run_sync(work, limiter=self._limit)
        finally:
            timer.cancel()
            with self._lock:
                self._active.pop(run_id, None)
        return result, timed_out.is_set()


def result_body(result: RunResult, *, with_trace: bool, timed_out: bool,
                view: ClientView | None = None) -> dict[str, Any]:
    view = view or ClientView()
    errors = view.errors([
        {"node_id": v.node_id, "type": v.type_id, "message": v.error.message}
        for v in result.trace.visits if v.error is not None
    ])
    if timed_out:
        errors.append({"node_id": "", "type": "", "message": "run time limit reached"})
    body: dict[str, Any] = {
        "run_id": result.trace.run_id,
        "status": result.status,
        "outputs": view.value(to_jsonable(result.outputs)),  # no server paths, no keys
        "errors": errors,
    }
    if with_trace:
        body["trace"] = result.trace.model_dump(mode="json")
    return body


def answer_text(result: RunResult, body: dict[str, Any], *, timed_out: bool,
                view: ClientView) -> tuple[str, bool]:
    """(the answer's text, or why the run gave none; whether it failed). ``body``: the
    run's ``result_body``, whose outputs are shown as JSON when none is an answer."""
    if result.status != "ok" or timed_out:
        reason = "run time limit reached" if timed_out else result.trace.failure_summary(
            f"the run {result.status}")
        return f"the graph run {result.status}: {view.text(reason)}", True
    text = answer_of(result.outputs)[1]
    return (json.dumps(body["outputs"], ensure_ascii=False) if text is None else text), False


class _QueueHook(RunHook):
    """Forwards executor events to an asyncio queue from the worker thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue,
                 view: ClientView | None = None) -> None:
        self.loop = loop
        self.queue = queue
        self.view = view or ClientView()

    def _put(self, event: str, data: dict[str, Any]) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (event, data))

    def on_node_start(self, *, run_id: str, node_id: str, type_id: str, iteration: int,
                      **kwargs: Any) -> None:
        self._put("node_started", {"node_id": node_id, "type": type_id, "iteration": iteration})

    def on_node_stream(self, *, run_id: str, node_id: str, text: str, **kwargs: Any) -> None:
        self._put("token", {"node_id": node_id, "text": text})

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict, outputs: dict,
                    **kwargs: Any) -> None:
        self._put("node_finished", {
            "node_id": visit.node_id, "type": visit.type_id, "iteration": visit.iteration,
            "status": visit.status, "duration_s": visit.duration_s, "cached": visit.cached,
            "error": self.view.text(visit.error.message) if visit.error else None,
        })


def sse(event: str, data: dict[str, Any]) -> bytes:
    try:
        return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
    except UnicodeEncodeError:  # a lone surrogate in a text: send it as a \u escape
        return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


HookFactory = Callable[[asyncio.AbstractEventLoop, asyncio.Queue, ClientView], RunHook]


async def run_events(manager: RunManager, inputs: dict[str, Any],
                     hook: HookFactory = _QueueHook) -> AsyncIterator[tuple[str, Any]]:
    """The events of one run as ``hook`` puts them, then ``("finished", (result,
    timed_out))`` or ``("busy", None)``. Closing the iterator early (the client went away)
    cancels the run: use it under ``contextlib.aclosing``."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    run_id = uuid.uuid4().hex[:12]
    task = asyncio.ensure_future(manager.run(inputs, [hook(loop, queue, manager.view)],
                                             run_id=run_id))
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            if isinstance(task.exception(), QueueFull):
                yield "busy", None
                return
            yield "finished", task.result()
            return
    finally:
        if not task.done():  # the client went away: stop its run
            manager.cancel(run_id)


async def stream_run(manager: RunManager, inputs: dict[str, Any], with_trace: bool,
                     record: Callable[[RunResult, dict[str, Any]], str | None] | None = None
                     ) -> AsyncIterator[bytes]:
    """Server-sent events: node_started / node_finished / token ..., then one ``result``
    (with ``recorded``, the run's id in the history, when ``record`` keeps it)."""
    async with contextlib.aclosing(run_events(manager, inputs)) as events:
        async for event, data in events:
            if event == "busy":
                yield sse("error", {"detail": "server busy: too many runs waiting"})
                return
            if event != "finished":
                yield sse(event, data)
                continue
            result, timed_out = data
            body = result_body(result, with_trace=with_trace, timed_out=timed_out,
                               view=manager.view)
            if record is not None:
                body["recorded"] = await anyio.to_thread.run_sync(record, result, inputs)
            yield sse("result", body)
            return
