"""What the Evaluation menu's job dialogs share, and the menu action that opens each.

A ``JobDialog`` holds the graph, the run bar's inputs, the executor and Run's pre-run
guard, runs its work as one ``ui.jobs`` background job (``busy``, ``cancel``, ``wait``) and
says on its status line why a Start did not start. A ``JobAction`` is the menu item: it
opens the dialog, brings back the one whose job still runs, and says in the status bar when
a dialog is closed while its job goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.document import GraphDocument, VariantSpec
from modrag_studio.engine.run.executor import Executor
from modrag_studio.ui.evaluate.wording import in_studio_words
from modrag_studio.ui.jobs.background import (
    BackgroundJob,
    JobControls,
    show_running,
    tell_when_closed_running,
)

Guard = Callable[[GraphDocument, dict[str, str]], bool]
EVALUATION_SETS = "Evaluation sets (*.jsonl)"


class JobDialog(QDialog):
    """A dialog running one background job on a graph; subclasses build the form and set
    ``self.status`` (a label) before a Start can be refused."""

    status: QLabel

    def __init__(self, doc: GraphDocument, *, job: str, inputs: dict[str, str],
                 executor: Executor, guard: Guard | None, parent: QWidget | None) -> None:
        super().__init__(parent)
        self.doc, self.executor = doc, executor
        self.inputs = dict(inputs)
        self.guard = guard  # Run's pre-run chain (the trust prompt); False: do not start
        self.job = BackgroundJob(job, self)

    @property
    def busy(self) -> bool:
        return self.job.busy

    def cancel(self) -> None:
        self.job.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        return self.job.wait(timeout)

    def cannot_start(self, error: Exception) -> bool:
        """Say why the form cannot start (a bad form: said in the dialog); False."""
        self.status.setText(f"Cannot start: {in_studio_words(error)}")
        return False

    def allowed(self, inputs: dict[str, str]) -> bool:
        """Whether Run's pre-run guard lets the graph run on ``inputs`` (said when not)."""
        if self.guard is not None and not self.guard(self.doc, inputs):
            self.status.setText("Not started: the run was not allowed.")
            return False
        return True

    def status_line(self, text: str) -> QLabel:
        """The status label (wrapped, selectable), added to ``layout`` by the caller."""
        self.status = QLabel(text)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return self.status

    def add_variant_buttons(self, layout: QVBoxLayout) -> None:
        """Start, Cancel and Apply as variant, right-aligned; while the job runs only Cancel
        is enabled, and Apply is enabled by the result (``apply`` stores it)."""
        buttons = QHBoxLayout()
        self.start_button = QPushButton("Start")
        self.cancel_button = QPushButton("Cancel")
        self.apply_button = QPushButton("Apply as variant")
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.apply_button.clicked.connect(self.apply)
        self.cancel_button.setEnabled(False)
        self.apply_button.setEnabled(False)
        buttons.addStretch(1)
        for button in (self.start_button, self.cancel_button, self.apply_button):
            buttons.addWidget(button)
        layout.addLayout(buttons)
        self.job.controls = JobControls(idle=[self.start_button,
                                              (self.apply_button, lambda: False)],
                                        cancel=self.cancel_button)

    def start(self) -> bool:
        raise NotImplementedError

    def apply(self) -> VariantSpec | None:
        raise NotImplementedError

    def stored(self, variant: VariantSpec, on_apply: Callable[[VariantSpec], None]) -> None:
        """Hand ``variant`` to ``on_apply``, say so and disable Apply (stored once)."""
        on_apply(variant)
        self.status.setText(f"{self.status.text()}\nStored as variant '{variant.name}'.")
        self.apply_button.setEnabled(False)

    # picking files -------------------------------------------------------------------------
    def folder_row(self, field: QLineEdit, button: str, title: str) -> QHBoxLayout:
        """``field`` with a ``button`` that picks a folder into it."""
        return with_button(field, button, lambda: self.browse_folder(field, title))

    def file_row(self, field: QLineEdit, button: str, title: str,
                 kinds: str = EVALUATION_SETS) -> QHBoxLayout:
        """``field`` with a ``button`` that picks a file to read into it."""
        return with_button(field, button, lambda: self.browse_file(field, title, kinds))

    def browse_folder(self, field: QLineEdit, title: str) -> None:
        path = QFileDialog.getExistingDirectory(self, title, field.text())
        if path:
            field.setText(path)

    def browse_file(self, field: QLineEdit, title: str, kinds: str = EVALUATION_SETS) -> None:
        path, _ = QFileDialog.getOpenFileName(self, title, field.text(), kinds)
        if path:
            field.setText(path)

    def browse_new_file(self, field: QLineEdit, title: str,
                        kinds: str = EVALUATION_SETS) -> bool:
        """Ask where to save; True when a path was chosen (and put in ``field``)."""
        path, _ = QFileDialog.getSaveFileName(self, title, field.text(), kinds)
        if path:
            field.setText(path)
        return bool(path)


