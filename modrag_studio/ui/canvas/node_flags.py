"""Bypass, pinned outputs and reroute points in the studio: the node menu's entries, their
undo steps, the badges on the cards, and reroute points added on a wire."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QPointF
from PySide6.QtGui import QAction, QKeySequence

from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.run.pins import PinStore, graph_key

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import CanvasRun, StudioShell

Wire = tuple[str, str, str, str]


class NodeFlags(QObject):
    """Bypass / Enable and Pin Output / Unpin for nodes, reroute points for wires."""

    def __init__(self, window: StudioShell, run: CanvasRun,
                 store: PinStore | None = None) -> None:
        super().__init__(window)  # type: ignore[arg-type]
        self.window = window
        self.run_features = run
        self.store = store or PinStore()
        self.editor = window.editor
        self.canvas = window.canvas
        self.editor.subscribe(lambda _change: self.refresh())
        self.canvas.view.viewport().installEventFilter(self)
        self._edit_actions()
        self.refresh()

    def _edit_actions(self) -> None:
        """Edit → Bypass / Enable (Ctrl+B) and Pin / Unpin Output (Ctrl+Shift+B), for the
        selected nodes."""
        menu = self.window.menus["Edit"]
        menu.addSeparator()
        for key, text, shortcut, slot in (
                ("bypass", "&Bypass / Enable", "Ctrl+B", self.toggle_bypass_selected),
                ("pin", "&Pin / Unpin Output", "Ctrl+Shift+B", self.toggle_pin_selected)):
            action = QAction(text, self.window)  # type: ignore[call-overload]
            action.setShortcut(QKeySequence(shortcut))
            action.triggered.connect(lambda _c=False, s=slot: s())
            menu.addAction(action)
            self.window.actions[key] = action

    def _selected(self) -> list[str]:
        return [n for n in self.canvas.selected_node_ids() if not self.canvas.is_reroute(n)]

    def toggle_bypass_selected(self) -> None:
        """Bypass the selected nodes, or enable them when all are bypassed (one undo step)."""
        ids = self._selected()
        if ids:
            self.editor.set_bypass(ids, not all(self.is_bypassed(n) for n in ids))

    def toggle_pin_selected(self) -> None:
        for node_id in self._selected():
            if node_id in self.pinned_ids():
                self.unpin(node_id)
            else:
                self.pin(node_id)

    # state --------------------------------------------------------------------------------
    def graph(self) -> str:
        """The key this graph's pins are stored under (its file, or its name if unsaved)."""
        return graph_key(self.editor.document(), self.editor.path)

    def pinned_ids(self) -> set[str]:
        return set(self.store.pinned_ids(self.graph())) & set(self.editor.document().node_ids())

    def refresh(self) -> None:
        self.canvas.set_pinned(self.pinned_ids())

    def _message(self, text: str) -> None:
        self.window.statusBar().showMessage(text, 5000)

    # bypass -------------------------------------------------------------------------------
    def is_bypassed(self, node_id: str) -> bool:
        return self.editor.document().node(node_id).bypass

    def toggle_bypass(self, node_id: str) -> None:
        self.editor.set_bypass([node_id], not self.is_bypassed(node_id))

    # pins ---------------------------------------------------------------------------------
    def last_outputs(self, node_id: str) -> tuple[dict[str, Any], str] | None:
        """The outputs of ``node_id``'s last visit in the last run, and its cache key."""
        result = self.run_features.controller.last_result
        if result is None:
            return None
        visits = [k for k in result.node_outputs if k[0] == node_id and result.node_outputs[k]]
        if not visits:
            return None
        last = max(visits, key=lambda k: k[1])
        visit = next((v for v in reversed(result.trace.visits)
                      if v.node_id == node_id and v.iteration == last[1]), None)
        return dict(result.node_outputs[last]), visit.cache_key if visit else ""

    def pin(self, node_id: str) -> bool:
        """Pin the node's last output (one undo step); False with a message when it has none."""
        found = self.last_outputs(node_id)
        if found is None:
            self._message(f"'{node_id}' has no output yet: run the graph, then pin it.")
            return False
        outputs, source_key = found
        graph, type_id = self.graph(), self.editor.document().node(node_id).type
        try:
            pin = self.store.pin(graph, node_id, type_id, outputs, source_key)
        except ModragError as exc:
            self._message(str(exc))
            return False
        self.editor.push_action(f"pin {node_id}", lambda: self.store.put(graph, pin),
                                lambda: self.store.unpin(graph, node_id))
        self._message(f"Pinned the output of '{node_id}': runs use it until you unpin it.")
        return True

    def unpin(self, node_id: str) -> bool:
        graph = self.graph()
        pin = self.store.get(graph, node_id)
        if pin is None:
            return False
        self.editor.push_action(f"unpin {node_id}", lambda: self.store.unpin(graph, node_id),
                                lambda: self.store.put(graph, pin))
        return True

    # the node menu ------------------------------------------------------------------------
    def menu_items(self, node_id: str) -> list[tuple[str, Callable[[], Any]]]:
        if self.canvas.is_reroute(node_id):
            return []
        bypass = "Enable" if self.is_bypassed(node_id) else "Bypass"
        pinned = node_id in self.pinned_ids()
        return [(bypass, lambda: self.toggle_bypass(node_id)),
                ("Unpin" if pinned else "Pin Output",
                 (lambda: self.unpin(node_id)) if pinned else (lambda: self.pin(node_id)))]

    # reroute points -----------------------------------------------------------------------
    def add_reroute(self, wire: Wire, scene_pos: QPointF) -> str | None:
        """Put a reroute point on ``wire`` at ``scene_pos`` (centred there), one undo step."""
        size = 8.0
        try:
            node_id = self.editor.insert_reroute(
                *wire, (round(scene_pos.x() - size), round(scene_pos.y() - size)))
        except ModragError as exc:
            self._message(str(exc))
            return None
        self.canvas.select_nodes([node_id])
        return node_id

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.MouseButtonDblClick:
            scene_pos = self.canvas.view.mapToScene(event.position().toPoint())
            over_node = any(rect is not None and rect.contains(scene_pos)
                            for rect in map(self.canvas.node_scene_rect, self.canvas.node_ids()))
            wire = None if over_node else self.canvas.wire_at(scene_pos)
            if wire is not None:
                self.add_reroute(wire, scene_pos)
                return True
        return super().eventFilter(watched, event)
