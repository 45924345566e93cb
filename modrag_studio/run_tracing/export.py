"""The export thread: takes finished run records from the hook, makes their spans and sends
them, so a run pays only for noting its events. The queue is bounded in spans (a run that
does not fit is dropped and counted, with one warning); nothing here ever blocks a run.

The thread starts on a record ``delay_s`` after it came (``OTEL_BSP_SCHEDULE_DELAY``, in ms,
else 0.5 s), not at once: woken at the end of a run, it would take the interpreter's lock
from the run's last steps (for up to a switch interval) while its caller still waits.
``flush`` and ``shutdown`` do not wait for the delay.

Making, encoding and sending spans costs about as much CPU as a cached run's visits (some
microseconds a span, in Python, holding the interpreter's lock; ``encoding.py``). So after
the delay the thread also waits for a moment with no run in progress (``runs_active``, the
hook's count), at most ``idle_wait_s`` and not while the queue is half full; it then sends in
batches, and while a run is in progress it sends smaller ones and pauses after each as long
as it took."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter

from modrag_studio.run_tracing.spans import RunRecord, SpanBuilder

log = logging.getLogger("modrag_studio.run_tracing")

#: Spans per export request, and while a run is in progress (encoding 128 spans takes under
#: a millisecond with ``SpanEncoder``, in Python: a run that starts meanwhile waits for the
#: interpreter's lock that long).
BATCH = 512
SMALL_BATCH = 128
DEFAULT_DELAY_S = 0.5
#: How long due spans wait for no run to be in progress; how long no run must follow.
DEFAULT_IDLE_WAIT_S = 2.0
IDLE_GRACE_S = 0.02
#: Runs' ends wake that wait at most this often (else it looks again after this long).
IDLE_RECHECK_S = 0.1


def delay_from_env() -> float:
    value = os.environ.get("OTEL_BSP_SCHEDULE_DELAY", "").strip()
    try:
        return max(0.0, float(value) / 1000) if value else DEFAULT_DELAY_S
    except ValueError:
        return DEFAULT_DELAY_S


class SpanWorker:
    """One daemon thread that turns records into spans (``builder``) and exports them.
    At most ``max_spans`` spans wait; ``flush`` waits until all submitted runs are sent.
    ``runs_active``: how many runs are in progress (``SpanHook.active_runs``; none if not
    given)."""

    def __init__(self, builder: SpanBuilder, exporter: SpanExporter, *,
                 max_spans: int = 2048, delay_s: float | None = None,
                 idle_wait_s: float = DEFAULT_IDLE_WAIT_S,
                 runs_active: Callable[[], int] | None = None) -> None:
        self.builder = builder
        self.exporter = exporter
        self.max_spans = max_spans
        self.delay_s = delay_from_env() if delay_s is None else delay_s
        self.idle_wait_s = idle_wait_s
        self.runs_active: Callable[[], int] = runs_active or (lambda: 0)
        self.dropped_runs = 0
        self._queue: deque[RunRecord] = deque()
        self._first_at = 0.0  # when the oldest waiting record came
        self._hurry = 0  # flushes waiting: no delay
        self._queued_spans = 0
        self._busy = False
        self._idle_wait = False  # waiting for no run in progress
        self._woken_at = 0.0  # when that wait last woke
        self._last_end = 0.0  # when the last run ended (came)
        self._stopping = False
        self._lock = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="modrag-otlp-export",
                                        daemon=True)
        self._thread.start()

    def submit(self, record: RunRecord) -> None:
        """Queue a run's record (the hook's sink); drops it when the queue is full."""
        count = record.span_count
        with self._lock:
            if self._stopping:
                return
            if self._queued_spans and self._queued_spans + count > self.max_spans:
                self.dropped_runs += 1
                first = self.dropped_runs == 1
            else:  # the thread is woken only to start the delay, or under pressure
                self._last_end = time.monotonic()
                wake = (not self._queue or self._pressed(count) or self._idle_wait
                        and self._last_end - self._woken_at >= IDLE_RECHECK_S)
                if not self._queue:
                    self._first_at = time.monotonic()
                self._queue.append(record)
                self._queued_spans += count
                if wake:
                    self._lock.notify_all()
                return
        if first:
            log.warning("trace export queue full (%d spans waiting): run %s's spans are "
                        "dropped; later drops are only counted", self.max_spans,
                        record.run_id)

    def annotate(self, run_id: str, attributes: dict[str, Any]) -> bool:
        """Add ``attributes`` to the run span of ``run_id`` if its record still waits
        (whether it did: a run already sent is not changed)."""
        with self._lock:
            for record in self._queue:
                if record.run_id == run_id:
                    record.extra.update(attributes)
                    return True
        return False

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every submitted run is exported (or ``timeout_s``); whether it was."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            self._hurry += 1
            self._lock.notify_all()
            try:
                while self._queue or self._busy:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._lock.wait(left)
            finally:
                self._hurry -= 1
        return True

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Send what is queued (bounded by ``timeout_s``), then stop the thread."""
        self.flush(timeout_s)
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        self._thread.join(timeout=1.0)
        self.exporter.shutdown()

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._lock.wait()
                while self._queue and not self._urgent():
                    due = self._first_at + self.delay_s - time.monotonic()
                    if due <= 0:
                        break
                    self._lock.wait(due)
                if not self._queue:
                    return
                deadline = self._first_at + self.delay_s + self.idle_wait_s
            self._await_idle(deadline)
            with self._lock:
                if self._pressed():  # the spans in hand do not wait either
                    deadline = 0.0
                records = list(self._queue)
                self._queue.clear()
                self._queued_spans = 0
                self._busy = True
            try:
                self._export(records, deadline)
            except Exception:  # the thread must outlive any one run
                log.exception("trace export failed")
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _pressed(self, adding: int = 0) -> bool:
        return (self._queued_spans + adding) * 2 >= self.max_spans

    def _urgent(self) -> bool:
        return bool(self._hurry or self._stopping)

    def _await_idle(self, deadline: float) -> None:
        """Until no run has been in progress for ``IDLE_GRACE_S`` (so that a run that follows
        at once, in a loop of runs, is seen), ``deadline``, a flush or a half-full queue.
        Woken by the end of a run (``submit``), not by polling: a thread that wakes takes
        the interpreter's lock from the run in progress."""
        while True:
            with self._lock:
                while self.runs_active() and not (self._urgent() or self._pressed()):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._idle_wait = True
                    self._lock.wait(min(left, IDLE_RECHECK_S))
                    self._woken_at = time.monotonic()
                self._idle_wait = False
                now = time.monotonic()
                if (self.runs_active() or self._urgent() or self._pressed() or now >= deadline
                        or now - self._last_end >= IDLE_GRACE_S):
                    return
            time.sleep(IDLE_GRACE_S - (now - self._last_end))

    def _export(self, records: list[RunRecord], deadline: float) -> None:
        spans = []
        for record in records:
            self._await_idle(deadline)
            spans.extend(self.builder.spans(record))
        start = 0
        while start < len(spans):
            self._await_idle(deadline)
            size = SMALL_BATCH if self.runs_active() else BATCH
            began = time.perf_counter()
            self.exporter.export(spans[start:start + size])
            start += size
            if self.runs_active() and not self._urgent():  # at most half the time
                time.sleep(time.perf_counter() - began)
