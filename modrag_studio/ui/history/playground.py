"""The playground: a chat over the graph on the canvas, for graphs that take a question.

Each turn is a run through the window's run controller (off the GUI thread, cancellable, the
pre-run guards asked, the canvas mirroring it), with the question in the graph's question
input and, when the graph has a ``history`` input, the earlier turns as a JSON chat history
(``prompt.build`` puts them in the prompt). Every turn lands in the run history with its
conversation and turn number, so a conversation is saved with the graph's runs and can be
opened again. Citations in an answer are links: clicking one opens its chunk in the
inspector, as a citation on an answer card does.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.datatypes import Answer
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.graph_io import graph_input_names
from modrag_studio.engine.history.store import RunRecord
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.reporting.answer_view import HISTORY_INPUT, question_input

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.history.feature import RunHistoryFeature
    from modrag_studio.ui.run.run_side import RunSide


@dataclass
class Turn:
    question: str
    text: str = ""
    answer: Answer | None = None
    status: str = "running"
    run_id: str = ""


class Playground(QWidget):
    """The chat panel (a dock of the window)."""

    def __init__(self, window: StudioShell, run: RunSide, history: RunHistoryFeature
                 ) -> None:
        super().__init__()
        self.shell, self.run, self.history = window, run, history
        self.conversation = uuid.uuid4().hex[:12]
        self.turns: list[Turn] = []
        self.pending = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.conversations = QComboBox()
        self.conversations.setToolTip("Earlier conversations with this graph (from its runs)")
        self.new_button = QPushButton("New conversation")
        top.addWidget(self.conversations, 1)
        top.addWidget(self.new_button)
        layout.addLayout(top)
        self.notice = QLabel("")
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("color: #c8a040")
        layout.addWidget(self.notice)
        self.transcript = QTextBrowser()
        self.transcript.setObjectName("playgroundTranscript")
        self.transcript.setOpenLinks(False)
        self.transcript.anchorClicked.connect(self.open_link)
        layout.addWidget(self.transcript, 1)
        row = QHBoxLayout()
        self.input = QLineEdit()
        self.input.setPlaceholderText("Ask the graph… (Enter sends; follow-ups keep the "
                                      "conversation)")
        self.send_button = QPushButton("Send")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        row.addWidget(self.input, 1)
        row.addWidget(self.send_button)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.input.returnPressed.connect(self.send)
        self.send_button.clicked.connect(self.send)
        self.cancel_button.clicked.connect(run.controller.cancel)
        self.new_button.clicked.connect(self.new_conversation)
        self.conversations.activated.connect(self._conversation_chosen)
        history.recorded.connect(self._recorded)
        run.controller.run_error.connect(self._failed)
        run.controller.busy_changed.connect(self._busy)
        self.render()  # the earlier conversations are listed when the dock is first seen

    # sending ---------------------------------------------------------------------------------
    def inputs_of(self, question: str) -> dict[str, Any] | None:
        """The run's inputs for ``question``: the run bar's values (corpus and the rest), the
        question, and the earlier turns when the graph takes a history (None, said in the
        notice, when the graph takes no question)."""
        doc = self.run.document()
        names = graph_input_names(doc, self.shell.registry)
        name = question_input(names)
        if name is None:
            self.notice.setText("This graph has no question input (an input named question "
                                "or query): the playground needs one.")
            return None
        inputs = {**self.run.run_bar.values(), name: question}
        if HISTORY_INPUT in names:
            inputs[HISTORY_INPUT] = json.dumps(self.history_messages(), ensure_ascii=False)
            self.notice.setText("")
        else:
            inputs.pop(HISTORY_INPUT, None)
            self.notice.setText("This graph has no 'history' input: each question is answered "
                                "on its own (wire a graph input named history into "
                                "the prompt node's history port for follow-ups).")
        return inputs

    def history_messages(self) -> list[dict[str, str]]:
        """The finished turns as chat messages, oldest first."""
        messages = []
        for turn in self.turns:
            if turn.status == "ok" and turn.text:
                messages += [{"role": "user", "content": turn.question},
                             {"role": "assistant", "content": turn.text}]
        return messages

    def send(self, question: str | None = None) -> bool:
        question = (question if isinstance(question, str) else self.input.text()).strip()
        if not question or self.pending:
            return False
        inputs = self.inputs_of(question)
        if inputs is None:
            return False
        context = {"origin": "playground", "conversation": self.conversation,
                   "turn": len(self.turns)}
        if not self.history.start(inputs, "Playground", context):
            return False
        self.pending = True
        self.turns.append(Turn(question))
        self.input.clear()
        self.render()
        return True

    def _busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy and self.pending)
        self.send_button.setEnabled(not busy)

    def _recorded(self, record: RunRecord, result: RunResult) -> None:
        if record.conversation != self.conversation or not self.turns or not self.pending:
            return
        self.pending = False
        turn = self.turns[-1]
        answer = result.shared_outputs.get("answer")
        turn.answer = answer if isinstance(answer, Answer) else None
        turn.text = record.answer
        turn.status, turn.run_id = record.status, record.run_id
        if record.status != "ok":
            turn.text = result.trace.failure_summary(record.status)
        self.render()
        self.refresh_conversations()

    def _failed(self, message: str) -> None:
        if self.pending and self.turns:
            self.pending = False
            self.turns[-1].status, self.turns[-1].text = "failed", message
            self.render()

    # showing ---------------------------------------------------------------------------------
    def render(self) -> None:
        if not self.turns:
            self.transcript.setHtml("<p style='color:#888'>Ask a question; the graph answers "
                                    "with citations you can click. Follow-up questions see "
                                    "the conversation so far.</p>")
            return
        parts = []
        for index, turn in enumerate(self.turns):
            parts.append(f"<p style='margin:8px 0 2px 0'><b>You:</b> {escape(turn.question)}"
                         "</p>")
            if turn.status == "running":
                parts.append("<p style='color:#888'><i>running…</i></p>")
                continue
            colour = "" if turn.status == "ok" else " style='color:#e06c75'"
            parts.append(f"<p{colour}><b>Graph:</b> {escape(turn.text)}</p>")
            citations = turn.answer.citations if turn.answer is not None else []
            links = [f"<a href='cite:{index}:{n}'>[{escape(c.ref)}] "
                     f"{escape(c.doc_id or c.chunk_id or '')}</a>"
                     for n, c in enumerate(citations)]
            if links:
                parts.append("<p style='margin-left:12px'>Sources: " + " · ".join(links)
                             + "</p>")
        self.transcript.setHtml("".join(parts))
        bar = self.transcript.verticalScrollBar()
        bar.setValue(bar.maximum())

    def open_link(self, url: QUrl) -> bool:
        """A citation link: its chunk in the inspector's Source tab (and on the canvas)."""
        kind, _, rest = url.toString().partition(":")
        turn_index, _, number = rest.partition(":")
        if kind != "cite" or not turn_index.isdigit() or not number.isdigit():
            return False
        turn = self.turns[int(turn_index)] if int(turn_index) < len(self.turns) else None
        if turn is None or turn.answer is None or int(number) >= len(turn.answer.citations):
            return False
        inspector = self.run.inspector
        inspector.show()
        inspector.raise_()
        inspector.open_citation(turn.answer.citations[int(number)], turn.answer.evidence)
        return True

    # conversations ---------------------------------------------------------------------------
    def new_conversation(self) -> None:
        self.conversation = uuid.uuid4().hex[:12]
        self.turns = []
        self.pending = False
        self.render()
        self.refresh_conversations()

    def refresh_conversations(self) -> None:
        """The graph's earlier conversations (first question of each), newest first."""
        firsts: dict[str, str] = {}
        for record in self.history.store.runs(self.history.graph(), limit=2000):
            if record.conversation and record.origin == "playground":
                firsts[record.conversation] = record.question  # oldest turn is seen last
        self.conversations.blockSignals(True)
        self.conversations.clear()
        self.conversations.addItem("(this conversation)", self.conversation)
        for conversation, question in firsts.items():
            if conversation != self.conversation:
                self.conversations.addItem(question[:80], conversation)
        self.conversations.blockSignals(False)

    def _conversation_chosen(self, index: int) -> None:
        conversation = self.conversations.itemData(index)
        if conversation and conversation != self.conversation:
            self.open_conversation(conversation)

    def open_conversation(self, conversation: str) -> None:
        """Continue an earlier conversation: its turns read back from the history."""
        records = sorted(self.history.store.runs(conversation=conversation),
                         key=lambda r: r.turn)
        turns = []
        for record in records:
            answer = None
            try:
                value = self.history.store.load(record.run_id).result.shared_outputs.get(
                    "answer")
                answer = value if isinstance(value, Answer) else None
            except ModragError:
                pass
            turns.append(Turn(record.question, record.answer, answer, record.status,
                              record.run_id))
        self.conversation, self.turns, self.pending = conversation, turns, False
        self.render()
        self.refresh_conversations()


class PlaygroundDock:
    """The playground as a dock (tabbed with the properties panel) and its View menu entry."""

    def __init__(self, window: StudioShell, run: RunSide, history: RunHistoryFeature
                 ) -> None:
        qt_window: QMainWindow = window  # type: ignore[assignment]
        self.panel = Playground(window, run, history)
        self.dock = QDockWidget("Playground", qt_window)
        self.dock.setObjectName("dock_playground")
        self.dock.setWidget(self.panel)
        qt_window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        if "properties" in window.docks:
            qt_window.tabifyDockWidget(window.docks["properties"], self.dock)
            window.docks["properties"].raise_()
        if "View" in window.menus:
            window.menus["View"].addAction(self.dock.toggleViewAction())
        window.editor.subscribe(self._document_changed)
        self.dock.visibilityChanged.connect(
            lambda visible: visible and self.panel.refresh_conversations())

    def _document_changed(self, change: Any = None) -> None:
        if getattr(change, "kind", "") == "reset":
            self.panel.new_conversation()

    def show(self) -> None:
        self.dock.show()
        self.dock.raise_()
        window = self.dock.parentWidget()
        if isinstance(window, QMainWindow):
            window.resizeDocks([self.dock], [520], Qt.Orientation.Vertical)
