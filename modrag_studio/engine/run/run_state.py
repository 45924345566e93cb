"""The state of one run in progress, as input gathering and loops read it.

Public and typed so the modules around the executor (``engine.inputs`` today, debuggers
tomorrow) depend on this small object and not on the executor's internals. One instance per
run; never shared between runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from modrag_studio.engine.core.topology import Topology

NodeStatus = Literal["pending", "done", "skipped", "failed", "cancelled"]
#: A value sent back along a loop edge: (value, its cache key, the source endpoint).
LoopValue = tuple[Any, str, str]


@dataclass
class NodeState:
    """Where one node stands in this run (reset when a loop sends the run back to it)."""

    outputs: dict[str, Any] | None = None
    port_keys: dict[str, str] = field(default_factory=dict)
    status: NodeStatus = "pending"
    skip_cause: str = ""
    visits: int = 0


@dataclass
class RunState:
    """Every node's state, the loop counters and the values sent back along loop edges."""

    topology: Topology
    nodes: dict[str, NodeState] = field(default_factory=dict)
    loop_counts: dict[int, int] = field(default_factory=dict)
    loop_values: dict[tuple[str, str], LoopValue] = field(default_factory=dict)

    @classmethod
    def start(cls, topology: Topology, node_ids: list[str]) -> RunState:
        return cls(topology, {node_id: NodeState() for node_id in node_ids})

    def reset(self, node_id: str) -> None:
        """Make ``node_id`` pending again, keeping its visit count (loops)."""
        self.nodes[node_id] = NodeState(visits=self.nodes[node_id].visits)
