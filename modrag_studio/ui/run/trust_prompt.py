"""Before the first run of a graph that is not the user's own, show what it reaches: files
outside its folder and hosts other than this machine (``engine.trust``), and ask."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMainWindow, QMessageBox

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.trust.reach import Reach, approve_host, is_trusted, reach, trust
from modrag_studio.ui.run.delete_guard import install_delete_guard

SAMPLES = Path(__file__).resolve().parents[3] / "sample_graphs"


class TrustPrompt:
    """Guards ``controller.run`` of a window's run features; saved graphs become trusted."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window

    def graph_path(self) -> Path | None:
        path = getattr(self.window.editor, "path", None)
        return Path(path) if path is not None else None

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
                          "it reaches outside its folder:", parent=self.window)
        box.setInformativeText("\n".join(shown[:12]) + more)
        box.setStandardButtons(QMessageBox.StandardButton.Yes
                               | QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Yes).setText("Trust and run")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        return box

    def ask(self, path: Path, found: Reach) -> bool:
        """The dialog (tests replace this method)."""
        return self.message_box(path, found).exec() == QMessageBox.StandardButton.Yes


def install_trust_prompt(window: QMainWindow) -> TrustPrompt | None:
    """Ask before running an untrusted graph; trust graphs the user saves."""
    features = getattr(window, "run_features", None)
    if features is None:
        return None
    prompt = TrustPrompt(window)
    controller = features.controller
    run, save_to = controller.run, window.save_to

    def guarded_run(doc: GraphDocument, *args: Any, **kwargs: Any) -> bool:
        if not prompt.allowed(doc):
            window.statusBar().showMessage("Run cancelled: the graph is not trusted", 5000)
            return False
        return run(doc, *args, **kwargs)

    def save_and_trust(path: Path) -> bool:
        saved = save_to(path)
        if saved:
            trust(path)
        return saved

    controller.run = guarded_run
    window.save_to = save_and_trust
    window.trust_prompt = prompt
    install_delete_guard(window)
    return prompt
