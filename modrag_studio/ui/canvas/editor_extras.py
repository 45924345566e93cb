"""Editor basics on the canvas: minimap, zoom controls and keys, a node's right-click menu,
and dropping a wire on empty canvas to add a compatible node that gets connected."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu

from modrag_studio.engine.core.ports import check_types
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.ui.canvas.empty_hint import EmptyCanvasHint
from modrag_studio.ui.canvas.view import ZOOM_STEP, Minimap, ZoomControls, zoom_by
from modrag_studio.ui.canvas.wire_ranks import ranked_for_wire
from modrag_studio.ui.panels.palette import is_developer

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.node_flags import NodeFlags
    from modrag_studio.ui.canvas.protocols import CanvasRun, NodeHelp, StudioShell


def compatible_types(registry: NodeRegistry, port_type: Any, kind: str,
                     developer: bool = False) -> list[tuple[str, str]]:
    """(type id, port) of node types a wire from a ``kind`` ("out"/"in") port can reach.

    For an output: types with an input accepting ``port_type``; for an input: types with an
    output it accepts. Ports of exactly fitting types come first, catch-all (``Any``) last.
    """
    found = []
    for node_type in registry:
        if is_developer(node_type) and not developer:
            continue
        ports = node_type.inputs if kind == "out" else node_type.outputs
        for port in ports:
            source, target = (port_type, port.type) if kind == "out" else (port.type, port_type)
            if check_types(source, target).ok:
                loose = port.type is Any
                found.append((loose, node_type.display_title(), node_type.type_id, port.name))
                break
    return [(type_id, port) for _loose, _title, type_id, port in sorted(found)]


def distinct_keys(keys: list[QKeySequence | QKeySequence.StandardKey]) -> list[QKeySequence]:
    """The key sequences with standard keys expanded for this platform and repeats dropped:
    one action holding the same sequence twice makes Qt call the shortcut ambiguous."""
    seen: list[QKeySequence] = []
    for key in keys:
        for sequence in (QKeySequence.keyBindings(key)
                         if isinstance(key, QKeySequence.StandardKey) else [key]):
            if not sequence.isEmpty() and sequence not in seen:
                seen.append(sequence)
    return seen


class EditorExtras:
    """The editor basics of one window; its canvas right-click menu replaces the window's."""

    def __init__(self, window: StudioShell, run: CanvasRun, flags: NodeFlags,
                 ux: NodeHelp) -> None:
        self.window = window
        self.run_features, self.node_flags, self.ux = run, flags, ux
        #: more entries of a node's menu (subgraph commands), filled by the composition root
        self.node_menu_items: list[Callable[[str], list[tuple[str, Callable[[], object]]]]] = []
        canvas = window.canvas
        self.minimap = Minimap(canvas)
        self.zoom_controls = ZoomControls(canvas)
        self.empty_hint = EmptyCanvasHint(canvas.view, window.editor)
        self._view_actions()
        self.pending_wire: tuple[str, str, str, QPointF] | None = None
        canvas.on_wire_dropped.append(self.wire_dropped)
        view = canvas.view
        view.customContextMenuRequested.disconnect(window.popup_canvas_menu)
        view.customContextMenuRequested.connect(self.context_menu)

    def _view_actions(self) -> None:
        window = self.window
        menu = window.menus["View"]
        entries = (
            ("zoom_in", "Zoom &In", lambda: zoom_by(window.canvas.view, ZOOM_STEP),
             [QKeySequence("Ctrl+="), QKeySequence("Ctrl++"), QKeySequence.StandardKey.ZoomIn]),
            ("zoom_out", "Zoom &Out", lambda: zoom_by(window.canvas.view, 1 / ZOOM_STEP),
             [QKeySequence("Ctrl+-"), QKeySequence.StandardKey.ZoomOut]),
        )
        for key, text, slot, shortcuts in entries:
            action = QAction(text, window)  # type: ignore[call-overload]
            action.setShortcuts(distinct_keys(shortcuts))
            action.triggered.connect(lambda _c=False, s=slot: s())
            menu.addAction(action)
            window.actions[key] = action
        minimap = QAction("&Minimap", window)  # type: ignore[call-overload]
        minimap.setCheckable(True)
        minimap.setChecked(True)
        minimap.toggled.connect(self.minimap.set_wanted)
        menu.addAction(minimap)
        window.actions["minimap"] = minimap
        bottom = QAction("&Bottom Panels", window)  # type: ignore[call-overload]
        bottom.setCheckable(True)
        bottom.setChecked(True)
        bottom.setShortcut(QKeySequence("Ctrl+J"))
        bottom.setToolTip("Hide the panels under the canvas for room, and bring them back")
        bottom.toggled.connect(self.show_bottom_panels)
        menu.addAction(bottom)
        window.actions["bottom_panels"] = bottom
        self._hidden_bottom: list[QDockWidget] = []

    def show_bottom_panels(self, shown: bool) -> None:
        """Collapse the bottom dock area (remembering which panels were open) or reopen it."""
        qt_window: QMainWindow = self.window  # type: ignore[assignment]
        if shown:
            for dock in self._hidden_bottom:
                dock.show()
            self._hidden_bottom = []
            return
        self._hidden_bottom = [
            dock for dock in qt_window.findChildren(QDockWidget)
            if qt_window.dockWidgetArea(dock) == Qt.DockWidgetArea.BottomDockWidgetArea
            and dock.isVisible()]
        for dock in self._hidden_bottom:
            dock.hide()

    # right-click ------------------------------------------------------------------------
    def node_at(self, view_pos: QPoint) -> str | None:
        canvas = self.window.canvas
        scene_pos = canvas.view.mapToScene(view_pos)
        for node_id in canvas.node_ids():
            rect = canvas.node_scene_rect(node_id)
            if rect is not None and rect.contains(scene_pos):
                return node_id
        return None

    def node_menu(self, node_id: str, view_pos: QPoint) -> QMenu:
        """Run to here, re-run, inspect, help, bypass, pin, then the canvas's edit commands."""
        window = self.window
        menu = window.canvas_menu(view_pos)
        first = menu.actions()[0] if menu.actions() else None
        features = self.run_features
        items = [("Run to Here", lambda: features.run(target=node_id)),
                 ("Re-run This Node", lambda: features.run(rerun=[node_id])),
                 ("Inspect", lambda: features.select_node(node_id)),
                 ("Help…", lambda: self.ux.node_help(node_id)),
                 *self.node_flags.menu_items(node_id),
                 *(item for more in self.node_menu_items for item in more(node_id))]
        for text, slot in items:
            action = QAction(text, menu)
            action.triggered.connect(lambda _c=False, s=slot: s())
            menu.insertAction(first, action)
        menu.insertSeparator(first)
        return menu

    def context_menu(self, view_pos: QPoint) -> QMenu:
        node_id = self.node_at(view_pos)
        if node_id is None:
            menu = self.window.canvas_menu(view_pos)
            scene_pos = self.window.canvas.view.mapToScene(view_pos)
            wire = self.window.canvas.wire_at(scene_pos)
            if wire is not None:
                first = menu.actions()[0]
                action = QAction("Add Reroute Point", menu)
                action.triggered.connect(
                    lambda _c=False: self.node_flags.add_reroute(wire, scene_pos))
                menu.insertAction(first, action)
                menu.insertSeparator(first)
        else:
            if node_id not in self.window.canvas.selected_node_ids():
                self.window.canvas.select_nodes([node_id])
            menu = self.node_menu(node_id, view_pos)
        menu.popup(self.window.canvas.view.mapToGlobal(view_pos))
        return menu

    # wire dropped on empty canvas ---------------------------------------------------------
    def wire_dropped(self, node_id: str, port: str, kind: str, scene_pos: QPointF) -> None:
        """Offer the node types that fit the wire; the chosen one is added and connected."""
        window = self.window
        port_type = window.canvas.port_type(node_id, port, kind)
        if port_type is None:
            return
        choices = compatible_types(window.registry, port_type, kind,
                                   window.palette.show_developer)
        dropped = window.editor.document().node(node_id).type
        choices = ranked_for_wire(window.registry, choices, dropped, port, kind, port_type)
        self.pending_wire = (node_id, port, kind, scene_pos)
        popup = window.search_popup
        popup.allowed = {type_id: p for type_id, p in choices}
        popup.on_chosen = self.add_for_wire
        popup.open_at(window.canvas.view.mapFromScene(scene_pos))
        popup.line.setPlaceholderText(f"Add a node for {node_id}.{port}…")

    def add_for_wire(self, type_id: str) -> str | None:
        window = self.window
        popup = window.search_popup
        allowed = popup.allowed or {}
        popup.allowed = None
        popup.on_chosen = window.add_searched_node
        popup.line.setPlaceholderText("Add node…")
        if self.pending_wire is None or type_id not in allowed:
            return None
        node_id, port, kind, scene_pos = self.pending_wire
        self.pending_wire = None
        x = scene_pos.x() if kind == "out" else scene_pos.x() - 200
        with window.editor.macro(f"add {type_id} on a wire"):
            new_id = window.add_node_at(type_id, QPointF(x, scene_pos.y() - 30))
            if new_id is None:
                return None
            if kind == "out":
                window.editor.connect(node_id, port, new_id, allowed[type_id])
            else:
                window.editor.connect(new_id, allowed[type_id], node_id, port)
        return new_id