def with_button(field: QLineEdit, text: str, action: Callable[[], None]) -> QHBoxLayout:
    """``field`` stretched, with a button doing ``action`` on its right."""
    row = QHBoxLayout()
    button = QPushButton(text)
    button.clicked.connect(action)
    row.addWidget(field, 1)
    row.addWidget(button)
    return row


def labelled_row(*controls: tuple[str, QWidget], extra: tuple[QWidget, ...] = ()
                  ) -> QHBoxLayout:
    """A row of controls, each after its label, then ``extra``, packed to the left."""
    row = QHBoxLayout()
    for label, widget in controls:
        row.addWidget(QLabel(label))
        row.addWidget(widget)
    for widget in extra:
        row.addWidget(widget)
    row.addStretch(1)
    return row


def free_variant_name(doc: GraphDocument, stem: str) -> str:
    """``stem``, else ``stem_2``, ``stem_3``…: the first name no variant of ``doc`` has."""
    from modrag_studio.engine.edit.variants import variant_names

    taken = set(variant_names(doc))
    return next(n for n in (stem, *(f"{stem}_{i}" for i in range(2, 1000))) if n not in taken)


class JobAction:
    """An Evaluation menu item opening a job dialog on the Variants controller's graph;
    subclasses name the item (``label``) and build the dialog (``dialog_of``); a dialog
    suggesting a change hands it to ``store``, which names the undo step by ``variant_kind``."""

    label = ""
    variant_kind = ""

    def __init__(self, window: Any, evaluation_sets: Any, variants: Any) -> None:
        self.window, self.evaluation_sets, self.variants = window, evaluation_sets, variants
        self.dialog: Any = None
        evaluation_sets.menu.addSeparator()
        evaluation_sets.menu.addAction(self.label, self.open)

    def dialog_of(self, variants: Any) -> JobDialog:
        raise NotImplementedError

    def guard(self, action: str) -> Guard:
        """Run's pre-run chain, naming ``action`` when it asks."""
        return lambda doc, inputs: self.variants.guards_allow(doc, inputs, action)

    def open(self) -> Any:
        """The dialog; the one still running a job when there is one (no second job)."""
        if self.dialog is not None and show_running(self.dialog):
            return self.dialog
        dialog = self.dialog = self.dialog_of(self.variants)
        tell_when_closed_running(dialog, self.window.show_message, f"Evaluation > {self.label}")
        dialog.show()
        return dialog

    def store(self, variant: VariantSpec) -> None:
        """Save ``variant`` in the graph (one undo step) and make it the active variant."""
        from modrag_studio.engine.edit.variants import with_variant

        variants = self.variants
        variants.editor.replace(f"{self.variant_kind} variant {variant.name}",
                                with_variant(variants.document(), variant))
        variants.set_active(variant.name)
