"""Node contracts checked at registration; hooks that raise are reported once."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.contracts import NodeContractError, contract_problems
from modrag_studio.engine.core.errors import UnknownNodeType
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.hooks import RunHook
from tests.engine.helpers import graph, node


class Good(NodeType):
    type_id = "t.good"
    inputs = (InputPort("text", str), InputPort("extra", str, required=False),
              InputPort("many", str, multiple=True, required=False))
    outputs = (OutputPort("text", str),)

    def run(self, ctx: NodeContext, params: Any, text: str, extra: str | None = None,
            many: list[str] | None = None) -> dict[str, Any]:
        return {"text": text}


class MissingPort(NodeType):
    type_id = "t.missing"
    inputs = (InputPort("text", str), InputPort("query", str))

    def run(self, ctx: NodeContext, params: Any, text: str) -> dict[str, Any]:
        return {}


class ExtraParameter(NodeType):
    type_id = "t.extra"
    inputs = (InputPort("text", str),)

    def run(self, ctx: NodeContext, params: Any, text: str, txt: str) -> dict[str, Any]:
        return {}


class WrongType(NodeType):
    type_id = "t.wrong"
    inputs = (InputPort("count", int), InputPort("texts", str, multiple=True))

    def run(self, ctx: NodeContext, params: Any, count: str, texts: str) -> dict[str, Any]:
        return {}


class TakesAll(NodeType):
    type_id = "t.kwargs"
    inputs = (InputPort("a", str), InputPort("b", int))

    def run(self, ctx: NodeContext, params: Any, **inputs: Any) -> dict[str, Any]:
        return {}


def test_a_correct_node_registers():
    registry = NodeRegistry()
    assert registry.register(Good) is Good
    assert registry.register(TakesAll) is TakesAll
    assert contract_problems(Good) == []


@pytest.mark.parametrize(("node_type", "expected"), [
    (MissingPort, "input port 'query' is not a parameter of run()"),
    (ExtraParameter, "run() parameter 'txt' is not a declared input port"),
    (WrongType, "input port 'count' is int but run() annotates it as str"),
    (WrongType, "input port 'texts' is list[str] but run() annotates it as str"),
])
def test_contract_mistakes_fail_at_registration(node_type, expected):
    registry = NodeRegistry()
    with pytest.raises(NodeContractError) as info:
        registry.register(node_type)
    message = str(info.value)
    assert f"node type '{node_type.type_id}'" in message
    assert node_type.__qualname__ in message
    assert expected in message
    assert node_type.type_id not in registry


def test_a_broken_plugin_is_a_load_error_not_a_crash(monkeypatch):
    class EntryPoint:
        name, value = "broken", "broken_pkg:register"

        def load(self):
            return lambda registry: registry.register(MissingPort)

    monkeypatch.setattr("modrag_studio.engine.core.registry.entry_points",
                        lambda group: [EntryPoint()])
    registry = NodeRegistry()
    registry.load_entry_points()
    assert len(registry.load_errors) == 1
    assert "t.missing" in registry.load_errors[0] and "'query'" in registry.load_errors[0]
    with pytest.raises(UnknownNodeType) as info:  # a graph using it is told why it is missing
        registry.resolve_id("t.missing")
    assert "failed to import" in str(info.value) and "broken" in str(info.value)


class _Future(RunHook):
    """A hook written against a later version that passes more keywords."""


def test_hooks_take_unknown_keywords():
    hook = _Future()
    for event in ("on_run_start", "on_node_start", "on_node_progress", "on_node_stream",
                  "on_node_end", "on_run_end"):
        getattr(hook, event)(run_id="r", graph_name="g", inputs={}, node_ids=[], node_id="n",
                             type_id="t", iteration=0, fraction=None, message="", text="",
                             visit=None, outputs={}, trace=None, added_later=1)


def test_a_raising_hook_is_reported_once_in_trace_and_log(tmp_path, caplog):
    class Broken(RunHook):
        calls = 0

        def on_node_end(self, **kwargs: Any) -> None:
            Broken.calls += 1
            raise RuntimeError("hook bug")

    doc = graph([node("a", "debug.constant", value="x"), node("b", "debug.constant", value="y")],
                [])
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=None), work_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="modrag_studio.engine.run.hooks"):
        result = executor.run(doc, hooks=[Broken()])
    assert result.ok and Broken.calls == 2
    warnings = [p for p in result.trace.problems if p["code"] == "hook-failed"]
    assert len(warnings) == 1
    assert "Broken.on_node_end failed: RuntimeError: hook bug" in warnings[0]["message"]
    logged = [r for r in caplog.records if "hook bug" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None
