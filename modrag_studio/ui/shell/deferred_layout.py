"""A graph opened without positions is painted first and laid out well right after.

The layout search (every candidate of :func:`~modrag_studio.engine.layout.auto_layout.candidates`
scored) costs about 0.2 s for 100 nodes, a large part of the time to a painted window. The
editor opens such a graph with one quick candidate (``reset(defer_layout=True)``); this
filter waits for the canvas's first paint, then runs the search on the next turn of the
event loop and fits the view again when it moved nodes.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

from modrag_studio.engine.edit.editor import GraphEditor


class LayoutAfterFirstPaint(QObject):
    """Runs ``editor.refine_layout()`` after ``viewport``'s next paint, once per :meth:`arm`."""

    def __init__(self, editor: GraphEditor, viewport: QWidget,
                 fit: Callable[[], None]) -> None:
        super().__init__(viewport)
        self.editor = editor
        self.viewport = viewport
        self.fit = fit
        self._armed = False

    def arm(self) -> None:
        """Wait for the next paint (call after a reset that left a layout search due)."""
        if self.editor.layout_due and not self._armed:
            self._armed = True
            self.viewport.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if self._armed and event.type() == QEvent.Type.Paint:
            self._armed = False
            self.viewport.removeEventFilter(self)
            QTimer.singleShot(0, self.refine)
        return False

    def refine(self) -> None:
        """The search now (also before a save, so the file gets the searched layout)."""
        if self.editor.refine_layout():
            self.fit()
