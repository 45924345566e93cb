"""Presentation mode: full screen, large type, a step-through replay of a recorded run.

A run of more than ``STORY_MAX`` steps opens as its short story (the question, what was
found, what was kept, the answer with the passage it cites, the check, the result); ``A``
switches to the replay of every step and back. It speaks to someone who does not know the
engine: no type ids, model names or the graph's technical description until ``D`` (Details)
shows them. Closing gives the canvas back its own level of detail. The first step frames the
whole graph, fitted again whenever the view changes size (the window reaches full screen
after it is built).
When the expected evidence is declared for the replayed run's question, each step also says
in plain words what that node did with the right passage, and the last step gives the overall
verdict (``evidence_debugger.evidence_narrator``; the words come from ``engine.attribution``).
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from PySide6.QtCore import QEvent, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeyEvent, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsRectItem,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.evidence.narration import LOST_HERE
from modrag_studio.engine.run.trace import Trace
from modrag_studio.reporting.narrate import story, story_steps

STATUS_WORDS = {"done": "done", "cached": "reused", "skipped": "skipped", "failed": "failed",
                "cancelled": "stopped", "bypassed": "bypassed", "pinned": "pinned"}
GLOW = QColor("#ffd166")
EVIDENCE = "#8fd3a8"   # the evidence sentence
LOST = "#ff8a7a"       # ... at the node that lost it
NEXT_KEYS = (Qt.Key.Key_Right, Qt.Key.Key_Space, Qt.Key.Key_PageDown, Qt.Key.Key_Down,
             Qt.Key.Key_Return, Qt.Key.Key_Enter)
MIN_SCALE = 0.45  # a step never draws its node smaller than this
PREVIOUS_KEYS = (Qt.Key.Key_Left, Qt.Key.Key_PageUp, Qt.Key.Key_Up, Qt.Key.Key_Backspace)
ALL_STEPS_KEY = Qt.Key.Key_A  # the short story <-> every step
DETAILS_KEY = Qt.Key.Key_D  # plain words <-> the engine's words and the description
STORY_MAX = 8  # a run of more steps opens as its short story
SOURCE = "#9ecbff"  # the passage the answer cites


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
    Space, PageDown, Enter next; Left, Up, PageUp, Backspace previous; Home, End; A the short
    story or every step; Escape. The first step shows the whole graph; the others zoom to
    their node and the nodes wired to it. ``sources`` (node id -> the passage its answer
    cites, "" when none) opens the source on the answer's step.
    """

    step_changed = Signal(int)
    closed = Signal()

    def __init__(self, trace: Trace, canvas: Any = None, titles: dict[str, str] | None = None,
                 parent: QWidget | None = None,
                 evidence: Callable[[str | None], str] | None = None,
                 registry: NodeRegistry | None = None,
                 sources: Callable[[str], str] | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("presentationWindow")
        self.setWindowTitle(f"ModRAG Studio — {trace.graph_name}")
        self.trace = trace
        self.canvas = canvas
        self.evidence = evidence  # node id -> its evidence sentence; None -> the overall one
        self.evidence_text = ""
        self.sources = sources
        self.titles = titles or {}
        self.registry = registry
        self.details = False  # plain words until D asks for the engine's
        self._build_steps()
        self.story_mode = len(self.all_steps) > STORY_MAX \
            and len(self.short_story) < len(self.all_steps)
        self.steps = self.short_story if self.story_mode else self.all_steps
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
        self.intro = QLabel(intro(trace), self)
        self.intro.setObjectName("presentationIntro")
        self.intro.setWordWrap(True)
        self.intro.setFont(_font(17))
        self.intro.setStyleSheet("color: #aab3c5;")
        layout.addWidget(self.intro)
        self.description = QLabel(graph_description(canvas))
        self.description.setObjectName("presentationDescription")
        self.description.setWordWrap(True)
        self.description.setFont(_font(15))
        self.description.setStyleSheet("color: #aab3c5;")
        self.description.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # the whole description: wrapped, and scrolled when it is taller than its share
        self.description_area = QScrollArea(self)
        self.description_area.setObjectName("presentationDescriptionArea")
        self.description_area.setWidget(self.description)
        self.description_area.setWidgetResizable(True)
        self.description_area.setFrameShape(QScrollArea.Shape.NoFrame)
        self.description_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.description_area.setStyleSheet(
            "QScrollArea, QScrollArea > QWidget > QWidget, QLabel { background: transparent; }"
            " QScrollBar:vertical { background: #1c2030; width: 10px; border: none; }"
            " QScrollBar::handle:vertical { background: #4a5263; border-radius: 5px;"
            " min-height: 24px; } QScrollBar::add-line, QScrollBar::sub-line { height: 0; }")
        self.description_area.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.description_area.setVisible(False)  # the engine's words: on demand (D)
        layout.addWidget(self.description_area)
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
        self.source_label = QLabel(self)
        self.source_label.setObjectName("presentationSource")
        self.source_label.setWordWrap(True)
        self.source_label.setFont(_font(18))
        self.source_label.setStyleSheet(f"color: {SOURCE}; border-left: 4px solid {SOURCE};"
                                        " padding: 6px 14px; background: #1c2230;")
        self.source_label.setVisible(False)
        layout.addWidget(self.source_label)
        bar = QHBoxLayout()
        self.counter = QLabel(self)
        self.counter.setFont(_font(16))
        self.prev_button = QPushButton("◀  Back", self)
        self.next_button = QPushButton("Next  ▶", self)
        self.close_button = QPushButton("Close (Esc)", self)
        self.mode_button = QPushButton(self)
        self.mode_button.setVisible(len(self.short_story) < len(self.all_steps))
        self.details_button = QPushButton("Details (D)", self)
        self.details_button.setObjectName("presentationDetails")
        self.details_button.setCheckable(True)
        self.details_button.setToolTip("Show the engine's words: node types, model names and "
                                       "the graph's description")
        self.details_button.toggled.connect(self.show_details)
        self.prev_button.clicked.connect(self.previous)
        self.next_button.clicked.connect(self.next)
        self.close_button.clicked.connect(self.close)
        self.mode_button.clicked.connect(self.toggle_story)
        bar.addWidget(self.counter, 1)
        for button in (self.details_button, self.mode_button, self.prev_button,
                       self.next_button, self.close_button):
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
        name = self.titles.get(visit.node_id) or visit.node_id
        engine = f" ({visit.type_id})" if self.details else ""
        self.heading.setText(f"Step {index + 1}: {name}{engine}"
                             f"  ·  {STATUS_WORDS.get(visit.status, visit.status)}")
        self.sentence.setText(sentence)
        self._show_evidence(visit.node_id, last=index == len(self.steps) - 1)
        self._show_source(visit.node_id)
        mode = "Story" if self.story_mode else "Every step"
        self.counter.setText(f"{mode} {index + 1} / {len(self.steps)}   ·   "
                             f"{self.trace.graph_name}")
        self.mode_button.setText(f"All {len(self.all_steps)} steps (A)" if self.story_mode
                                 else "Short story (A)")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.steps) - 1)
        self._focus(visit.node_id)
        self.step_changed.emit(index)

    def next(self) -> None:
        self.go(self.index + 1)

    def _build_steps(self) -> None:
        is_dot = getattr(self.canvas, "is_reroute", lambda _node_id: False)
        self.all_steps = [s for s in story(self.trace, self.titles, self.registry,
                                           plain=not self.details)
                          if not is_dot(s[0].node_id)]  # no reroute dots
        self.short_story = [self.all_steps[i]
                            for i in story_steps(self.all_steps, self.registry)]

    def show_details(self, shown: bool) -> None:
        """The engine's words (type ids, model names, the graph's description) or plain
        words, on the same step."""
        if shown == self.details:
            return
        self.details = shown
        self.details_button.setChecked(shown)
        self._build_steps()
        self.steps = self.short_story if self.story_mode else self.all_steps
        self.description_area.setVisible(shown and bool(self.description.text()))
        self._fit_description()
        if self.steps:
            self.go(self.index)

    def toggle_story(self) -> None:
        """The short story <-> every step, staying on the current step's node (or the story
        step before it)."""
        if len(self.short_story) >= len(self.all_steps):
            return
        current = self.steps[self.index][0] if 0 <= self.index < len(self.steps) else None
        self.story_mode = not self.story_mode
        self.steps = self.short_story if self.story_mode else self.all_steps
        order = [v for v, _s in self.all_steps]
        at = next((i for i, v in enumerate(order) if v is current), 0)
        index = 0
        for i, (visit, _s) in enumerate(self.steps):
            if next(j for j, v in enumerate(order) if v is visit) <= at:
                index = i
        self.go(index)

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

    def _show_source(self, node_id: str) -> None:
        """The passage the step's answer cites, opened under it ("" hides the box)."""
        text = self.sources(node_id) if self.sources is not None else ""
        self.source_label.setText(f"Source: {text}" if text else "")
        self.source_label.setVisible(bool(text))

    def graph_rect(self) -> QRectF:
        """Every node of the graph, with a margin (the first step's picture)."""
        editor = getattr(self.canvas, "editor", None)
        ids = editor.document().node_ids() if editor is not None else []
        rects = [r for r in (self.canvas.node_scene_rect(i) for i in ids) if r is not None]
        if not rects:
            return QRectF()
        whole = QRectF(rects[0])
        for rect in rects[1:]:
            whole = whole.united(rect)
        return whole.adjusted(-60, -60, 60, 60)

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
        whole = self.graph_rect() if self.index == 0 else QRectF()
        target = whole if not whole.isEmpty() else self.focus_rect(node_id)
        self.view.fitInView(target, Qt.AspectRatioMode.KeepAspectRatio)

    def refocus(self) -> None:
        """Frame the current step again for the view's size now (after a resize)."""
        if 0 <= self.index < len(self.steps):
            self._focus(self.steps[self.index][0].node_id)

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
        elif key == ALL_STEPS_KEY:
            self.toggle_story()
        elif key == DETAILS_KEY:
            self.show_details(not self.details)
        else:
            return False
        return True

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if not self.step_key(event.key()):
            super().keyPressEvent(event)

    def eventFilter(self, watched: Any, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress and self.step_key(event.key()):
            return True
        if watched is self.view and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self.refocus)  # full screen arrives after the first step
        return super().eventFilter(watched, event)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_description()

    def _fit_description(self) -> None:
        """The description's box: as tall as its text, up to a fifth of the window (then it
        scrolls)."""
        if not self.description.text():
            return
        width = max(200, self.description_area.viewport().width())
        needed = self.description.heightForWidth(width) + 4
        self.description_area.setFixedHeight(max(24, min(needed, self.height() // 5)))

    def closeEvent(self, event: Any) -> None:  # noqa: N802
        if self.highlight is not None and self.highlight.scene() is not None:
            self.highlight.scene().removeItem(self.highlight)
        self.highlight = None
        if self.view is not None:  # its zoom no longer sets the nodes' level of detail:
            self.view.hide()       # the nodes take the canvas's again (no paint asks them)
            editor = getattr(self.canvas, "editor", None)
            for node_id in editor.document().node_ids() if editor is not None else []:
                item = self.canvas.node_item(node_id)
                if item is not None and hasattr(item, "auto_switch_mode"):
                    item.auto_switch_mode()
        self.closed.emit()
        super().closeEvent(event)


def intro(trace: Trace) -> str:
    """One plain line under the heading: what the replay tells."""
    asked = next((str(v) for k, v in (trace.inputs or {}).items()
                  if k in ("question", "query") and str(v).strip()), "")
    quoted = " ".join(asked.split())
    if len(quoted) > 120:
        quoted = quoted[:119] + "…"
    return (f"How the answer to “{quoted}” was found, step by step." if quoted else
            "What this run did, step by step.")


def _font(points: int, bold: bool = False) -> QFont:
    font = QFont()
    font.setPointSize(points)
    font.setBold(bold)
    return font
