"""Before the first run of a graph that is not the user's own, show what it reaches: files
outside its folder and hosts other than this machine (``engine.trust``), and ask."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.trust.reach import Reach, approve_host, is_trusted, reach, trust
from modrag_studio.ui.run.controller import RunRequest
from modrag_studio.ui.run.protocols import StudioWindow

SAMPLES = Path(__file__).resolve().parents[3] / "sample_graphs"


class TrustPrompt:
    """A pre-run guard (``allows``) and an after-save step (``saved``): a graph received from
    elsewhere asks before it runs; a graph the user saves becomes trusted."""

    def __init__(self, window: StudioWindow) -> None:
        self.window = window

    def graph_path(self) -> Path | None:
        path = self.window.editor.path
        return Path(path) if path is not None else None

    def allows(self, request: RunRequest) -> bool:
        """The guard: False (with a status message) when the user does not trust the graph."""
        if self.allowed(request.doc):
            return True
        self.window.statusBar().showMessage("Run cancelled: the graph is not trusted", 5000)
        return False

    def saved(self, path: Path) -> None:
        trust(path)

    def allowed(self, doc: GraphDocument) -> bool:
        path = self.graph_path()
        if path is None or not path.is_file() or is_trusted(path):
            return True  # a new graph (the user's own) or one trusted before
        if Path(os.path.realpath(path)).parent == SAMPLES.resolve():
            return True
        found = reach(doc, self.window.registry, path)
        if not found.empty and not self.ask(path, found):
            return False
        for _, host in found.hosts:
            approve_host(host)
        trust(path)
        return True

    def message_box(self, path: Path, found: Reach) -> QMessageBox:
        shown = found.lines()
        more = f"\n… and {len(shown) - 12} more" if len(shown) > 12 else ""
        box = QMessageBox(QMessageBox.Icon.Warning, "Run a graph from elsewhere?",
                          f"{path.name} was not made or run here. Before it runs, check what "
                          "it reaches outside its folder:", parent=self.window)  # type: ignore[arg-type]
        box.setInformativeText("\n".join(shown[:12]) + more)
        box.setStandardButtons(QMessageBox.StandardButton.Yes
                               | QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Yes).setText("Trust and run")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        return box

    def ask(self, path: Path, found: Reach) -> bool:
        """The dialog (tests replace this method)."""
        return self.message_box(path, found).exec() == QMessageBox.StandardButton.Yes
