"""Evaluation > Score this folder…: the first-run scorecard in one action.

The form names the folder (the graph's corpus input), how many questions to generate (or a
set to use instead), the seed and the model writing the questions. Start runs
``evaluation.scorecard.build_scorecard`` as a ``ui.jobs`` background job (a worker thread
with a cancel token that never touches a widget): questions generated and verified, the graph run on
them, the evidence followed, one change tuned. The page (``reporting.scorecard_page``) is
saved as one self-contained HTML file and shown here; "Apply as variant" stores the suggested
change as a variant of the graph (one undo step; the base is never changed), only when the
tuner found it significantly better.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QFormLayout,
    QLineEdit,
    QProgressBar,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.run.executor import Executor
from modrag_studio.ui.evaluate.graph_inputs import corpus_input_name, input_default
from modrag_studio.ui.evaluate.job_dialog import (
    Guard,
    JobAction,
    JobDialog,
    free_variant_name,
    labelled_row,
    with_button,
)
from modrag_studio.ui.evaluate.wording import in_studio_words
from modrag_studio.ui.jobs.background import Task, error_text

STAGES = {"questions": "questions kept", "answers": "questions answered"}


def qt_html(page: str) -> str:
    """The page as Qt's rich text shows it: Qt reads no ``var()``, no compound class selector
    and no navigation bar, so the variables take their values and the classes that carry
    colour get them inline."""
    head, _, body = page.partition("</style>")
    values = dict(re.findall(r"--([\w-]+):([^;}]+)", head))

    def colour(name: str) -> str:
        return values.get(name, "inherit")

    styles = {f"badge {tone}": f"background-color:{colour(tone + '-bg')};color:{colour(tone)};"
              "font-weight:600" for tone in ("good", "bad", "warn", "info")}
    styles["badge muted"] = f"background-color:{colour('wash')};color:{colour('muted')}"
    styles.update({f"tile {tone}": f"color:{colour(tone)}" for tone in ("good", "bad", "warn")})
    styles.update({name: f"color:{colour('muted')}" for name in ("lead", "label", "muted", "a")})
    styles.update({"value": "font-size:20pt;font-weight:700", "q": "font-weight:600",
                   "lost": f"background-color:{colour('bad-bg')}",
                   "bar-reached": f"background-color:{colour('good')}",
                   "bar-lost": f"background-color:{colour('bad')}",
                   "bar-rest": f"background-color:{colour('line')}"})
    body = re.sub(r"<nav>.*?</nav>", "", body, flags=re.S).replace("<table>",
                                                                   '<table width="100%">')
    body = body.replace('<table class="tiles">', '<table class="tiles" width="100%" '
                        'cellspacing="10">')
    body = re.sub(r'class="([^"]+)"', lambda m: f'{m[0]} style="{styles[m[1]]}"'
                  if m[1] in styles else m[0], body)
    return re.sub(r"var\(--([\w-]+)\)", lambda m: colour(m[1]), head) + "</style>" + body


class ScorecardDialog(JobDialog):
    """The form, the progress, the page and Apply as variant."""

    def __init__(self, doc: GraphDocument, *, inputs: dict[str, str], executor: Executor,
                 on_apply: Callable[[VariantSpec], None], page_path: str = "",
                 evalset_path: str = "", guard: Guard | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(doc, job="scorecard", inputs=inputs, executor=executor, guard=guard,
                         parent=parent)
        self.setWindowTitle(f"Score a folder with {doc.metadata.name or 'the graph'}")
        self.resize(1000, 780)
        self.on_apply = on_apply
        self.card: Any = None  # evaluation.scorecard.Scorecard of the last run
        self.job.on("status", lambda text: self.status.setText(text))
        self.job.on("progress", self._on_progress)  # stage, done, total

        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.corpus_name = corpus_input_name(doc)
        self.corpus = QLineEdit(self.inputs.get(self.corpus_name or "", "")
                                or input_default(doc, self.corpus_name))
        form.addRow(f"Folder ({self.corpus_name or 'no corpus input'})",
                    self.folder_row(self.corpus, "Folder…", "Folder to score"))
        self.count = QSpinBox(minimum=1, maximum=500, value=20)
        self.seed = QSpinBox(minimum=0, maximum=1_000_000, value=0)
        self.model = QLineEdit("embedded")
        self.model.setToolTip("The chat model writing the questions: embedded (the best "
                              "installed), or BACKEND:MODEL such as ollama:qwen2.5:7b")
        form.addRow("Generate", labelled_row(("Questions", self.count), ("Seed", self.seed),
                                             ("Model", self.model)))
        self.evalset = QLineEdit(evalset_path)
        self.evalset.setPlaceholderText("empty: generate and verify new questions")
        form.addRow("Or use the set", self.file_row(self.evalset, "Browse…", "Evaluation set"))
        self.page_path = QLineEdit(page_path or str(Path.cwd() / "scorecard.html"))
        form.addRow("Save the page as", with_button(self.page_path, "Choose…", self._browse_page))
        layout.addLayout(form)
        self.progress = QProgressBar()
        self.progress.setFormat("%v/%m")
        layout.addWidget(self.progress)
        layout.addWidget(self.status_line("Choose the folder, then Start."))
        self.view = QTextBrowser()
        self.view.setOpenLinks(False)
        layout.addWidget(self.view, 1)
        self.add_variant_buttons(layout)

    def _browse_page(self) -> None:
        self.browse_new_file(self.page_path, "Save the scorecard", "HTML pages (*.html)")

    # running -----------------------------------------------------------------------------
    def request(self):
        """The scorecard request of the form (raises, naming the field, when it is not
        usable)."""
        from modrag_studio.commands.evalset_generate_command import llm_from_flag
        from modrag_studio.evaluation.generation import GenerationConfig
        from modrag_studio.evaluation.scorecard import ScorecardRequest

        page = Path(self.page_path.text().strip())
        if not page.name or not page.parent.is_dir():
            raise ValueError(f"Save the page as: the folder {page.parent} does not exist")
        inputs = dict(self.inputs)
        if self.corpus_name:
            folder = self.corpus.text().strip()
            if not Path(folder).is_dir():
                raise ValueError(f"Folder: {folder or '(empty)'} is not a folder")
            inputs[self.corpus_name] = str(Path(folder).absolute())
        chosen = self.evalset.text().strip()
        generation = None
        if not chosen:
            generation = GenerationConfig(n=self.count.value(),
                                          llm=llm_from_flag(self.model.text()),
                                          seed=self.seed.value())
            generation.check()
        questions = Path(chosen) if chosen else page.with_suffix(".questions.jsonl")
        return ScorecardRequest(self.doc, inputs, questions, generation, self.seed.value())

    def start(self) -> bool:
        from modrag_studio.evaluation.scorecard import build_scorecard

        if self.busy:
            return False
        try:
            request = self.request()
        except Exception as exc:
            return self.cannot_start(exc)
        if not self.allowed(request.inputs):
            return False
        executor = self.executor
        self.card = None
        self.view.clear()
        self.progress.setRange(0, 0)
        self.status.setText("Scoring the folder…")

        def compute(task: Task) -> Any:
            return build_scorecard(request, executor=executor, cancel=task.cancel,
                                   on_status=task.reporter("status"),
                                   on_progress=task.reporter("progress"))

        self.job.start(compute, self._on_finished)
        return True

    def _on_progress(self, stage: str, done: int, total: int) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.status.setText(f"{done}/{total} {STAGES.get(stage, stage)}")

    def _on_finished(self, card: Any, failure: Exception | None) -> None:
        from modrag_studio.reporting.scorecard_page import scorecard_html

        self.progress.setRange(0, 1)
        self.progress.setValue(1 if card is not None else 0)
        if card is None:
            error = error_text(failure)
            self.status.setText("Stopped: cancelled." if "Cancel" in error
                                else f"The scorecard failed: {in_studio_words(error)}")
            return
        self.card = card
        page = scorecard_html(card.to_dict())
        path = Path(self.page_path.text().strip())
        try:
            from modrag_studio.engine.core.document import atomic_write_text

            atomic_write_text(path, page)
            saved = f"Saved as {path}: one file that opens anywhere, to send as it is."
        except OSError as exc:
            saved = f"The page could not be saved to {path}: {exc}"
        self.view.setHtml(qt_html(page))
        self.status.setText(f"{card.suggestion.text} {saved}")
        self.apply_button.setEnabled(card.suggestion.significant)

    def apply(self) -> VariantSpec | None:
        """Store the suggested change as a variant (with the figures of its test), only when
        the tuner found it significantly better."""
        if self.card is None or not self.card.suggestion.significant:
            return None
        name = free_variant_name(self.doc, "scorecard")
        variant = VariantSpec.model_validate({**self.card.suggestion.variant, "name": name})
        self.stored(variant, self.on_apply)
        return variant


class Scorecards(JobAction):
    """Evaluation > Score this folder…: the dialog on the base graph with the run bar's
    inputs and the evaluation-set panel's file; the change is stored through the Variants
    controller (undoable) and made the active variant."""

    label = "Score this folder…"
    variant_kind = "Scorecard"

    def dialog_of(self, variants: Any) -> ScorecardDialog:
        doc = variants.document()
        folder = doc.source_path.parent if doc.source_path is not None else Path.cwd()
        return ScorecardDialog(doc, inputs=variants.run_inputs(),
                               executor=variants.executor(), on_apply=self.store,
                               page_path=str(folder / "scorecard.html"), parent=self.window,
                               guard=self.guard("Scorecard"))
