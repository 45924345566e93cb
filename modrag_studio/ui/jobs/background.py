"""One piece of long work off the GUI thread, told back on it.

``BackgroundJob.start(compute, done)`` runs ``compute(task)`` in a daemon thread. The
``Task`` carries the cancel token and ``report(channel, *args)``; the worker never touches a
widget. Whatever it reports, and how it ends, crosses to the GUI thread through one queued
signal bridge, where the owner's handlers run (``on(channel, handler)``, then
``done(result, error)``). ``JobControls`` is the owner's busy state: while the job runs the
widgets meant for an idle owner are disabled and Cancel is enabled. ``wait`` joins the
worker; ``shutdown`` cancels, then waits (closing, tests).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QWidget

from modrag_studio.engine.core.node import CancelToken

#: the channel of a job's end: args (result, error)
END = ""
Done = Callable[[Any, Exception | None], None]


class JobBridge(QObject):
    """The only way a worker's news reaches the GUI thread: (run number, channel, args)."""

    event = Signal(int, str, object)


@dataclass(frozen=True)
class Task:
    """What ``compute`` is given: its run's cancel token and a way to report."""

    cancel: CancelToken
    report: Callable[..., None]  # report(channel, *args), from the worker

    def reporter(self, channel: str) -> Callable[..., None]:
        """``report`` bound to one channel (an engine's ``on_progress`` callback)."""
        return lambda *args: self.report(channel, *args)


@dataclass
class JobControls:
    """A dialog's busy state: each ``idle`` widget is enabled only while no job runs (a
    ``(widget, ready)`` pair also needs ``ready()``); ``cancel`` only while one does."""

    idle: Sequence[QWidget | tuple[QWidget, Callable[[], bool]]] = field(default_factory=list)
    cancel: QWidget | None = None

    def show(self, busy: bool) -> None:
        for entry in self.idle:
            widget, ready = entry if isinstance(entry, tuple) else (entry, None)
            widget.setEnabled(not busy and (ready is None or ready()))
        if self.cancel is not None:
            self.cancel.setEnabled(busy)


class BackgroundJob:
    """One job at a time in a daemon thread; ``busy`` from ``start`` until its end has been
    handled on the GUI thread. With ``newest_wins`` a start while busy cancels the job
    going on and its late news is dropped (a list asked for again, a re-check)."""

    def __init__(self, name: str, owner: QObject | None = None,
                 controls: JobControls | None = None, *, newest_wins: bool = False) -> None:
        self.name = name
        self.controls = controls
        self.newest_wins = newest_wins
        self.thread: threading.Thread | None = None
        self.cancel_token: CancelToken | None = None
        self.bridge = JobBridge(owner)  # deleted with its owner: no handler runs after
        self.bridge.event.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self._handlers: dict[str, Callable[..., None]] = {}
        self._done: Done | None = None
        self._run = 0
        self._running = False

    @property
    def busy(self) -> bool:
        return self._running

    @property
    def started(self) -> bool:
        """Whether a job was ever started."""
        return self._run > 0

    def on(self, channel: str, handler: Callable[..., None]) -> None:
        """Run ``handler(*args)`` on the GUI thread for each ``report(channel, *args)``."""
        self._handlers[channel] = handler

    def start(self, compute: Callable[[Task], Any], done: Done) -> CancelToken:
        """Run ``compute(task)`` in a worker; ``done(result, None)`` or ``done(None, error)``
        follows on the GUI thread (never an exception raised into Qt)."""
        if self._running:
            if not self.newest_wins:
                raise RuntimeError(f"{self.name}: a job is already running")
            self.cancel()
        self._run += 1
        run, bridge = self._run, self.bridge
        self.cancel_token = cancel = CancelToken()

        def report(channel: str, *args: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the owner (and its bridge) is gone
                bridge.event.emit(run, channel, args)

        def work() -> None:
            try:
                result = compute(Task(cancel, report))
            except Exception as exc:  # told to ``done``, never raised into Qt
                report(END, None, exc)
            else:
                report(END, result, None)

        self._done, self._running = done, True
        if self.controls is not None:
            self.controls.show(True)
        self.thread = threading.Thread(target=work, name=self.name, daemon=True)
        self.thread.start()
        return cancel

    def cancel(self) -> None:
        if self.cancel_token is not None:
            self.cancel_token.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Join the worker (its end is handled once the GUI thread handles events)."""
        thread = self.thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def shutdown(self, timeout: float | None = 10) -> bool:
        """Cancel the job and join its worker (a closing window)."""
        self.cancel()
        return self.wait(timeout)

    def _deliver(self, run: int, channel: str, args: tuple[Any, ...]) -> None:
        if run != self._run:
            return  # a replaced job's late news
        if channel != END:
            handler = self._handlers.get(channel)
            if handler is not None:
                handler(*args)
            return
        if self.thread is not None:
            self.thread.join(5)  # it has reported its end: it is returning
        self._running = False
        if self.controls is not None:
            self.controls.show(False)
        done, self._done = self._done, None
        if done is not None:
            done(*args)


def error_text(error: BaseException | None) -> str:
    """``Type: message`` ('' for no error): how a dialog tells a failed job."""
    return "" if error is None else f"{type(error).__name__}: {error}"


def show_running(dialog: Any) -> bool:
    """Bring back ``dialog`` (a job dialog with a ``job``) when its job still runs: closing
    the dialog hid it and the job went on, so opening the action again shows that job, to
    watch or cancel, instead of starting a second one beside it."""
    if dialog is None or not dialog.job.busy:
        return False
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
    return True


def tell_when_closed_running(dialog: Any, tell: Callable[[str], None], action: str,
                             what: str = "The job") -> None:
    """When ``dialog`` is closed while its job runs, say in the status bar (``tell``) that
    the job (``what``) goes on and that ``action`` (the menu path) shows it again."""
    dialog.finished.connect(lambda _result: dialog.job.busy and tell(
        f"{what} goes on in the background; {action} shows it (Cancel job stops it)"))

