"""Run history in the studio: every run recorded, the History dock, and its actions.

The run feature's controller reports each finished run (``run_finished``); this feature, the
caller around the run, records it with the request it ran (graph as it ran, inputs, variant,
the playground's conversation and turn) in the ``RunHistory`` beside the node cache. The
History dock lists the graph's runs; "Show on canvas" opens the run as it ran in a read-only
``RunView`` naming what changed since; "Compare with current" runs the current graph on the
run's inputs and opens the node-by-node diff of the two; "Compare selected" diffs two
recorded runs; "Set as baseline" makes later runs report their deltas against it; "Add to
evaluation set…" opens the evaluation-set dialog on the run's question and evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMainWindow

from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.history.changes import deltas
from modrag_studio.engine.history.store import RunHistory, RunRecord
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.pins import graph_key
from modrag_studio.evaluation.run_diff import diff_runs, format_run_diff
from modrag_studio.ui.evaluate.evalset_panel import AddToEvalSetDialog, run_evidence
from modrag_studio.ui.history.panel import HistoryPanel, when
from modrag_studio.ui.run.controller import RunRequest

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.evaluate.evalset_panel import EvaluationSets
    from modrag_studio.ui.evaluate.variants import VariantsController
    from modrag_studio.ui.history.run_view import RunView
    from modrag_studio.ui.run.run_side import RunSide


class RunHistoryFeature(QObject):
    """Records the window's runs and owns the History dock."""

    recorded = Signal(object, object)  # RunRecord, RunResult: after each run is stored

    def __init__(self, window: StudioShell, run: RunSide, variants: VariantsController,
                 evaluation_sets: EvaluationSets, store: RunHistory | None = None) -> None:
        qt_window: QMainWindow = window  # type: ignore[assignment]
        super().__init__(qt_window)
        self.window, self.shell = qt_window, window
        self.run, self.variants, self.evaluation_sets = run, variants, evaluation_sets
        self.store = store or RunHistory()
        self.panel = HistoryPanel(self.store)
        self.dock = window.add_dock("History", self.panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.dock.setObjectName("dock_history")
        if "problems" in window.docks:
            qt_window.tabifyDockWidget(window.docks["problems"], self.dock)
            window.docks["problems"].raise_()
        self.views: list[RunView] = []  # the run views open
        self.last_record: RunRecord | None = None
        self.last_comparison: dict[str, Any] | None = None
        self.panel.show_requested.connect(self.show_run)
        self.panel.compare_current_requested.connect(self.compare_with_current)
        self.panel.compare_requested.connect(self.compare)
        self.panel.baseline_requested.connect(self.set_baseline)
        self.panel.evaluation_requested.connect(self.add_to_evaluation_set)
        run.controller.run_finished.connect(self._finished)
        window.editor.subscribe(self._document_changed)
        if "View" in window.menus:
            window.menus["View"].addAction(self.dock.toggleViewAction())
        # the list is read when the dock is first seen, not at start-up
        self.dock.visibilityChanged.connect(lambda visible: visible and self.refresh())

    def refresh(self, force: bool = False) -> None:
        """Re-read the list when the dock is seen (runs recorded elsewhere show up too);
        a hidden dock is read when it is shown."""
        if force or not self.dock.visibleRegion().isEmpty() or self.dock.isFloating():
            if self.panel.graph != self.graph():
                self.panel.set_graph(self.graph())
            else:
                self.panel.refresh()

    # which graph -----------------------------------------------------------------------------
    def graph(self) -> str:
        """The history's key of the window's graph (its file, else its name)."""
        editor = self.shell.editor
        return graph_key(editor.document(), editor.path)

    def _document_changed(self, change: Any = None) -> None:
        kind = getattr(change, "kind", "")
        if kind in ("reset", "saved") and self.panel.graph != self.graph():
            self.refresh()

    def show(self) -> None:
        self.dock.show()
        self.dock.raise_()
        self.refresh(force=True)
        self.window.resizeDocks([self.dock], [330], Qt.Orientation.Vertical)
        self.window.resizeDocks([self.dock], [int(self.window.width() * 0.6)],
                                Qt.Orientation.Horizontal)

    # recording -------------------------------------------------------------------------------
    def _finished(self, result: RunResult) -> None:
        request = self.run.controller.last_request
        if request is None:
            return
        context = request.context
        try:
            record = self.store.record(
                self.graph(), request.doc, request.inputs, result,
                variant=self.variants.active, origin=context.get("origin", "studio"),
                conversation=context.get("conversation", ""), turn=context.get("turn", 0),
                registry=self.run.controller.registry)
        except Exception as exc:  # a full disk, a locked index: said, and the run stays shown
            self.shell.show_message(f"The run was not recorded in the history: "
                                    f"{type(exc).__name__}: {exc}")
            return
        self.last_record = record
        self.refresh()
        baseline = self.store.baseline(record.graph)
        if baseline is not None and baseline.run_id != record.run_id:
            self.window.statusBar().showMessage(
                f"{self.window.statusBar().currentMessage()} · vs baseline: "
                f"{deltas(baseline, record)['label']}")
        self.recorded.emit(record, result)
        if against := context.get("compare_with"):  # "Compare with current" ran this one
            self.compare(against, record.run_id)

    # actions ---------------------------------------------------------------------------------
    def show_run(self, run_id: str) -> RunView | None:
        """The run as it ran, on its own read-only canvas."""
        from modrag_studio.ui.history.run_view import RunView  # on first use, not at start

        try:
            stored = self.store.load(run_id, self.shell.registry)
        except ModragError as exc:
            self.shell.show_message(str(exc))
            return None
        view = RunView(stored, self.shell.editor.document(), self.shell.registry, self.window)
        self.views.append(view)
        view.destroyed.connect(lambda *_: self._forget(view))
        view.show()
        return view

    def _forget(self, view: RunView) -> None:
        self.views = [v for v in self.views if v is not view]

    def compare(self, run_a: str, run_b: str) -> RunView | None:
        """The node-by-node diff of two recorded runs: on run B's canvas and in the panel."""
        try:
            a = self.store.load(run_a, self.shell.registry)
            b = self.store.load(run_b, self.shell.registry)
        except ModragError as exc:
            self.shell.show_message(str(exc))
            return None
        labels = (f"{when(a.record.started_at)} {a.record.variant or 'base'}",
                  f"{when(b.record.started_at)} {b.record.variant or 'base'}")
        nodes = diff_runs(a.doc, a.result, b.doc, b.result)
        self.last_comparison = {"labels": labels, "nodes": nodes}
        self.panel.select(run_a, run_b)
        self.panel.details.setPlainText(comparison_text(a.record, b.record, nodes, labels))
        view = self.show_run(run_b)
        if view is not None:
            view.show_comparison(nodes, labels)
        return view

    def compare_with_current(self, run_id: str) -> bool:
        """Run the current graph (the active variant) on the run's inputs; the diff opens
        when that run is recorded."""
        record = self.store.get(run_id)
        if record is None:
            self.shell.show_message(f"run {run_id} is not in the history any more")
            return False
        context = {"origin": "studio", "compare_with": run_id}
        if not self.start(record.inputs, "Compare with current", context):
            return False
        self.window.statusBar().showMessage(
            f"Running the current graph on the question of {when(record.started_at)}…")
        return True

    def start(self, inputs: dict[str, Any], label: str, context: dict[str, Any]) -> bool:
        """A run of what will run (the active variant) through the run controller, after the
        pre-run guards, as Run starts one."""
        controller = self.run.controller
        if controller.busy:
            self.shell.show_message("A run is already going; cancel it first.", 4000)
            return False
        doc = self.run.document()
        path = self.shell.editor.path
        request = RunRequest(doc, dict(inputs), label=label,
                             base_dir=Path(path).parent if path else None,
                             pins_graph=graph_key(doc, path), context=context)
        return controller.guards_allow(request) and controller.start(request)

    def set_baseline(self, run_id: str) -> None:
        self.store.set_baseline(self.graph(), run_id or None)
        self.refresh(force=True)
        self.window.statusBar().showMessage(
            "Baseline cleared." if not run_id else
            "Baseline set: later runs show their time, outcome and answer against it.", 6000)

    def add_to_evaluation_set(self, run_id: str) -> AddToEvalSetDialog | None:
        """The evaluation-set dialog on the run's question and the chunks it answered from."""
        try:
            stored = self.store.load(run_id, self.shell.registry)
        except ModragError as exc:
            self.shell.show_message(str(exc))
            return None
        panel = self.evaluation_sets.panel
        dialog = AddToEvalSetDialog(stored.record.question, run_evidence(stored.result),
                                    panel.path, self.window)
        dialog.accepted.connect(lambda: panel.load(dialog.path.text().strip()))
        dialog.open()
        return dialog


def comparison_text(a: RunRecord, b: RunRecord, nodes: dict[str, dict[str, Any]],
                    labels: tuple[str, str]) -> str:
    """What differs first (the answers, the nodes that differ), then the full diff."""
    differ = [f"{node_id} ({entry['badge']})" for node_id, entry in nodes.items()
              if entry["status"] != "same"]
    same = [node_id for node_id, entry in nodes.items() if entry["status"] == "same"]
    lines = [f"A {labels[0]}: {a.question} -> {a.answer}",
             f"B {labels[1]}: {b.question} -> {b.answer}",
             f"{deltas(a, b)['label']} (B against A)",
             f"differ: {', '.join(differ) or 'none'}",
             f"same: {', '.join(same) or 'none'}", "", format_run_diff(nodes, labels)]
    return "\n".join(lines)
