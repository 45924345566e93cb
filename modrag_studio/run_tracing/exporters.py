"""The SDK's OTLP exporters with our encoder (``SpanEncoder``) in place of theirs: the
transport (endpoint, headers, compression, timeout, retries with back-off) stays the SDK's.

Over HTTP the encoded bytes go to the exporter's HTTP client (``_client.export``, its one
method for serialized requests since SDK 1.40); over gRPC our request replaces
``_translate_data``'s, the exporters' hook for the message they send. Where an SDK version
lacks either, the exporter encodes as the SDK does (``fast_path`` False): slower, not
wrong."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from modrag_studio.run_tracing.encoding import SpanEncoder

log = logging.getLogger("modrag_studio.run_tracing")


def http_exporter(**kwargs: Any) -> SpanExporter:
    """The OTLP/HTTP exporter (``kwargs`` as the SDK's) encoding with ``SpanEncoder``."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    class EncodedHttpExporter(OTLPSpanExporter):
        def __init__(self) -> None:
            super().__init__(**kwargs)
            self.encoder = SpanEncoder()
            self.fast_path = callable(getattr(getattr(self, "_client", None), "export", None))

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            if not self.fast_path or getattr(self, "_shutdown", False):
                return super().export(spans)
            data = self.encoder.request(spans)
            limit = getattr(self, "_max_request_size", 0) or 0
            if 0 < limit < len(data):
                log.warning("trace export: a batch of %d spans is %d bytes, over the "
                            "exporter's max_request_size %d: dropped", len(spans), len(data),
                            limit)
                return SpanExportResult.FAILURE
            result = self._client.export(data)
            return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE

    return EncodedHttpExporter()


def grpc_exporter(**kwargs: Any) -> SpanExporter:
    """The OTLP/gRPC exporter (``kwargs`` as the SDK's) encoding with ``SpanEncoder``."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    class EncodedGrpcExporter(OTLPSpanExporter):
        def __init__(self) -> None:
            super().__init__(**kwargs)
            self.encoder = SpanEncoder()
            self.fast_path = callable(getattr(OTLPSpanExporter, "_translate_data", None))

        def _translate_data(self, data: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
            return ExportTraceServiceRequest.FromString(self.encoder.request(data))

    return EncodedGrpcExporter()
