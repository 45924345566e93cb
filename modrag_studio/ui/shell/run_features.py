"""Run & inspect features added to the main window: actions, run bar, live states, docks.

Built by the studio's composition root (``ui/shell/composition.py``) from the window's
``RunController``; what it needs from the window is the ``StudioWindow`` protocol
(``ui/canvas/protocols.py``), checked on construction. The work is split along its seams:

- ``run_actions``: Run / Run to node / Re-run node / Cancel and the run bar;
- ``run_mirror``: the run mirrored on canvas states and captions, overlays, inspector,
  timeline;
- ``eval_overlay``: an evaluation report's metrics on the nodes;
- ``trace_export``: trace export and presentation mode (replay).

``RunFeatures`` assembles them, places the docks and fills the menus.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.trace import Trace
from modrag_studio.ui.canvas.protocols import StudioWindow, require
from modrag_studio.ui.evaluate.overlay import EvaluationOverlay
from modrag_studio.ui.inspection.inspector import Inspector
from modrag_studio.ui.inspection.overlays import OverlayManager
from modrag_studio.ui.present.presentation import PresentationWindow
from modrag_studio.ui.present.trace_export import Presenter, TraceExport
from modrag_studio.ui.run.actions import RunActions, make_action
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.mirror import RunMirror
from modrag_studio.ui.run.timeline import TimelineDock


class RunFeatures(QObject):
    """Everything about running and inspecting a graph in one window."""

    def __init__(self, window: StudioWindow, controller: RunController) -> None:
        require(window, StudioWindow, "the window given to the run features")
        qt_window: QMainWindow = window  # type: ignore[assignment]
        super().__init__(qt_window)
        self.window = window
        self.canvas = window.canvas
        self.controller = controller
        runner = self.controller.process
        if runner is not None:  # stop the worker process with the window or the app
            qt_window.destroyed.connect(lambda *_: runner.close())
            app = QCoreApplication.instance()
            if app is not None:
                app.aboutToQuit.connect(runner.close)
        self.overlays = OverlayManager(self.canvas)
        self.inspector = Inspector(qt_window)
        self.timeline = TimelineDock(qt_window)
        self._place_docks(qt_window)
        self.mirror = RunMirror(self.controller, self.canvas, self.overlays, self.inspector,
                                self.timeline, lambda text: self._status(text))
        self.actions = RunActions(window, self.controller, self.mirror, self._status)
        self.evaluation = EvaluationOverlay(qt_window, self.mirror.captions, self.overlays,
                                            self._status)
        self.traces = TraceExport(window, self.controller, self._status)
        self.presenter = Presenter(window, self.traces, self._status)
        self._make_menus()
        window.editor.subscribe(self._document_changed)
        self.refresh_inputs()

    # setup -----------------------------------------------------------------------------
    def _place_docks(self, window: QMainWindow) -> None:
        """Inspector under the properties panel; timeline tabbed with the problems panel."""
        docks = self.window.docks
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inspector)
        if "properties" in docks:
            window.splitDockWidget(docks["properties"], self.inspector, Qt.Orientation.Vertical)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.timeline)
        if "problems" in docks:
            window.tabifyDockWidget(docks["problems"], self.timeline)
            docks["problems"].raise_()

    def _make_menus(self) -> None:
        w, a = self.window, make_action
        self.export_action = a(w, "Export run trace…", self.traces.export_dialog, None,
                               "Save the last run's trace as JSON", "exportTraceAction")
        self.report_action = a(w, "Export Run Report…", self.traces.export_report_dialog, None,
                               "Save the last run as one web page anyone can open: the "
                               "question, the answer and its sources, the steps, the evidence",
                               "exportRunReportAction")
        self.eval_action = a(w, "Show evaluation report…", self.evaluation.open_dialog, None,
                             "Show an evaluation report's metrics on the nodes", "evalAction")
        self.clear_eval_action = a(w, "Clear evaluation metrics", self.evaluation.clear, None,
                                   "Remove evaluation metrics from the canvas", "clearEvalAction")
        self.present_action = a(w, "Presentation mode", self.present, "F11",
                                "Replay the last run step by step, full screen",
                                "presentAction")
        self.replay_action = a(w, "Replay a recorded trace…", self.presenter.replay_dialog, None,
                               "Open a trace JSON file in presentation mode", "replayAction")
        self.overlay_action = QAction("Show overlays", self.window)  # type: ignore[call-overload]
        self.overlay_action.setObjectName("overlayAction")
        self.overlay_action.setCheckable(True)
        self.overlay_action.setChecked(True)
        self.overlay_action.setShortcut(QKeySequence("Ctrl+Shift+O"))
        self.overlay_action.toggled.connect(self.overlays.set_visible)
        toolbar = w.run_toolbar
        for action in self.actions.actions:
            toolbar.addAction(action)
        toolbar.addSeparator()
        toolbar.addWidget(self.run_bar)
        menus = w.menus
        if "Run" in menus:
            for action in self.actions.actions:
                menus["Run"].addAction(action)
            menus["Run"].addAction(self.actions.replay_calls_action)
            menus["Run"].addSeparator()
            for action in (self.export_action, self.report_action, self.eval_action,
                           self.clear_eval_action):
                menus["Run"].addAction(action)
        if "View" in menus:
            view = menus["View"]
            view.addSeparator()
            view.addAction(self.overlay_action)
            view.addAction(self.inspector.toggleViewAction())
            view.addAction(self.timeline.toggleViewAction())
            view.addSeparator()
            view.addAction(self.present_action)
            view.addAction(self.replay_action)
        if "File" in menus:  # before Quit, when the menu ends with it
            actions = menus["File"].actions()
            last = actions[-1] if actions else None
            if last is not None and "quit" in last.text().lower():
                menus["File"].insertActions(last, [self.export_action, self.report_action])
                menus["File"].insertSeparator(last)
            else:
                menus["File"].addActions([self.export_action, self.report_action])

    def _status(self, text: str, ms: int = 0) -> None:
        self.window.statusBar().showMessage(text, ms)

    def _document_changed(self, change: Any = None) -> None:
        another_graph = getattr(change, "kind", "") == "reset"
        if another_graph:
            self.mirror.forget_run()
        self.refresh_inputs(keep_typed=not another_graph)

    def refresh_inputs(self, keep_typed: bool = True) -> None:
        try:
            doc = self.actions.refresh_inputs(keep_typed)
        except Exception:  # the editor may be mid-change; the next callback catches up
            return
        self.inspector.set_params({n.id: n.params for n in doc.nodes})

    # the parts' state and actions, as the window and tests address them ------------------------
    run_bar = property(lambda self: self.actions.run_bar)
    run_action = property(lambda self: self.actions.run_action)
    run_to_action = property(lambda self: self.actions.run_to_action)
    rerun_action = property(lambda self: self.actions.rerun_action)
    cancel_action = property(lambda self: self.actions.cancel_action)
    captions = property(lambda self: self.mirror.captions.run)
    metric_captions = property(lambda self: self.mirror.captions.metrics)
    metrics = property(lambda self: self.evaluation.metrics)
    visit_counts = property(lambda self: self.mirror.visit_counts)
    order = property(lambda self: self.mirror.order)
    last_error = property(lambda self: self.mirror.last_error)
    presentation = property(lambda self: self.presenter.presentation)
    export_trace_dialog = property(lambda self: self.traces.export_dialog)
    load_evaluation_dialog = property(lambda self: self.evaluation.open_dialog)
    replay_trace_dialog = property(lambda self: self.presenter.replay_dialog)

    def document(self) -> GraphDocument:
        """What Run, Run to node, Re-run, Run set and Index run (the active variant applied)."""
        return self.actions.document()

    def use_document_source(self, source: Callable[[], GraphDocument]) -> None:
        """Where "what will run" comes from (the variants feature: the active variant)."""
        self.actions.document_source = source

    def run(self, *, target: str | None = None, rerun: list[str] | None = None,
            start_from: str | None = None) -> bool:
        return self.actions.run(target=target, rerun=rerun, start_from=start_from)

    def run_to_selected(self) -> bool:
        return self.actions.run_to_selected()

    def rerun_selected(self) -> bool:
        return self.actions.rerun_selected()

    def cancel(self) -> None:
        self.actions.cancel()

    def open_card_row(self, node_id: str, kind: str, row: int) -> None:
        self.mirror.open_card_row(node_id, kind, row)

    def select_node(self, node_id: str | None) -> None:
        self.mirror.select_node(node_id)

    def last_trace(self) -> Trace | None:
        return self.traces.last_trace()

    def export_trace(self, path: str | Path) -> Path:
        return self.traces.export(path)

    def show_evaluation(self, path: str | Path) -> dict[str, dict[str, float]]:
        return self.evaluation.show(path)

    def clear_evaluation(self) -> None:
        self.evaluation.clear()

    def present(self, trace: Trace | None = None,
                full_screen: bool = True) -> PresentationWindow | None:
        return self.presenter.present(trace, full_screen)
