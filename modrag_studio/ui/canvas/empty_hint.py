"""What to do first on an empty canvas: a quiet hint in its middle, gone with the first node.

After File > New (or the start page's New graph) the canvas would be a blank grid. The hint
names the three ways in: drag a node from the Nodes panel, press Tab on the canvas to search
for one, or open a sample from Help > Getting Started. It never takes a click.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLabel

from modrag_studio.engine.edit.editor import GraphEditor

HINT = ("<p style='font-size:15pt; color:#c8d0dc'><b>An empty graph</b></p>"
        "<p style='font-size:11pt; color:#9aa4b6'>Drag a node from the <b>Nodes</b> panel "
        "on the left, or click here and press <b>Tab</b> to search for one.<br>"
        "A first graph: an <b>Input</b> (the question), the steps, an <b>Output</b>; "
        "wire an output port to an input port.<br>"
        "Or open a sample to start from: <b>Help &gt; Getting Started</b>.</p>")


class EmptyCanvasHint(QObject):
    """A label centred over the canvas while the graph has no node."""

    def __init__(self, view: Any, editor: GraphEditor) -> None:
        super().__init__(view)
        self.view, self.editor = view, editor
        self.label = QLabel(HINT, view.viewport())
        self.label.setObjectName("emptyCanvasHint")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setWordWrap(True)
        self.label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.label.setStyleSheet("background: transparent;")
        view.viewport().installEventFilter(self)
        editor.subscribe(lambda _change: self.sync())
        self.sync()

    def sync(self) -> None:
        """Shown exactly while the graph has no node (and placed in the middle)."""
        empty = not self.editor.document().nodes
        self.label.setVisible(empty)
        if empty:
            self.place()

    def place(self) -> None:
        area = self.view.viewport().rect()
        width = min(620, max(280, area.width() - 40))
        self.label.setFixedWidth(width)
        self.label.adjustSize()
        self.label.move(area.center().x() - width // 2,
                        area.center().y() - self.label.height() // 2)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Resize and self.label.isVisible():
            self.place()
        return False
