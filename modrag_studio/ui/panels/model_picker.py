"""Model pickers in the properties panel: an editable list of the models a backend reports.

A node type opts in with ``choice_sources`` (param -> the params its list depends on) and
``param_listing(params, name)`` (returns an object with ``models``, ``error`` and
``summary()``). The list is asked for off the GUI thread (the node's own short timeout); a
newer request makes older answers stale. Free text is always accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.ui.jobs.background import BackgroundJob

#: A loader returns (model names, one-line note, whether the note is an error).
Loader = Callable[[], tuple[list[str], str, bool]]

_NOTE = "color: #9aa4b2;"
_ERROR = "color: #f0b050;"


class ModelPicker(QWidget):
    """Editable combo box of model names, a refresh button and a note under them."""

    committed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(12)
        self.combo.lineEdit().setPlaceholderText("(the backend's default)")
        self.refresh_button = QToolButton()
        self.refresh_button.setText("↻")
        self.refresh_button.setToolTip("Ask the backend for its models again")
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.note.setStyleSheet(_NOTE)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.combo, 1)
        row.addWidget(self.refresh_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self.job = BackgroundJob("modrag-model-picker", self, newest_wins=True)
        self.failed = False
        self._load: Loader | None = None
        self.combo.activated.connect(lambda *_a: self.committed.emit())
        self.combo.lineEdit().editingFinished.connect(self.committed.emit)
        self.refresh_button.clicked.connect(self.refresh)

    def text(self) -> str:
        return self.combo.currentText()

    def set_text(self, value: str) -> None:
        self.combo.blockSignals(True)
        try:
            self.combo.setEditText(value)
            if self.combo.lineEdit() is not None:  # a long name shows its start, not its end
                self.combo.lineEdit().setCursorPosition(0)
        finally:
            self.combo.blockSignals(False)

    def models(self) -> list[str]:
        return [self.combo.itemText(i) for i in range(self.combo.count())]

    def set_loader(self, load: Loader) -> None:
        """Use ``load`` from now on and ask at once."""
        self._load = load
        self.refresh()

    @property
    def loading(self) -> bool:
        return self.job.busy

    def refresh(self) -> None:
        """Ask for the list again off the GUI thread (an older request's answer is dropped)."""
        if self._load is None:
            return
        load = self._load
        self.note.setStyleSheet(_NOTE)
        self.note.setText("asking the backend for its models…")
        self.job.start(lambda _task: load(), self._listed)

    def _listed(self, listing: tuple[list[str], str, bool] | None,
                error: Exception | None) -> None:
        if error is not None:  # never take the panel down
            self._show([], f"no model list ({type(error).__name__}: {error})", True)
        else:
            models, note, failed = listing
            self._show(list(models), note, failed)

    def _show(self, models: list[str], note: str, failed: bool) -> None:
        text = self.text()
        self.combo.blockSignals(True)
        try:
            self.combo.clear()
            self.combo.addItems(models)
            self.combo.setCurrentIndex(self.combo.findText(text))
            self.combo.setEditText(text)
        finally:
            self.combo.blockSignals(False)
        self.failed = failed
        self.note.setStyleSheet(_ERROR if failed else _NOTE)
        self.note.setText(note)
        self.note.setToolTip(note)


def listing_loader(node_type: Any, name: str, params: Mapping[str, Any]) -> Loader:
    """A loader asking ``node_type`` (class or instance) for param ``name``'s choices."""
    try:
        validated = node_type.Params.model_validate(dict(params))
    except Exception as exc:
        first = str(exc).splitlines()
        message = f"fix the params first to list models ({first[0] if first else exc})"
        return lambda: ([], message, True)

    node = node_type() if isinstance(node_type, type) else node_type  # holds no run state

    def load() -> tuple[list[str], str, bool]:
        listing = node.param_listing(validated, name)
        if listing is None:
            return [], "", False
        return list(listing.models), listing.summary(), bool(listing.error)

    return load


def refresh_pickers(pickers: Mapping[str, ModelPicker], node_type: Any,
                    params: Mapping[str, Any], changed: set[str] | None = None) -> None:
    """Ask again for each picker whose source params are in ``changed`` (None: all)."""
    sources: Mapping[str, tuple[str, ...]] = node_type.choice_sources
    for name, picker in pickers.items():
        if changed is None or changed & set(sources.get(name, ())):
            picker.set_loader(listing_loader(node_type, name, params))


def changed_params(old: Mapping[str, Any], new: Mapping[str, Any]) -> set[str]:
    """Names whose value differs between two params dicts."""
    return {key for key in set(old) | set(new) if old.get(key) != new.get(key)}
