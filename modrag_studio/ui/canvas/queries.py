"""Read-only queries on the canvas (node items, port positions, selection, fit) as a mixin
of the canvas adapter; it reaches NodeGraphQt objects only through the adapter's maps."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsItem

from modrag_studio.ui.canvas.view import fit_rect

_IN = "in"


class CanvasQueries:
    """Queries used by run features, overlays and tests (mixed into ``CanvasAdapter``)."""

    def node_ids(self) -> list[str]:
        return list(self._nodes)

    def node_item(self, node_id: str):
        """The QGraphicsItem drawing a node (None when absent)."""
        node = self._nodes.get(node_id)
        return node.view if node is not None else None

    def canvas_edges(self) -> set[tuple[str, str, str, str]]:
        """The connections drawn on the canvas, as (source, port, target, port)."""
        return self._canvas_edges()

    def input_port_items(self, node_id: str) -> dict[str, QGraphicsItem]:
        """The items drawing a node's input ports, by port name (empty when absent)."""
        node = self._nodes.get(node_id)
        return {p.name(): p.view for p in node.input_ports()} if node is not None else {}

    def node_scene_rect(self, node_id: str) -> QRectF | None:
        node = self._nodes.get(node_id)
        return node.view.sceneBoundingRect() if node is not None else None

    def port_scene_pos(self, node_id: str, port: str, kind: str) -> QPointF | None:
        node = self._nodes.get(node_id)
        if node is None:
            return None
        found = node.get_input(port) if kind == _IN else node.get_output(port)
        return found.view.sceneBoundingRect().center() if found is not None else None

    def selected_node_ids(self) -> list[str]:
        return [self._ids[n.id] for n in self.graph.selected_nodes() if n.id in self._ids]

    def select_nodes(self, node_ids: list[str]) -> None:
        self.graph.clear_selection()
        for node_id in node_ids:
            node = self._nodes.get(node_id)
            if node is not None:
                node.view.setSelected(True)
        self._on_selection_changed()

    def center_on(self, node_ids: list[str] | None = None) -> None:
        nodes = [self._nodes[n] for n in node_ids or [] if n in self._nodes]
        self.graph.center_on(nodes or None)

    def fit_all(self, max_scale: float = 1.0) -> None:
        """Show every node, group and note (never zooming in beyond ``max_scale``)."""
        fit_rect(self.view, self.items_rect(), max_scale)

    def items_rect(self) -> QRectF:
        """The scene rectangle covering nodes, groups, notes and shown cards (``FIT_IN_VIEW``)."""
        rect = QRectF()
        for node in self._nodes.values():
            rect = rect.united(node.view.sceneBoundingRect())
        for item in self._layout_items.values():
            rect = rect.united(item.sceneBoundingRect())
        for item in self.scene.items():
            if getattr(item, "FIT_IN_VIEW", False) and item.isVisible():
                rect = rect.united(item.sceneBoundingRect())
        return rect
