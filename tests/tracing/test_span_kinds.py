"""A span's kind is what its node type declares (``NodeType.span_kind``), whatever the type's
id; the run span's output is read from the nodes whose ``graph_role`` is "output"."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")

from openinference.semconv.trace import SpanAttributes  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from modrag_studio.composition import build_registry  # noqa: E402
from modrag_studio.engine import Executor  # noqa: E402
from modrag_studio.engine.core.document import GraphDocument  # noqa: E402
from modrag_studio.engine.core.node import NodeContext, NodeType  # noqa: E402
from modrag_studio.engine.core.ports import InputPort, OutputPort  # noqa: E402
from modrag_studio.run_tracing.export import SpanWorker  # noqa: E402
from modrag_studio.run_tracing.spans import SpanBuilder, SpanHook  # noqa: E402


class Lookup(NodeType):
    """A retriever whose id says nothing of what it does."""

    type_id = "acme.lookup"
    span_kind = "retriever"
    inputs = (InputPort("value", str),)
    outputs = (OutputPort("value", str),)

    def run(self, ctx: NodeContext, params: Any, value: str) -> dict[str, Any]:
        return {"value": value}


class Answer(NodeType):
    """A graph output under another id."""

    type_id = "acme.answer"
    graph_role = "output"
    inputs = (InputPort("value", Any),)
    outputs = (OutputPort("value", Any),)

    def run(self, ctx: NodeContext, params: Any, value: Any) -> dict[str, Any]:
        return {"value": value}


def test_the_span_kind_and_the_run_output_come_from_the_node_types_declarations():
    registry = build_registry(plugins=False)
    registry.register(Lookup)
    registry.register(Answer)
    exporter = InMemorySpanExporter()
    worker = SpanWorker(SpanBuilder(Resource.create({"service.name": "t"}), content=True),
                        exporter, delay_s=30)
    doc = GraphDocument.model_validate({"metadata": {"name": "kinds"}, "nodes": [
        {"id": "text", "type": "debug.constant", "params": {"value": "pump LP-07"}},
        {"id": "find", "type": "acme.lookup", "params": {}},
        {"id": "out", "type": "acme.answer", "params": {}},
    ], "edges": [{"from": "text.value", "to": "find.value"},
                 {"from": "find.value", "to": "out.value"}]})
    assert Executor(registry, hooks=[SpanHook(worker.submit)]).run(doc).ok
    assert worker.flush(5)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    assert spans["find"].attributes[kind] == "RETRIEVER"
    assert spans["text"].attributes[kind] == "CHAIN"
    assert spans["kinds"].attributes[SpanAttributes.OUTPUT_VALUE] == "pump LP-07"
    worker.shutdown(5)
