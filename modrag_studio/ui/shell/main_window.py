"""The studio's main window: canvas, palette, properties, problems, files, exports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QCursor, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QInputDialog,
    QMainWindow,
    QMenu,
    QMessageBox,
    QToolBar,
)

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.edit.clipboard import fragment_corner
from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.engine.layout.auto_layout import auto_layout
from modrag_studio.ui.canvas.adapter import CanvasAdapter
from modrag_studio.ui.canvas.items import GroupItem, LayoutItem, NoteItem
from modrag_studio.ui.canvas.protocols import AfterSave
from modrag_studio.ui.panels.palette import NodePalette, NodeSearchPopup, node_type_from_mime
from modrag_studio.ui.panels.problems import ProblemsPanel
from modrag_studio.ui.panels.properties import PropertiesPanel
from modrag_studio.ui.run.controller import RunController
from modrag_studio.ui.shell import exports, files
from modrag_studio.ui.shell.composition import StudioFeatures, compose
from modrag_studio.ui.shell.deferred_layout import LayoutAfterFirstPaint
from modrag_studio.ui.shell.window_files import APP_NAME, DocumentFiles

NODE_COLOURS: dict[str, str | None] = {
    "Default": None, "Red": "#7a3030", "Orange": "#7a5a25", "Green": "#2f6a3a",
    "Blue": "#2f4f7a", "Purple": "#5a3a7a", "Grey": "#505050",
}


def default_settings() -> QSettings:
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                     "modrag-studio", "studio")


GEOMETRY_KEY, STATE_KEY = "window/geometry", "window/state"
LAYOUT_VERSION = 1  # bump when docks change so an old saved state is not applied


class MainWindow(DocumentFiles, QMainWindow):
    """The editor window: owns the editor, canvas, run controller, docks, menus and settings;
    its features (``self.features``) are built by ``ui/shell/composition.py``."""

    def __init__(
        self,
        registry: NodeRegistry | None = None,
        path: str | Path | None = None,
        *,
        settings: QSettings | None = None,
        offer_restore: bool = True,
    ) -> None:
        super().__init__()
        self.registry = registry or default_registry()
        self.settings = settings or default_settings()
        self.last_error = ""
        self.active_variant: str | None = None  # named in the title (``show_variant``)
        self.editor = GraphEditor(self.registry)
        self.canvas = CanvasAdapter(self.editor, self.registry)
        self.deferred_layout = LayoutAfterFirstPaint(self.editor, self.canvas.view.viewport(),
                                                     self.canvas.fit_all)
        self.controller = RunController(self.registry, self)
        self.after_save: list[AfterSave] = []  # told of every successful save, in order
        self.setCentralWidget(self.canvas.view)
        self.palette = NodePalette(self.registry)
        self.properties = PropertiesPanel(self.editor, variant=self.canvas.variant)
        self.properties.setMinimumHeight(240)
        self.problems = ProblemsPanel(self.editor)
        self.docks = {
            "palette": self.add_dock("Nodes", self.palette, Qt.DockWidgetArea.LeftDockWidgetArea),
            "properties": self.add_dock("Properties", self.properties,
                                        Qt.DockWidgetArea.RightDockWidgetArea),
            "problems": self.add_dock("Problems", self.problems,
                                      Qt.DockWidgetArea.BottomDockWidgetArea),
        }
        self.search_popup = NodeSearchPopup(self.registry, self.canvas.view)
        self._search_scene_pos = QPointF()
        self.run_toolbar = QToolBar("Run", self)
        self.run_toolbar.setObjectName("run_toolbar")
        self.addToolBar(self.run_toolbar)
        self.menus: dict[str, QMenu] = {
            name: self.menuBar().addMenu(f"&{name}") for name in ("File", "Edit", "View", "Run")
        }
        self.actions: dict[str, QAction] = {}
        self._build_file_menu()
        self._build_edit_menu()
        self._build_view_menu()
        self._wire()
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setInterval(files.AUTOSAVE_INTERVAL_MS)
        self._autosave_timer.timeout.connect(self.autosave_now)
        self._autosave_timer.start()
        self.resize(1400, 860)
        self.resizeDocks([self.docks["palette"], self.docks["properties"]], [210, 320],
                         Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["problems"]], [150], Qt.Orientation.Vertical)
        self.statusBar().showMessage("Ready", 3000)
        if path is not None:
            self.open_path(Path(path), offer_restore=offer_restore)
        elif offer_restore:
            self._offer_untitled_restore()
        self.problems.refresh()
        self._update_title()
        self.features: StudioFeatures = compose(self)
        self.restore_layout()

    # --- window layout (remembered between sessions) ----------------------------------------
    def restore_layout(self) -> bool:
        """The window's size, position, docks and toolbars as the user left them."""
        geometry = self.settings.value(GEOMETRY_KEY)
        state = self.settings.value(STATE_KEY)
        restored = bool(geometry) and self.restoreGeometry(geometry)
        return bool(state) and self.restoreState(state, LAYOUT_VERSION) or restored

    def remember_layout(self) -> None:
        self.settings.setValue(GEOMETRY_KEY, self.saveGeometry())
        self.settings.setValue(STATE_KEY, self.saveState(LAYOUT_VERSION))
        self.settings.sync()

    # --- construction ----------------------------------------------------------------------

    def add_dock(self, title: str, widget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower()}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, menu: str, key: str, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _checked=False: slot())
        self.menus[menu].addAction(action)
        self.actions[key] = action
        return action

    def _build_file_menu(self) -> None:
        self._action("File", "new", "&New", self.new_document, QKeySequence.StandardKey.New)
        self._action("File", "open", "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = self.menus["File"].addMenu("Open &Recent")
        self._action("File", "save", "&Save", self.save, QKeySequence.StandardKey.Save)
        self._action("File", "save_as", "Save &As…", self.save_as,
                     QKeySequence.StandardKey.SaveAs)
        export_menu = self.menus["File"].addMenu("&Export")
        for kind, (label, _filter, _suffix) in exports.EXPORT_KINDS.items():
            action = export_menu.addAction(label)
            action.triggered.connect(lambda _c=False, k=kind: self.export_dialog(k))
            self.actions[f"export_{kind}"] = action
        self.menus["File"].addSeparator()
        self._action("File", "quit", "&Quit", self.close, QKeySequence.StandardKey.Quit)
        self._rebuild_recent_menu()

    def _build_edit_menu(self) -> None:
        self._action("Edit", "undo", "&Undo", self.editor.undo, QKeySequence.StandardKey.Undo)
        self._action("Edit", "redo", "&Redo", self.editor.redo, QKeySequence.StandardKey.Redo)
        self.menus["Edit"].addSeparator()
        self._action("Edit", "cut", "Cu&t", self.cut, QKeySequence.StandardKey.Cut)
        self._action("Edit", "copy", "&Copy", self.copy, QKeySequence.StandardKey.Copy)
        self._action("Edit", "paste", "&Paste", self.paste, QKeySequence.StandardKey.Paste)
        self._action("Edit", "duplicate", "D&uplicate", self.duplicate, "Ctrl+D")
        self._action("Edit", "delete", "&Delete", self.delete_selection,
                     QKeySequence.StandardKey.Delete)
        self._action("Edit", "select_all", "Select &All", self.select_all,
                     QKeySequence.StandardKey.SelectAll)
        self.menus["Edit"].addSeparator()
        self._action("Edit", "group", "&Group Selection…", self.group_selection, "Ctrl+G")
        self._action("Edit", "note", "Add &Note…", self.add_note, "Ctrl+Shift+N")

    def _build_view_menu(self) -> None:
        self._action("View", "fit", "&Fit Graph", self.canvas.fit_all, "F")
        self._action("View", "auto_layout", "&Auto Layout", self.auto_layout, "Ctrl+L")
        self._action("View", "search", "Add Node by &Search", self.open_node_search)
        self.menus["View"].addSeparator()
        for dock in self.docks.values():
            self.menus["View"].addAction(dock.toggleViewAction())

    def _wire(self) -> None:
        self.editor.subscribe(self._on_change)
        self.canvas.on_message.append(self.show_message)
        self.canvas.on_node_selected.append(self.properties.show_node)
        self.canvas.on_edit_layout_item.append(self.edit_layout_item)
        self.canvas.graph.data_dropped.connect(self._on_drop)
        self.properties.on_message.append(self.show_message)
        self.problems.on_problems.append(lambda _p: self.canvas.set_problems(
            self.problems.by_node()))
        self.problems.on_select_node.append(self.select_node)
        self.palette.on_activate.append(self._add_from_palette)
        #: palette entries that are not node types, by prefix (filled by the composition root)
        self.adders: dict[str, Callable[[str, tuple[float, float]], str]] = {}
        self.search_popup.on_chosen = self.add_searched_node
        self.canvas.view.installEventFilter(self)
        self.canvas.view.viewport().installEventFilter(self)
        self.canvas.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.canvas.view.customContextMenuRequested.connect(self.popup_canvas_menu)

    def canvas_menu(self, view_pos: QPoint) -> QMenu:
        """The right-click menu of the canvas (add by search, edit commands, view)."""
        menu = QMenu(self.canvas.view)
        add = menu.addAction("Add Node…\tTab")
        add.triggered.connect(lambda: self.open_node_search(view_pos))
        menu.addSeparator()
        for key in ("undo", "redo", "cut", "copy", "paste", "duplicate", "delete",
                    "select_all", "group", "note"):
            menu.addAction(self.actions[key])
        selected = self.canvas.selected_node_ids()
        if selected:
            colours = menu.addMenu("Node Colour")
            for name, value in NODE_COLOURS.items():
                action = colours.addAction(name)
                action.triggered.connect(lambda _c=False, v=value: self.colour_nodes(selected, v))
        menu.addSeparator()
        menu.addAction(self.actions["fit"])
        menu.addAction(self.actions["auto_layout"])
        return menu

    def popup_canvas_menu(self, view_pos: QPoint) -> None:
        menu = self.canvas_menu(view_pos)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(self.canvas.view.mapToGlobal(view_pos))

    # --- events ----------------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_Tab \
                and not self.search_popup.isVisible():
            self.open_node_search()
            return True
        return super().eventFilter(watched, event)

    def open_node_search(self, view_pos: QPoint | None = None) -> None:
        """Open the Tab search at the cursor (or ``view_pos``); the chosen node goes there."""
        view = self.canvas.view
        if view_pos is None:
            view_pos = view.mapFromGlobal(QCursor.pos())
            if not view.rect().contains(view_pos):
                view_pos = view.rect().center()
        self._search_scene_pos = view.mapToScene(view_pos)
        self.search_popup.open_at(view_pos)

    def _on_drop(self, mime, pos) -> None:
        type_id = node_type_from_mime(mime)
        if type_id:
            self.add_node_at(type_id, QPointF(pos.x(), pos.y()))

    def _add_from_palette(self, type_id: str) -> None:
        view = self.canvas.view
        self.add_node_at(type_id, view.mapToScene(view.rect().center()))

    def add_node_at(self, type_id: str, scene_pos: QPointF) -> str | None:
        """Add a node of ``type_id`` at a scene position (with the type's params for a new
        node, e.g. the best installed chat model) and select it. A palette entry
        ``prefix:rest`` whose prefix is in ``adders`` (components) is added by its adder."""
        prefix, _, rest = type_id.partition(":")
        try:
            if rest and prefix in self.adders:
                node_id = self.adders[prefix](rest, (round(scene_pos.x()), round(scene_pos.y())))
                self.canvas.select_nodes([node_id])
                return node_id
            params = self.registry.get(type_id).new_node_params()
            node_id = self.editor.add_node(type_id, (round(scene_pos.x()), round(scene_pos.y())),
                                           params)
        except ModragError as exc:
            self.show_message(str(exc))
            return None
        self.canvas.select_nodes([node_id])
        return node_id

    def add_searched_node(self, type_id: str) -> str | None:
        """Add the node chosen in the Tab search where the search was opened."""
        return self.add_node_at(type_id, self._search_scene_pos)

    def select_node(self, node_id: str) -> None:
        self.canvas.select_nodes([node_id])
        self.canvas.center_on([node_id])

    def _on_change(self, change: Change) -> None:
        self._update_title()
        self.actions["undo"].setEnabled(self.editor.can_undo)
        self.actions["redo"].setEnabled(self.editor.can_redo)
        self.actions["undo"].setText(f"&Undo {self.editor.undo_label()}".rstrip())
        self.actions["redo"].setText(f"&Redo {self.editor.redo_label()}".rstrip())
        if change.kind in ("undo", "redo"):
            self.show_message(f"{change.kind}: {change.label}")
            if not self.editor.dirty:  # back to the saved graph: nothing left to restore
                files.discard_autosave(self.editor.path)

    def _update_title(self) -> None:
        name = self.editor.path.name if self.editor.path else "untitled"
        star = "*" if self.editor.dirty else ""
        variant = f" — variant {self.active_variant}" if self.active_variant else ""
        self.setWindowTitle(f"{name}{star}{variant} — {APP_NAME}")

    def show_variant(self, name: str | None) -> None:
        """Name the variant that runs (None: the base) in the window title."""
        self.active_variant = name
        self._update_title()

    def show_message(self, text: str, timeout_ms: int = 10_000) -> None:
        self.statusBar().showMessage(text, timeout_ms)

    def _error(self, title: str, text: str) -> None:
        """Report an error without blocking (a window-modal box, and the status bar)."""
        self.last_error = text
        self.show_message(text)
        box = QMessageBox(QMessageBox.Icon.Critical, title, text, QMessageBox.StandardButton.Ok,
                          self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # --- edit commands ---------------------------------------------------------------------

    def _selected_layout_items(self) -> list[LayoutItem]:
        return [i for i in self.canvas.scene.selectedItems() if isinstance(i, LayoutItem)]

    def copy(self) -> None:
        ids = self.canvas.selected_node_ids()
        if ids:
            QApplication.clipboard().setText(self.editor.copy(ids))

    def cut(self) -> None:
        self.copy()
        self.delete_selection()

    def paste(self) -> None:
        """Paste the copied nodes at the mouse cursor (over the canvas), else beside them."""
        text = QApplication.clipboard().text()
        new = self.editor.paste(text, offset=self._paste_offset(text))
        if new:
            self.canvas.select_nodes(new)

    def _paste_offset(self, text: str) -> tuple[float, float]:
        view = self.canvas.view
        cursor = view.mapFromGlobal(QCursor.pos())
        corner = fragment_corner(text)
        if corner is None or not view.rect().contains(cursor):
            return (40.0, 40.0)
        target = view.mapToScene(cursor)
        return (target.x() - corner[0], target.y() - corner[1])

    def duplicate(self) -> None:
        new = self.editor.duplicate(self.canvas.selected_node_ids())
        if new:
            self.canvas.select_nodes(new)

    def delete_selection(self) -> None:
        ids = self.canvas.selected_node_ids()
        items = [i.item_id for i in self._selected_layout_items()]
        with self.editor.macro("delete"):
            if ids:
                self.editor.remove_nodes(ids)
            if items:
                self.editor.remove_layout_items(items)

    def select_all(self) -> None:
        self.canvas.select_nodes(self.canvas.node_ids())

    def group_selection(self, title: str | None = None) -> str | None:
        """A titled backdrop around the selected nodes (or at the view centre)."""
        if title is None:
            title, ok = QInputDialog.getText(self, "Group", "Group title:", text="Group")
            if not ok:
                return None
        rect = None
        for node_id in self.canvas.selected_node_ids():
            node_rect = self.canvas.node_scene_rect(node_id)
            rect = node_rect if rect is None else rect.united(node_rect)
        if rect is None:
            center = self.canvas.view.mapToScene(self.canvas.view.rect().center())
            box = (center.x() - 200, center.y() - 150, 400.0, 300.0)
        else:
            box = (rect.x() - 30, rect.y() - 50, rect.width() + 60, rect.height() + 80)
        return self.editor.add_group(title, box)

    def add_note(self, text: str | None = None) -> str | None:
        if text is None:
            text, ok = QInputDialog.getMultiLineText(self, "Note", "Note text:")
            if not ok:
                return None
        center = self.canvas.view.mapToScene(self.canvas.view.rect().center())
        return self.editor.add_note(text, (center.x(), center.y()))

    def edit_layout_item(self, item_id: str) -> None:
        item = self.canvas.layout_item(item_id)
        if isinstance(item, GroupItem):
            title, ok = QInputDialog.getText(self, "Group", "Group title:",
                                             text=item.title.text())
            if ok:
                self.editor.update_group(item_id, title=title)
        elif isinstance(item, NoteItem):
            text, ok = QInputDialog.getMultiLineText(self, "Note", "Note text:",
                                                     item.text.toPlainText())
            if ok:
                self.editor.update_note(item_id, text=text)

    def colour_nodes(self, node_ids: list[str], colour: str | None) -> None:
        """Give nodes a body colour (layout only; None restores the category colour)."""
        with self.editor.macro("colour nodes"):
            for node_id in node_ids:
                self.editor.set_node_color(node_id, colour)

    def auto_layout(self) -> None:
        self.editor.move_nodes(auto_layout(self.editor.document(), self.registry))
        self.canvas.fit_all()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if not self.ask_unsaved():
            event.ignore()
            return
        self._autosave_timer.stop()
        files.discard_autosave(self.editor.path)
        self.remember_layout()
        event.accept()
