"""Queries on the canvas (node items, port positions, wires, selection, fit): a helper the
canvas adapter owns; it reads NodeGraphQt nodes through their public API only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from modrag_studio.ui.canvas.view import fit_rect

_IN = "in"


class CanvasQueries:
    """Queries used by run features, overlays and tests. ``nodes`` (our id -> NodeGraphQt
    node) and ``ids`` (NodeGraphQt id -> ours) are the adapter's maps; ``layout_items`` its
    groups and notes; ``selection_changed`` tells the adapter a selection was made here."""

    def __init__(self, graph: Any, view: Any, nodes: dict[str, Any], ids: dict[str, str],
                 layout_items: Mapping[str, QGraphicsItem],
                 selection_changed: Callable[[], None]) -> None:
        self.graph, self.view = graph, view
        self.scene: QGraphicsScene = view.scene()
        self.nodes, self.ids, self.layout_items = nodes, ids, layout_items
        self.selection_changed = selection_changed

    def node_ids(self) -> list[str]:
        return list(self.nodes)

    def node_item(self, node_id: str):
        """The QGraphicsItem drawing a node (None when absent)."""
        node = self.nodes.get(node_id)
        return node.view if node is not None else None

    def canvas_edges(self) -> set[tuple[str, str, str, str]]:
        """The connections drawn on the canvas, as (source, port, target, port)."""
        edges = set()
        for node_id, node in self.nodes.items():
            for port in node.output_ports():
                for other in port.connected_ports():
                    target = self.ids.get(other.node().id)
                    if target is not None:
                        edges.add((node_id, port.name(), target, other.name()))
        return edges

    def input_port_items(self, node_id: str) -> dict[str, QGraphicsItem]:
        """The items drawing a node's input ports, by port name (empty when absent)."""
        node = self.nodes.get(node_id)
        return {p.name(): p.view for p in node.input_ports()} if node is not None else {}

    def node_scene_rect(self, node_id: str) -> QRectF | None:
        node = self.nodes.get(node_id)
        return node.view.sceneBoundingRect() if node is not None else None

    def port_scene_pos(self, node_id: str, port: str, kind: str) -> QPointF | None:
        node = self.nodes.get(node_id)
        if node is None:
            return None
        found = node.get_input(port) if kind == _IN else node.get_output(port)
        return found.view.sceneBoundingRect().center() if found is not None else None

    def selected_node_ids(self) -> list[str]:
        return [self.ids[n.id] for n in self.graph.selected_nodes() if n.id in self.ids]

    def select_nodes(self, node_ids: list[str]) -> None:
        """Select ``node_ids`` (a node inside a subgraph, ``sub/inner``: the subgraph's)."""
        self.graph.clear_selection()
        for node_id in node_ids:
            node = self.nodes.get(node_id) or self.nodes.get(node_id.split("/", 1)[0])
            if node is not None:
                node.view.setSelected(True)
        self.selection_changed()

    def center_on(self, node_ids: list[str] | None = None) -> None:
        shown = [n if n in self.nodes else n.split("/", 1)[0] for n in node_ids or []]
        nodes = [self.nodes[n] for n in shown if n in self.nodes]
        self.graph.center_on(nodes or None)

    def fit_all(self, max_scale: float = 1.0) -> None:
        """Show every node, group and note (never zooming in beyond ``max_scale``)."""
        fit_rect(self.view, self.items_rect(), max_scale)

    def items_rect(self) -> QRectF:
        """The scene rectangle covering nodes, groups, notes and shown cards (``FIT_IN_VIEW``)."""
        rect = QRectF()
        for node in self.nodes.values():
            rect = rect.united(node.view.sceneBoundingRect())
        for item in self.layout_items.values():
            rect = rect.united(item.sceneBoundingRect())
        for item in self.scene.items():
            if getattr(item, "FIT_IN_VIEW", False) and item.isVisible():
                rect = rect.united(item.sceneBoundingRect())
        return rect
