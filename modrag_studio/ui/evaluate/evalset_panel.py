"""Evaluation sets in the studio: "Add to evaluation set" after a run, and a panel to browse,
edit and run a set (off the GUI thread, with a progress bar) with a per-question results
table; clicking a result re-runs that question on the canvas, which the node cache answers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import Answer, ScoredChunk
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.engine.evidence.expected import EvidenceSpecError, ExpectedEvidence
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.evaluation.evalset import (
    EvalQuestion,
    EvalSetError,
    append_question,
    load_evalset,
    next_question_id,
    question_from_dict,
    save_evalset,
)
from modrag_studio.evaluation.metric_registry import LATENCY, METRICS
from modrag_studio.ui.evaluate.wording import in_studio_words
from modrag_studio.ui.jobs.background import BackgroundJob, JobControls, Task, error_text
from modrag_studio.ui.run.controller import RunRequest

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.run.run_side import RunSide

_SHOWN = [*(METRICS.get(n) for n in METRICS.answer_columns("answer")), LATENCY]
RESULT_COLUMNS = ("id", *(m.name for m in _SHOWN), "answer")
RESULT_TITLES = ("id", *(m.label for m in _SHOWN), "answer")


class QuestionEditor(QWidget):
    """The fields of one question: text, facts (alternatives split by " | "), evidence specs,
    answerable, language and tags."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.question = QLineEdit()
        self.facts = QPlainTextEdit()
        self.facts.setPlaceholderText("one fact a line; alternatives: 500 hours | 500 h")
        self.evidence = QPlainTextEdit()
        self.evidence.setPlaceholderText("one a line: doc:ID, chunk:ID, text:PHRASE, re:PATTERN")
        for box in (self.facts, self.evidence):
            box.setMaximumHeight(90)
        self.answerable = QCheckBox("the corpus holds the answer")
        self.answerable.setChecked(True)
        self.language = QLineEdit()
        self.tags = QLineEdit()
        self.tags.setPlaceholderText("comma separated")
        form.addRow("Question", self.question)
        form.addRow("Expected facts", self.facts)
        form.addRow("Expected evidence", self.evidence)
        form.addRow("Answerable", self.answerable)
        form.addRow("Language", self.language)
        form.addRow("Tags", self.tags)

    def set_question(self, question: EvalQuestion | None) -> None:
        q = question or EvalQuestion(id="", question="")
        self.question.setText(q.question)
        self.facts.setPlainText("\n".join(" | ".join(alts) for alts in q.expected_facts))
        self.evidence.setPlainText("\n".join(q.expected_evidence.specs))
        self.answerable.setChecked(q.answerable)
        self.language.setText(q.language)
        self.tags.setText(", ".join(q.tags))

    def to_question(self, question_id: str, extra_evidence: list[str] = ()) -> EvalQuestion:
        """The question as typed; raises ``EvalSetError`` naming the bad field."""
        facts = [[a.strip() for a in line.split("|") if a.strip()]
                 for line in self.facts.toPlainText().splitlines() if line.strip()]
        specs = [s.strip() for s in self.evidence.toPlainText().splitlines() if s.strip()]
        try:
            evidence = ExpectedEvidence.parse([*specs, *extra_evidence])
        except EvidenceSpecError as exc:
            raise EvalSetError(f"field 'expected_evidence': {exc}") from None
        data: dict[str, Any] = {
            "id": question_id, "question": self.question.text(),
            "expected_evidence": evidence.to_dict(),
            "expected_facts": facts if self.answerable.isChecked() else [],
            "answerable": self.answerable.isChecked(), "language": self.language.text().strip(),
            "tags": [t.strip() for t in self.tags.text().split(",") if t.strip()],
        }
        return question_from_dict(data)


def run_evidence(result: RunResult | None, output: str = "answer") -> list[ScoredChunk]:
    """The chunks a run answered from (the answer's evidence, else the last ranked list)."""
    if result is None:
        return []
    answer = result.shared_outputs.get(output)
    if isinstance(answer, Answer) and answer.evidence:
        return list(answer.evidence)
    ranked: list[ScoredChunk] = []
    for outputs in result.node_outputs.values():
        for value in outputs.values():
            if isinstance(value, list) and value and all(isinstance(v, ScoredChunk)
                                                         for v in value):
                ranked = value
    return list(ranked)


