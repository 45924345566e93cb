"""Pre-flight check in the studio: are the graph's models, stores and servers usable here?

``check_health`` (the report behind ``modrag check`` and the server's ``/health``) runs in a
background thread after a graph is opened and on demand (Run → Check Models and Servers); the
nodes that are not ready are listed in the problems panel and badged on the canvas before the
user presses Run.
"""

from __future__ import annotations

import contextlib
import threading

from PySide6.QtCore import QObject, Signal

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.health import HealthReport, check_health


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


def install_preflight(window) -> PreflightChecker:
    """Wire a checker into the main window: after opening and editing (debounced), and from
    Run → Check Models and Servers; results go to the problems panel and the status bar."""
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QAction

    checker = PreflightChecker(window.registry, window)
    timer = QTimer(window)
    timer.setSingleShot(True)
    timer.setInterval(RECHECK_DEBOUNCE_MS)
    announce = {"next": False}

    def start(*, tell: bool = False) -> None:
        timer.stop()
        announce["next"] = tell
        checker.start(window.editor.document())

    def done(report: HealthReport, generation: int) -> None:
        if not checker.accept(report, generation):
            return
        missing = not_ready(report)
        window.problems.set_environment(missing)
        if missing:
            first = next(iter(missing))
            window.show_message(f"Not ready on this machine: {', '.join(missing)} "
                                f"({first}: {missing[first]})")
        elif announce["next"]:
            checked = ", ".join(report.nodes) or "nothing to check"
            window.show_message(f"Models and servers ready ({checked})")

    def fail(message: str, generation: int) -> None:
        if checker.accept(None, generation):
            window.show_message(f"Could not check models and servers: {message}")

    checker.finished.connect(done)
    checker.failed.connect(fail)
    timer.timeout.connect(start)
    window.editor.subscribe(lambda change: change.old is not change.new and timer.start())
    action = QAction("Check Models and Servers", window)
    action.setToolTip("Are this graph's models, stores and servers usable on this machine?")
    action.triggered.connect(lambda _checked=False: start(tell=True))
    window.menus["Run"].addAction(action)
    window.actions["preflight"] = action
    window.preflight = checker
    timer.start()  # first check shortly after the window is up, not during start-up
    return checker
