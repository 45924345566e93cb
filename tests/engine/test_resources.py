"""The one service that keeps models and memos: bounded, evictable, shared per run scope."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from modrag_nodes.graph_io import GraphOutput
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.resources import (
    Resources,
    process_resources,
)
from modrag_studio.engine.run.executor import Executor
from tests.engine.helpers import edge, graph, node


def test_a_model_is_loaded_once_and_the_least_recently_used_goes_first():
    resources = Resources(max_models=2)
    loads: list[str] = []

    def loader(name):
        return lambda: loads.append(name) or f"model {name}"

    assert resources.model("embedder", "a", loader("a")) == "model a"
    assert resources.model("embedder", "a", loader("a")) == "model a"
    resources.model("reranker", "b", loader("b"))
    resources.model("embedder", "a", loader("a"))  # a is now the most recently used
    resources.model("chat model", "c", loader("c"))  # over the bound: b goes
    assert loads == ["a", "b", "c"]
    assert [(r.kind, r.key) for r in resources.resident()] == [("embedder", "a"),
                                                                ("chat model", "c")]
    assert resources.resident()[0].uses == 3


def test_two_threads_asking_for_one_model_load_it_once():
    resources = Resources()
    started = threading.Event()
    loads = []

    def slow():
        loads.append(1)
        started.set()
        time.sleep(0.2)
        return object()

    found = []
    threads = [threading.Thread(target=lambda: found.append(resources.model("k", "x", slow)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1 and len({id(f) for f in found}) == 1


def test_unload_by_kind_releases_and_forgets():
    resources = Resources()
    released = []
    resources.model("embedder", "a", lambda: "A", release=released.append)
    resources.model("chat model", "b", lambda: "B", release=released.append)
    gone = resources.unload("embedder")
    assert [g.key for g in gone] == ["a"] and released == ["A"]
    assert [r.key for r in resources.resident()] == ["b"]
    assert resources.peek("embedder", "a") is None
    assert resources.drop("chat model", "b") and not resources.drop("chat model", "b")
    assert resources.resident() == [] and released == ["A", "B"]


def test_sizes_are_told_or_measured():
    resources = Resources()
    resources.model("k", "told", lambda: "x", size=lambda _v: 1234)
    resources.model("k", "measured", lambda: bytearray(64 * 2**20))
    sizes = {r.key: r.size_bytes for r in resources.resident()}
    assert sizes["told"] == 1234
    assert sizes["measured"] > 32 * 2**20  # the process grew by about 64 MB while loading


@pytest.mark.parametrize("bad", ["many", "-1"])
def test_a_bad_bound_is_refused_naming_the_variable(monkeypatch, bad):
    monkeypatch.setenv("MODRAG_MAX_MODELS", bad)
    with pytest.raises(ValueError, match="MODRAG_MAX_MODELS"):
        Resources()


SEEN: list[object] = []


class RecordsResources(NodeType):
    type_id = "test.records_resources"
    outputs = (OutputPort("value", str),)

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        SEEN.append(ctx.resources)
        return {"value": "seen"}


def test_nodes_of_a_run_see_the_executors_resources(tmp_path):
    registry = NodeRegistry()
    registry.register(GraphOutput)
    registry.register(RecordsResources)
    doc = graph([node("r", "test.records_resources"),
                 node("out", "graph.output", name="value")],
                [edge("r.value", "out.value")], name="resources-scope")
    own = Resources()
    SEEN.clear()
    assert Executor(registry, work_dir=tmp_path, resources=own).run(doc).ok
    assert [own] == SEEN
    SEEN.clear()
    Executor(registry, work_dir=tmp_path / "2").run(doc)
    assert [process_resources()] == SEEN


def test_a_context_made_outside_a_run_carries_what_it_is_given(tmp_path):
    """``node_context`` (the executor's, and a script's or worker's) gives a node the
    resources, cancel, folder and progress it was made with, and nothing of the process's."""
    from modrag_studio.engine.core.errors import RunCancelled
    from modrag_studio.engine.core.node import CancelToken, node_context

    own, cancel, told = Resources(), CancelToken(), []
    ctx = node_context("n", "test.records_resources", resources=own, cancel=cancel,
                       work_dir=tmp_path, on_progress=lambda f, m: told.append((f, m)))
    assert ctx.resources is own and ctx.resources is not process_resources()
    assert ctx.work_dir == tmp_path and ctx.run_inputs == {}
    ctx.progress(1, 4, "a quarter")
    assert told == [(0.25, "a quarter")]
    cancel.cancel()
    with pytest.raises(RunCancelled):
        ctx.check_cancelled()


class CancelsItsRun(NodeType):
    type_id = "test.cancels_its_run"
    outputs = (OutputPort("value", str),)

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        from modrag_studio.engine.run.cancel_scope import check_cancelled

        ctx.cancel.cancel()
        check_cancelled()  # code without a context sees the run's token
        return {"value": "not cancelled"}


def test_the_executor_opens_the_runs_cancel_scope(tmp_path):
    registry = NodeRegistry()
    registry.register(GraphOutput)
    registry.register(CancelsItsRun)
    doc = graph([node("c", "test.cancels_its_run"), node("out", "graph.output", name="value")],
                [edge("c.value", "out.value")], name="cancel-scope")
    result = Executor(registry, work_dir=tmp_path).run(doc)
    assert result.trace.status == "cancelled"
    assert next(v for v in result.trace.visits if v.node_id == "c").status == "cancelled"