class AddToEvalSetDialog(QDialog):
    """Turn the question just run into a test case: tick the chunks that should be cited."""

    def __init__(self, question: str, evidence: list[ScoredChunk], set_path: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add to evaluation set")
        self.resize(720, 560)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.path = QLineEdit(set_path)
        self.path.setPlaceholderText("evaluation set file (.jsonl)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row.addWidget(QLabel("Set"))
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        layout.addLayout(row)
        self.editor = QuestionEditor()
        self.editor.question.setText(question)
        layout.addWidget(self.editor)
        layout.addWidget(QLabel("Chunks of this run (tick those the answer must rest on):"))
        self.chunks = QListWidget()
        for scored in evidence:
            text = " ".join(scored.chunk.text.split())[:140]
            item = QListWidgetItem(f"{scored.chunk_id}  ({scored.doc_id})  {text}")
            item.setData(Qt.ItemDataRole.UserRole, scored.chunk_id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.chunks.addItem(item)
        layout.addWidget(self.chunks, 1)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #b00020")
        self.error.setWordWrap(True)
        layout.addWidget(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.saved: EvalQuestion | None = None

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Evaluation set", self.path.text(),
                                              "Evaluation sets (*.jsonl)")
        if path:
            self.path.setText(path)

    def ticked_chunk_ids(self) -> list[str]:
        return [self.chunks.item(i).data(Qt.ItemDataRole.UserRole)
                for i in range(self.chunks.count())
                if self.chunks.item(i).checkState() == Qt.CheckState.Checked]

    def save(self) -> bool:
        """Append the question to the set file; errors are shown in the dialog."""
        path = self.path.text().strip()
        if not path:
            self.error.setText("Choose the evaluation set file first.")
            return False
        try:
            existing = (load_evalset(path).questions
                        if Path(path).is_file() and Path(path).stat().st_size else [])
            question = self.editor.to_question(
                next_question_id(existing), [f"chunk:{c}" for c in self.ticked_chunk_ids()])
            append_question(path, question)
        except EvalSetError as exc:
            self.error.setText(str(exc))
            return False
        self.saved = question
        self.accept()
        return True


class EvalSetPanel(QWidget):
    """Browse, edit and run an evaluation set against the graph on the canvas."""

    def __init__(self, window: StudioShell | None = None, run: RunSide | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.run_features = run
        self.path = ""
        self.questions: list[EvalQuestion] = []
        self.report = None
        self.job = BackgroundJob("evalset-run", self)
        self.job.on("progress", self._on_progress)  # done, total, QuestionResult
        layout = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.title = QLabel("No evaluation set")
        self.open_button = QPushButton("Open…")
        self.save_button = QPushButton("Save")
        self.new_button = QPushButton("New question")
        self.run_button = QPushButton("Run set")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.parallel = QSpinBox()
        self.parallel.setRange(1, 8)
        self.parallel.setPrefix("at once: ")
        self.parallel.setToolTip(
            "Questions asked at once. The embedded model decodes their answers in one batch "
            "(faster on a CPU), but an answer may then differ from the one-at-a-time run's.")
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        for widget in (self.title, self.open_button, self.save_button, self.new_button,
                       self.run_button, self.parallel, self.cancel_button):
            bar.addWidget(widget)
        bar.addWidget(self.progress, 1)
        layout.addLayout(bar)
        self.tabs = QTabWidget()
        split = QSplitter(Qt.Orientation.Horizontal)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["id", "question", "answerable", "facts"])
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.editor = QuestionEditor()
        self.apply_button = QPushButton("Apply changes")
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.editor)
        right_layout.addWidget(self.apply_button)
        self.results = QTableWidget(0, len(RESULT_COLUMNS))
        self.results.setHorizontalHeaderLabels(list(RESULT_TITLES))
        self.results.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.results.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.results.horizontalHeader().setStretchLastSection(True)
        self.results.setToolTip("Click a question to open its run on the canvas")
        split.addWidget(self.table)
        split.addWidget(right)
        split.setSizes([640, 520])
        self.tabs.addTab(split, "Questions")
        self.tabs.addTab(self.results, "Results")
        layout.addWidget(self.tabs, 1)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.open_button.clicked.connect(self.open_dialog)
        self.save_button.clicked.connect(self.save)
        self.new_button.clicked.connect(self.new_question)
        self.run_button.clicked.connect(lambda: self.run())
        self.cancel_button.clicked.connect(self.cancel)
        self.job.controls = JobControls(idle=[self.run_button, self.parallel],
                                        cancel=self.cancel_button)
        self.apply_button.clicked.connect(self.apply_edit)
        self.table.itemSelectionChanged.connect(self._show_selected)
        self.results.cellClicked.connect(lambda row, _col: self.open_result(row))

    # the set ------------------------------------------------------------------------------
    def load(self, path: str | Path) -> None:
        evalset = load_evalset(path)
        self.path, self.questions = str(path), evalset.questions
        self._fill_table()

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open evaluation set", "",
                                              "Evaluation sets (*.jsonl)")
        if path:
            try:
                self.load(path)
            except EvalSetError as exc:
                self.summary.setText(str(exc))

    def save(self) -> None:
        if self.path:
            save_evalset(self.path, self.questions)
            self.summary.setText(f"Saved {len(self.questions)} questions to {self.path}")

    def new_question(self) -> None:
        question = EvalQuestion(id=next_question_id(self.questions), question="New question")
        self.questions.append(question)
        self._fill_table()
        self.table.selectRow(len(self.questions) - 1)

    def apply_edit(self) -> bool:
        row = self.table.currentRow()
        if row < 0:
            return False
        try:
            self.questions[row] = self.editor.to_question(self.questions[row].id)
        except EvalSetError as exc:
            self.summary.setText(str(exc))
            return False
        self._fill_table()
        self.table.selectRow(row)
        return True

    def _fill_table(self) -> None:
        name = Path(self.path).name if self.path else "unsaved set"
        self.title.setText(f"{name}: {len(self.questions)} questions")
        self.table.setRowCount(len(self.questions))
        for row, q in enumerate(self.questions):
            facts = "; ".join(" | ".join(alts) for alts in q.expected_facts)
            for col, text in enumerate((q.id, q.question, "yes" if q.answerable else "no",
                                        facts)):
                self.table.setItem(row, col, QTableWidgetItem(text))
        self.table.resizeColumnToContents(0)
        self.table.resizeColumnToContents(2)
        self.table.setColumnWidth(1, 320)

    def _show_selected(self) -> None:
        row = self.table.currentRow()
        self.editor.set_question(self.questions[row] if 0 <= row < len(self.questions)
                                 else None)

    # running ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.job.busy

    def run(self, executor: Executor | None = None) -> bool:
        """Run the set on the canvas graph in a worker thread."""
        if self.busy or not self.questions or self.window is None:
            return False
        from modrag_studio.evaluation.answer_eval import evaluate_answers
        from modrag_studio.evaluation.evalset import EvalSet

        doc = self.run_features.document() if self.run_features is not None else \
            self.window.editor.document()  # the active variant, as Run runs it
        evalset = EvalSet(self.path or "<studio>", list(self.questions))
        features = self.run_features
        extra = dict(features.run_bar.values()) if features is not None else {}
        if features is not None and not features.controller.guards_allow(
                RunRequest(doc, dict(extra), label="Run set")):
            return False  # the trust prompt was declined, as for Run
        if executor is None:  # the run controller's: one warm cache for runs and evaluations
            executor = (features.controller.executor if features is not None
                        else Executor(self.window.registry, NodeCache(cache_home())))
        parallel = self.parallel.value()
        self.results.setRowCount(0)
        self.tabs.setCurrentIndex(1)
        self.progress.setRange(0, len(self.questions))
        self.progress.setValue(0)

        def compute(task: Task) -> Any:
            query = _query_input(doc)
            inputs = {k: v for k, v in extra.items() if k != query}
            return evaluate_answers(doc, evalset, executor=executor, cancel=task.cancel,
                                    query_input=query, extra_inputs=inputs, parallel=parallel,
                                    on_progress=task.reporter("progress"))

        self.job.start(compute, self._on_finished)  # a failure: shown in the panel
        return True

    def cancel(self) -> None:
        self.job.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        return self.job.wait(timeout)

    def clear_results(self) -> None:
        had = self.report is not None or self.results.rowCount() > 0
        self.report = None
        self.results.setRowCount(0)
        self.progress.reset()
        self.summary.setText("Another graph is open: Run set to score it." if had else "")
        self.tabs.setCurrentIndex(0)

    def _on_progress(self, done: int, total: int, row: Any) -> None:
        self.progress.setValue(done)
        n = self.results.rowCount()
        self.results.insertRow(n)
        values = {"id": row.id, "answer": " ".join(row.answer.split()) or row.error,
                  **row.metrics}
        for col, name in enumerate(RESULT_COLUMNS):
            value = values.get(name)
            text = "-" if value is None else value if isinstance(value, str) else f"{value:.2f}"
            item = QTableWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, row.id)
            self.results.setItem(n, col, item)
        self.results.resizeColumnsToContents()

    def _on_finished(self, report: Any, failure: Exception | None) -> None:
        self.report = report
        if report is None:
            self.summary.setText(f"The run failed: {in_studio_words(error_text(failure))}")
            return
        answers = report.answers_summary()
        self.summary.setText("  ".join(f"{k} {'-' if v is None else f'{v:.3f}'}"
                                       for k, v in answers.items() if not k.startswith("mean_"))
                             + f"   ({len(report.results)} questions, {report.seconds:.1f} s)")

    def open_result(self, row: int) -> bool:
        """Open a scored question's run on the canvas (re-run with its question: cached)."""
        item = self.results.item(row, 0)
        features = self.run_features
        if item is None or features is None or self.window is None:
            return False
        question = next((q for q in self.questions if q.id == item.data(Qt.ItemDataRole.UserRole)),
                        None)
        if question is None:
            return False
        query = _query_input(self.window.editor.document())
        features.run_bar.set_values({**features.run_bar.values(), query: question.question})
        return bool(features.run())


