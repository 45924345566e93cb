"""Presentation mode: full screen, large type, a step-through replay of a recorded run.

When the expected evidence is declared and the replay is of the last run, each step also says
in plain words what that node did with the right passage, and the last step gives the overall
verdict (``evidence_debugger.evidence_narrator``; the words come from ``engine.attribution``).
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeyEvent, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsRectItem,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.narration import LOST_HERE
from modrag_studio.engine.run.trace import Trace
from modrag_studio.ui.present.narrate import story

STATUS_WORDS = {"done": "done", "cached": "reused", "skipped": "skipped", "failed": "failed",
                "cancelled": "stopped", "bypassed": "bypassed", "pinned": "pinned"}
GLOW = QColor("#ffd166")
EVIDENCE = "#8fd3a8"   # the evidence sentence
LOST = "#ff8a7a"       # ... at the node that lost it
NEXT_KEYS = (Qt.Key.Key_Right, Qt.Key.Key_Space, Qt.Key.Key_PageDown, Qt.Key.Key_Down,
             Qt.Key.Key_Return, Qt.Key.Key_Enter)
MIN_SCALE = 0.45  # a step never draws its node smaller than this
PREVIOUS_KEYS = (Qt.Key.Key_Left, Qt.Key.Key_PageUp, Qt.Key.Key_Up, Qt.Key.Key_Backspace)


def graph_description(canvas: Any) -> str:
    """The graph's ``metadata.description`` when the canvas shows an editor's graph."""
    editor = getattr(canvas, "editor", None)
    return editor.document().metadata.description if editor is not None else ""


def neighbours(canvas: Any, node_id: str) -> list[str]:
    """Nodes wired directly to ``node_id`` in the canvas's graph."""
    editor = getattr(canvas, "editor", None)
    if editor is None:
        return []
    found = []
    for edge in editor.document().edges:
        if edge.source_node == node_id and edge.target_node != node_id:
            found.append(edge.target_node)
        elif edge.target_node == node_id and edge.source_node != node_id:
            found.append(edge.source_node)
    return list(dict.fromkeys(found))


