"""A recorded run shown as it ran: the graph of that run on its own read-only canvas, with
the run's states, captions, output cards, inspector and timeline, a banner naming what has
changed in the graph since, and (after a comparison) the node-by-node diff badges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMainWindow, QVBoxLayout, QWidget

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.engine.history.changes import graph_changes
from modrag_studio.engine.history.store import StoredRun
from modrag_studio.engine.run.executor import Executor
from modrag_studio.ui.canvas.adapter import CanvasAdapter
from modrag_studio.ui.evaluate.compare_view import DiffBadge, SideBySideDialog, open_side_by_side
from modrag_studio.ui.history.panel import when
from modrag_studio.ui.inspection.inspector import Inspector
from modrag_studio.ui.inspection.overlays import OverlayManager
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.mirror import RunMirror
from modrag_studio.ui.run.timeline import TimelineDock


@dataclass
class ReadOnlyEditor(GraphEditor):
    """An editor that keeps its document: every edit is refused (and named in ``refused``),
    and the canvas is told to show the document as it stays."""

    refused: list[str] = field(default_factory=list)

    def _apply(self, label: str, new: GraphDocument) -> None:
        if new == self._doc:
            return
        self.refused.append(label)
        self._emit(Change("undo", label, new, self._doc))

    def push_action(self, label: str, do: Any, undo: Any) -> None:
        self.refused.append(label)


class RunView(QMainWindow):
    """One recorded run on its own canvas (the current graph is never touched)."""

    def __init__(self, stored: StoredRun, current: GraphDocument | None,
                 registry: NodeRegistry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # a closed view frees its canvas
        self.stored = stored
        record = stored.record
        self.setWindowTitle(f"Run {record.run_id} ({when(record.started_at)}) — read-only")
        self.editor = ReadOnlyEditor(registry)
        self.editor.reset(stored.doc)
        self.canvas = CanvasAdapter(self.editor, registry)
        self.changes = graph_changes(stored.doc, current) if current is not None else None
        self.banner = QLabel(self._banner_text())
        self.banner.setObjectName("runViewBanner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("background: #3a3320; color: #f3e3b0; padding: 6px;")
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.banner)
        layout.addWidget(self.canvas.view, 1)
        self.setCentralWidget(central)
        self.overlays = OverlayManager(self.canvas)
        self.inspector = Inspector(self)
        self.timeline = TimelineDock(self)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inspector)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.timeline)
        self.controller = RunController(registry, self, executor=Executor(registry))
        self.mirror = RunMirror(self.controller, self.canvas, self.overlays, self.inspector,
                                self.timeline, lambda text: self.statusBar().showMessage(text))
        self.badges: dict[str, DiffBadge] = {}
        self.comparison: dict[str, Any] | None = None
        self.dialog: SideBySideDialog | None = None
        self.resize(1280, 820)
        self.resizeDocks([self.timeline], [170], Qt.Orientation.Vertical)
        self.resizeDocks([self.inspector], [380], Qt.Orientation.Horizontal)
        self._fitted = False
        for keys in (QKeySequence(QKeySequence.StandardKey.Close), QKeySequence("Escape")):
            QShortcut(keys, self, activated=self.close)  # Ctrl+W or Esc closes the view
        self.replay()

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        if not self._fitted:  # the whole run in view once the window has its size
            self._fitted = True
            QTimer.singleShot(0, self.canvas.fit_all)

    def _banner_text(self) -> str:
        record = self.stored.record
        head = (f"Read-only: run of {when(record.started_at)}, {record.status} in "
                f"{record.duration_s:.2f} s" + (f", variant {record.variant}"
                                                 if record.variant else ""))
        if self.changes is None:
            return head
        return f"{head}. Since then: {self.changes.describe()}."

    def replay(self) -> None:
        """The run's visits on this canvas, as the run mirror showed them live."""
        result = self.stored.result
        trace = result.trace
        self.controller.last_result = result
        self.controller.history = [trace]
        order = list(dict.fromkeys(v.node_id for v in trace.visits))
        self.mirror.run_started(trace.run_id, order)
        for visit in trace.visits:
            outputs = result.node_outputs.get((visit.node_id, visit.iteration), {})
            self.mirror.node_finished(visit, outputs)
        self.mirror.run_finished(result)

    # comparison ------------------------------------------------------------------------------
    def show_comparison(self, nodes: dict[str, dict[str, Any]], labels: tuple[str, str]) -> int:
        """Diff badges over this run's nodes (clicking one opens the side-by-side view);
        returns how many nodes changed."""
        for badge in self.badges.values():
            if badge.scene() is not None:
                badge.scene().removeItem(badge)
        self.badges.clear()
        self.comparison = {"nodes": nodes, "labels": labels}
        changed = 0
        for node_id, entry in nodes.items():
            item = self.canvas.node_item(node_id)
            if item is None:
                continue
            kind = entry["status"] if entry["status"] in ("same", "changed") else "missing"
            changed += kind == "changed"
            self.badges[node_id] = DiffBadge(item, entry["badge"], kind,
                                             on_click=lambda n=node_id: self.open_node(n))
        self.banner.setText(f"{self._banner_text()} Compared: A = {labels[0]}, "
                            f"B = {labels[1]}: {changed} node(s) differ.")
        return changed

    def open_node(self, node_id: str) -> SideBySideDialog | None:
        dialog = open_side_by_side(self.comparison, node_id, self.dialog, self)
        if dialog is not None:
            self.dialog = dialog
        return dialog

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        self.controller.shutdown()
        super().closeEvent(event)
