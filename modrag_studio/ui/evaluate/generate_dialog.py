"""Evaluation > Generate evaluation set…: questions from the corpus, reviewed before saving.

The generation (``evaluation/generation``) runs as a ``ui.jobs`` background job (a worker
thread with a cancel token that never touches a widget): a progress bar of kept
questions, the step it is on, Cancel. With a set to reword, its questions are put in other
words instead (single questions by synonyms, claims by translation there and back), each
checked as a new one is. The review table then lists every kept question:
untick to reject, edit the question or its facts in place, select a row to read its source
chunk(s). Save writes only the ticked rows, with the edits, and opens the set in the
evaluation-set panel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import EvalQuestion
from modrag_studio.ui.evaluate.graph_inputs import corpus_input_name, input_default
from modrag_studio.ui.evaluate.job_dialog import Guard, JobAction, JobDialog, labelled_row
from modrag_studio.ui.jobs.background import JobControls, Task, error_text

TYPES = ("single", "multi", "unanswerable", "paraphrase", "claim")
DEFAULT_ON = ("single", "multi", "unanswerable", "paraphrase")
COLUMNS = ("keep", "type", "lang", "question", "facts (a | b: alternatives; one per ;)",
           "source")


def _facts_text(question: EvalQuestion) -> str:
    return "; ".join(" | ".join(alts) for alts in question.expected_facts)


def _parse_facts(text: str) -> list[list[str]]:
    return [[a.strip() for a in part.split("|") if a.strip()]
            for part in text.split(";") if part.strip()]


class GenerateDialog(JobDialog):
    """The generation form, its progress, the review table and Save."""

    def __init__(self, doc: GraphDocument, *, inputs: dict[str, str], executor: Executor,
                 on_saved: Callable[[str], None], guard: Guard | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(doc, job="evalset-generate", inputs=inputs, executor=executor,
                         guard=guard, parent=parent)
        self.setWindowTitle(f"Generate an evaluation set from {doc.metadata.name or 'graph'}")
        self.resize(1000, 680)
        self.on_saved = on_saved
        self.result: Any = None
        self.questions: list[EvalQuestion] = []
        self.originals: dict[str, EvalQuestion] = {}  # the reworded set's rows, by id
        self.job.on("progress", self._on_progress)  # kept, wanted, note
        self.job.on("status", lambda text: self.status.setText(text))

        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.corpus_name = corpus_input_name(doc)
        self.corpus = QLineEdit(self.inputs.get(self.corpus_name or "", "")
                                or input_default(doc, self.corpus_name))
        form.addRow(f"Corpus ({self.corpus_name or 'no corpus input'})",
                    self.folder_row(self.corpus, "Folder…", "Corpus folder"))
        self.count = QSpinBox(minimum=1, maximum=1000, value=20)
        self.seed = QSpinBox(minimum=0, maximum=1_000_000, value=0)
        self.language = QComboBox()
        self.language.addItems(["auto", "en", "zh"])
        self.dense = QCheckBox("dense check")
        self.dense.setChecked(True)
        self.dense.setToolTip("Also rank each question with the graph's embedder (off: BM25 "
                              "alone; faster on a large corpus)")
        self.round_trip = QCheckBox("round trip")
        self.round_trip.setChecked(True)
        self.round_trip.setToolTip("Ask each question again of the passages a search finds and "
                                   "keep it only when the model's answer agrees (one more "
                                   "model call a question; off: more ambiguous questions)")
        form.addRow("Generate", labelled_row(("Questions", self.count), ("Seed", self.seed),
                                             ("Language", self.language),
                                             extra=(self.dense, self.round_trip)))
        types_row = QHBoxLayout()
        self.type_boxes = {t: QCheckBox(t) for t in TYPES}
        for name, box in self.type_boxes.items():
            box.setChecked(name in DEFAULT_ON)
            types_row.addWidget(box)
        self.type_boxes["claim"].setToolTip("A statement of a chunk's main point in other words "
                                            "(no fact phrase): for comparing retrievers")
        self.unanswerable_share = QSpinBox(minimum=0, maximum=100, value=25, suffix=" %")
        self.unanswerable_share.setToolTip("Unanswerable questions at most this share of the "
                                           "set; what other types cannot fill goes to single "
                                           "questions first")
        types_row.addWidget(QLabel("unanswerable at most"))
        types_row.addWidget(self.unanswerable_share)
        types_row.addStretch(1)
        form.addRow("Question types", types_row)
        self.model = QLineEdit("embedded")
        self.model.setToolTip("BACKEND[:MODEL]: embedded (the best installed), "
                              "ollama:qwen2.5:7b, openai:MODEL")
        form.addRow("Chat model", self.model)
        self.reword = QLineEdit()
        self.reword.setPlaceholderText("(none: write new questions) an evaluation set whose "
                                       "questions to put in other words")
        self.reword.setToolTip("Reword every question of this set instead of writing new ones: "
                               "single questions by synonyms, claims by translation into the "
                               "other language and back (two calls each; claims worded apart "
                               "from their chunk separate lexical from dense retrieval)")
        form.addRow("Reword", self.file_row(self.reword, "Set…", "Evaluation set to reword"))
        layout.addLayout(form)

        progress_row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setFormat("%v of %m questions kept")
        self.start_button = QPushButton("Generate")
        self.cancel_button = QPushButton("Cancel")
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        progress_row.addWidget(self.progress, 1)
        progress_row.addWidget(self.start_button)
        progress_row.addWidget(self.cancel_button)
        layout.addLayout(progress_row)
        self.status = QLabel("Set the corpus and the number of questions, then Generate.")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        split = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self.show_source)
        split.addWidget(self.table)
        self.source = QTextEdit()
        self.source.setReadOnly(True)
        self.source.setPlaceholderText("Select a question to read its source chunk(s).")
        split.addWidget(self.source)
        split.setSizes([380, 160])
        layout.addWidget(split, 1)
        save_row = QHBoxLayout()
        self.path = QLineEdit()
        self.path.setPlaceholderText("file to save the ticked questions to (.jsonl)")
        choose = QPushButton("Save as…")
        choose.clicked.connect(self._choose_path)
        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(self.save)
        self.save_button.setEnabled(False)
        save_row.addWidget(self.path, 1)
        save_row.addWidget(choose)
        save_row.addWidget(self.save_button)
        layout.addLayout(save_row)
        self.job.controls = JobControls(
            idle=[self.start_button, (self.save_button, lambda: bool(self.questions))],
            cancel=self.cancel_button)

    # the form ----------------------------------------------------------------------------
    def _choose_path(self) -> None:
        if self.browse_new_file(self.path, "Save evaluation set"):
            self.save()

    def config(self):
        from modrag_studio.commands.evalset_generate_command import llm_from_flag
        from modrag_studio.evaluation.generation import GenerationConfig

        types = [t for t, box in self.type_boxes.items() if box.isChecked()]
        return GenerationConfig(n=self.count.value(), llm=llm_from_flag(self.model.text()),
                                seed=self.seed.value(), types=types,
                                language=self.language.currentText(),
                                dense=self.dense.isChecked(),
                                round_trip=self.round_trip.isChecked(),
                                unanswerable_share=self.unanswerable_share.value() / 100)

    # running -----------------------------------------------------------------------------
    def start(self) -> bool:
        from modrag_studio.evaluation.generation import generate_evalset

        if self.busy:
            return False
        try:
            config = self.config()
            reword = self._reword_questions()
            if reword is not None:
                config.n = len(reword)  # every question of the set
            self.originals = {q.id: q for q in reword or []}
            config.check()
        except Exception as exc:
            return self.cannot_start(exc)
        inputs = dict(self.inputs)
        if self.corpus_name and self.corpus.text().strip():
            inputs[self.corpus_name] = self.corpus.text().strip()
        if not self.allowed(inputs):
            return False
        executor, doc = self.executor, self.doc
        self.progress.setRange(0, config.n)
        self.progress.setValue(0)
        self.table.setRowCount(0)
        self.result, self.questions = None, []

        def compute(task: Task) -> Any:
            return generate_evalset(
                doc, inputs, config, executor=executor, cancel=task.cancel,
                on_progress=task.reporter("progress"), on_status=task.reporter("status"),
                reword=reword)

        self.job.start(compute, self._on_finished)
        return True

    def _reword_questions(self) -> list[EvalQuestion] | None:
        """The questions of the set to reword (None: write new ones); a set that cannot be
        read or holds no question raises, naming the file."""
        from modrag_studio.evaluation.evalset import load_evalset

        path = self.reword.text().strip()
        if not path:
            return None
        questions = load_evalset(path).questions
        if not questions:
            raise ValueError(f"the set to reword, {path}, holds no question")
        return list(questions)

    def _on_progress(self, kept: int, wanted: int, note: str) -> None:
        self.progress.setRange(0, wanted)
        self.progress.setValue(kept)
        self.status.setText(note)

    def _on_finished(self, result: Any, failure: Exception | None) -> None:
        if result is None:
            error = error_text(failure)
            self.status.setText("Stopped: cancelled; nothing was saved." if "Cancel" in error
                                else f"The generation failed: {error}")
            return
        self.result, self.questions = result, list(result.questions)
        self._fill_table()
        self.save_button.setEnabled(bool(self.questions))
        report = result.report.to_dict() if hasattr(result.report, "to_dict") else {}
        rejected = report.get("rejected", {})
        told = ", ".join(f"{k} {v}" for k, v in rejected.items() if v) if isinstance(
            rejected, dict) else ""
        skipped = report.get("skipped") or {}
        calls = report.get("calls") or 0
        self.status.setText(f"{len(self.questions)} questions kept of "
                            f"{report.get('generated', len(result.candidates))} generated"
                            + (f"; rejected: {told}" if told else "")
                            + (f" ({len(self.questions) / calls:.2f} kept per model call)"
                               if calls else "")
                            + ("; chunks skipped before any model call: " + ", ".join(
                                f"{k} {v}" for k, v in skipped.items()) if skipped else "")
                            + ". Untick to reject, edit in place, then Save.")

    # review ------------------------------------------------------------------------------
    def _fill_table(self) -> None:
        self.table.setRowCount(len(self.questions))
        for row, question in enumerate(self.questions):
            kind = next((t.partition(":")[2] for t in question.tags if t.startswith("type:")),
                        "")
            keep = QTableWidgetItem("")
            keep.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled
                          | Qt.ItemFlag.ItemIsSelectable)
            keep.setCheckState(Qt.CheckState.Checked)
            cells = [keep, QTableWidgetItem(kind), QTableWidgetItem(question.language),
                     QTableWidgetItem(question.question),
                     QTableWidgetItem(_facts_text(question)),
                     QTableWidgetItem(", ".join(question.expected_evidence.specs))]
            for col, item in enumerate(cells):
                if col in (1, 2, 5):
                    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(3, 380)

    def reject_row(self, row: int) -> None:
        self.table.item(row, 0).setCheckState(Qt.CheckState.Unchecked)

    def reviewed(self) -> list[EvalQuestion]:
        """The ticked questions with the edits made in the table."""
        from dataclasses import replace

        kept = []
        for row, question in enumerate(self.questions):
            if self.table.item(row, 0).checkState() != Qt.CheckState.Checked:
                continue
            text = self.table.item(row, 3).text().strip() or question.question
            facts = _parse_facts(self.table.item(row, 4).text()) if question.answerable \
                else []
            kept.append(replace(question, question=text, expected_facts=facts))
        return kept

    def show_source(self) -> None:
        """The selected question's source chunk(s), as the corpus gave them."""
        row = self.table.currentRow()
        if self.result is None or not 0 <= row < len(self.questions):
            return
        question = self.questions[row]
        ids = [i.value for i in question.expected_evidence.items if i.kind == "chunk"]
        came_from = [t.removeprefix("reworded:") for t in question.tags
                     if t.startswith("reworded:")]
        parts = [f"<p><i>Reworded from {_html(qid)}:</i> "
                 f"{_html(self.originals[qid].question)}</p>"
                 for qid in came_from if qid in self.originals]
        for chunk_id in ids:
            chunk = self.result.chunks.get(chunk_id)
            text = chunk.text if chunk is not None else "(not in this corpus read)"
            parts.append(f"<p><b>{chunk_id}</b></p><p>{_html(text)}</p>")
        self.source.setHtml("".join(parts) or "No source chunk (an unanswerable question: "
                            "its key terms are in no chunk).")

    def save(self) -> bool:
        from modrag_studio.evaluation.evalset import save_evalset

        path = self.path.text().strip()
        if not path:
            self._choose_path()
            return False
        questions = self.reviewed()
        if not questions:
            self.status.setText("Nothing to save: every question is unticked.")
            return False
        save_evalset(path, questions)
        self.status.setText(f"Saved {len(questions)} questions to {path}.")
        self.on_saved(path)
        return True


def _html(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\n", "<br>"))


class EvalsetGeneration(JobAction):
    """Evaluation > Generate evaluation set…: the dialog on the graph that will run (the
    active variant) with the run bar's inputs; a saved set opens in the evaluation-set
    panel."""

    label = "Generate evaluation set…"

    def dialog_of(self, variants: Any) -> GenerateDialog:
        return GenerateDialog(variants.applied(), inputs=variants.run_inputs(),
                              executor=variants.executor(), on_saved=self.saved,
                              parent=self.window, guard=self.guard("Generate"))

    def saved(self, path: str) -> None:
        self.evaluation_sets.panel.load(path)
        self.evaluation_sets.show()
