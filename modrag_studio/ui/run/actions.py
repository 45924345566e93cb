"""The run actions (Run, Run to node, Re-run node, Cancel, Replay Recorded Calls) and the run
bar that feeds them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.topology import Topology
from modrag_studio.engine.run.pins import graph_key
from modrag_studio.ui.canvas.protocols import StudioWindow
from modrag_studio.ui.run.bar import RunBar
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.run.mirror import RunMirror


def make_action(window: StudioWindow, text: str, slot: Callable[[], Any],
                shortcut: str | None = None, tip: str = "", name: str = "") -> QAction:
    action = QAction(text, window)  # type: ignore[call-overload]
    action.setObjectName(name or text)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
    action.setStatusTip(tip or text)
    action.setToolTip(f"{tip or text} ({shortcut})" if shortcut else (tip or text))
    action.triggered.connect(lambda checked=False: slot())
    return action


class RunActions:
    """Starts and cancels runs of the window's graph with the run bar's values."""

    def __init__(self, window: StudioWindow, controller: RunController, mirror: RunMirror,
                 status: Callable[[str, int], None]) -> None:
        self.window = window
        self.controller = controller
        self.mirror = mirror
        self.status = status
        self.document_source: Callable[[], GraphDocument] = window.editor.document
        self.run_bar = RunBar(window, settings=window.settings,  # type: ignore[arg-type]
                              registry=window.registry)
        a = make_action
        self.run_action = a(window, "Run", self.run, "F5", "Run the whole graph", "runAction")
        self.run_to_action = a(window, "Run to node", self.run_to_selected, "Shift+F5",
                               "Run the selected node and what it needs", "runToAction")
        self.rerun_action = a(window, "Re-run node", self.rerun_selected, "Ctrl+F5",
                              "Re-run the selected node and everything after it",
                              "rerunAction")
        self.cancel_action = a(window, "Cancel", self.cancel, "Ctrl+.",
                               "Stop the run at the next batch boundary", "cancelAction")
        self.cancel_action.setEnabled(False)
        self.replay_calls_action = a(
            window, "Replay Recorded Calls…", self.replay_calls, None,
            "Run the graph answering its model calls from a file written by modrag run "
            "--record-calls: no model is loaded, the recorded answers come back at once",
            "replayCallsAction")
        controller.busy_changed.connect(self._busy)
        self.run_bar.submitted.connect(self.run)

    @property
    def actions(self) -> list[QAction]:
        return [self.run_action, self.run_to_action, self.rerun_action, self.cancel_action]

    # the document -------------------------------------------------------------------------
    def document(self) -> GraphDocument:
        """What a run runs: the active variant applied to the base (``document_source``,
        set by the composition root to the variants' ``applied``), else the editor's graph."""
        return self.document_source()

    def graph_key(self, doc: GraphDocument) -> str:
        path = self.window.editor.path
        return str(Path(path).resolve()) if path else f"name:{doc.metadata.name}"

    def refresh_inputs(self, keep_typed: bool = True) -> GraphDocument:
        doc = self.document()
        self.run_bar.set_document(doc, self.graph_key(doc), keep=keep_typed)
        return doc

    # actions ------------------------------------------------------------------------------
    def run(self, *, target: str | None = None, rerun: list[str] | None = None,
            start_from: str | None = None, replay_calls: str | None = None) -> bool:
        if self.controller.busy:
            self.status("A run is already going; cancel it first.", 4000)
            return False
        doc = self.refresh_inputs()
        self.run_bar.remember()
        self.mirror.last_error = ""
        self.status(f"Replaying the calls of {Path(replay_calls).name}…" if replay_calls
                    else "Running…", 0)
        path = self.window.editor.path
        return self.controller.run(doc, self.run_bar.values(), target=target,
                                   rerun=rerun or [], start_from=start_from,
                                   base_dir=Path(path).parent if path else None,
                                   pins_graph=graph_key(doc, path), replay_calls=replay_calls)

    def replay_calls(self) -> bool:
        """Run the graph with the run bar's values, its model calls answered from a chosen
        recorded-calls file; a call the file lacks fails its node with a diff of the request."""
        chosen = self.choose_calls_file()
        return bool(chosen) and self.run(replay_calls=chosen)

    def choose_calls_file(self) -> str:
        """The recorded-calls file to replay ('' when the dialog was cancelled)."""
        chosen, _ = QFileDialog.getOpenFileName(self.window, "Replay Recorded Calls",
                                                "", "Recorded calls (*.json);;All files (*)")
        return chosen

    def _selected(self) -> str | None:
        ids = self.window.canvas.selected_node_ids()
        if not ids:
            self.status("Select a node first.", 4000)
            return None
        return ids[0]

    def run_to_selected(self) -> bool:
        node_id = self._selected()
        return bool(node_id) and self.run(target=node_id)

    def rerun_selected(self) -> bool:
        node_id = self._selected()
        if not node_id:
            return False
        after = sorted(Topology.of(self.document()).downstream(node_id))
        result = self.controller.last_result
        if result is not None and any(k[0] == node_id for k in result.node_outputs):
            return self.run(start_from=node_id, rerun=[node_id, *after])
        return self.run(rerun=[node_id, *after])

    def cancel(self) -> None:
        if self.controller.busy:
            self.controller.cancel()
            self.status("Cancelling at the next batch boundary…", 0)

    def _busy(self, busy: bool) -> None:
        self.cancel_action.setEnabled(busy)
        for action in (self.run_action, self.run_to_action, self.rerun_action,
                       self.replay_calls_action):
            action.setEnabled(not busy)