def _query_input(doc) -> str:
    from modrag_studio.evaluation.runner import pick_inputs

    return pick_inputs(doc, None, None)[0]


def add_last_run_dialog(window: QMainWindow, panel: EvalSetPanel) -> AddToEvalSetDialog | None:
    """The "Add to evaluation set" dialog for the last run of ``window`` (None before a run)."""
    features = panel.run_features
    result = features.controller.last_result if features is not None else None
    if result is None:
        window.statusBar().showMessage("Run the graph first, then add its question.", 5000)
        return None
    doc = window.editor.document()
    question = str(result.trace.inputs.get(_query_input(doc), ""))
    dialog = AddToEvalSetDialog(question, run_evidence(result), panel.path, window)
    dialog.accepted.connect(lambda: panel.load(dialog.path.text().strip()))
    return dialog


class EvaluationSets:
    """The evaluation-set dock (tabbed with the problems panel) and the Evaluation menu."""

    def __init__(self, window: StudioShell, run: RunSide) -> None:
        qt_window: QMainWindow = window  # type: ignore[assignment]
        self.window = qt_window
        self.panel = panel = EvalSetPanel(window, run)
        self.dock = dock = QDockWidget("Evaluation set", qt_window)
        dock.setObjectName("dock_evaluation_set")
        room = QScrollArea()  # its buttons, tables and editor scroll in a short window
        room.setWidgetResizable(True)  # rather than growing the window past the screen
        room.setFrameShape(QScrollArea.Shape.NoFrame)
        room.setWidget(panel)
        dock.setWidget(room)
        qt_window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        qt_window.tabifyDockWidget(window.docks["problems"], dock)
        dock.hide()
        self.menu = menu = qt_window.menuBar().addMenu("E&valuation")
        menu.addAction("Add to evaluation set…", self.add_last_run)
        menu.addAction("Evaluation set panel", self.show)
        menu.addAction("Open evaluation set…", lambda: (self.show(), panel.open_dialog()))
        window.editor.subscribe(self._on_change)

    def _on_change(self, change: Any) -> None:
        """Another graph opened: the set stays (it can be run on this graph too), the
        results of the other graph's run go."""
        if getattr(change, "kind", "") == "reset" and not self.panel.busy:
            self.panel.clear_results()

    def add_last_run(self) -> None:
        dialog = add_last_run_dialog(self.window, self.panel)
        if dialog is not None:
            dialog.open()

    def show(self) -> None:
        self.dock.show()
        self.dock.raise_()
        self.window.resizeDocks([self.dock], [330], Qt.Orientation.Vertical)
