"""Pre-flight check in the studio: are the graph's models, stores and servers usable here?

``check_health`` (the report behind ``modrag check`` and the server's ``/health``) runs in a
background thread after a graph is opened and on demand (Run → Check Models and Servers); the
nodes that are not ready are listed in the problems panel and badged on the canvas before the
user presses Run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.health import HealthReport, check_health
from modrag_studio.ui.jobs.background import BackgroundJob, error_text

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell


class PreflightChecker:
    """Runs ``check_health`` off the GUI thread, the newest check winning (an older one's
    answer is dropped); ``done(report, None)`` or ``done(None, error)`` on the GUI thread."""

    def __init__(self, registry: NodeRegistry, parent: QObject | None = None) -> None:
        self.registry = registry
        self.job = BackgroundJob("modrag-preflight", parent, newest_wins=True)
        self.last_report: HealthReport | None = None

    @property
    def running(self) -> bool:
        return self.job.busy

    def start(self, doc: GraphDocument,
              done: Callable[[HealthReport | None, Exception | None], None]) -> None:
        """Check a snapshot of ``doc``; a newer start makes older answers stale."""
        snapshot, registry = doc.model_copy(deep=True), self.registry

        def checked(report: HealthReport | None, error: Exception | None) -> None:
            self.last_report = report
            done(report, error)

        self.job.start(lambda _task: check_health(snapshot, registry), checked)


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
        self.checker.start(self.window.editor.document(), self._done)

    def _done(self, report: HealthReport | None, error: Exception | None) -> None:
        if report is None:  # reported; the window stays up
            self.window.show_message(f"Could not check models and servers: "
                                     f"{error_text(error)}")
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
