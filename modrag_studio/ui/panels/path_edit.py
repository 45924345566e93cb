"""A path param's editor: the text and a Browse button (params declared as ``FilePath``,
``FolderPath`` or ``AnyPath``, which the JSON schema marks ``"x-path"``).

A chosen file inside the graph's folder is written relative to it, as graph files carry
their paths (runs resolve them against the graph's folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QMenu, QToolButton, QWidget


def shown_path(chosen: str, base: Path | None) -> str:
    """``chosen`` relative to ``base`` when it lies inside it, else absolute."""
    path = Path(chosen).resolve()
    if base is not None:
        base = base.resolve()
        if path == base or base in path.parents:
            return os.path.relpath(path, base)
    return str(path)


class PathEdit(QWidget):
    """Line edit + Browse…; ``editingFinished`` (as a QLineEdit's) after typing or choosing."""

    editingFinished = Signal()  # noqa: N815 (QLineEdit's name, so callers treat both alike)

    def __init__(self, kind: str, base_dir: Callable[[], Path | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind = kind  # "file", "folder" or "any"
        self.base_dir = base_dir
        self.line = QLineEdit(self)
        self.line.editingFinished.connect(self.editingFinished)
        self.button = QToolButton(self)
        self.button.setText("Browse…")
        self.button.setToolTip({"file": "Choose a file", "folder": "Choose a folder"}.get(
            kind, "Choose a file or a folder"))
        if kind == "any":
            menu = QMenu(self.button)
            menu.addAction("File…", lambda: self.browse("file"))
            menu.addAction("Folder…", lambda: self.browse("folder"))
            self.button.setMenu(menu)
            self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        else:
            self.button.clicked.connect(lambda: self.browse(kind))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.line, 1)
        layout.addWidget(self.button)

    def text(self) -> str:
        return self.line.text()

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's spelling, as QLineEdit)
        self.line.setText(text)

    def setPlaceholderText(self, text: str) -> None:  # noqa: N802
        self.line.setPlaceholderText(text)

    def browse(self, kind: str) -> str:
        """Ask for a file or folder (starting where the current value points)."""
        base = self.base_dir()
        current = self.line.text().strip()
        start = str((base / current) if base and current else (base or Path.cwd()))
        if kind == "folder":
            chosen = QFileDialog.getExistingDirectory(self, "Choose a folder", start)
        else:
            chosen, _ = QFileDialog.getOpenFileName(self, "Choose a file", start)
        if chosen:
            self.line.setText(shown_path(chosen, base))
            self.editingFinished.emit()
        return chosen
