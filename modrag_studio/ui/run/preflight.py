"""Pre-flight check in the studio: are the graph's models, stores and servers usable here?

``check_health`` (the report behind ``modrag check`` and the server's ``/health``) runs in a
background thread after a graph is opened and on demand (Run → Check Models and Servers); the
nodes that are not ready are listed in the problems panel and badged on the canvas before the
user presses Run.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.health import HealthReport, check_health

if TYPE_CHECKING:
    from modrag_studio.ui.run.protocols import StudioShell


class PreflightChecker(QObject):
    """Runs ``check_health`` off the GUI thread; ``finished`` carries the report (or None)."""

    finished = Signal(object, int)  # report, generation
    failed = Signal(str, int)

    def __init__(self, registry: NodeRegistry, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.registry = registry
        self.generation = 0
        self.running = False
        self.last_report: HealthReport | None = None

    def start(self, doc: GraphDocument) -> int:
        """Check ``doc`` in a daemon thread; a newer start makes older answers stale."""
        self.generation += 1
        generation, self.running = self.generation, True
        snapshot = doc.model_copy(deep=True)

        def work() -> None:
            try:
                report = check_health(snapshot, self.registry)
            except Exception as exc:  # report it; never take the window down
                with contextlib.suppress(RuntimeError):  # the window may be gone by now
                    self.failed.emit(f"{type(exc).__name__}: {exc}", generation)
                return
            with contextlib.suppress(RuntimeError):
                self.finished.emit(report, generation)

        threading.Thread(target=work, name="modrag-preflight", daemon=True).start()
        return generation

    def accept(self, report: HealthReport | None, generation: int) -> bool:
        """Whether an answer is the newest one (older checks are dropped)."""
        if generation != self.generation:
            return False
        self.running = False
        self.last_report = report
        return True


def not_ready(report: HealthReport) -> dict[str, str]:
    """Node id -> why it is not ready, from a report."""
    return {node_id: health.detail for node_id, health in report.nodes.items() if not health.ok}


RECHECK_DEBOUNCE_MS = 1500


class Preflight(QObject):
    """The checker wired into the window: after opening and editing (debounced), and from
    Run → Check Models and Servers; results go to the problems panel and the status bar."""

    def __init__(self, window: StudioShell) -> None:
        qt_window: QObject = window  # type: ignore[assignment]
        super().__init__(qt_window)
        self.window = window
        self.checker = PreflightChecker(window.registry, qt_window)
        self.timer = QTimer(qt_window)
        self.timer.setSingleShot(True)
        self.timer.setInterval(RECHECK_DEBOUNCE_MS)
        self.announce = False
        self.checker.finished.connect(self._done)
        self.checker.failed.connect(self._fail)
        self.timer.timeout.connect(self.start)
        window.editor.subscribe(lambda change: change.old is not change.new and self.timer.start())
        action = QAction("Check Models and Servers", qt_window)
        action.setToolTip("Are this graph's models, stores and servers usable on this machine?")
        action.triggered.connect(lambda _checked=False: self.start(tell=True))
        window.menus["Run"].addAction(action)
        window.actions["preflight"] = action
        self.timer.start()  # first check shortly after the window is up, not during start-up

    @property
    def running(self) -> bool:
        return self.checker.running

    def start(self, *, tell: bool = False) -> None:
        self.timer.stop()
        self.announce = tell
        self.checker.start(self.window.editor.document())

    def _done(self, report: HealthReport, generation: int) -> None:
        if not self.checker.accept(report, generation):
            return
        missing = not_ready(report)
        self.window.problems.set_environment(missing)
        if missing:
            first = next(iter(missing))
            self.window.show_message(f"Not ready on this machine: {', '.join(missing)} "
                                     f"({first}: {missing[first]})")
        elif self.announce:
            checked = ", ".join(report.nodes) or "nothing to check"
            self.window.show_message(f"Models and servers ready ({checked})")

    def _fail(self, message: str, generation: int) -> None:
        if self.checker.accept(None, generation):
            self.window.show_message(f"Could not check models and servers: {message}")
