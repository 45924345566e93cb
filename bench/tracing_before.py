"""The trace export as it was before the export thread (``bench/bench_tracing.py``'s
"before" line): live SDK spans made through a tracer on the run's thread when the run ends,
attributes built at each visit's end, and the SDK's batch span processor. Kept only to be
measured side by side with ``modrag_studio.run_tracing``; not used by the app.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openinference.semconv.trace import OpenInferenceMimeTypeValues, SpanAttributes
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Status, StatusCode, Tracer

from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.run.trace import NodeVisit, Trace
from modrag_studio.run_tracing.attributes import CHAIN, visit_attributes


@dataclass
class _VisitSpan:
    visit: NodeVisit
    attributes: dict[str, Any]
    start_ns: int
    end_ns: int


@dataclass
class _RunRecord:
    graph_name: str
    inputs: dict[str, Any]
    start_ns: int
    starts: dict[tuple[str, int], int] = field(default_factory=dict)
    first_token: dict[str, int] = field(default_factory=dict)
    visits: list[_VisitSpan] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)


class SdkSpanHook(RunHook):
    """Emits a run's spans through ``tracer``. ``content``: also document text, messages,
    questions and answers (off: ids, scores, ranks, models and counts only)."""

    def __init__(self, tracer: Tracer, *, content: bool = False) -> None:
        self.tracer = tracer
        self.content = content
        self._runs: dict[str, _RunRecord] = {}
        self._lock = threading.Lock()

    def on_run_start(self, *, run_id: str, graph_name: str, inputs: dict[str, Any],
                     node_ids: list[str], **kwargs: Any) -> None:
        with self._lock:
            self._runs[run_id] = _RunRecord(graph_name, dict(inputs), time.time_ns())

    def on_node_start(self, *, run_id: str, node_id: str, type_id: str, iteration: int,
                      **kwargs: Any) -> None:
        record = self._runs.get(run_id)
        if record is not None:
            record.starts[(node_id, iteration)] = time.time_ns()

    def on_node_stream(self, *, run_id: str, node_id: str, text: str, **kwargs: Any) -> None:
        record = self._runs.get(run_id)
        if record is not None and node_id not in record.first_token:
            record.first_token[node_id] = time.time_ns()

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict[str, Any],
                    outputs: dict[str, Any], **kwargs: Any) -> None:
        record = self._runs.get(run_id)
        if record is None:
            return
        end = time.time_ns()
        start = record.starts.pop((visit.node_id, visit.iteration), end)
        attributes = visit_attributes(visit, inputs, outputs, content=self.content)
        first = record.first_token.pop(visit.node_id, None)
        if first is not None and "modrag.llm.time_to_first_token_s" not in attributes:
            attributes["modrag.llm.time_to_first_token_s"] = (first - start) / 1e9
        record.visits.append(_VisitSpan(visit, attributes, start, end))
        if visit.type_id == "graph.output" and "value" in outputs:
            value = outputs["value"]
            text = getattr(value, "text", value)
            record.outputs[visit.node_id] = text if isinstance(text, str) else repr(text)

    def on_run_end(self, *, run_id: str, trace: Trace, **kwargs: Any) -> None:
        with self._lock:
            record = self._runs.pop(run_id, None)
        if record is None:
            return
        root = self.tracer.start_span(record.graph_name or "graph run",
                                      start_time=record.start_ns,
                                      attributes=self._run_attributes(run_id, record, trace))
        if trace.status == "failed":
            root.set_status(Status(StatusCode.ERROR, trace.failure_summary()[:1000]))
        context = otel_trace.set_span_in_context(root)
        for item in record.visits:
            visit = item.visit
            name = (f"{visit.node_id} #{visit.iteration + 1}" if visit.iteration
                    else visit.node_id)
            if "loop" in visit.details:
                item.attributes["modrag.loop"] = str(visit.details["loop"])
            span = self.tracer.start_span(name, context=context, start_time=item.start_ns,
                                          attributes=item.attributes)
            if visit.error is not None:
                span.set_status(Status(StatusCode.ERROR, visit.error.message[:1000]))
                span.add_event("exception", {"exception.type": visit.error.type,
                                             "exception.message": visit.error.message},
                               timestamp=item.end_ns)
            span.end(end_time=item.end_ns)
        root.end(end_time=record.start_ns + int(trace.duration_s * 1e9))

    def _run_attributes(self, run_id: str, record: _RunRecord, trace: Trace) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            SpanAttributes.OPENINFERENCE_SPAN_KIND: CHAIN,
            "modrag.run.id": run_id,
            "modrag.graph.name": record.graph_name,
            "modrag.run.status": trace.status,
            "modrag.run.visits": len(trace.visits),
            "modrag.run.cached": len([v for v in trace.visits if v.status == "cached"]),
            "modrag.run.inputs": sorted(record.inputs),
        }
        if self.content:
            attrs[SpanAttributes.INPUT_VALUE] = json.dumps(_plain(record.inputs),
                                                           ensure_ascii=False)
            attrs[SpanAttributes.INPUT_MIME_TYPE] = OpenInferenceMimeTypeValues.JSON.value
            if record.outputs:
                only = list(record.outputs.values())
                attrs[SpanAttributes.OUTPUT_VALUE] = only[0] if len(only) == 1 else json.dumps(
                    record.outputs, ensure_ascii=False)
        problems = [p.get("message", "") for p in trace.problems if isinstance(p, Mapping)]
        if problems:
            attrs["modrag.run.problems"] = [str(p) for p in problems]
        return attrs


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
            for k, v in values.items()}


def sdk_pipeline(endpoint: str, *, content: bool, service_name: str) -> tuple[SdkSpanHook, Any]:
    """The old pipeline: a tracer provider with a batch span processor and the HTTP
    exporter; returns the hook and the provider (``shutdown`` flushes)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}),
                              shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces", timeout=5),
        max_queue_size=2048, max_export_batch_size=512))
    return SdkSpanHook(provider.get_tracer("bench"), content=content), provider
