"""Flow helpers drawn on wires: the reroute point."""

from __future__ import annotations

from typing import Any

from modrag_studio.engine.core.node import InputPort, NodeContext, NodeType, OutputPort
from modrag_studio.engine.evidence.lineage import EvidenceRole


class Reroute(NodeType):
    """A dot on a wire: passes its value through unchanged, taking the type wired into it."""

    type_id = "flow.reroute"
    title = "Reroute"
    category = "Graph"
    description = ("A point on a wire to route it around other nodes; the value passes "
                   "through unchanged and keeps the type of what is connected to it.")
    inputs = (InputPort("value", Any, description="The value to pass on"),)
    outputs = (OutputPort("value", Any, "The same value"),)
    passes_through = True
    evidence_role = EvidenceRole("passes")
    disk_cache = False
    isolate_inputs = False  # returns its input unchanged

    def run(self, ctx: NodeContext, params: Any, value: Any) -> dict[str, Any]:
        return {"value": value}
