"""Variants in the studio: create one, switch between them, see what changed, compare runs.

A Variants menu and a switcher in the run toolbar. The active variant's changed params are
shown in a purple badge under each changed node. "Compare with Base" runs the base graph and
the variant on the run bar's inputs (one cache, off the GUI thread), then puts a diff badge
on every node; clicking a badge opens the side-by-side inspector. "Compare on Evaluation
Set…" runs both on every question of a ``.jsonl`` set (worker thread, progress, Cancel) and
shows the answer-metric table with paired statistics and the flipped questions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtCore import QObject
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
)

from modrag_studio.commands.common import parse_value
from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.edit.editor import ParamRejected
from modrag_studio.engine.edit.variants import (
    apply_variant,
    base_of,
    diff_graphs,
    get_variant,
    parse_variant_args,
    variant_names,
    with_variant,
)
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.run_diff import diff_runs
from modrag_studio.ui.evaluate.compare_view import (
    AnswerComparisonDialog,
    DiffBadge,
    SideBySideDialog,
    open_side_by_side,
)
from modrag_studio.ui.evaluate.grid_table import GridDialog
from modrag_studio.ui.evaluate.variant_form import VariantForm
from modrag_studio.ui.evaluate.wording import in_studio_words
from modrag_studio.ui.jobs.background import BackgroundJob, Task, error_text
from modrag_studio.ui.run.controller import RunRequest

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.run.run_side import RunSide

BASE = "(base)"


class VariantsController(QObject):
    """Owns the Variants menu, the switcher, the badges and the comparison job."""

    def __init__(self, window: StudioShell, run: RunSide) -> None:
        qt_window: QMainWindow = window  # type: ignore[assignment]
        super().__init__(qt_window)
        self.window, self.editor, self.canvas = qt_window, window.editor, window.canvas
        self.shell = window
        self.run_features = run
        self.active: str | None = None
        self.change_badges: dict[str, DiffBadge] = {}
        self.diff_badges: dict[str, DiffBadge] = {}
        self.comparison: dict[str, Any] | None = None
        self.dialog: SideBySideDialog | None = None
        self.answers_dialog: AnswerComparisonDialog | None = None
        self.grid_dialog: GridDialog | None = None
        self.form: VariantForm | None = None
        self.overlay = window.canvas.variant  # what the rows and Properties show
        self.overlay.set_param = self.set_variant_param
        self.job = BackgroundJob("variant-compare", self)  # one comparison at a time
        self.job.on("evalset_progress", self._evalset_progress)  # label, runs done, total
        menu = qt_window.menuBar().addMenu("V&ariants")
        self.menu = menu
        self.new_action = menu.addAction("&New Variant…", self.new_variant_dialog)
        self.edit_action = menu.addAction("&Edit Variant…", self.edit_variant_dialog)
        menu.addAction("&Delete Variant", self.delete_active)
        menu.addSeparator()
        menu.addAction("&Compare with Base", self.compare_with_base)
        menu.addAction("Compare on &Evaluation Set…", self.compare_on_evalset_dialog)
        menu.addAction("C&lear Comparison", self.clear_comparison)
        menu.addSeparator()
        menu.addAction("Open &Grid Results…", self.open_grid_dialog)
        self.switcher = QComboBox()
        self.switcher.setObjectName("variant_switcher")
        self.switcher.setToolTip("Variant shown on the canvas (changed params in purple)")
        window.run_toolbar.addSeparator()
        window.run_toolbar.addWidget(QLabel(" Variant: "))
        window.run_toolbar.addWidget(self.switcher)
        self.switcher.currentTextChanged.connect(self._switched)
        self.editor.subscribe(lambda _change: self.refresh())
        self.refresh()

    # --- variants --------------------------------------------------------------------------
    def document(self) -> GraphDocument:
        return self.editor.document()

    def refresh(self) -> None:
        """Re-list the variants and redraw the active one's changes."""
        names = variant_names(self.document())
        if self.active not in names and self.active is not None:
            self.active = None
            self.shell.show_variant(None)
        self.switcher.blockSignals(True)
        self.switcher.clear()
        self.switcher.addItems([BASE, *names])
        self.switcher.setCurrentText(self.active or BASE)
        self.switcher.blockSignals(False)
        self._draw_changes()

    def _show_values(self) -> None:
        """The canvas rows and the Properties panel show what the active variant runs."""
        spec = next((v for v in self.document().variants or [] if v.name == self.active), None)
        self.overlay.show(self.active, spec.params if spec is not None else None)
        self.edit_action.setEnabled(self.active is not None)

    def _switched(self, text: str) -> None:
        self.set_active(None if text in ("", BASE) else text)

    def set_active(self, name: str | None) -> None:
        self.active = name
        self.shell.show_variant(name)
        self.clear_comparison()
        self.switcher.blockSignals(True)
        self.switcher.setCurrentText(name or BASE)
        self.switcher.blockSignals(False)
        self._draw_changes()

    def applied(self) -> GraphDocument:
        """The graph the active variant runs (the base when none is active)."""
        doc = self.document()
        if self.active not in variant_names(doc):  # none, or another graph just opened
            return base_of(doc)
        return apply_variant(doc, self.active, self.editor.registry)

    def new_variant(self, name: str, changes: list[str]) -> VariantSpec:
        """Store a variant of the current graph (``node.param=value`` etc.) and show it."""
        specs = parse_variant_args([f"{name}:{c}" for c in changes if c.strip()] or [name],
                                   parse_value)
        spec = specs[name]
        doc = self.document()
        apply_variant(doc, spec, self.editor.registry)  # raises naming the bad change
        self.editor.replace(f"New variant {name}", with_variant(doc, spec))
        self.set_active(name)
        return spec

    def store_variant(self, spec: VariantSpec) -> None:
        """Save ``spec`` in the graph (one undo step) and show it; raises ModragError naming
        what cannot be applied (nothing changes then)."""
        doc = self.document()
        apply_variant(doc, spec, self.editor.registry)
        exists = spec.name in variant_names(doc)
        self.editor.replace(f"{'Edit' if exists else 'New'} variant {spec.name}",
                            with_variant(doc, spec))
        self.set_active(spec.name)

    def set_variant_param(self, node_id: str, param: str, value: Any) -> None:
        """Set ``node_id.param`` in the active variant (an edit on the canvas or in the
        Properties panel of a param the variant overrides); raises ParamRejected."""
        if self.active is None:
            raise ParamRejected(node_id, param, "no variant is active")
        doc = self.document()
        spec = get_variant(doc, self.active)
        node = doc.node(node_id)
        node_type = self.editor.registry.get(node.type)
        try:
            node_type.Params.model_validate({**node.params, **spec.params.get(node_id, {}),
                                             param: value})
        except ValidationError as exc:
            errors = exc.errors()
            mine = [e for e in errors if e["loc"] and e["loc"][0] == param] or errors
            raise ParamRejected(node_id, param, mine[0]["msg"]) from None
        params = {**spec.params, node_id: {**spec.params.get(node_id, {}), param: value}}
        self.store_variant(spec.model_copy(update={"params": params}))

    def delete_active(self) -> None:
        if self.active is None:
            return
        doc = self.document()
        kept = [v for v in doc.variants or [] if v.name != self.active]
        self.editor.replace(f"Delete variant {self.active}",
                            doc.model_copy(update={"variants": kept or None}))
        self.set_active(None)

    def new_variant_dialog(self) -> VariantForm:
        """The variant form, its first change on the selected node."""
        selected = self.canvas.selected_node_ids()
        return self._open_form(VariantForm(self.document(), self.editor.registry,
                                           self.store_variant,
                                           node_id=selected[0] if selected else None,
                                           parent=self.window))

    def edit_variant_dialog(self) -> VariantForm | None:
        """The variant form on the active variant's changes."""
        if self.active is None:
            self.window.statusBar().showMessage("Choose a variant to edit first.", 5000)
            return None
        doc = self.document()
        return self._open_form(VariantForm(doc, self.editor.registry, self.store_variant,
                                           existing=get_variant(doc, self.active),
                                           parent=self.window))

    def _open_form(self, form: VariantForm) -> VariantForm:
        if self.form is not None:
            self.form.close()
        self.form = form
        form.finished.connect(lambda *_: form.deleteLater())
        form.destroyed.connect(lambda *_: setattr(self, "form", None)
                               if self.form is form else None)
        form.open()
        return form

    def open_grid(self, path: str | Path) -> GridDialog:
        """Show a ``grid.json``; a double-clicked row becomes a variant of this graph."""
        grid = json.loads(Path(path).read_text(encoding="utf-8"))
        self.grid_dialog = GridDialog(grid, self._open_cell, self.window)
        self.grid_dialog.show()
        return self.grid_dialog

    def open_grid_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open grid results", "",
                                              "Grid results (grid.json);;JSON (*.json)")
        if path:
            try:
                self.open_grid(path)
            except (OSError, ValueError, KeyError) as exc:
                QMessageBox.warning(self.window, "Open grid results", f"{path}: {exc}")

    def _open_cell(self, name: str, changes: list[str]) -> None:
        try:
            self.new_variant(name, changes)
        except (ModragError, ValueError) as exc:
            QMessageBox.warning(self.window, "Open as variant", in_studio_words(exc))

    def _clear(self, badges: dict[str, DiffBadge]) -> None:
        for badge in badges.values():
            if badge.scene() is not None:
                badge.scene().removeItem(badge)
        badges.clear()

    def _draw_changes(self) -> None:
        self._clear(self.change_badges)
        self._show_values()
        if self.active is None:
            return
        try:
            diff = diff_graphs(base_of(self.document()), self.applied())
        except ModragError as exc:
            self.window.statusBar().showMessage(f"variant '{self.active}': {exc}", 8000)
            return
        for node_id in diff.changed:
            item = self.canvas.node_item(node_id)
            if item is not None:
                self.change_badges[node_id] = DiffBadge(
                    item, ", ".join(diff.changes_of(node_id)), "variant", above=False)

    # --- comparison ------------------------------------------------------------------------
    def executor(self) -> Executor:
        """The run controller's executor (one cache for runs and comparisons)."""
        return self.run_features.controller.executor

    def run_inputs(self) -> dict[str, str]:
        return self.run_features.run_bar.values()

    def compare_with_base(self, inputs: dict[str, str] | None = None) -> bool:
        """Run base and active variant on ``inputs`` (the run bar's by default) off-thread."""
        pair = self._variant_pair()
        if pair is None:
            return False
        doc_a, doc_b = pair
        inputs = dict(self.run_inputs() if inputs is None else inputs)
        if not self.guards_allow(doc_a, inputs, "Compare"):
            return False
        labels = ("base", self.active)
        executor = self.executor()

        def compute(task: Task) -> dict[str, Any]:
            result_a = executor.run(doc_a, inputs, cancel=task.cancel)
            result_b = executor.run(doc_b, inputs, cancel=task.cancel)
            return {"labels": labels, "ran_b": result_b.trace.ran(),
                    "nodes": diff_runs(doc_a, result_a, doc_b, result_b)}

        self.window.statusBar().showMessage(f"Comparing base and {self.active}…")
        self.job.start(compute, lambda payload, error: self._show_comparison(
            _or_error(payload, error)))  # an error: in the status bar, never lost
        return True

    def guards_allow(self, doc: GraphDocument, inputs: dict[str, str], label: str) -> bool:
        """Run's pre-run chain (the trust prompt) before a comparison runs the graph."""
        return self.run_features.controller.guards_allow(RunRequest(doc, dict(inputs),
                                                                    label=label))

    def _variant_pair(self) -> tuple[GraphDocument, GraphDocument] | None:
        """(base, active variant), or None with the reason in the status bar."""
        if self.active is None:
            self.window.statusBar().showMessage("Choose or create a variant first.", 5000)
            return None
        if self.job.busy:
            self.window.statusBar().showMessage("A comparison is still running.", 5000)
            return None
        try:
            return base_of(self.document()), self.applied()
        except ModragError as exc:
            self.window.statusBar().showMessage(in_studio_words(exc), 8000)
            return None

    def compare_on_evalset_dialog(self) -> None:
        if self.active is None:
            self.window.statusBar().showMessage("Choose or create a variant first.", 5000)
            return
        path, _ = QFileDialog.getOpenFileName(self.window, "Compare on an evaluation set", "",
                                              "Evaluation sets (*.jsonl)")
        if path:
            self.compare_on_evalset(path)

    def compare_on_evalset(self, path: str | Path,
                           inputs: dict[str, str] | None = None) -> bool:
        """Run base and the active variant on every question of the set ``path`` off-thread
        (one cache: the variant re-runs only what it changed) and show their answers."""
        from modrag_studio.evaluation.answer_eval import run_variants_on_evalset
        from modrag_studio.evaluation.compare import compare_reports, report_identity
        from modrag_studio.evaluation.evalset import EvalSetError, load_evalset

        pair = self._variant_pair()
        if pair is None:
            return False
        try:
            evalset = load_evalset(path)
        except EvalSetError as exc:
            QMessageBox.warning(self.window, "Compare on an evaluation set", str(exc))
            return False
        labels = ("base", self.active)
        sides = list(zip(labels, pair, strict=True))
        inputs = dict(self.run_inputs() if inputs is None else inputs)
        if not self.guards_allow(pair[0], inputs, "Compare on an evaluation set"):
            return False
        executor, total = self.executor(), 2 * len(evalset)
        if self.answers_dialog is not None:
            self.answers_dialog.close()
        self.answers_dialog = AnswerComparisonDialog(labels, Path(path).name, self.cancel,
                                                     self.window)
        self.answers_dialog.set_progress(labels[0], 0, total)
        self.answers_dialog.show()

        def compute(task: Task) -> dict[str, Any]:
            def progress(label: str, done: int, _n: int, _row: Any) -> None:
                task.report("evalset_progress", label,
                            done + (len(evalset) if label != labels[0] else 0), total)

            reports = run_variants_on_evalset(
                sides, evalset, executor=executor, extra_inputs=inputs, cancel=task.cancel,
                on_progress=progress)
            if task.cancel.cancelled:
                return {"cancelled": True}
            return compare_reports(
                reports[0], reports[1], identity_a=report_identity(labels[0], reports[0]),
                identity_b=report_identity(labels[1], reports[1]))

        self.job.start(compute, lambda payload, error: self._show_answer_comparison(
            _or_error(payload, error)))  # an error: in the dialog, never lost
        return True

    def cancel(self) -> None:
        self.job.cancel()

    def _evalset_progress(self, label: str, done: int, total: int) -> None:
        if self.answers_dialog is not None:
            self.answers_dialog.set_progress(label, done, total)

    def _show_answer_comparison(self, payload: dict[str, Any]) -> None:
        dialog = self.answers_dialog
        if dialog is None:
            return
        if "cancelled" in payload:
            dialog.finish("Cancelled: no comparison (both variants must answer every question).")
        elif "error" in payload:
            dialog.finish(f"The comparison failed: {payload['error']}")
        else:
            dialog.show_result(payload)
            flips = len(payload["flipped"])
            self.window.statusBar().showMessage(
                f"{payload['variants']['a']['name']} vs {payload['variants']['b']['name']}: "
                f"{flips} questions flipped.", 15000)

    def _show_comparison(self, payload: dict[str, Any]) -> None:
        self._clear(self.diff_badges)
        if "error" in payload:
            self.window.statusBar().showMessage(f"comparison failed: {payload['error']}", 10000)
            return
        self.comparison = payload
        changed = 0
        for node_id, entry in payload["nodes"].items():
            item = self.canvas.node_item(node_id)
            if item is None:
                continue
            kind = ("same" if entry["status"] == "same" else "changed"
                    if entry["status"] == "changed" else "missing")
            changed += kind == "changed"
            self.diff_badges[node_id] = DiffBadge(
                item, entry["badge"], kind,
                on_click=lambda n=node_id: self.open_node(n))
        self.window.statusBar().showMessage(
            f"{payload['labels'][0]} vs {payload['labels'][1]}: {changed} nodes differ; "
            f"{len(payload['ran_b'])} ran again for the variant. Click a badge to inspect.",
            15000)

    def clear_comparison(self) -> None:
        self._clear(self.diff_badges)
        self.comparison = None

    def open_node(self, node_id: str) -> SideBySideDialog | None:
        dialog = open_side_by_side(self.comparison, node_id, self.dialog, self.window)
        if dialog is not None:
            self.dialog = dialog
        return dialog


def _or_error(payload: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
    """A comparison's payload, or ``{"error": "Type: message"}`` when it failed."""
    return {"error": error_text(error)} if error is not None else payload or {}
