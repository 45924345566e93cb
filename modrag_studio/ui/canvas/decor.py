"""Parts of the canvas that need no NodeGraphQt: run states, captions, progress, problem
badges, bypassed / pinned looks (:class:`NodeDecorations`), groups and notes
(:class:`LayoutItems`). Helpers the canvas adapter owns; it gives each the map of node
cards it draws on (node id -> NodeGraphQt node, shared, never changed here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from modrag_studio.engine.core.document import Layout
from modrag_studio.engine.run.trace import NODE_STATES
from modrag_studio.ui.canvas.items import (
    BadgeItem,
    GroupItem,
    LayoutItem,
    NodeFlagsDecoration,
    NoteItem,
    StateDecoration,
)


class NodeDecorations:
    """What the run and the editor draw on node cards: ``states`` (run state, caption,
    progress), ``flags`` (bypassed / pinned) and ``badges`` (problems), by node id."""

    def __init__(self, nodes: dict[str, Any], editor: Any) -> None:
        self.nodes = nodes
        self.editor = editor
        self.states: dict[str, StateDecoration] = {}
        self.flags: dict[str, NodeFlagsDecoration] = {}
        self.badges: dict[str, BadgeItem] = {}
        self.pinned: set[str] = set()  # node ids whose output is pinned (set by node_flags)

    def add(self, node_id: str, card: QGraphicsItem, bypassed: bool) -> None:
        """Decorate a new node card (reroute points get none)."""
        self.states[node_id] = StateDecoration(card)
        self.flags[node_id] = NodeFlagsDecoration(card)
        self.show_flags(node_id, bypassed)

    def forget(self, node_id: str) -> None:
        for found in (self.states, self.flags, self.badges):
            found.pop(node_id, None)

    def set_zoomed_out(self, node_id: str, zoomed_out: bool) -> None:
        deco = self.states.get(node_id)
        if deco is not None:
            deco.set_zoomed_out(zoomed_out)

    def refresh_detail(self, node_id: str) -> None:
        """Draw the zoomed-out face again (its key params changed)."""
        deco = self.states.get(node_id)
        if deco is not None:
            deco.set_zoomed_out(deco.zoomed_out)

    def set_node_state(self, node_id: str, state: str, tooltip: str = "") -> None:
        if state not in NODE_STATES:
            raise ValueError(f"unknown node state '{state}' (one of {', '.join(NODE_STATES)})")
        deco = self.states.get(node_id)
        if deco is not None:
            deco.set_state(state, tooltip)

    def node_state(self, node_id: str) -> str | None:
        deco = self.states.get(node_id)
        return deco.state if deco is not None else None

    def set_node_caption(self, node_id: str, text: str) -> None:
        deco = self.states.get(node_id)
        if deco is not None:
            deco.set_caption(text)

    def set_node_progress(self, node_id: str, fraction: float | None) -> None:
        deco = self.states.get(node_id)
        if deco is not None:
            deco.set_progress(fraction)

    def clear_run_state(self) -> None:
        for deco in self.states.values():
            deco.set_state("idle")
            deco.set_caption("")
            deco.set_progress(None)

    def set_problems(self, problems_by_node: dict[str, list[str]]) -> None:
        """Badge nodes that have problems (tooltip lists them); clear the others."""
        for node_id, node in self.nodes.items():
            messages = problems_by_node.get(node_id)
            badge = self.badges.get(node_id)
            if messages:
                if badge is None:
                    badge = self.badges[node_id] = BadgeItem(node.view)
                badge.setPos(node.view.boundingRect().topLeft() + QPointF(2, 2))
                badge.setToolTip("\n".join(messages))
                badge.setVisible(True)
            elif badge is not None:
                badge.setVisible(False)

    # --- bypassed / pinned look and reroute points -------------------------------------------

    def show_flags(self, node_id: str, bypassed: bool) -> None:
        flags = self.flags.get(node_id)
        if flags is not None:
            flags.set_flags(bypassed=bypassed, pinned=node_id in self.pinned)

    def set_pinned(self, node_ids: set[str]) -> None:
        """Draw the pin badge on these nodes (and on no other)."""
        self.pinned = set(node_ids)
        doc = self.editor.document()
        for spec in doc.nodes:
            self.show_flags(spec.id, spec.bypass)

    def node_flags(self, node_id: str) -> set[str]:
        """"bypassed" / "pinned" as drawn on the node (tests, screenshots)."""
        flags = self.flags.get(node_id)
        return set(flags.flags) if flags is not None else set()

    def badged_node_ids(self) -> list[str]:
        return [n for n, b in self.badges.items() if b.isVisible()]


class LayoutItems:
    """Group backdrops and notes: drawn from the layout, moves and resizes sent back;
    ``on_edit`` is told the id of an item the user wants to edit (double-click)."""

    def __init__(self, nodes: dict[str, Any], scene: QGraphicsScene, editor: Any,
                 on_edit: list[Callable[[str], None]]) -> None:
        self.nodes = nodes
        self.scene = scene
        self.editor = editor
        self.on_edit = on_edit
        self.items: dict[str, LayoutItem] = {}

    def sync(self, layout: Layout) -> None:
        for item in self.items.values():
            self.scene.removeItem(item)
        self.items.clear()
        for group in layout.groups:
            item = GroupItem(group.id, group.title,
                             QRectF(group.x, group.y, group.width, group.height), group.color)
            self._add_layout_item(item)
        for note in layout.notes:
            item = NoteItem(note.id, note.text, QRectF(note.x, note.y, note.width, note.height))
            self._add_layout_item(item)

    def _add_layout_item(self, item: LayoutItem) -> None:
        item.on_moved = self._on_layout_item_moved
        item.on_resized = self._on_layout_item_resized
        item.on_edit = lambda it: [cb(it.item_id) for cb in list(self.on_edit)]
        self.scene.addItem(item)
        self.items[item.item_id] = item

    def _on_layout_item_moved(self, item: LayoutItem, old: QPointF, new: QPointF) -> None:
        dx, dy = new.x() - old.x(), new.y() - old.y()
        if isinstance(item, NoteItem):
            self.editor.update_note(item.item_id, x=new.x(), y=new.y())
            return
        rect = QRectF(old, item.rect().size())
        inside = {}
        for node_id in self.nodes:
            x, y = self.editor.node_position(node_id)
            if rect.contains(QPointF(x, y)):
                inside[node_id] = (x + dx, y + dy)
        with self.editor.macro(f"move group {item.item_id}"):
            self.editor.update_group(item.item_id, x=new.x(), y=new.y())
            if inside:
                self.editor.move_nodes(inside)

    def _on_layout_item_resized(self, item: LayoutItem, width: float, height: float) -> None:
        size = {"width": round(width, 1), "height": round(height, 1)}
        if isinstance(item, NoteItem):
            self.editor.update_note(item.item_id, **size)
        else:
            self.editor.update_group(item.item_id, **size)

    def layout_item(self, item_id: str) -> LayoutItem | None:
        return self.items.get(item_id)

