"""What a run warned about, as Problems entries and badges on the nodes.

A node's warnings (a loader's glob that left files out, chunks longer than the embedder
reads) stay listed until that node runs again: a node taken from the cache keeps the warnings
of the run that computed it. The run's notes about params written for another corpus are
those of the last run only.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject

from modrag_studio.engine.core.validation import Problem
from modrag_studio.engine.edit.editor import Change
from modrag_studio.engine.run.run_notes import note_problems, visit_warnings
from modrag_studio.ui.canvas.protocols import StudioShell
from modrag_studio.ui.run.controller import RunController


class RunProblems(QObject):
    """Feeds each finished run's warnings to the problems panel."""

    def __init__(self, shell: StudioShell, controller: RunController) -> None:
        super().__init__(shell)  # type: ignore[arg-type]
        self.shell = shell
        self.by_node: dict[str, list[Problem]] = {}
        self.notes: list[Problem] = []
        controller.run_finished.connect(self.run_finished)
        shell.editor.subscribe(self._document_changed)

    def run_finished(self, result: Any) -> None:
        self.by_node.update(visit_warnings(result.trace))
        self.notes = note_problems(result.trace)
        self._show()

    def _document_changed(self, change: Change) -> None:
        """Forget the warnings of nodes no longer in the graph (another graph opened)."""
        present = set(self.shell.editor.document().node_ids())
        gone = [node_id for node_id in self.by_node if node_id not in present]
        if gone or any(p.node_id not in present for p in self.notes):
            for node_id in gone:
                del self.by_node[node_id]
            self.notes = [p for p in self.notes if p.node_id in present]
            self._show()

    def _show(self) -> None:
        problems = [p for found in self.by_node.values() for p in found]
        self.shell.problems.set_run_problems(problems + self.notes)
