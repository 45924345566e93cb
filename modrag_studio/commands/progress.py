"""A progress line for long evaluations on stderr: done of total, rate and time left.

On a terminal it rewrites one line; elsewhere (a CI log, a pipe) it prints whole lines, at
most one every ``every_s`` seconds and the last one always, so a log is readable.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


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
                 every_s: float = 10.0, clock=time.monotonic) -> None:
        self.unit = unit
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.clock = clock
        self.started = clock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_print = -float("inf")
        self._open = False

    def text(self, done: int, total: int, note: str = "") -> str:
        elapsed = self.clock() - self.started
        parts = [f"{done}/{total} {self.unit}"]
        if done and elapsed > 0:
            rate = done / elapsed
            parts.append(f"{rate:.1f} {self.unit}/s" if rate >= 1 else
                         f"{elapsed / done:.1f} s each")
            if done < total:
                parts.append(f"{format_seconds((total - done) / rate)} left")
            else:
                parts.append(f"done in {format_seconds(elapsed)}")
        if note:
            parts.append(note)
        return ", ".join(parts)

    def update(self, done: int, total: int, note: str = "") -> None:
        """Show the count (on a terminal each time; elsewhere every ``every_s`` s and last)."""
        now = self.clock()
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
