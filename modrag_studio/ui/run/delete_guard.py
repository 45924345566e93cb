"""When a run stops because a store would delete most of its collection, ask; if the user
agrees, run once more with that store allowed to delete (the graph itself is unchanged)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMainWindow, QMessageBox, QWidget

from modrag_studio.engine.core.document import GraphDocument

MARKER = "--allow-delete"


class DeleteGuard:
    """After a run: a store that stopped before deleting most of its collection asks, and the
    run goes again with that store allowed to delete (the controller's guards apply again)."""

    def __init__(self, window: QMainWindow, controller: Any) -> None:
        self.window = window
        self.controller = controller
        controller.run_finished.connect(self.on_finished)

    def on_finished(self, result: Any) -> None:
        guarded = self.controller.registry.type_ids(  # vector stores: 'max_delete_share'
            where=lambda t: t.store_role == "vector")
        stopped = [v for v in result.trace.visits if v.type_id in guarded
                   and v.error is not None and MARKER in v.error.message]
        request = self.controller.last_request
        if not stopped or request is None or not self.ask(stopped[0].error.message):
            return
        doc = allow_deletes_once(request.doc, [v.node_id for v in stopped])
        QTimer.singleShot(0, lambda: self.controller.run(
            doc, request.inputs, target=request.target, rerun=request.rerun,
            start_from=request.start_from, base_dir=request.base_dir,
            pins_graph=request.pins_graph))

    def message_box(self, message: str) -> QMessageBox:
        return delete_question(self.window, message, "run")

    def ask(self, message: str) -> bool:
        """The question (tests replace this method)."""
        return self.message_box(message).exec() == QMessageBox.StandardButton.Yes


def delete_question(parent: QWidget, message: str, again: str) -> QMessageBox:
    """"Delete indexed chunks?" for a store's delete-guard ``message``; its Yes button says
    "Delete and <again>" (run, index)."""
    text = message.split("; check the corpus path")[0]
    box = QMessageBox(QMessageBox.Icon.Question, "Delete indexed chunks?",
                      f"{text}.\n\nIs the corpus path right? Delete them and {again} again?",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                      parent)
    box.button(QMessageBox.StandardButton.Yes).setText(f"Delete and {again}")
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return box


def allow_deletes_once(doc: GraphDocument, node_ids: list[str]) -> GraphDocument:
    """A copy of ``doc`` whose stores ``node_ids`` may delete any share of their collection."""
    copy = doc.model_copy(deep=True)
    for spec in copy.nodes:
        if spec.id in node_ids:
            spec.params["max_delete_share"] = 1.0
    return copy