class PresentationWindow(QWidget):
    """Replays ``trace`` one node at a time over a second view of the canvas scene.

    Keys (also when the canvas view has the focus, so a slide clicker works): Right, Down,
    Space, PageDown, Enter next; Left, Up, PageUp, Backspace previous; Home, End; Escape.
    Each step zooms to its node and the nodes wired to it.
    """

    step_changed = Signal(int)
    closed = Signal()

    def __init__(self, trace: Trace, canvas: Any = None, titles: dict[str, str] | None = None,
                 parent: QWidget | None = None,
                 evidence: Callable[[str | None], str] | None = None,
                 registry: NodeRegistry | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("presentationWindow")
        self.setWindowTitle(f"ModRAG Studio — {trace.graph_name}")
        self.trace = trace
        self.canvas = canvas
        self.evidence = evidence  # node id -> its evidence sentence; None -> the overall one
        self.evidence_text = ""
        is_dot = getattr(canvas, "is_reroute", lambda _node_id: False)
        self.steps = [s for s in story(trace, titles, registry)
                      if not is_dot(s[0].node_id)]  # no reroute dots
        self.index = -1
        self.highlight: QGraphicsRectItem | None = None
        self.setStyleSheet("QWidget#presentationWindow { background: #14161b; }"
                           "QLabel { color: #f2f4f8; } QPushButton { font-size: 16pt;"
                           " padding: 8px 22px; color: #f2f4f8; background: #2a2f3a;"
                           " border: 1px solid #444b58; border-radius: 6px; }"
                           "QPushButton:disabled { color: #666; }")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(28, 20, 28, 20)
        self.heading = QLabel(self)
        self.heading.setObjectName("presentationHeading")
        self.heading.setFont(_font(26, bold=True))
        layout.addWidget(self.heading)
        self.description = QLabel(graph_description(canvas), self)
        self.description.setObjectName("presentationDescription")
        self.description.setWordWrap(True)
        self.description.setFont(_font(15))
        self.description.setStyleSheet("color: #aab3c5;")
        self.description.setMaximumHeight(110)
        self.description.setVisible(bool(self.description.text()))
        layout.addWidget(self.description)
        self.view: QGraphicsView | None = None
        if canvas is not None and getattr(canvas, "scene", None) is not None:
            self.view = QGraphicsView(canvas.scene, self)
            self.view.setRenderHint(QPainter.RenderHint.Antialiasing)
            self.view.setInteractive(False)
            self.view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.view.setStyleSheet("border: none;")
            # the view never takes the keys: a clicker's arrows and PageUp/Down step the replay
            self.view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            self.view.installEventFilter(self)
            # its own unbounded scene rect: a node at the edge of the graph can be centred
            self.view.setSceneRect(QRectF(-1e6, -1e6, 2e6, 2e6))
            layout.addWidget(self.view, 1)
        self.sentence = QLabel(self)
        self.sentence.setObjectName("presentationSentence")
        self.sentence.setWordWrap(True)
        self.sentence.setFont(_font(24))
        self.sentence.setMinimumHeight(120)
        self.sentence.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.sentence, 0 if self.view else 1)
        self.evidence_label = QLabel(self)
        self.evidence_label.setObjectName("presentationEvidence")
        self.evidence_label.setWordWrap(True)
        self.evidence_label.setFont(_font(20))
        self.evidence_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.evidence_label.setVisible(False)
        layout.addWidget(self.evidence_label)
        bar = QHBoxLayout()
        self.counter = QLabel(self)
        self.counter.setFont(_font(16))
        self.prev_button = QPushButton("◀  Back", self)
        self.next_button = QPushButton("Next  ▶", self)
        self.close_button = QPushButton("Close (Esc)", self)
        self.prev_button.clicked.connect(self.previous)
        self.next_button.clicked.connect(self.next)
        self.close_button.clicked.connect(self.close)
        bar.addWidget(self.counter, 1)
        for button in (self.prev_button, self.next_button, self.close_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            bar.addWidget(button)
        layout.addLayout(bar)
        self.go(0 if self.steps else -1)

    # navigation ----------------------------------------------------------------
    def go(self, index: int) -> None:
        if not self.steps:
            self.heading.setText(self.trace.graph_name)
            self.sentence.setText("This run recorded no steps.")
            self.counter.setText("")
            self.prev_button.setEnabled(False)
            self.next_button.setEnabled(False)
            return
        index = max(0, min(index, len(self.steps) - 1))
        self.index = index
        visit, sentence = self.steps[index]
        self.heading.setText(f"Step {index + 1}: {visit.node_id}"
                             f"  ·  {STATUS_WORDS.get(visit.status, visit.status)}")
        self.sentence.setText(sentence)
        self._show_evidence(visit.node_id, last=index == len(self.steps) - 1)
        self.counter.setText(f"{index + 1} / {len(self.steps)}   ·   {self.trace.graph_name}")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.steps) - 1)
        self._focus(visit.node_id)
        self.step_changed.emit(index)

    def next(self) -> None:
        self.go(self.index + 1)

    def previous(self) -> None:
        self.go(self.index - 1)

    def current_sentence(self) -> str:
        return self.sentence.text()

    def current_evidence(self) -> str:
        """The evidence sentences shown for this step, as plain text ("" when none)."""
        return self.evidence_text

    def _show_evidence(self, node_id: str, last: bool) -> None:
        """The step's evidence sentence, and on the last step the overall verdict."""
        if self.evidence is None:
            return
        step = self.evidence(node_id)
        overall = self.evidence(None) if last else ""
        lost = LOST_HERE in step
        parts = [f"<span style='color:{LOST if lost else EVIDENCE}'>{escape(step)}</span>"
                 if step else "",
                 f"<b style='color:{EVIDENCE}'>In short: {escape(overall)}</b>" if overall
                 else ""]
        text = "<br>".join(p for p in parts if p)
        self.evidence_text = "\n".join(t for t in (step, overall and f"In short: {overall}") if t)
        self.evidence_label.setText(text)
        self.evidence_label.setVisible(bool(text))
        width = max(self.evidence_label.width(), self.width() - 60, 400)
        self.evidence_label.setMinimumHeight(self.evidence_label.heightForWidth(width)
                                             if text else 0)
        self.layout().activate()

    def _focus(self, node_id: str) -> None:
        if self.view is None or self.canvas is None:
            return
        rect = self.canvas.node_scene_rect(node_id)
        if rect is None:
            return
        if self.highlight is None:
            self.highlight = QGraphicsRectItem()
            self.highlight.setPen(QPen(GLOW, 6))
            self.highlight.setZValue(900)
            self.canvas.scene.addItem(self.highlight)
        self.highlight.setRect(rect.adjusted(-10, -10, 10, 10))
        self.view.fitInView(self.focus_rect(node_id), Qt.AspectRatioMode.KeepAspectRatio)

    def focus_rect(self, node_id: str) -> QRectF:
        """The node centred with its direct neighbours (wired in or out), with a margin.

        A neighbour so far away that the node would be drawn smaller than ``MIN_SCALE`` is
        left out of the picture (the node stays readable).
        """
        node = QRectF(self.canvas.node_scene_rect(node_id))
        centre = node.center()
        half_w, half_h = node.width() / 2 + 300, node.height() / 2 + 200
        for other in neighbours(self.canvas, node_id):
            near = self.canvas.node_scene_rect(other)
            if near is None:
                continue
            w = max(abs(near.left() - centre.x()), abs(near.right() - centre.x())) + 60
            h = max(abs(near.top() - centre.y()), abs(near.bottom() - centre.y())) + 120
            if self._scale_for(2 * max(w, half_w), 2 * max(h, half_h)) >= MIN_SCALE:
                half_w, half_h = max(w, half_w), max(h, half_h)
        return QRectF(centre.x() - half_w, centre.y() - half_h, 2 * half_w, 2 * half_h)

    def _scale_for(self, width: float, height: float) -> float:
        viewport = self.view.viewport().rect() if self.view is not None else None
        if viewport is None or viewport.width() < 10:
            return 1.0
        return min(viewport.width() / width, viewport.height() / height)

    # keys and closing ---------------------------------------------------------------
    def step_key(self, key: int) -> bool:
        """Step for a navigation key (True when the key was one)."""
        if key in NEXT_KEYS:
            self.next()
        elif key in PREVIOUS_KEYS:
            self.previous()
        elif key == Qt.Key.Key_Home:
            self.go(0)
        elif key == Qt.Key.Key_End:
            self.go(len(self.steps) - 1)
        elif key == Qt.Key.Key_Escape:
            self.close()
        else:
            return False
        return True

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if not self.step_key(event.key()):
            super().keyPressEvent(event)

    def eventFilter(self, watched: Any, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress and self.step_key(event.key()):
            return True
        return super().eventFilter(watched, event)

    def closeEvent(self, event: Any) -> None:  # noqa: N802
        if self.highlight is not None and self.highlight.scene() is not None:
            self.highlight.scene().removeItem(self.highlight)
        self.highlight = None
        self.closed.emit()
        super().closeEvent(event)


def _font(points: int, bold: bool = False) -> QFont:
    font = QFont()
    font.setPointSize(points)
    font.setBold(bold)
    return font
