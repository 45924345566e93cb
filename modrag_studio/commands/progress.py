"""A progress line for long evaluations on stderr: done of total, rate and time left; and
what the first query is doing while it builds the indexes (``SetupNarrator``).

On a terminal it rewrites one line; elsewhere (a CI log, a pipe) it prints whole lines, at
most one every ``every_s`` seconds and the last one always, so a log is readable.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from modrag_studio.engine.run.hooks import RunHook


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class ProgressLine:
    """``312/1000 queries, 24.1 queries/s, 29 s left`` (``unit`` names what is counted)."""

    def __init__(self, unit: str = "queries", *, stream: TextIO | None = None,
                 every_s: float = 10.0, clock=time.monotonic, setup_first: bool = False) -> None:
        self.unit = unit
        #: The first item also built or loaded the indexes: the rate and the time left are
        #: measured from the end of the first item on.
        self.setup_first = setup_first
        self._first_done: float | None = None
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.clock = clock
        self.started = clock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_print = -float("inf")
        self._open = False

    def text(self, done: int, total: int, note: str = "") -> str:
        now = self.clock()
        elapsed = now - self.started
        parts = [f"{done}/{total} {self.unit}"]
        if self.setup_first and done == 1 and total > 1:
            parts.append(f"the first in {format_seconds(elapsed)} (with the setup)")
        else:
            # with setup_first the rate counts from the end of the first item on
            timed = self.setup_first and done > 1 and self._first_done is not None
            counted, span = ((done - 1, max(now - self._first_done, 1e-9)) if timed
                             else (done, elapsed))
            if counted and span > 0:
                rate = counted / span
                parts.append(f"{rate:.1f} {self.unit}/s" if rate >= 1 else
                             f"{span / counted:.1f} s each")
                parts.append(f"{format_seconds((total - done) / rate)} left" if done < total
                             else f"done in {format_seconds(elapsed)}")
        if note:
            parts.append(note)
        return ", ".join(parts)

    def update(self, done: int, total: int, note: str = "") -> None:
        """Show the count (on a terminal each time; elsewhere every ``every_s`` s and last)."""
        now = self.clock()
        if done == 1 and self._first_done is None:
            self._first_done = now
        last = done >= total
        if self.tty:
            end = "\n" if last else ""
            self.stream.write(f"\r\033[K{self.text(done, total, note)}{end}")
            self._open = not last
        elif last or done == 1 or now - self._last_print >= self.every_s:
            self.stream.write(self.text(done, total, note) + "\n")
            self._last_print = now
        self.stream.flush()

    def close(self) -> None:
        """End a rewritten line left open (a run stopped before its last step)."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


class SetupNarrator(RunHook):
    """Tells what the first query's run is doing while it builds or loads the indexes, so a
    new corpus never means minutes of silence: a node still running after ``after_s``
    seconds is named (``preparing: node 'embed' (embed.chunks) is running``), its progress
    messages follow (at most one every ``every_s`` seconds), and its end is told with the
    time it took. Nodes that finish sooner, or come from the cache, say nothing.
    """

    def __init__(self, *, stream: TextIO | None = None, after_s: float = 2.0,
                 every_s: float = 10.0, clock=time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.after_s, self.every_s, self.clock = after_s, every_s, clock
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}
        self._told: dict[str, float] = {}  # node id -> when its start was told
        self._started: dict[str, float] = {}
        self._last_progress: dict[str, float] = {}

    def _say(self, text: str) -> None:
        with self._lock:
            self.stream.write(f"preparing: {text}\n")
            self.stream.flush()

    def on_node_start(self, *, node_id: str, type_id: str, **kwargs: Any) -> None:
        self._started[node_id] = self.clock()

        def tell() -> None:
            self._told[node_id] = self.clock()
            self._say(f"node '{node_id}' ({type_id}) is running")

        timer = threading.Timer(self.after_s, tell)
        timer.daemon = True
        self._timers[node_id] = timer
        timer.start()

    def on_node_progress(self, *, node_id: str, fraction: float | None, message: str,
                         **kwargs: Any) -> None:
        now = self.clock()
        if node_id not in self._told or now - self._last_progress.get(node_id, -1e9) < self.every_s:
            return
        self._last_progress[node_id] = now
        share = f"{fraction:.0%} " if fraction is not None else ""
        self._say(f"node '{node_id}': {share}{message}".rstrip())

    def on_node_end(self, *, visit: Any, **kwargs: Any) -> None:
        node_id = visit.node_id
        timer = self._timers.pop(node_id, None)
        if timer is not None:
            timer.cancel()
        if self._told.pop(node_id, None) is not None:
            took = self.clock() - self._started.get(node_id, self.clock())
            self._say(f"node '{node_id}' {visit.status} in {format_seconds(took)}")

    def on_run_end(self, **kwargs: Any) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
