"""Run > Index Corpus…: the ``modrag index`` job on the canvas graph, in this process or on
Ray, off the GUI thread, with a progress bar per stage and a Cancel that stops the job (and a
Ray head node the job started).

The job, its progress events and its cancel token are ``modrag_studio.distributed.job``'s,
the same as the command line's; this module only draws them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.distributed.progress import RAY_STAGES, IndexProgress, StageState
from modrag_studio.distributed.ray_support import INSTALL_HINT, ray_available
from modrag_studio.ui.jobs.background import (
    BackgroundJob,
    JobControls,
    Task,
    show_running,
    tell_when_closed_running,
)
from modrag_studio.ui.run.controller import RunRequest
from modrag_studio.ui.run.delete_guard import MARKER, delete_question

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.run.run_side import RunSide

#: Where the job runs: (key, label); the key is the ``--ray`` address (None: no Ray).
PLACES = (("none", "This process (no Ray)"), ("local", "Ray on this machine (starts a head "
          "node, stops it after)"), ("auto", "Join the Ray cluster running here (auto)"),
          ("address", "Join the Ray cluster at"))


class IndexDialog(QDialog):
    """Index the corpus of the canvas graph's ingest part (loader -> splitters -> store /
    BM25), here or on Ray."""

    def __init__(self, window: StudioShell, run: RunSide,
                 parent: QWidget | None = None) -> None:
        qt_window: QMainWindow = window  # type: ignore[assignment]
        super().__init__(parent or qt_window)
        self.window = qt_window
        self.shell = window
        self.run_features = run
        self.setWindowTitle("Index corpus")
        self.resize(680, 460)
        self.summary: dict[str, Any] | None = None
        self.error = ""
        self.cancelled = False
        self.job = BackgroundJob("index-job", self)
        self.job.on("progress", self.show_progress)  # IndexProgress
        self.job.on("status", self._on_status)  # a head node started / stopped
        self._bars: dict[str, tuple[QProgressBar, QLabel]] = {}
        self.plan, plan_error = _plan_of(run.document(), window.registry)

        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.plan_label = QLabel(self.plan.describe() if self.plan else plan_error)
        self.plan_label.setWordWrap(True)
        form.addRow("Ingest part", self.plan_label)
        self.corpus = QLineEdit()
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.corpus, 1)
        row.addWidget(browse)
        self.corpus_row = QWidget()
        self.corpus_row.setLayout(row)
        row.setContentsMargins(0, 0, 0, 0)
        if self.plan is not None and self.plan.loader_input:
            form.addRow(f"Corpus ({self.plan.loader_input})", self.corpus_row)
            self.corpus.setText(run.run_bar.values().get(self.plan.loader_input, ""))
        layout.addLayout(form)

        where = QGroupBox("Run on")
        where_layout = QVBoxLayout(where)
        self.places = QButtonGroup(self)
        self.place_buttons: dict[str, QRadioButton] = {}
        for index, (key, label) in enumerate(PLACES):
            button = QRadioButton(label)
            self.places.addButton(button, index)
            self.place_buttons[key] = button
            if key == "address":
                self.address = QLineEdit()
                self.address.setPlaceholderText("HOST:PORT of the head node")
                line = QHBoxLayout()
                line.addWidget(button)
                line.addWidget(self.address, 1)
                where_layout.addLayout(line)
            else:
                where_layout.addWidget(button)
        self.place_buttons["none"].setChecked(True)
        actors = QHBoxLayout()
        self.actors = QSpinBox()
        self.actors.setRange(1, 256)
        self.actors.setToolTip("Ray actors holding an embedding model each")
        actors.addWidget(QLabel("Embedding actors"))
        actors.addWidget(self.actors)
        actors.addStretch(1)
        where_layout.addLayout(actors)
        self.ray_hint = QLabel(INSTALL_HINT)
        self.ray_hint.setWordWrap(True)
        self.ray_hint.setStyleSheet("color: #8a5a00")
        where_layout.addWidget(self.ray_hint)
        self.has_ray = ray_available()
        for key in ("local", "auto", "address"):
            self.place_buttons[key].setEnabled(self.has_ray)
        self.ray_hint.setVisible(not self.has_ray)
        self.places.idToggled.connect(lambda *_: self._sync_place())
        layout.addWidget(where)

        self.progress_box = QGroupBox("Progress")
        self.grid = QGridLayout(self.progress_box)
        layout.addWidget(self.progress_box, 1)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        buttons = QHBoxLayout()
        self.start_button = QPushButton("Start")
        self.start_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel job")
        self.close_button = QPushButton("Close")
        buttons.addStretch(1)
        for button in (self.start_button, self.cancel_button, self.close_button):
            buttons.addWidget(button)
        layout.addLayout(buttons)
        self.start_button.clicked.connect(lambda: self.start())
        self.cancel_button.clicked.connect(self.cancel)
        self.close_button.clicked.connect(self.close)
        self.job.controls = JobControls(
            idle=[(self.start_button, lambda: self.plan is not None),
                  *((button, lambda b=button: b is self.place_buttons["none"] or self.has_ray)
                    for button in self.place_buttons.values())],
            cancel=self.cancel_button)
        self.start_button.setEnabled(self.plan is not None)
        self.cancel_button.setEnabled(False)
        self._sync_place()

    # choices ------------------------------------------------------------------------------
    def place(self) -> str:
        return next(k for k, b in self.place_buttons.items() if b.isChecked())

    def ray_address(self) -> str | None:
        """The ``--ray`` value of the choice (None: index in this process)."""
        place = self.place()
        if place == "none":
            return None
        return self.address.text().strip() if place == "address" else place

    def _sync_place(self) -> None:
        ray = self.place() != "none"
        self.address.setEnabled(self.place() == "address")
        self.actors.setEnabled(ray and self.plan is not None and self.plan.store is not None)
        if not self.busy:
            self.show_progress(self._initial_progress())

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Corpus file", self.corpus.text(),
                                              "Corpora (*.jsonl *.txt *.md *.pdf);;All (*)")
        if path:
            self.corpus.setText(path)

    def _initial_progress(self) -> IndexProgress:
        if self.plan is None:
            return IndexProgress("local")
        if self.place() != "none":
            names = RAY_STAGES if self.plan.store is not None else RAY_STAGES[:2]
            return IndexProgress("ray", {n: StageState() for n in names})
        nodes = [self.plan.loader.node_id, *(s.node_id for s in self.plan.chain),
                 *self.plan.sinks]
        return IndexProgress("local", {n: StageState(total_blocks=1) for n in nodes})

    # running ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A job started and its end not yet shown."""
        return self.job.busy

    def start(self, allow_delete: bool = False) -> bool:
        """Start the job off the GUI thread (False, with the reason shown, when it cannot);
        ``allow_delete``: the store may delete any share of its collection (the user agreed
        after the delete guard stopped the job)."""
        from modrag_studio.distributed.job import IndexRequest, run_index_job
        from modrag_studio.distributed.ray_index import RayIndexOptions

        if self.busy or self.plan is None:
            return False
        address = self.ray_address()
        if address == "":
            self.status.setText("Give the head node's HOST:PORT.")
            return False
        inputs = dict(self.run_features.run_bar.values())
        if self.plan.loader_input:
            corpus = self.corpus.text().strip()
            if not corpus:
                self.status.setText(f"Choose the corpus (graph input "
                                    f"'{self.plan.loader_input}').")
                return False
            inputs[self.plan.loader_input] = corpus
        path = self.window.editor.path
        doc = self.run_features.document()
        if not self.run_features.controller.guards_allow(RunRequest(doc, dict(inputs),
                                                                    label="Index corpus")):
            self.status.setText("Not started: the graph is not trusted.")
            return False
        request = IndexRequest(doc, inputs, ray=address,
                               options=RayIndexOptions(embed_actors=self.actors.value()),
                               base_dir=Path(path).parent if path else None)
        self.summary, self.error, self.cancelled = None, "", False
        self.show_progress(self._initial_progress())
        self.status.setText("Indexing…" if address is None else f"Indexing on Ray ({address})…")

        def compute(task: Task) -> dict[str, Any]:
            from modrag_studio.engine.trust.store_mode import allow_large_deletes

            with allow_large_deletes(allow_delete):  # the job's own context (thread)
                return run_index_job(request, cancel=task.cancel,
                                     on_progress=task.reporter("progress"),
                                     on_status=task.reporter("status"))

        self.job.start(compute, self._on_finished)
        return True

    def cancel(self) -> None:
        if self.busy:
            self.job.cancel()
            self.status.setText("Cancelling… (the job stops at the next block; a Ray head node "
                                "started here is stopped)")

    def wait(self, timeout: float | None = None) -> bool:
        """Join the job's thread (its end is shown once the GUI thread handles events)."""
        return self.job.wait(timeout)

    def _tell(self, text: str, timeout_ms: int = 10_000) -> None:
        self.shell.show_message(text, timeout_ms)

    # progress -----------------------------------------------------------------------------
    def show_progress(self, progress: IndexProgress) -> None:
        """One row per stage: name, bar, blocks and rows."""
        if list(self._bars) != list(progress.stages):
            while self.grid.count():
                widget = self.grid.takeAt(0).widget()
                if widget is not None:
                    widget.setParent(None)  # gone now, not at the next event loop turn
                    widget.deleteLater()
            self._bars = {}
            for row, name in enumerate(progress.stages):
                bar, label = QProgressBar(), QLabel()
                bar.setTextVisible(False)
                bar.setMinimumWidth(160)
                label.setWordWrap(True)  # "resuming an interrupted index: …" is long
                label.setMinimumWidth(label.fontMetrics().horizontalAdvance(
                    "0000 / 0000 blocks 000000 / 000000 rows (cached)"))
                self.grid.addWidget(QLabel(name), row, 0)
                self.grid.addWidget(bar, row, 1)
                self.grid.addWidget(label, row, 2)
                self._bars[name] = (bar, label)
            self.grid.setColumnStretch(1, 1)
        if self.busy and not self.isVisible():  # a job going on behind a closed dialog
            self._tell(f"Indexing: {progress.line()}", 0)  # stays until the next event
        if progress.mode == "local":
            self._mirror_on_canvas(progress)
        for name, stage in progress.stages.items():
            bar, label = self._bars[name]
            ratio = stage.ratio()
            if ratio is None and (stage.blocks or stage.note == "running"):
                bar.setRange(0, 0)  # busy, size unknown
            else:
                bar.setRange(0, 1000)
                bar.setValue(int(1000 * (ratio or 0.0)))
            label.setText(stage.text())

    def _mirror_on_canvas(self, progress: IndexProgress) -> None:
        """A local job's stages are the graph's nodes: each shows its bar and words (the
        store's "embedded 512/1,004 chunks (3.1/s, 2 min left)") on the canvas too."""
        mirror = self.run_features.mirror
        known = {node.id for node in self.run_features.document().nodes}
        for name, stage in progress.stages.items():
            if name not in known:
                continue
            if stage.done:
                mirror.canvas.set_node_progress(name, None)
                cached = stage.note == "cached"
                mirror.canvas.set_node_state(name, "cached" if cached else "done",
                                             "indexed by Run > Index Corpus…")
                mirror.captions.set_run(name, f"indexed: {stage.rows:,} rows"
                                              f"{' (cached)' if cached else ''}")
            elif stage.note == "running" or stage.fraction is not None:
                mirror.canvas.set_node_state(name, "running", "indexing…")
                mirror.node_progress(name, stage.ratio(), stage.message or "indexing…")

    def stage_text(self, name: str) -> str:
        return self._bars[name][1].text()

    def stage_value(self, name: str) -> tuple[int, int]:
        """(value, maximum) of a stage's bar."""
        bar = self._bars[name][0]
        return bar.value(), bar.maximum()

    def _on_status(self, text: str) -> None:
        self.status.setText(text[:1].upper() + text[1:])

    def _on_finished(self, summary: Any, failure: Exception | None) -> None:
        from modrag_studio.engine.core.errors import RunCancelled

        error = ("" if failure is None or isinstance(failure, RunCancelled)
                 else f"{type(failure).__name__}: {failure}")
        self.summary, self.error = summary, error
        self.cancelled = summary is None and not error
        if self.cancelled:
            self.status.setText("Cancelled. The store keeps what was written; indexing again "
                                "completes it.")
        elif error:
            self.status.setText(error)
            if not self.isVisible():
                self._tell("Indexing failed (Run > Index Corpus… says why)")
            if MARKER in error and self.ask_delete(error):  # the store's delete guard
                QTimer.singleShot(0, lambda: self.start(allow_delete=True))
        else:
            self.status.setText(describe_summary(summary))
            if not self.isVisible():
                self._tell(f"Indexing done: {describe_summary(summary)}")
            for bar, _ in self._bars.values():
                bar.setRange(0, 1000)
                bar.setValue(1000)


    def ask_delete(self, message: str) -> bool:
        """The delete guard's question (tests replace this method)."""
        box = delete_question(self, message, "index")
        return box.exec() == QMessageBox.StandardButton.Yes


