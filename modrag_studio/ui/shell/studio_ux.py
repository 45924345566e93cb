"""Newcomer features of the main window: start page, graph settings dock, Help menu.

The canvas features (minimap, zoom controls, node menu, live progress) are their own
features in the composition root (``ui/shell/composition.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMessageBox

from modrag_studio.ui.shell.graph_settings import GraphSettingsPanel
from modrag_studio.ui.shell.start_page import StartPage

if TYPE_CHECKING:
    from modrag_studio.engine.edit.editor import Change
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.inspection.node_help import NodeHelpDialog

SHORTCUTS = """<table>
<tr><td><b>Tab</b></td><td>add a node by name at the cursor</td></tr>
<tr><td><b>Ctrl+C / Ctrl+V</b></td><td>copy / paste at the cursor</td></tr>
<tr><td><b>Ctrl+= / Ctrl+-</b></td><td>zoom in / out</td></tr>
<tr><td><b>F / Ctrl+0</b></td><td>fit the graph in the window</td></tr>
<tr><td><b>F1</b></td><td>help for the selected node</td></tr>
<tr><td><b>right-click a node</b></td><td>run to here, re-run, bypass, pin output, help</td></tr>
<tr><td><b>drop a wire on empty canvas</b></td><td>pick a compatible node, connected</td></tr>
<tr><td><b>Ctrl+B / Ctrl+Shift+B</b></td><td>bypass / pin the output of the selected nodes</td></tr>
<tr><td><b>double-click a wire</b></td><td>add a reroute point (Delete joins the wire)</td></tr>
<tr><td><b>presentation</b></td><td>Right/Space/PageDown next, Left/PageUp back, Esc</td></tr>
</table>"""


class StudioUX:
    """Holds the start page and panels added to one window."""

    def __init__(self, window: StudioShell) -> None:
        self.window = window
        self.help_dialog: NodeHelpDialog | None = None  # the last node help opened
        self.start_page = StartPage(window.canvas.view, window.recent_files)
        self.start_page.new_requested.connect(self.new_graph)
        self.start_page.open_requested.connect(window.open_dialog)
        self.start_page.path_chosen.connect(self.open_graph)
        self.start_page.sample_chosen.connect(self.open_sample)
        self.graph_settings = GraphSettingsPanel(window.editor)
        dock = window.add_dock("Graph", self.graph_settings,
                               Qt.DockWidgetArea.RightDockWidgetArea)
        window.docks["graph"] = dock
        dock.hide()  # shown once tabified: tabified while shown left a stale tab bar drawn
        self.qt_window.tabifyDockWidget(window.docks["properties"], dock)
        dock.show()
        window.docks["properties"].raise_()
        self._build_help_menu()
        self._developer_toggle()
        window.editor.subscribe(self._on_change)
        if self._graph_is_blank():
            self.start_page.show_over_canvas()
        else:
            self.start_page.hide()

    def _graph_is_blank(self) -> bool:
        editor = self.window.editor
        return editor.path is None and not editor.document().nodes

    @property
    def qt_window(self) -> QMainWindow:
        return self.window  # type: ignore[return-value]

    def _on_change(self, change: Change) -> None:
        if change.new.nodes or self.window.editor.path is not None:
            self.start_page.hide()

    def new_graph(self) -> None:
        self.window.new_document()
        self.start_page.hide()
        self.window.canvas.view.setFocus()

    def open_graph(self, path: Path) -> None:
        if self.window.ask_unsaved() and self.window.open_path(Path(path)):
            self.start_page.hide()

    def open_sample(self, path: Path) -> bool:
        """A sample as an untitled copy (its relative paths made absolute): saving asks
        where, so the shipped file is never changed."""
        from modrag_studio.engine.core.document import load
        from modrag_studio.engine.core.errors import ModragError
        from modrag_studio.engine.edit.copies import template_copy

        if not self.window.ask_unsaved():
            return False
        try:
            doc = template_copy(load(path), path, self.window.editor.registry)
        except ModragError as exc:
            self.window.show_message(f"Cannot open the sample {Path(path).name}: {exc}")
            return False
        self.window.editor.reset(doc, None)
        self.start_page.hide()
        QTimer.singleShot(0, self.window.canvas.fit_all)
        self.window.show_message(f"A copy of the sample {Path(path).name}: File > Save As "
                                 "keeps it where you choose")
        return True

    def show_start_page(self) -> None:
        self.start_page.show_over_canvas()

    def _developer_toggle(self) -> None:
        """View > Developer Nodes: the palette's and the Tab search's hidden category."""
        window = self.window
        action = QAction("&Developer Nodes", self.qt_window)
        action.setCheckable(True)
        action.setToolTip("Offer debug and test nodes (Fail, Sleep, Mutate input…)")
        window.menus["View"].addAction(action)
        window.actions["developer_nodes"] = action
        action.toggled.connect(window.palette.set_show_developer)
        window.palette.developer_box.toggled.connect(action.setChecked)
        window.palette.developer_box.toggled.connect(
            lambda shown: setattr(window.search_popup, "show_developer", shown))

    def _build_help_menu(self) -> None:
        window = self.window
        menu = window.menus.get("Help") or self.qt_window.menuBar().addMenu("&Help")
        window.menus["Help"] = menu
        entries = [
            ("help_start", "&Getting Started", self.show_start_page, None),
            ("help_node", "&Node Help", self.node_help, QKeySequence(Qt.Key.Key_F1)),
            ("help_keys", "&Keyboard Shortcuts", self.show_shortcuts, None),
            ("help_about", "&About ModRAG Studio", self.about, None),
        ]
        for key, text, slot, shortcut in entries:
            action = QAction(text, self.qt_window)
            if shortcut is not None:
                action.setShortcut(shortcut)
            action.triggered.connect(lambda _c=False, s=slot: s())
            menu.addAction(action)
            window.actions[key] = action

    def node_help(self, node_id: str | None = None) -> None:
        from modrag_studio.ui.inspection.node_help import show_node_help

        ids = [node_id] if node_id else self.window.canvas.selected_node_ids()
        if not ids:
            self.window.show_message("Select a node first, then press F1 for its help.")
            return
        self.help_dialog = show_node_help(self.window, ids[0]) or self.help_dialog

    def show_shortcuts(self) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.Information, "Keyboard shortcuts", SHORTCUTS,
                          QMessageBox.StandardButton.Ok, self.qt_window)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        return box

    def about(self) -> None:
        QMessageBox.about(self.qt_window, "About ModRAG Studio",
                          "ModRAG Studio: design, run and debug RAG pipelines as typed node "
                          "graphs. See README.md and docs/studio-editor.md.")
