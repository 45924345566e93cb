"""Highlighting the ports a wire being dragged may connect to (a part of the canvas)."""

from __future__ import annotations

from typing import Any

from modrag_studio.engine.core.ports import check_types

_IN, _OUT = "in", "out"


class PortHighlight:
    """Compatible ports light up, the others dim; uses the canvas's ``_nodes`` and ``_type_of``."""

    _nodes: dict[str, Any]
    _dimmed: list

    def _port_type(self, node_id: str, port: str, kind: str):
        node_type = self._type_of(node_id)
        if node_type is None:
            return None
        spec = node_type.input_port(port) if kind == _IN else node_type.output_port(port)
        return spec.type if spec is not None else None

    def compatible_ports(self, node_id: str, port: str, kind: str) -> list[tuple[str, str]]:
        """Ports (node id, port) a wire from this port may connect to."""
        tp = self._port_type(node_id, port, kind)
        found = []
        for other_id, node in self._nodes.items():
            if other_id == node_id:
                continue
            others = node.input_ports() if kind == _OUT else node.output_ports()
            for other in others:
                other_tp = self._port_type(other_id, other.name(), _IN if kind == _OUT else _OUT)
                ok = check_types(tp, other_tp) if kind == _OUT else check_types(other_tp, tp)
                if ok.ok:
                    found.append((other_id, other.name()))
        return found

    def _highlight_compatible(self, port_item) -> None:
        ref = self._port_ref(port_item)
        if ref is None:
            return
        fits = set(self.compatible_ports(*ref))
        for other_id, node in self._nodes.items():
            ports = node.input_ports() if ref[2] == _OUT else node.output_ports()
            for port in ports:
                view = port.view
                if (other_id, port.name()) in fits:
                    view.hovered = True
                else:
                    view.setOpacity(0.25)
                self._dimmed.append(view)
                view.update()

    def _clear_highlight(self) -> None:
        for view in self._dimmed:
            if view.scene() is not None:
                view.hovered = False
                view.setOpacity(1.0)
                view.update()
        self._dimmed.clear()

