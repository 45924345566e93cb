"""Run & inspect features added to the main window: actions, run bar, live states, docks.

``install_run_features(window)`` is called at the end of ``MainWindow.__init__``; it needs
``window.registry``, ``window.editor``, ``window.canvas``, ``window.run_toolbar``,
``window.menus`` and ``window.statusBar()``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMenu

from modrag_studio.engine.datatypes import Answer, Chunk, ScoredChunk
from modrag_studio.engine.document import GraphDocument
from modrag_studio.engine.executor import RunResult
from modrag_studio.engine.graph_io import role_of
from modrag_studio.engine.topology import Topology
from modrag_studio.engine.trace import NodeVisit, Trace
from modrag_studio.ui.eval_metrics import ReportError, caption, load_report
from modrag_studio.ui.inspector import Inspector
from modrag_studio.ui.overlays import OverlayManager
from modrag_studio.ui.presentation import PresentationWindow
from modrag_studio.ui.run_bar import RunBar
from modrag_studio.ui.run_controller import RunController
from modrag_studio.ui.timeline import TimelineDock

log = logging.getLogger(__name__)
CANVAS_STATES = {"done", "cached", "skipped", "failed", "cancelled", "running", "queued"}


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


class RunFeatures(QObject):
    """Everything about running and inspecting a graph in one window."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.canvas = window.canvas
        self.controller = RunController(window.registry, self)
        runner = self.controller.process
        if runner is not None:  # stop the worker process with the window or the app
            window.destroyed.connect(lambda *_: runner.close())
            app = QCoreApplication.instance()
            if app is not None:
                app.aboutToQuit.connect(runner.close)
        self.overlays = OverlayManager(self.canvas)
        self.inspector = Inspector(window)
        self.timeline = TimelineDock(window)
        self._place_docks(window)
        self.run_bar = RunBar(window, settings=getattr(window, "settings", None),
                              registry=window.registry)
        self.captions: dict[str, str] = {}
        self.metric_captions: dict[str, str] = {}
        self.metrics: dict[str, dict[str, float]] = {}
        self.visit_counts: dict[str, int] = {}
        self.times: dict[str, float] = {}
        self.last_error = ""
        self.presentation: PresentationWindow | None = None
        self.order: list[str] = []
        self._make_actions()
        self._wire()
        self.refresh_inputs()

    # setup -----------------------------------------------------------------------------
    def _place_docks(self, window: QMainWindow) -> None:
        """Inspector under the properties panel; timeline tabbed with the problems panel."""
        docks = getattr(window, "docks", {})
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inspector)
        properties = docks.get("properties")
        if properties is not None:
            window.splitDockWidget(properties, self.inspector, Qt.Orientation.Vertical)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.timeline)
        problems = docks.get("problems")
        if problems is not None:
            window.tabifyDockWidget(problems, self.timeline)
            problems.raise_()

    def _action(self, text: str, slot: Any, shortcut: str | None = None, tip: str = "",
                name: str = "") -> QAction:
        action = QAction(text, self.window)
        action.setObjectName(name or text)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.setStatusTip(tip or text)
        action.setToolTip(f"{tip or text} ({shortcut})" if shortcut else (tip or text))
        action.triggered.connect(lambda checked=False: slot())
        return action

    def _make_actions(self) -> None:
        a = self._action
        self.run_action = a("Run", self.run, "F5", "Run the whole graph", "runAction")
        self.run_to_action = a("Run to node", self.run_to_selected, "Shift+F5",
                               "Run the selected node and what it needs", "runToAction")
        self.rerun_action = a("Re-run node", self.rerun_selected, "Ctrl+F5",
                              "Re-run the selected node and everything after it", "rerunAction")
        self.cancel_action = a("Cancel", self.cancel, "Ctrl+.", "Stop the run at the next "
                               "batch boundary", "cancelAction")
        self.cancel_action.setEnabled(False)
        self.export_action = a("Export run trace…", self.export_trace_dialog, None,
                               "Save the last run's trace as JSON", "exportTraceAction")
        self.eval_action = a("Show evaluation report…", self.load_evaluation_dialog, None,
                             "Show an evaluation report's metrics on the nodes", "evalAction")
        self.clear_eval_action = a("Clear evaluation metrics", self.clear_evaluation, None,
                                   "Remove evaluation metrics from the canvas", "clearEvalAction")
        self.present_action = a("Presentation mode", self.present, "F11",
                                "Replay the last run step by step, full screen",
                                "presentAction")
        self.replay_action = a("Replay a recorded trace…", self.replay_trace_dialog, None,
                               "Open a trace JSON file in presentation mode", "replayAction")
        self.overlay_action = QAction("Show overlays", self.window)
        self.overlay_action.setObjectName("overlayAction")
        self.overlay_action.setCheckable(True)
        self.overlay_action.setChecked(True)
        self.overlay_action.setShortcut(QKeySequence("Ctrl+Shift+O"))
        self.overlay_action.toggled.connect(self.overlays.set_visible)
        toolbar = self.window.run_toolbar
        for action in (self.run_action, self.run_to_action, self.rerun_action,
                       self.cancel_action):
            toolbar.addAction(action)
        toolbar.addSeparator()
        toolbar.addWidget(self.run_bar)
        menus: dict[str, QMenu] = getattr(self.window, "menus", {})
        if "Run" in menus:
            run_menu = menus["Run"]
            for action in (self.run_action, self.run_to_action, self.rerun_action,
                           self.cancel_action):
                run_menu.addAction(action)
            run_menu.addSeparator()
            for action in (self.export_action, self.eval_action, self.clear_eval_action):
                run_menu.addAction(action)
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
                menus["File"].insertAction(last, self.export_action)
                menus["File"].insertSeparator(last)
            else:
                menus["File"].addAction(self.export_action)

    def _wire(self) -> None:
        c = self.controller
        c.run_started.connect(self._run_started)
        c.node_started.connect(self._node_started)
        c.node_progress.connect(self._node_progress)
        c.node_stream.connect(self._node_stream)
        c.node_finished.connect(self._node_finished)
        c.run_finished.connect(self._run_finished)
        c.run_error.connect(self._run_error)
        c.busy_changed.connect(self._busy)
        self.run_bar.submitted.connect(self.run)
        self.overlays.on_row_clicked.append(self.open_card_row)
        self.timeline.canvas.bar_clicked.connect(self.inspector.show_node)
        selected = getattr(self.canvas, "on_node_selected", None)
        if isinstance(selected, list):
            selected.append(self.select_node)
        editor = self.window.editor
        if hasattr(editor, "subscribe"):
            editor.subscribe(self._document_changed)

    # document helpers --------------------------------------------------------------------
    def document(self) -> GraphDocument:
        return self.window.editor.document()

    def graph_key(self, doc: GraphDocument) -> str:
        path = getattr(self.window.editor, "path", None)
        return str(Path(path).resolve()) if path else f"name:{doc.metadata.name}"

    def _document_changed(self, change: Any = None) -> None:
        another_graph = getattr(change, "kind", "") == "reset"
        if another_graph:  # forget the last run's views
            self.overlays.clear()
            self.metric_captions, self.metrics, self.captions = {}, {}, {}
            self.inspector.set_run(None)
            self.inspector.show_node(None)
            self.timeline.set_trace(None)
        self.refresh_inputs(keep_typed=not another_graph)

    def refresh_inputs(self, keep_typed: bool = True) -> None:
        try:
            doc = self.document()
        except Exception:  # the editor may be mid-change; the next callback catches up
            return
        self.run_bar.set_document(doc, self.graph_key(doc), keep=keep_typed)
        self.inspector.set_params({n.id: n.params for n in doc.nodes})

    def _status(self, text: str, ms: int = 0) -> None:
        self.window.statusBar().showMessage(text, ms)

    def _selected(self) -> str | None:
        ids = self.canvas.selected_node_ids() if self.canvas is not None else []
        if not ids:
            self._status("Select a node first.", 4000)
            return None
        return ids[0]

    # actions -------------------------------------------------------------------------------
    def run(self, *, target: str | None = None, rerun: list[str] | None = None,
            start_from: str | None = None) -> bool:
        if self.controller.busy:
            self._status("A run is already going; cancel it first.", 4000)
            return False
        doc = self.document()
        self.refresh_inputs()
        self.run_bar.remember()
        self.last_error = ""
        self._status("Running…")
        path = self.window.editor.path
        return self.controller.run(doc, self.run_bar.values(), target=target,
                                   rerun=rerun or [], start_from=start_from,
                                   base_dir=Path(path).parent if path else None)

    def run_to_selected(self) -> bool:
        node_id = self._selected()
        return bool(node_id) and self.run(target=node_id)

    def rerun_selected(self) -> bool:
        node_id = self._selected()
        if not node_id:
            return False
        after = sorted(Topology.of(self.document()).downstream(node_id))
        result = self.controller.last_result
        if result is not None and any(k[0] == node_id for k in result.node_outputs):
            return self.run(start_from=node_id, rerun=[node_id, *after])
        return self.run(rerun=[node_id, *after])

    def cancel(self) -> None:
        if self.controller.busy:
            self.controller.cancel()
            self._status("Cancelling at the next batch boundary…")

    def open_card_row(self, node_id: str, kind: str, row: int) -> None:
        """A click on an overlay row: a citation opens its source, a chunk its document."""
        result = self.controller.last_result
        outputs = result.node_outputs if result else {}
        visits = sorted(i for n, i in outputs if n == node_id)
        if not visits:
            return
        self.inspector.show_node(node_id)
        self.inspector.raise_()
        for value in outputs[(node_id, visits[-1])].values():
            if kind == "answer" and isinstance(value, Answer) and row < len(value.citations):
                self.inspector.open_citation(value.citations[row], value.evidence)
                return
            if isinstance(value, list) and row < len(value):
                item = value[row]
                chunk = item.chunk if isinstance(item, ScoredChunk) else item
                if isinstance(chunk, Chunk):
                    self.inspector.show_chunk_source(chunk)
                    return

    def select_node(self, node_id: str | None) -> None:
        self.timeline.canvas.selected = node_id
        self.timeline.canvas.update()
        self.inspector.show_node(node_id)

    # live states ---------------------------------------------------------------------------
    def _set_caption(self, node_id: str, text: str | None = None) -> None:
        if text is not None:
            self.captions[node_id] = text
        parts = [self.captions.get(node_id, ""), self.metric_captions.get(node_id, "")]
        if self.canvas is not None:
            self.canvas.set_node_caption(node_id, " · ".join(p for p in parts if p))

    def _state(self, node_id: str, state: str, tooltip: str = "") -> None:
        if self.canvas is not None and state in CANVAS_STATES:
            self.canvas.set_node_state(node_id, state, tooltip)

    def _run_started(self, run_id: str, node_ids: list[str]) -> None:
        if self.canvas is not None:
            self.canvas.clear_run_state()
        self.overlays.clear("output")
        self.inspector.streams = {}
        self.visit_counts, self.times, self.captions = {}, {}, {}
        self.order = list(node_ids)
        for node_id in node_ids:
            self._state(node_id, "queued", "waiting to run")
            self._set_caption(node_id, "")

    def _node_started(self, node_id: str, iteration: int) -> None:
        self._state(node_id, "running", "running…")
        if iteration:
            self._set_caption(node_id, f"iteration {iteration + 1}")
        done = sum(1 for n in self.order if n in self.visit_counts)
        self._status(f"Running {node_id}… ({done}/{len(self.order)} nodes finished)")

    def _node_progress(self, node_id: str, fraction: float | None, message: str) -> None:
        if self.canvas is not None:
            self.canvas.set_node_progress(node_id, fraction)
        if message:
            self._set_caption(node_id, message)

    def _node_stream(self, node_id: str, text: str) -> None:
        full = self.controller.streams.get(node_id, text)
        self.overlays.show_stream(node_id, full)
        self.inspector.show_stream(node_id, full)

    def _node_finished(self, visit: NodeVisit, outputs: dict[str, Any]) -> None:
        node_id = visit.node_id
        count = self.visit_counts[node_id] = self.visit_counts.get(node_id, 0) + 1
        self.times[node_id] = self.times.get(node_id, 0.0) + visit.duration_s
        if self.canvas is not None:
            self.canvas.set_node_progress(node_id, None)
        tooltip = {
            "done": f"ran in {_fmt(visit.duration_s)}: {visit.cache_reason}",
            "cached": f"from cache: {visit.cache_reason}",
            "skipped": f"skipped: {visit.skip_reason}",
            "failed": (f"{visit.error.type}: {visit.error.message}" if visit.error else "failed"),
            "cancelled": "cancelled",
        }.get(visit.status, visit.status)
        self._state(node_id, visit.status, tooltip)
        loops = f"×{count} · " if count > 1 else ""
        text = {"done": _fmt(self.times[node_id]), "cached": "from cache",
                "skipped": "skipped", "failed": "failed", "cancelled": "cancelled"}
        self._set_caption(node_id, loops + text.get(visit.status, visit.status))
        if outputs:
            is_output = role_of(visit.type_id, self.controller.registry) == "output"
            self.overlays.show_outputs(node_id, outputs, answers_only=is_output)
        if self.inspector.node_id == node_id and self.controller.streams.get(node_id):
            self.inspector.streams.pop(node_id, None)

    def _run_finished(self, result: RunResult) -> None:
        trace = result.trace
        for visit in trace.visits:
            if visit.status == "cancelled" and not visit.started_at:
                self._state(visit.node_id, "cancelled", visit.skip_reason)
                self._set_caption(visit.node_id, "not run")
        self.inspector.set_run(result, self.controller.history)
        self.timeline.set_trace(trace)
        ran, cached = len(trace.ran()), len(trace.from_cache())
        failed = trace.with_status("failed")
        text = f"Run {trace.status} in {_fmt(trace.duration_s)}: {ran} ran, {cached} from cache"
        if failed:
            visit = trace.last_visit(failed[0])
            message = visit.error.message if visit and visit.error else ""
            text += f"; {failed[0]} failed: {message}"
        notes = [p["message"] for p in trace.problems if p.get("severity") == "warning"]
        if notes:
            text += f" ({notes[0]})"
        self._status(text)

    def _run_error(self, message: str) -> None:
        self.last_error = message
        started = getattr(self, "order", None) and self.visit_counts
        if self.canvas is not None and not started:
            self.canvas.clear_run_state()
        elif started:  # the run broke off: keep what completed, mark the rest
            for node_id in self.order:
                if node_id not in self.visit_counts:
                    self._state(node_id, "cancelled", message)
                    self.canvas.set_node_progress(node_id, None)
        self.order = []
        self._status(f"{'Run stopped' if started else 'Cannot run'}: {message}")

    def _busy(self, busy: bool) -> None:
        self.cancel_action.setEnabled(busy)
        for action in (self.run_action, self.run_to_action, self.rerun_action):
            action.setEnabled(not busy)

    # trace export -------------------------------------------------------------------------
    def last_trace(self) -> Trace | None:
        result = self.controller.last_result
        return result.trace if result else None

    def export_trace(self, path: str | Path) -> Path:
        trace = self.last_trace()
        if trace is None:
            raise ValueError("no run to export yet: run the graph first")
        path = Path(path)
        path.write_text(trace.to_json(), encoding="utf-8")
        self._status(f"Trace saved to {path}", 5000)
        return path

    def export_trace_dialog(self) -> None:
        if self.last_trace() is None:
            self._status("Run the graph first; there is no trace to export.", 5000)
            return
        name = f"{self.last_trace().graph_name}-trace.json"
        path, _ = QFileDialog.getSaveFileName(self.window, "Export run trace", name,
                                              "Trace JSON (*.json)")
        if path:
            self.export_trace(path)

    # evaluation metrics -----------------------------------------------------------------------
    def show_evaluation(self, path: str | Path) -> dict[str, dict[str, float]]:
        metrics, _ = load_report(path)
        self.clear_evaluation()
        self.metrics = metrics
        for node_id, values in metrics.items():
            self.metric_captions[node_id] = caption(values)
            self._set_caption(node_id)
            self.overlays.show_metrics(node_id, values)
        self._status(f"Evaluation metrics shown on {len(metrics)} node(s)", 5000)
        return metrics

    def load_evaluation_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Evaluation report", "",
                                              "Report JSON (*.json)")
        if path:
            try:
                self.show_evaluation(path)
            except ReportError as exc:
                self._status(str(exc), 8000)

    def clear_evaluation(self) -> None:
        for node_id in list(self.metric_captions):
            self.metric_captions.pop(node_id)
            self._set_caption(node_id)
        self.metrics = {}
        self.overlays.clear("metrics")

    # presentation ------------------------------------------------------------------------------
    def present(self, trace: Trace | None = None, full_screen: bool = True) -> \
            PresentationWindow | None:
        trace = trace or self.last_trace()
        if trace is None:
            self._status("Run the graph first (or replay a recorded trace).", 5000)
            return None
        titles = {}
        for node in self.document().nodes:
            if node.title:
                titles[node.id] = node.title
            elif node.type in self.controller.registry:
                titles[node.id] = self.controller.registry.get(node.type).display_title()
        self.presentation = PresentationWindow(trace, self.canvas, titles)
        if full_screen:
            self.presentation.showFullScreen()
        else:
            self.presentation.resize(1280, 800)
            self.presentation.show()
        return self.presentation

    def replay_trace_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Recorded run trace", "",
                                              "Trace JSON (*.json)")
        if path:
            try:
                trace = Trace.model_validate_json(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                self._status(f"{path}: not a run trace ({exc})", 8000)
                return
            self.present(trace)


def install_run_features(window: QMainWindow) -> RunFeatures:
    """Add run actions, the run bar, overlays, inspector and timeline to ``window``."""
    features = RunFeatures(window)
    window.run_features = features
    return features
