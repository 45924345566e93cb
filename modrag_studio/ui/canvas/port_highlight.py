"""Highlighting the ports a wire being dragged may connect to (a helper of the canvas)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modrag_studio.engine.core.ports import check_types

_IN, _OUT = "in", "out"
PortRef = tuple[str, str, str]  # node id, port, "in" / "out"


class PortHighlight:
    """Compatible ports light up, the others dim. ``nodes`` is the canvas's node map,
    ``port_type`` its port type (reroute-aware), ``port_ref`` a port item's reference."""

    def __init__(self, nodes: dict[str, Any], port_type: Callable[[str, str, str], Any],
                 port_ref: Callable[[Any], PortRef | None]) -> None:
        self.nodes = nodes
        self.port_type = port_type
        self.port_ref = port_ref
        self.dimmed: list = []

    def compatible_ports(self, node_id: str, port: str, kind: str) -> list[tuple[str, str]]:
        """Ports (node id, port) a wire from this port may connect to."""
        tp = self.port_type(node_id, port, kind)
        found = []
        for other_id, node in self.nodes.items():
            if other_id == node_id:
                continue
            others = node.input_ports() if kind == _OUT else node.output_ports()
            for other in others:
                other_tp = self.port_type(other_id, other.name(), _IN if kind == _OUT else _OUT)
                ok = check_types(tp, other_tp) if kind == _OUT else check_types(other_tp, tp)
                if ok.ok:
                    found.append((other_id, other.name()))
        return found

    def highlight(self, port_item) -> None:
        ref = self.port_ref(port_item)
        if ref is None:
            return
        fits = set(self.compatible_ports(*ref))
        for other_id, node in self.nodes.items():
            ports = node.input_ports() if ref[2] == _OUT else node.output_ports()
            for port in ports:
                view = port.view
                if (other_id, port.name()) in fits:
                    view.hovered = True
                else:
                    view.setOpacity(0.25)
                self.dimmed.append(view)
                view.update()

    def clear(self) -> None:
        for view in self.dimmed:
            if view.scene() is not None:
                view.hovered = False
                view.setOpacity(1.0)
                view.update()
        self.dimmed.clear()
