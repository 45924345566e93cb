"""Evaluation > Tune…: search changes to the selected nodes on an evaluation set.

The space table lists what the selected nodes can change (numbers, choices, swappable
types, bypass), with values to start from; ticked rows form the space. Before Start, the
plan line says what the chosen set can show (the gain it finds, the questions a given gain
needs, and the method: a held-out test, or cross-validation on a small set). The tune runs
as a ``ui.jobs`` background job (a worker thread with a cancel token that never touches a
widget), the trial table fills as trials finish, and the test of the choice on questions
its search never saw ends it. "Apply as variant" stores the winner as a variant of the
graph (one undo step; the base is never changed), only when that test found it better.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.commands.common import parse_value
from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.metric_registry import METRICS as METRIC_REGISTRY
from modrag_studio.evaluation.tuning.power import (
    DEFAULT_FOLDS,
    DEFAULT_REPEATS,
    DEFAULT_SPREAD,
    Plan,
    plan,
)
from modrag_studio.ui.evaluate.graph_inputs import input_default
from modrag_studio.ui.evaluate.job_dialog import (
    Guard,
    JobAction,
    JobDialog,
    free_variant_name,
    labelled_row,
)
from modrag_studio.ui.jobs.background import Task, error_text

#: The metrics a tune can improve: the registry's headline ones (Hit at the default k, 10).
METRICS = tuple(METRIC_REGISTRY.headline(10))
TRIAL_COLUMNS = ("#", "score", "seconds", "settings")


METHOD_LABELS = {"auto": "Auto (cross-validation on a small set)", "held-out": "Held-out",
                 "cross-validation": "Cross-validation"}


def start_nodes(doc: GraphDocument, selected: list[str], output: str) -> list[str]:
    """The nodes whose space is offered: the selection, else everything upstream of the
    tuned output (graph inputs and outputs left out)."""
    if selected:
        return selected
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import SUBGRAPH_TYPE
    from modrag_studio.engine.core.graph_io import role_of
    from modrag_studio.engine.core.topology import Topology

    node_id = output.partition(".")[0]
    if node_id not in doc.node_ids():
        return []
    chosen = Topology.of(doc).upstream(node_id) | {node_id}
    registry = default_registry()
    return [n.id for n in doc.nodes if n.id in chosen and n.type != SUBGRAPH_TYPE
            and role_of(n.type, registry) is None]


class TuneDialog(JobDialog):
    """The form, the space table, the live trial table and the held-out verdict."""

    def __init__(self, doc: GraphDocument, registry: NodeRegistry, *, selected: list[str],
                 evalset_path: str, inputs: dict[str, str], executor: Executor,
                 on_apply: Callable[[VariantSpec], None], guard: Guard | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(doc, job="tune", inputs=inputs, executor=executor, guard=guard,
                         parent=parent)
        self.setWindowTitle(f"Tune {doc.metadata.name or 'graph'}")
        self.resize(900, 640)
        self.registry, self.selected, self.on_apply = registry, selected, on_apply
        self.result: Any = None
        self.job.on("trial", self._on_trial)  # Trial, done, total
        self.job.on("fold", self._on_fold)  # cross-validation folds done, total
        self.suggestions: list[Any] = []  # evaluation.tuning.suggest.Suggestion

        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.evalset = QLineEdit(evalset_path)
        self.evalset.setPlaceholderText("evaluation set (.jsonl) with expected evidence")
        form.addRow("Evaluation set", self.file_row(self.evalset, "Browse…", "Evaluation set"))
        from modrag_studio.evaluation.compare import ranked_outputs

        self.output = QComboBox()
        self.output.addItems(ranked_outputs(doc, registry))
        self.output.currentTextChanged.connect(lambda _t: self._fill_space())
        form.addRow("Tuned output", self.output)
        self.metric_box = QComboBox()
        self.metric_box.addItems(METRICS)
        form.addRow("Metric", self.metric_box)
        self.budget = QSpinBox(minimum=1, maximum=500, value=12)
        self.held_out = QDoubleSpinBox(minimum=0.1, maximum=0.9, singleStep=0.05, value=0.3)
        self.seed = QSpinBox(minimum=0, maximum=1_000_000, value=0)
        form.addRow("Search", labelled_row(("Budget", self.budget),
                                           ("Held-out share", self.held_out), ("Seed", self.seed)))
        self.method = QComboBox()
        for key, label in METHOD_LABELS.items():
            self.method.addItem(label, key)
        self.folds = QSpinBox(minimum=2, maximum=20, value=DEFAULT_FOLDS)
        self.repeats = QSpinBox(minimum=1, maximum=20, value=DEFAULT_REPEATS)
        self.effect = QDoubleSpinBox(minimum=0.005, maximum=0.5, singleStep=0.01,
                                     decimals=3, value=0.05)
        self.spread = QDoubleSpinBox(minimum=0.01, maximum=1.0, singleStep=0.01, decimals=3,
                                     value=DEFAULT_SPREAD)
        self.spread.setToolTip("Standard deviation of the per-question differences; a "
                               "finished tune sets it to the one it measured")
        form.addRow("Test", labelled_row(("Method", self.method), ("Folds", self.folds),
                                         ("Repeats", self.repeats), ("Gain to find", self.effect),
                                         ("Spread", self.spread)))
        layout.addLayout(form)
        self.plan_label = QLabel()
        self.plan_label.setWordWrap(True)
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.plan_label)
        self._questions: tuple[str, int | None] = ("", None)  # (set path, its count)
        for signal in (self.evalset.textChanged, self.held_out.valueChanged,
                       self.method.currentIndexChanged, self.folds.valueChanged,
                       self.repeats.valueChanged, self.effect.valueChanged,
                       self.spread.valueChanged, self.metric_box.currentTextChanged):
            signal.connect(lambda *_a: self.update_plan())

        layout.addWidget(QLabel("Space: tick what to try; edit the values (comma-separated)"))
        self.space = QTableWidget(0, 3)
        self.space.setHorizontalHeaderLabels(["dimension", "base", "values to try"])
        self.space.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.space, 2)
        self.trials = QTableWidget(0, len(TRIAL_COLUMNS))
        self.trials.setHorizontalHeaderLabels(list(TRIAL_COLUMNS))
        self.trials.horizontalHeader().setStretchLastSection(True)
        self.trials.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout.addWidget(self.trials, 3)
        layout.addWidget(self.status_line("Choose the space, then Start."))
        self.add_variant_buttons(layout)
        self._fill_space()
        self.update_plan()

    # the space ---------------------------------------------------------------------------
    def _fill_space(self) -> None:
        from modrag_studio.evaluation.tuning.suggest import suggest

        nodes = start_nodes(self.doc, self.selected, self.output.currentText())
        self.suggestions = suggest(self.doc, nodes, self.registry)
        self.space.setRowCount(len(self.suggestions))
        for row, item in enumerate(self.suggestions):
            name = QTableWidgetItem(item.name)
            name.setFlags(name.flags() & ~Qt.ItemFlag.ItemIsEditable
                          | Qt.ItemFlag.ItemIsUserCheckable)
            name.setCheckState(Qt.CheckState.Unchecked)
            current = QTableWidgetItem(item.current)
            current.setFlags(current.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.space.setItem(row, 0, name)
            self.space.setItem(row, 1, current)
            self.space.setItem(row, 2, QTableWidgetItem(item.values))
        self.space.resizeColumnsToContents()

    def check(self, name: str, values: str | None = None) -> None:
        """Tick the dimension ``name`` (and set its values): the table as a user would."""
        for row in range(self.space.rowCount()):
            if self.space.item(row, 0).text() == name:
                self.space.item(row, 0).setCheckState(Qt.CheckState.Checked)
                if values is not None:
                    self.space.item(row, 2).setText(values)
                return
        raise KeyError(name)

    def space_specs(self) -> list[str]:
        return [f"{self.space.item(r, 0).text()}={self.space.item(r, 2).text().strip()}"
                for r in range(self.space.rowCount())
                if self.space.item(r, 0).checkState() == Qt.CheckState.Checked]

    # the plan ----------------------------------------------------------------------------
    def question_count(self) -> int | None:
        """The answerable questions with expected evidence in the chosen set (None: the
        set cannot be read); read again only when the path changes."""
        from modrag_studio.evaluation.evalset import load_evalset
        from modrag_studio.evaluation.tuning import dataset_from_evalset

        path = self.evalset.text().strip()
        if path != self._questions[0]:
            try:
                count = len(dataset_from_evalset(load_evalset(path), ".").queries)
            except Exception:  # no set yet, or not one: the plan says what a gain needs
                count = None
            self._questions = (path, count)
        return self._questions[1]

    def plan(self) -> Plan:
        return plan(self.question_count() or 0, effect=self.effect.value(),
                    spread=self.spread.value(), held_out_fraction=self.held_out.value(),
                    method=self.method.currentData(), folds=self.folds.value(),
                    repeats=self.repeats.value(), metric=self.metric_box.currentText())

    def update_plan(self) -> None:
        """Say, before Start, what the set can show and how many questions a gain needs."""
        estimate = self.plan()
        if self.question_count() is None:
            self.plan_label.setText(f"{estimate.need_text()} Choose an evaluation set to "
                                    "see what it can show.")
        else:
            self.plan_label.setText(estimate.text())

    # running -----------------------------------------------------------------------------
    def start(self) -> bool:
        from modrag_studio.evaluation.evalset import load_evalset
        from modrag_studio.evaluation.runner import pick_inputs
        from modrag_studio.evaluation.tuning import (
            dataset_from_evalset,
            parse_space,
            split_questions,
            tune,
        )
        from modrag_studio.evaluation.tuning.crossval import check_cv

        if self.busy:
            return False
        try:
            space = parse_space(self.space_specs(), self.doc, self.registry, parse_value)
            query, corpus_name = pick_inputs(self.doc, None, None, self.registry)
            corpus = self.inputs.get(corpus_name or "", "") or input_default(self.doc,
                                                                          corpus_name)
            dataset = dataset_from_evalset(load_evalset(self.evalset.text().strip()),
                                           corpus or ".")
            estimate = self.plan()
            count = len(dataset.evaluated_query_ids())
            if estimate.method == "held-out":
                split_questions(dataset.evaluated_query_ids(), self.held_out.value(), 0)
            else:
                check_cv(count, self.folds.value(), self.repeats.value())
        except Exception as exc:  # a bad space or set
            return self.cannot_start(exc)
        if not self.allowed(self.inputs):
            return False
        doc, output, metric = self.doc, self.output.currentText(), self.metric_box.currentText()
        budget, held, seed = self.budget.value(), self.held_out.value(), self.seed.value()
        method, folds, repeats = estimate.method, self.folds.value(), self.repeats.value()
        extra = {k: v for k, v in self.inputs.items() if k != query}
        executor = self.executor
        self.trials.setRowCount(0)
        self.result = None
        how = ("cross-validated" if method == "cross-validation"
               else "tested on held-out questions")
        self.status.setText(f"Tuning {output} by {metric} over {space.size} combination(s) "
                            f"of {', '.join(space.names())}, {how}…")

        def compute(task: Task) -> Any:
            return tune(doc, dataset, output, space, executor=executor, budget=budget,
                        metric=metric, seed=seed, held_out=held, method=method, folds=folds,
                        repeats=repeats, cancel=task.cancel, on_trial=task.reporter("trial"),
                        on_fold=task.reporter("fold"), query_input=query, extra_inputs=extra)

        self.job.start(compute, self._on_finished)
        return True

    def _on_trial(self, trial: Any, done: int, total: int) -> None:
        row = self.trials.rowCount()
        self.trials.insertRow(row)
        settings = ", ".join(f"{k}={v}" for k, v in trial.settings.items()) or "base"
        score = "-" if trial.score is None else f"{trial.score:.4f}"
        for col, text in enumerate((str(trial.number), score, f"{trial.seconds:.1f}",
                                    settings + (f"  ({trial.error})" if trial.error else ""))):
            self.trials.setItem(row, col, QTableWidgetItem(text))
        self.trials.resizeColumnsToContents()
        self.status.setText(f"{done}/{total} trials; last: {settings} {score}")

    def _on_fold(self, done: int, total: int) -> None:
        self.status.setText(f"Cross-validating the search: {done}/{total} folds (each "
                            "searched on the other questions, tested on its own)")

    def _on_finished(self, result: Any, failure: Exception | None) -> None:
        self.result = result
        if result is None:
            error = error_text(failure)
            self.status.setText("Stopped: cancelled." if "Cancel" in error
                                else f"The tune failed: {error}")
            return
        self.status.setText(summary(result))
        self.apply_button.setEnabled(result.better)  # never a loss, nor a tie kept as a gain
        measured = result.test.get("spread")
        if measured:
            self.spread.setValue(measured)  # the plan now speaks of this set's own spread
        if result.best is not None:
            self.trials.selectRow(result.best.number)

    def apply(self) -> VariantSpec | None:
        """Store the best trial as a variant (with the figures of its test), only when that
        test found it significantly better."""
        from modrag_studio.evaluation.tuning import winner_variant

        if self.result is None or self.result.best is None or not self.result.better:
            return None
        name = free_variant_name(self.doc, "tuned")
        variant = winner_variant(self.doc, self.result, name, self.registry)
        self.stored(variant, self.on_apply)
        return variant



def summary(result: Any) -> str:
    """The verdict in one paragraph, naming the method of the test."""
    if result.best is None:
        return (f"No trial beat the base on the {result.questions} tuning questions "
                f"(base {result.metric} {result.base.score:.4f}); nothing to apply.")
    stats = result.test["metrics"][result.metric]
    lo, hi = stats["ci95"]
    settings = ", ".join(f"{k}={v}" for k, v in result.best.settings.items())
    word = {"better": "significantly better",
            "worse": "significantly worse: keep the base"}.get(
        result.verdict, "not significantly different (p >= 0.05): keep the base")
    figures = (f"{result.metric} {stats['a']:.4f} -> {stats['b']:.4f}, delta "
               f"{stats['delta']:+.4f}, CI95 [{lo:+.4f}, {hi:+.4f}], p = "
               f"{stats['p_value']:.4f}: {word}.")
    if result.method == "cross-validation":
        test = result.test
        return (f"Best on all {result.questions} questions: trial {result.best.number} "
                f"({settings}). Method: cross-validation ({test['folds']} folds x "
                f"{test['repeats']} repeats; each fold searched without its questions, "
                f"corrected resampled t-test). Out of fold: {figures}")
    return (f"Best on {result.questions} tuning questions: trial {result.best.number} "
            f"({settings}). Method: held-out test. On {stats['n']} held-out questions: "
            f"{figures}")


class Tuning(JobAction):
    """Evaluation > Tune…: opens the dialog on the base graph with the canvas selection,
    the evaluation-set panel's file and the run bar's inputs; the winner is stored through
    the Variants controller (undoable)."""

    label = "Tune…"
    variant_kind = "Tuned"

    def dialog_of(self, variants: Any) -> TuneDialog:
        doc = variants.document()
        selected = [n for n in self.window.canvas.selected_node_ids() if n in doc.node_ids()]
        return TuneDialog(doc, variants.editor.registry, selected=selected,
                          evalset_path=self.evaluation_sets.panel.path or "",
                          inputs=variants.run_inputs(), executor=variants.executor(),
                          on_apply=self.store, parent=self.window, guard=self.guard("Tune"))
