"""What a node shows on the canvas, worked out from its spec and type without NodeGraphQt:
its body colour, its ports (colour and tooltip), the labels of a router's outputs and its
own tooltip. The adapter draws what these return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtGui import QColor

from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import type_name
from modrag_studio.engine.layout.render import type_color

UNKNOWN_TYPE_COLOR = (110, 40, 40)  # a node whose type is not registered
_CATEGORY_COLORS: dict[str, tuple[int, int, int]] = {}


def category_color(category: str) -> tuple[int, int, int]:
    """A muted node body colour per category (stable across runs)."""
    if category not in _CATEGORY_COLORS:
        r, g, b = type_color(f"category:{category}")
        _CATEGORY_COLORS[category] = (r // 3 + 20, g // 3 + 20, b // 3 + 20)
    return _CATEGORY_COLORS[category]


def body_color(node_type: type[NodeType] | None, chosen: str | None = None
               ) -> tuple[int, int, int]:
    """The node's body colour: the one ``chosen`` in the layout, else its category's."""
    if chosen:
        c = QColor(chosen)
        return c.red(), c.green(), c.blue()
    return category_color(node_type.category) if node_type is not None else UNKNOWN_TYPE_COLOR


@dataclass(frozen=True)
class PortFace:
    """A port as the canvas draws it."""

    name: str
    several: bool  # an input taking several wires (outputs always feed several)
    color: tuple[int, int, int]
    tip: str


def input_faces(node_type: type[NodeType]) -> list[PortFace]:
    """The input ports: ``name?`` when optional, ``(several)`` when it takes several wires."""
    return [PortFace(port.name, port.multiple, type_color(type_name(port.type)),
                     f"{port.name if port.required else f'{port.name}?'}: "
                     f"{type_name(port.type)}" + (" (several)" if port.multiple else "")
                     + (f"\n{port.description}" if port.description else ""))
            for port in node_type.inputs]


def output_faces(node_type: type[NodeType]) -> list[PortFace]:
    return [PortFace(port.name, True, type_color(type_name(port.type)),
                     f"{port.name}: {type_name(port.type)}"
                     + (f"\n{port.description}" if port.description else ""))
            for port in node_type.outputs]


def node_tip(node_id: str, type_id: str, node_type: type[NodeType] | None) -> str:
    """The node's tooltip: its id and type, the type's description; a reroute point says
    how to add and remove one."""
    if node_type is not None and node_type.passes_through:
        return (f"{node_id}: reroute point (double-click a wire to add one; "
                "delete it to join the wire again)")
    tip = f"{node_id} ({type_id})"
    if node_type is not None and node_type.description:
        tip += f"\n{node_type.description}"
    return tip


def port_labels(spec: Any, node_type: Any = None) -> dict[str, str]:
    """Output port name -> label for routers: ``route_N`` by its route's name, ``default`` by
    ``default_route`` (the ports are static; the ``routes`` param names them)."""
    params = dict(spec.params)
    if node_type is not None and "routes" in getattr(node_type.Params, "model_fields", {}):
        for name in ("routes", "default_route"):
            if name not in params:
                default = node_type.Params.model_fields[name].default if \
                    name in node_type.Params.model_fields else None
                params[name] = default
    routes = params.get("routes")
    if not isinstance(routes, list):
        return {}
    labels = {}
    for index, route in enumerate(routes, start=1):
        name = route.get("name") if isinstance(route, dict) else getattr(route, "name", None)
        if name:
            labels[f"route_{index}"] = str(name)
    default = params.get("default_route")
    if isinstance(default, str) and default and default != "default":
        labels["default"] = f"{default} (default)"
    return labels
