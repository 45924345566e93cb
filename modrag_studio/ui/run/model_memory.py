"""Run > Models in Memory…: what the run process holds (models, their memory), and Unload.

Models stay loaded between runs so the next run starts at once; on a small machine a user
may want the memory back. The list comes from the process that runs graphs (the studio's
worker, or this process when runs are in threads), asked off the GUI thread.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from modrag_studio.ui.canvas.protocols import StudioWindow
from modrag_studio.ui.jobs.background import BackgroundJob
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.process import resident_rows

MB = 2**20


def resident_models(controller: RunController, *, unload: bool = False) -> list[dict[str, Any]]:
    """The models the run process holds (kind, name, size_bytes); with ``unload`` it lets go
    of them first and returns what it held."""
    if controller.process is not None:
        return controller.process.resident(unload=unload)
    return resident_rows(controller.executor.resources, unload=unload)


class ModelMemoryDialog(QDialog):
    """The table of resident models with their memory, and an Unload All button."""

    def __init__(self, window: StudioWindow, controller: RunController) -> None:
        super().__init__(window)  # type: ignore[arg-type]
        self.controller = controller
        self.setWindowTitle("Models in Memory")
        self.resize(620, 300)
        self.table = QTableWidget(0, 3, self)
        self.table.setHorizontalHeaderLabels(["Kind", "Model", "Memory"])
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.summary = QLabel("Asking the run process…", self)
        self.summary.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.unload_button = QPushButton("Unload All", self)
        self.unload_button.setToolTip("Free their memory; the next run loads what it needs")
        buttons.addButton(self.unload_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.unload_button.clicked.connect(lambda: self.refresh(unload=True))
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(self.summary)
        layout.addWidget(buttons)
        self.job = BackgroundJob("modrag-model-memory", self, newest_wins=True)
        controller.busy_changed.connect(self._busy)

    def refresh(self, *, unload: bool = False) -> None:
        """Ask the run process (in a thread: a starting worker may take seconds to answer)."""
        if self.controller.busy:
            self._busy(True)
            return
        self.unload_button.setEnabled(False)
        self.summary.setText("Unloading…" if unload else "Asking the run process…")

        controller = self.controller
        self.job.start(lambda _task: resident_models(controller, unload=unload),
                       lambda rows, error: self._listed(rows, error, unload))

    def _listed(self, rows: list[dict[str, Any]] | None, error: Exception | None,
                unload: bool) -> None:
        if rows is None:  # the worker is busy or stopped: say so, keep the dialog
            self._show([], f"Could not ask the run process: {error}")
            return
        total = sum(r["size_bytes"] for r in rows) / MB
        text = (f"Unloaded {len(rows)} model(s), about {total:.0f} MB."
                if unload else f"{len(rows)} model(s) loaded, about {total:.0f} MB."
                if rows else "No model is loaded: the next run loads what it needs.")
        self._show([] if unload else rows, text)

    def _show(self, rows: list[dict[str, Any]], text: str) -> None:
        self.table.setRowCount(len(rows))
        for index, row in enumerate(rows):
            cells = [row["kind"], row["name"], f"{row['size_bytes'] / MB:.0f} MB"]
            for column, value in enumerate(cells):
                item = QTableWidgetItem(value)
                if column == 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight
                                          | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(index, column, item)
        self.summary.setText(text)
        self.unload_button.setEnabled(bool(rows) and not self.controller.busy)

    def _busy(self, busy: bool) -> None:
        if busy:
            self.unload_button.setEnabled(False)
            self.summary.setText("A run is in progress: the list is shown when it ends.")
        elif self.isVisible():
            self.refresh()


class ModelMemory(QObject):
    """The Run menu's "Models in Memory…" entry and its dialog."""

    def __init__(self, window: StudioWindow, controller: RunController) -> None:
        super().__init__(window)  # type: ignore[arg-type]
        self.window = window
        self.controller = controller
        self.dialog: ModelMemoryDialog | None = None
        self.action = QAction("Models in &Memory…", window)  # type: ignore[arg-type]
        self.action.setToolTip("The models kept loaded between runs, their memory, Unload")
        self.action.triggered.connect(lambda _checked=False: self.show())
        window.menus["Run"].addAction(self.action)

    def show(self) -> ModelMemoryDialog:
        if self.dialog is None:
            self.dialog = ModelMemoryDialog(self.window, self.controller)
        self.dialog.show()
        self.dialog.raise_()
        self.dialog.refresh()
        return self.dialog
