"""Graph inputs and outputs: the named values a run takes and returns."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    InputPort,
    MissingRunInput,
    NodeContext,
    NodeType,
    OutputPort,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class GraphInputParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field("query", pattern=_NAME, description="Input name used by CLI, server, run bar")
    default: str | None = Field(None, description="Value used when the run gives none")
    description: str = Field("", description="Shown in the run bar and the server's API schema")
    multiline: bool = Field(False, description="Edit in a multi-line box in the run bar")


class GraphInput(NodeType):
    type_id = "graph.input"
    graph_role = "input"
    title = "Graph input"
    category = "Graph"
    description = "A named text value given to the run (the question, a corpus path, ...)."
    Params = GraphInputParams
    outputs = (OutputPort("value", str, "The value given to the run"),)

    def fingerprint(self, params: GraphInputParams, inputs: dict[str, Any],
                    run_inputs: dict[str, Any]) -> str:
        return stable_hash(run_inputs.get(params.name, params.default))

    def run(self, ctx: NodeContext, params: GraphInputParams) -> dict[str, Any]:
        value = ctx.run_inputs.get(params.name, params.default)
        if value is None:
            raise MissingRunInput(params.name)
        return {"value": str(value)}


class GraphOutputParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field("answer", pattern=_NAME, description="Output name in run results")


class GraphOutput(NodeType):
    type_id = "graph.output"
    graph_role = "output"
    evidence_role = EvidenceRole("passes")
    title = "Graph output"
    category = "Graph"
    description = "Collects a value as a named result of the run."
    Params = GraphOutputParams
    inputs = (InputPort("value", Any, description="The value to return"),)
    outputs = (OutputPort("value", Any),)
    disk_cache = False
    isolate_inputs = False  # returns its input unchanged; run outputs are copied anyway

    def run(self, ctx: NodeContext, params: GraphOutputParams, value: Any) -> dict[str, Any]:
        return {"value": value}
