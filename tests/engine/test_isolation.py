"""Private copies of node inputs, nodes that read their inputs only, and bounded previews."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from modrag_nodes.graph_io import GraphInput, GraphOutput
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import Chunk, Contract, ScoredChunk, SourceRank
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.isolation import isolate
from modrag_studio.engine.run.trace import summarize
from tests.engine.helpers import edge, graph, node


def scored(n: int) -> list[ScoredChunk]:
    return [ScoredChunk(chunk=Chunk(chunk_id=f"c{i}", doc_id="d", text="word " * 300,
                                    metadata={"tags": ["a", "b"]}),
                        score=1.0 / (i + 1), rank=i + 1,
                        sources={"r": SourceRank(retriever="r", rank=i + 1, score=1.0)})
            for i in range(n)]


class Handle(Contract):
    shared_read_only: ClassVar[bool] = True
    name: str = "index"


def test_isolate_copies_deeply_keeps_aliasing_and_shares_read_only_values():
    items = scored(3)
    handle = Handle()
    array = np.arange(4.0)
    value = {"items": items, "again": items, "handle": handle, "array": array,
             "pair": (items[0], "x")}
    copied = isolate(value)
    assert copied["items"] == items and copied["pair"] == value["pair"]
    assert copied["items"] is not items and copied["items"][0] is not items[0]
    assert copied["items"][0].chunk is not items[0].chunk
    assert copied["items"][0].chunk.metadata["tags"] is not items[0].chunk.metadata["tags"]
    assert copied["again"] is copied["items"]  # shared references stay shared
    assert copied["pair"][0] is copied["items"][0]
    assert copied["handle"] is handle
    assert not copied["array"].flags.writeable and np.shares_memory(copied["array"], array)
    copied["items"][0].chunk.metadata["tags"].append("changed")
    copied["items"][0].sources["r"].rank = 99
    assert items[0].chunk.metadata["tags"] == ["a", "b"] and items[0].sources["r"].rank == 1


class Remember(NodeType):
    """Test fixture: remembers the objects it was given."""

    type_id = "test.remember"
    inputs = (InputPort("value", Any),)
    outputs = (OutputPort("value", Any),)
    seen: ClassVar[list[Any]] = []

    def run(self, ctx: NodeContext, params: Any, value: Any) -> dict[str, Any]:
        self.seen.append(value)
        return {"value": value}


class RememberShared(Remember):
    type_id = "test.remember_shared"
    isolate_inputs = False


class Source(NodeType):
    type_id = "test.source"
    outputs = (OutputPort("value", Any),)
    made: ClassVar[list[Any]] = []

    def run(self, ctx: NodeContext, params: Any) -> dict[str, Any]:
        self.made.append(scored(5))
        return {"value": self.made[-1]}


def test_nodes_reading_inputs_only_get_them_uncopied_and_run_outputs_stay_private():
    registry = NodeRegistry()
    for node_type in (GraphInput, GraphOutput, Source, Remember, RememberShared):
        registry.register(node_type)
    Remember.seen.clear()
    doc = graph([node("src", "test.source"), node("copy", "test.remember"),
                 node("shared", "test.remember_shared"), node("out", "graph.output", name="r")],
                [edge("src.value", "copy.value"), edge("src.value", "shared.value"),
                 edge("shared.value", "out.value")])
    result = Executor(registry, NodeCache()).run(doc)
    made = Source.made[-1]
    copied, shared = Remember.seen
    assert copied == made and copied is not made
    assert shared is made
    assert result.node_outputs[("out", 0)]["value"] is made  # graph.output reads only
    assert result.outputs["r"] == made and result.outputs["r"] is not made
    result.outputs["r"][0].chunk.text = "caller edit"
    assert made[0].chunk.text.startswith("word")


def test_previews_of_nested_lists_stay_short_and_say_how_many_items():
    summary = summarize([scored(200), scored(3)])
    assert summary.type == "list[list]" and summary.count == 2
    first = summary.preview[0]
    assert first.startswith("[#1 c0 1: word") and len(first) <= 160
    short = summarize([{"name": "a"}, ["x", "y", "z", "w"]]).preview
    assert short == ["{'name': 'a'}", "['x', 'y', 'z', … 4 items]"]


def test_run_outputs_are_copied_when_first_read_and_results_still_pickle():
    import pickle

    registry = NodeRegistry()
    for node_type in (GraphOutput, Source):
        registry.register(node_type)
    doc = graph([node("src", "test.source"), node("out", "graph.output", name="r")],
                [edge("src.value", "out.value")])
    result = Executor(registry, NodeCache()).run(doc)
    made = Source.made[-1]
    assert result.output_of("out", "value") is made  # read-only access copies nothing
    first = result.outputs["r"]
    assert first == made and first is not made and result.outputs["r"] is first
    again = pickle.loads(pickle.dumps(result))
    assert again.outputs["r"] == made
    result.outputs = {"r": "replaced"}
    assert pickle.loads(pickle.dumps(result)).outputs == {"r": "replaced"}
