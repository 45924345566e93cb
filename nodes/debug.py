"""Small utility nodes: constants, text helpers, and the building blocks engine tests use."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from modrag_studio.engine.core.node import InputPort, NodeContext, NodeType, OutputPort
from modrag_studio.engine.evidence.lineage import EvidenceRole


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConstantParams(_Params):
    value: str = Field("", description="The text this node outputs")


class Constant(NodeType):
    type_id = "debug.constant"
    title = "Constant"
    category = "Debug"
    description = "Outputs a fixed text."
    Params = ConstantParams
    outputs = (OutputPort("value", str),)

    def run(self, ctx: NodeContext, params: ConstantParams) -> dict[str, Any]:
        return {"value": params.value}


class ConcatParams(_Params):
    separator: str = Field(" ", description="Placed between the joined texts")


class Concat(NodeType):
    type_id = "text.concat"
    title = "Concatenate"
    category = "Text"
    description = "Joins texts (in connection order) with a separator."
    Params = ConcatParams
    inputs = (InputPort("texts", str, multiple=True, description="Texts to join"),)
    outputs = (OutputPort("text", str),)

    def run(self, ctx: NodeContext, params: ConcatParams, texts: list[str]) -> dict[str, Any]:
        return {"text": params.separator.join(texts)}


class Upper(NodeType):
    type_id = "text.upper"
    title = "Upper case"
    category = "Text"
    description = "Upper-cases a text."
    inputs = (InputPort("text", str),)
    outputs = (OutputPort("text", str),)

    def run(self, ctx: NodeContext, params: Any, text: str) -> dict[str, Any]:
        return {"text": text.upper()}


class PassThrough(NodeType):
    type_id = "debug.passthrough"
    evidence_role = EvidenceRole("passes")
    title = "Pass through"
    category = "Debug"
    description = "Outputs its input unchanged (a no-op, useful to tap a wire)."
    inputs = (InputPort("value", Any, required=False),)
    outputs = (OutputPort("value", Any),)

    def run(self, ctx: NodeContext, params: Any, value: Any = None) -> dict[str, Any]:
        return {"value": value}


class SleepParams(_Params):
    seconds: float = Field(1.0, ge=0, le=3600, description="How long to wait")
    steps: int = Field(10, ge=1, le=10_000, description="Progress steps (cancel is checked each)")


class Sleep(NodeType):
    type_id = "debug.sleep"
    key_params = ("seconds",)
    title = "Sleep"
    category = "Debug"
    description = "Waits, reporting progress; stops at once when the run is cancelled."
    Params = SleepParams
    inputs = (InputPort("value", Any, required=False),)
    outputs = (OutputPort("value", Any),)

    def run(self, ctx: NodeContext, params: SleepParams, value: Any = None) -> dict[str, Any]:
        for step in range(params.steps):
            if ctx.cancel.wait(params.seconds / params.steps):
                ctx.check_cancelled()
            ctx.progress(step + 1, params.steps, f"step {step + 1}/{params.steps}")
        return {"value": value}


class FailParams(_Params):
    message: str = Field("deliberate failure", description="The error message")


class Fail(NodeType):
    type_id = "debug.fail"
    title = "Fail"
    category = "Debug"
    description = "Always raises an error (to test failure handling)."
    Params = FailParams
    inputs = (InputPort("value", Any, required=False),)
    outputs = (OutputPort("value", Any),)

    def run(self, ctx: NodeContext, params: FailParams, value: Any = None) -> dict[str, Any]:
        raise RuntimeError(params.message)


class MatchRouteParams(_Params):
    pattern: str = Field("", description="Regular expression searched in the text")
    ignore_case: bool = True


class MatchRoute(NodeType):
    type_id = "debug.match_route"
    title = "Match route"
    category = "Debug"
    description = "Sends the text to 'match' when the pattern is found, else to 'other'."
    Params = MatchRouteParams
    routes = True
    inputs = (InputPort("text", str),)
    outputs = (OutputPort("match", str), OutputPort("other", str))

    def run(self, ctx: NodeContext, params: MatchRouteParams, text: str) -> dict[str, Any]:
        flags = re.IGNORECASE if params.ignore_case else 0
        route = "match" if re.search(params.pattern, text, flags) else "other"
        found = "found" if route == "match" else "not found"
        ctx.note(route=route, reason=f"pattern {params.pattern!r} {found}")
        return {route: text}


class Counter(NodeType):
    type_id = "debug.counter"
    title = "Counter"
    category = "Debug"
    description = "Outputs the incoming count plus one (starts at 1)."
    inputs = (
        InputPort("value", Any, required=False),
        InputPort("count", int, required=False, description="Previous count (loop-back)"),
    )
    outputs = (OutputPort("count", int),)

    def run(self, ctx: NodeContext, params: Any, value: Any = None,
            count: int | None = None) -> dict[str, Any]:
        return {"count": (count or 0) + 1}


class ThresholdParams(_Params):
    limit: int = Field(3, description="Counts at or above this pass")


class Threshold(NodeType):
    type_id = "debug.threshold"
    key_params = ("limit",)
    title = "Threshold"
    category = "Debug"
    description = "Sends the count to 'passed' when it reaches the limit, else to 'retry'."
    Params = ThresholdParams
    routes = True
    inputs = (InputPort("count", int),)
    outputs = (OutputPort("passed", int), OutputPort("retry", int))

    def run(self, ctx: NodeContext, params: ThresholdParams, count: int) -> dict[str, Any]:
        return {"passed": count} if count >= params.limit else {"retry": count}


class AppendItem(NodeType):
    """Appends to the list it was given: proves that inputs are private copies."""

    type_id = "debug.mutate"
    title = "Mutate input"
    category = "Debug"
    description = "Appends an item to the list it receives and returns it."
    inputs = (InputPort("items", list),)
    outputs = (OutputPort("items", list),)

    def run(self, ctx: NodeContext, params: Any, items: list) -> dict[str, Any]:
        items.append("mutated")
        if items and isinstance(items[0], dict):
            items[0]["mutated"] = True
        return {"items": items}


class ListParams(_Params):
    items: list[str] = Field(default_factory=lambda: ["a", "b"])


class MakeList(NodeType):
    type_id = "debug.list"
    title = "List"
    category = "Debug"
    description = "Outputs a list of records built from the given items."
    Params = ListParams
    outputs = (OutputPort("items", list),)

    def run(self, ctx: NodeContext, params: ListParams) -> dict[str, Any]:
        return {"items": [{"name": item} for item in params.items]}