def describe_summary(summary: dict[str, Any]) -> str:
    from modrag_studio.distributed.job import summary_text

    text = summary_text(summary)
    text = text[:1].upper() + text[1:]
    if summary.get("bm25_cache_key"):
        text += ". The BM25 index is in the node cache: runs of this graph take it from there."
    return text


def _plan_of(doc: Any, registry: Any) -> tuple[Any, str]:
    from modrag_studio.distributed.plan import IngestGraphError, ingest_plan

    try:
        return ingest_plan(doc, registry), ""
    except IngestGraphError as exc:
        return None, f"Nothing to index: {exc}"


class IndexAction:
    """Run > Index Corpus… opens the dialog; one job at a time (``dialog``: the last one)."""

    def __init__(self, window: StudioShell, run: RunSide) -> None:
        self.window: QMainWindow = window  # type: ignore[assignment]
        self.shell = window
        self.run_features = run
        self.dialog: IndexDialog | None = None
        self.action = QAction("&Index Corpus…", self.window)
        self.action.setObjectName("indexCorpusAction")
        self.action.setStatusTip("Index the graph's corpus (loader -> splitters -> store / "
                                 "BM25) here or on Ray")
        self.action.triggered.connect(lambda: self.open())
        window.menus["Run"].addAction(self.action)

    def open(self) -> IndexDialog:
        """The dialog; the one still running a job when there is one (no second job).
        Closing a running job's dialog hides it: the job goes on, the status bar says so
        and carries its progress until it ends."""
        if self.dialog is not None and show_running(self.dialog):
            return self.dialog
        dialog = self.dialog = IndexDialog(self.shell, self.run_features)
        tell_when_closed_running(dialog, dialog._tell, "Run > Index Corpus…", "Indexing")
        dialog.show()
        dialog.raise_()
        return dialog
