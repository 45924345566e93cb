"""Edit > Make Answers Safe: a grounding check and a refusal after each answer that reaches an
output unchecked (``engine/evidence/safety``), as one undoable edit. The problems panel lists
such an answer as a warning on its parser; this is the one click that resolves it."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction

from modrag_studio.composition import SAFE_ANSWERS
from modrag_studio.engine.evidence.safety import make_safe, unchecked_answers
from modrag_studio.ui.canvas.protocols import StudioShell

LABEL = "Make Answers Safe"


class AnswerSafety(QObject):
    """The Edit menu's Make Answers Safe action."""

    def __init__(self, shell: StudioShell) -> None:
        super().__init__(shell)  # type: ignore[arg-type]
        self.shell = shell
        self.action = QAction("Make &Answers Safe", shell)  # type: ignore[arg-type]
        self.action.setToolTip("Adds a grounding check and a refusal after every answer that "
                               "reaches an output unchecked (the Problems panel lists them)")
        self.action.triggered.connect(lambda _checked=False: self.make_safe())
        shell.menus["Edit"].addSeparator()
        shell.menus["Edit"].addAction(self.action)
        shell.actions["make_answers_safe"] = self.action

    def make_safe(self) -> None:
        editor = self.shell.editor
        doc = editor.document()
        unsafe = [p.node_id for p in unchecked_answers(doc, self.shell.registry)]
        safe = make_safe(doc, self.shell.registry, SAFE_ANSWERS)
        if safe is doc:
            self.shell.show_message("Every answer of this graph already passes a check.")
            return
        editor.replace(LABEL, safe)  # type: ignore[attr-defined]
        added = sorted(set(safe.node_ids()) - set(doc.node_ids()))
        self.shell.show_message(
            f"Added {', '.join(added)} after {', '.join(filter(None, unsafe))}: an answer the "
            "evidence does not state is sent back once, then refused (Edit > Undo removes them).")
