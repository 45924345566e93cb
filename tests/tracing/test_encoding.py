"""Our OTLP encoder against the SDK's: the request it writes parses to the very message
``encode_spans`` builds, for the spans of real runs (retrieval, an LLM with content, cached
re-runs, a failed node) and for any attribute values OTLP has a form for; the exporters use
it on the installed SDK."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.util.instrumentation import InstrumentationScope  # noqa: E402
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags  # noqa: E402

from modrag_nodes.llm.client import register_backend, unregister_backend  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine import Executor, NodeCache  # noqa: E402
from modrag_studio.engine.core.document import GraphDocument  # noqa: E402
from modrag_studio.run_tracing import encoding  # noqa: E402
from modrag_studio.run_tracing.encoding import SpanEncoder  # noqa: E402
from modrag_studio.run_tracing.exporters import grpc_exporter, http_exporter  # noqa: E402
from modrag_studio.run_tracing.spans import SpanBuilder, SpanHook  # noqa: E402
from tests.tiny_rag import tiny_rag_graph  # noqa: E402
from tests.tracing.test_otlp_export import DOCS, Scripted  # noqa: E402

RESOURCE = Resource.create({"service.name": "encoding-test"})


def same_as_sdk(spans) -> ExportTraceServiceRequest:
    ours = ExportTraceServiceRequest.FromString(SpanEncoder().request(spans))
    theirs = encode_spans(spans)
    assert ours == theirs
    return ours


def records(doc, runs: int, tmp_path) -> list:
    made: list = []
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=tmp_path / "cache"),
                        hooks=[SpanHook(made.append)])
    for _ in range(runs):
        executor.run(doc)
    return made


@pytest.fixture
def rag_doc(tmp_path):
    register_backend("test-encoding", Scripted)
    doc = GraphDocument.model_validate(tiny_rag_graph(tmp_path, DOCS, backend="test-encoding",
                                                      top_k=2))
    doc.node("question").params["default"] = "How often is LP-07 serviced?"
    yield doc
    unregister_backend("test-encoding")


@pytest.mark.parametrize("content", [False, True])
def test_a_rag_run_and_its_cached_rerun_encode_as_the_sdk_does(rag_doc, tmp_path, content):
    builder = SpanBuilder(RESOURCE, content=content)
    first, rerun = records(rag_doc, 2, tmp_path)
    spans = builder.spans(first)
    request = same_as_sdk(spans)
    kinds = {kv.value.string_value for span in request.resource_spans[0].scope_spans[0].spans
             for kv in span.attributes if kv.key == "openinference.span.kind"}
    assert {"RETRIEVER", "LLM", "CHAIN"} <= kinds  # the attributes that matter are there
    cached = builder.spans(rerun)
    assert any(getattr(s, "shared_attributes", None) is not None for s in cached)
    encoder = SpanEncoder()  # the same encoder twice: its kept encodings are still right
    for batch in (cached, builder.spans(rerun)):
        assert ExportTraceServiceRequest.FromString(encoder.request(batch)) == encode_spans(
            batch)


def test_a_failed_visit_with_its_exception_event_encodes_as_the_sdk_does(tmp_path):
    doc = GraphDocument.model_validate({
        "metadata": {"name": "fails"},
        "nodes": [{"id": "c", "type": "debug.constant", "params": {"value": "x"}},
                  {"id": "f", "type": "debug.fail", "params": {"message": "boom ü"}}],
        "edges": [{"from": "c.value", "to": "f.value"}]})
    spans = SpanBuilder(RESOURCE, content=True).spans(records(doc, 1, tmp_path)[0])
    assert any(s.events for s in spans)
    request = same_as_sdk(spans)
    statuses = [s.status.code for s in request.resource_spans[0].scope_spans[0].spans]
    assert 2 in statuses  # STATUS_CODE_ERROR


def test_kept_encodings_follow_the_mapping_not_its_id():
    """A shared mapping freed and another made in its place (same id) is encoded anew."""
    encoder = SpanEncoder()
    for value in ("first", "second"):
        shared = {"modrag.value": value}
        span = encoding.RecordedSpan("n", context=_context(1, 2), resource=RESOURCE,
                                     attributes=shared, shared_attributes=shared,
                                     start_time=1, end_time=2)
        request = ExportTraceServiceRequest.FromString(encoder.request([span]))
        got = request.resource_spans[0].scope_spans[0].spans[0].attributes[0]
        assert got.value.string_value == value
        del shared, span


def _context(trace_id: int, span_id: int, remote: bool = False) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=remote,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))


scalars = (st.none() | st.booleans() | st.text(max_size=20)
           | st.integers(min_value=-(2**63), max_value=2**63 - 1)
           | st.floats(allow_nan=False) | st.binary(max_size=8))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(attributes=st.dictionaries(st.text(max_size=12), values, max_size=6),
       name=st.text(max_size=30), kind=st.sampled_from(list(SpanKind)),
       code=st.sampled_from(list(StatusCode)), description=st.text(max_size=10),
       remote_parent=st.booleans(), times=st.tuples(st.integers(0, 2**63), st.integers(0, 2**63)),
       shared=st.booleans())
def test_any_attributes_names_kinds_and_statuses_encode_as_the_sdk_does(
        attributes, name, kind, code, description, remote_parent, times, shared):
    status = Status(code, description if code is StatusCode.ERROR else None)
    scope = InstrumentationScope("scope-a", "1.0", "https://schema/a")
    parent = _context(7, 8, remote_parent)
    spans = [encoding.RecordedSpan(name, context=_context(2**127 + 5, 2**63 + 3),
                                   parent=parent, resource=RESOURCE, attributes=attributes,
                                   kind=kind, status=status, start_time=times[0],
                                   end_time=times[1], instrumentation_scope=scope,
                                   shared_attributes=attributes if shared else None),
             ReadableSpan("root", context=_context(2**127 + 5, 9), resource=Resource.create(
                 {"service.name": "other"}), attributes={"a": json.dumps(attributes,
                                                                         default=repr)})]
    same_as_sdk(spans)


def test_the_installed_sdk_takes_our_encoder_over_http_and_grpc():
    http = http_exporter(endpoint="http://127.0.0.1:9/v1/traces", timeout=1)
    grpc = grpc_exporter(endpoint="http://127.0.0.1:9", insecure=True, timeout=1)
    try:
        assert http.fast_path and grpc.fast_path
        sample = [encoding.RecordedSpan("s", context=_context(3, 4), resource=RESOURCE,
                                        attributes={"k": 1}, start_time=1, end_time=2)]
        assert grpc._translate_data(sample) == encode_spans(sample)
    finally:
        http.shutdown()
        grpc.shutdown()


def test_a_batch_of_more_resources_than_the_encoder_keeps_encodes_as_the_sdk_does():
    encoder = SpanEncoder()
    spans = [encoding.RecordedSpan(f"s{i}", context=_context(5, 100 + i),
                                   resource=Resource.create({"service.name": f"svc{i % 70}"}),
                                   attributes={"i": i}, start_time=1, end_time=2)
             for i in range(140)]
    request = ExportTraceServiceRequest.FromString(encoder.request(spans))
    assert request == encode_spans(spans) and len(request.resource_spans) == 70
