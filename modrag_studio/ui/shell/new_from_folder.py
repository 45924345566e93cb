"""File > New Graph from Folder… (and the start page's button): the recommended pipeline on
a folder the user picks, opened as an untitled graph and indexed right away in the Index
Corpus dialog, whose bars show the progress.

The graph is ``modrag new --from-folder``'s (``commands/index_command.py``): the same file the
command line writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMainWindow

from modrag_studio.commands.index_command import FolderSurvey, graph_from_folder
from modrag_studio.engine.core.errors import ModragError

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.run.index_dialog import IndexAction, IndexDialog
    from modrag_studio.ui.shell.studio_ux import StudioUX


class NewFromFolder:
    """Builds the graph on a chosen folder, opens it and starts indexing it."""

    def __init__(self, window: StudioShell, studio_ux: StudioUX, index: IndexAction) -> None:
        self.window = window
        self.studio_ux = studio_ux
        self.index = index
        self.survey: FolderSurvey | None = None  # what the last folder held
        qt_window: QMainWindow = window  # type: ignore[assignment]
        self.action = QAction("New Graph from &Folder…", qt_window)
        self.action.setObjectName("newFromFolderAction")
        self.action.setStatusTip("The recommended pipeline on a folder of your documents: "
                                 "hybrid retrieval, evidence focus, grounding check; indexed "
                                 "right away")
        self.action.triggered.connect(lambda: self.start())
        menu = window.menus["File"]
        after_new = window.actions.get("new")
        following = menu.actions()
        position = following.index(after_new) + 1 if after_new in following else 0
        if position < len(following):
            menu.insertAction(following[position], self.action)
        else:
            menu.addAction(self.action)
        window.actions["new_from_folder"] = self.action
        studio_ux.start_page.folder_requested.connect(lambda: self.start())

    def choose_folder(self) -> Path | None:
        """The folder the user picks (tests replace this method)."""
        chosen = QFileDialog.getExistingDirectory(self.window, "Folder of your documents")
        return Path(chosen) if chosen else None

    def start(self, folder: Path | None = None) -> IndexDialog | None:
        """Build the graph on ``folder`` (asked when None), open it and start indexing; None
        when the user cancelled or the folder holds nothing to load (said in the status)."""
        folder = folder or self.choose_folder()
        if folder is None or not self.window.ask_unsaved():
            return None
        try:
            doc, self.survey = graph_from_folder(folder)
        except (ModragError, OSError) as exc:
            self.window.show_message(f"Cannot build a graph on {folder}: {exc}")
            return None
        self.window.editor.reset(doc, None, dirty=True)  # unsaved work: autosaved, asked on close
        self.studio_ux.start_page.hide()
        QTimer.singleShot(0, self.window.canvas.fit_all)
        self.window.show_message(f"New graph on {Path(folder).name}: {self.survey.describe()}. "
                                 "Indexing it now; File > Save As keeps the graph.")
        dialog = self.index.open()
        dialog.corpus.setText(str(Path(folder).resolve()))
        dialog.start()
        return dialog
