"""The graph settings panel: the graph's name and description (shown in presentation mode)."""

from __future__ import annotations

from PySide6.QtWidgets import QFormLayout, QLabel, QLineEdit, QPlainTextEdit, QWidget

from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.ui.panels.properties import CommittingTextEdit


class GraphSettingsPanel(QWidget):
    """Edits ``metadata.name`` and ``metadata.description`` through the editor (undoable)."""

    def __init__(self, editor: GraphEditor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editor = editor
        form = QFormLayout(self)
        self.name_edit = QLineEdit(self)
        self.name_edit.setPlaceholderText("a short name for the graph")
        self.name_edit.editingFinished.connect(self.commit)
        self.description_edit: QPlainTextEdit = CommittingTextEdit(self.commit)
        self.description_edit.setFixedHeight(140)
        self.description_edit.setPlaceholderText(
            "What the graph shows, a question to ask and what to look at "
            "(shown on the start page and in presentation mode)")
        form.addRow("Name", self.name_edit)
        form.addRow("Description", self.description_edit)
        hint = QLabel("Saved in the graph file's metadata.", self)
        hint.setStyleSheet("color: #999;")
        form.addRow(hint)
        editor.subscribe(self._on_change)
        self.load()

    def load(self) -> None:
        meta = self.editor.document().metadata
        if self.name_edit.text() != meta.name:
            self.name_edit.setText(meta.name)
        if self.description_edit.toPlainText() != meta.description:
            self.description_edit.setPlainText(meta.description)

    def commit(self) -> None:
        name = self.name_edit.text().strip() or "untitled"
        self.editor.set_metadata(name=name,
                                 description=self.description_edit.toPlainText().strip())

    def _on_change(self, change: Change) -> None:
        if change.kind == "reset" or change.old.metadata != change.new.metadata:
            self.load()
