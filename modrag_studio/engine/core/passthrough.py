"""Values that pass through a node unchanged: bypassed nodes and reroute points.

A bypassed node (``"bypass": true`` in the document) does not run: each of its outputs
receives the value of the input whose type fits it best (:func:`bypass_routes`). A node type
with ``passes_through`` (the reroute point) declares ``Any`` ports but carries the type wired
into it (:func:`carried_type`), so validation and edge coercions see the real type.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from modrag_studio.engine.core.document import EdgeSpec
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import InputPort, check_types

#: node id -> its type (None when unknown), as validation and the executor resolve it
TypeOf = Callable[[str], type[NodeType] | None]


def delivered_type(port: InputPort) -> Any:
    """The type of the value a node receives on ``port`` (a list for ``multiple`` ports)."""
    return list[port.type] if port.multiple else port.type  # type: ignore[name-defined]


def _fit_rank(source: Any, target: Any) -> int | None:
    """How well ``source`` fits ``target``: 0 the same type, 1 a plain fit, 2 a coercion,
    3 only through ``Any``; None when it does not fit."""
    result = check_types(source, target)
    if not result.ok:
        return None
    if source == target:
        return 0
    if source is Any or target is Any:
        return 3
    return 2 if result.coercion is not None else 1


def bypass_routes(node_type: type[NodeType]) -> dict[str, str | None]:
    """Output port -> the input port whose value it gets when the node is bypassed
    (None: no input of a compatible type). The closest type wins, then declaration order."""
    return dict(_routes(node_type))


@functools.lru_cache(maxsize=1024)
def _routes(node_type: type[NodeType]) -> dict[str, str | None]:
    """``bypass_routes`` once per node type (its ports are class attributes; validation and
    every visit of a bypassed node ask)."""
    routes: dict[str, str | None] = {}
    for out in node_type.outputs:
        ranked = [(rank, index, port.name) for index, port in enumerate(node_type.inputs)
                  if (rank := _fit_rank(delivered_type(port), out.type)) is not None]
        routes[out.name] = min(ranked)[2] if ranked else None
    return routes


def bypass_value(node_type: type[NodeType], output: str, input_name: str, value: Any) -> Any:
    """``value`` from input ``input_name`` converted for output ``output`` (str -> Query)."""
    port = node_type.input_port(input_name)
    out = node_type.output_port(output)
    assert port is not None and out is not None
    convert = check_types(delivered_type(port), out.type).coercion
    return convert(value) if convert is not None else value


def carried_type(node_id: str, port: str, type_of: TypeOf,
                 into_port: Mapping[tuple[str, str], list[EdgeSpec]]) -> Any:
    """The type of what output ``node_id.port`` carries: its declared type, or for a
    reroute point (``passes_through``) the type wired into it, followed back through
    chains of reroute points (``Any`` when nothing, or a cycle, is connected)."""
    seen: set[str] = set()
    while True:
        node_type = type_of(node_id)
        if node_type is None:
            return Any
        out = node_type.output_port(port)
        if out is None:
            return Any
        if not node_type.passes_through or node_id in seen or not node_type.inputs:
            return out.type if not node_type.passes_through else Any
        seen.add(node_id)
        edges = into_port.get((node_id, node_type.inputs[0].name), [])
        if not edges:
            return Any
        node_id, port = edges[0].source_node, edges[0].source_port


def edges_into(edges: list[EdgeSpec]) -> dict[tuple[str, str], list[EdgeSpec]]:
    """Forward edges by the (node, input port) they feed."""
    found: dict[tuple[str, str], list[EdgeSpec]] = {}
    for edge in edges:
        if edge.loop is None:
            found.setdefault((edge.target_node, edge.target_port), []).append(edge)
    return found
