"""Collecting a node's inputs from its edges: activity, coercion, failure and loop values."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from modrag_studio.engine.core.document import EdgeSpec, NodeSpec
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.passthrough import carried_type
from modrag_studio.engine.core.ports import check_types
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.run_state import RunState


@dataclass
class Gathered:
    values: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    skip_reason: str = ""
    skip_cause: str = ""


class EdgeDelivery:
    """Converts values crossing an edge when the port types need a coercion (out of a
    reroute point: the type wired into it; ``into_port`` gives those edges)."""

    def __init__(self, registry: NodeRegistry, specs: dict[str, NodeSpec],
                 into_port: dict[tuple[str, str], list[EdgeSpec]] | None = None) -> None:
        self._registry = registry
        self._specs = specs
        self._into_port = into_port or {}
        self._converters: dict[tuple[str, str], Any] = {}

    def _type_of(self, node_id: str) -> type[NodeType] | None:
        spec = self._specs.get(node_id)
        return self._registry.get(spec.type) if spec is not None else None

    def deliver(self, edge: EdgeSpec, value: Any) -> Any:
        slot = (edge.source, edge.target)
        if slot not in self._converters:
            source = self._registry.get(self._specs[edge.source_node].type)
            target = self._registry.get(self._specs[edge.target_node].type)
            out, inp = source.output_port(edge.source_port), target.input_port(edge.target_port)
            assert out is not None and inp is not None
            out_type = out.type if not source.passes_through else carried_type(
                edge.source_node, edge.source_port, self._type_of, self._into_port)
            self._converters[slot] = _coercion(out_type, inp.type)
        convert = self._converters[slot]
        # None is a planned run's placeholder for an output it did not compute
        return convert(value) if convert is not None and value is not None else value


@lru_cache(maxsize=4096)
def _coercion(source: Any, target: Any) -> Any:
    return check_types(source, target).coercion


def gather_inputs(run: RunState, delivery: EdgeDelivery, node_id: str,
                  node_type: type[NodeType]) -> Gathered:
    """The values for every input port of ``node_id``, or why the node must be skipped."""
    gathered = Gathered()
    connected = delivered = 0
    topology = run.topology
    for port in node_type.inputs:
        looped = run.loop_values.get((node_id, port.name)) if run.loop_values else None
        if looped is not None:
            value, key, source = looped
            edge = topology.loop_into[(node_id, port.name)]
            item = delivery.deliver(edge, value)
            gathered.values[port.name] = [item] if port.multiple else item
            gathered.keys[port.name] = [(source, key)]
            connected, delivered = connected + 1, delivered + 1
            continue
        active: list[Any] = []
        keys: list[tuple[str, str]] = []
        inactive: list[str] = []
        for edge in topology.into_port.get((node_id, port.name), ()):
            state = run.nodes[edge.source_node]
            if state.status == "failed" or state.skip_cause == "failed":
                gathered.skip_reason = f"upstream node '{edge.source_node}' failed"
                gathered.skip_cause = "failed"
                return gathered
            if state.status == "done" and state.outputs and edge.source_port in state.outputs:
                active.append(delivery.deliver(edge, state.outputs[edge.source_port]))
                keys.append((edge.source, state.port_keys[edge.source_port]))
            else:
                inactive.append(edge.source)
        if port.multiple:
            gathered.values[port.name] = active
        elif active:
            gathered.values[port.name] = active[0]
        else:
            gathered.values[port.name] = None
        gathered.keys[port.name] = keys
        connected += len(active) + len(inactive)
        delivered += len(active)
        if port.required and not active:
            taken = ", ".join(inactive) or "nothing connected"
            gathered.skip_reason = f"inactive branch: input '{port.name}' got no value ({taken})"
            gathered.skip_cause = "inactive"
            return gathered
    if connected and not delivered:
        gathered.skip_reason = "inactive branch: none of its inputs got a value"
        gathered.skip_cause = "inactive"
    return gathered
