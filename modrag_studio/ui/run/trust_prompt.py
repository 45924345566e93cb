"""Before the first run of a graph that is not the user's own, show what it reaches: files
outside its folder and hosts other than this machine (``engine.trust``), and ask."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.formatting import shown as display
from modrag_studio.engine.trust.gate import accept, disclosure
from modrag_studio.engine.trust.reach import Reach, trust
from modrag_studio.ui.canvas.protocols import StudioWindow
from modrag_studio.ui.run.controller import RunRequest


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
        """Whether ``doc`` (what is about to run: the graph, a variant applied) may run. The
        list covers it and the document of the graph file (every stored variant), since
        consent trusts the file."""
        path = self.graph_path()
        found = disclosure([doc, self.window.editor.document()], self.window.registry, path)
        if found is None:
            return True  # the user's own graph (new, saved or run here) or a sample
        assert path is not None
        if not found.empty and not self.ask(path, found):
            return False
        accept(path, found)
        return True

    def message_box(self, path: Path, found: Reach) -> QMessageBox:
        shown = found.lines()
        more = f"\n… and {len(shown) - 12} more" if len(shown) > 12 else ""
        box = QMessageBox(QMessageBox.Icon.Warning, "Run a graph from elsewhere?",
                          f"{display(path.name)} was not made or run here. Before it runs, "
                          "check what it reaches outside its folder:",
                          parent=self.window)  # type: ignore[arg-type]
        box.setTextFormat(Qt.TextFormat.PlainText)  # a name holding markup is shown as it is
        box.setInformativeText("\n".join(shown[:12]) + more)
        box.setStandardButtons(QMessageBox.StandardButton.Yes
                               | QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Yes).setText("Trust and run")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        return box

    def ask(self, path: Path, found: Reach) -> bool:
        """The dialog (tests replace this method)."""
        return self.message_box(path, found).exec() == QMessageBox.StandardButton.Yes
