"""Trace export over OTLP: the hook's records go to an export thread of our own with a
bounded queue (``SpanWorker``; the process's global tracer provider is left alone) and an
exporter whose failures are told once. Needs the optional ``otel`` extra.

Configuration follows the OpenTelemetry variables: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the
base URL; ``/v1/traces`` is added for OTLP/HTTP) or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
(the full URL), ``OTEL_EXPORTER_OTLP_HEADERS`` (and ``..._TRACES_HEADERS``),
``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/protobuf``, the default, or ``grpc``),
``OTEL_EXPORTER_OTLP_TIMEOUT``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_BSP_MAX_QUEUE_SIZE`` and ``OTEL_SDK_DISABLED``. Every run is exported whole (no
sampling).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from modrag_studio.run_tracing.export import SpanWorker
from modrag_studio.run_tracing.spans import SpanBuilder, SpanHook

log = logging.getLogger("modrag_studio.run_tracing")

DEFAULT_SERVICE = "modrag-studio"
DEFAULT_TIMEOUT_S = 5.0  # per export request; the exporter retries within it
DEFAULT_QUEUE = 2048
#: Loggers of the SDK and exporters whose per-batch failure messages our one warning replaces.
_QUIETED = ("opentelemetry.exporter.otlp.proto.http.trace_exporter",
            "opentelemetry.exporter.otlp.proto.http._common",
            "opentelemetry.exporter.otlp.proto.grpc.exporter",
            "opentelemetry.sdk.trace.export",
            "opentelemetry.sdk._shared_internal")


class WarnOnceExporter(SpanExporter):
    """Passes batches on; the first failed export logs one warning naming the endpoint,
    later ones only count (``failed_batches``)."""

    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.failed_batches = 0
        self.exported_spans = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
            reason = "" if result == SpanExportResult.SUCCESS else "the receiver did not accept it"
        except Exception as exc:  # an exporter must never take the run down
            result, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        with self._lock:
            if result == SpanExportResult.SUCCESS:
                self.exported_spans += len(spans)
                return result
            self.failed_batches += 1
            first = self.failed_batches == 1
        if first:
            log.warning("trace export to %s failed (%s; is the collector running?): its spans "
                        "are dropped, runs go on; later failures are not reported",
                        self.endpoint, reason)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _DropExportNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.CRITICAL


class OtlpTracing:
    """An OTLP pipeline and the executor hook that feeds it. ``shutdown`` sends what is
    queued, bounded by the exporter's timeout."""

    def __init__(self, endpoint: str, *, protocol: str = "http/protobuf", content: bool = False,
                 service_name: str | None = None, timeout_s: float | None = None,
                 queue_size: int | None = None, delay_s: float | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.endpoint = endpoint
        self.protocol = protocol
        self.content = content
        resource = Resource.create({"service.name": service_name or os.environ.get(
            "OTEL_SERVICE_NAME") or DEFAULT_SERVICE})
        project = resource.attributes.get("service.name", DEFAULT_SERVICE)
        if "openinference.project.name" not in resource.attributes:  # Phoenix's project
            resource = resource.merge(Resource({"openinference.project.name": project}))
        self.timeout_s = timeout_s or _timeout_from_env() or DEFAULT_TIMEOUT_S
        self.exporter = WarnOnceExporter(_exporter(endpoint, protocol, timeout_s, headers),
                                         endpoint)
        for name in _QUIETED:
            logging.getLogger(name).addFilter(_DropExportNoise())
        queue = queue_size or int(os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE") or DEFAULT_QUEUE)
        self.worker = SpanWorker(SpanBuilder(resource, content=content), self.exporter,
                                 max_spans=queue, delay_s=delay_s)
        self.hook = SpanHook(self.worker.submit)
        self.worker.runs_active = self.hook.active_runs
        self._closed = False

    @property
    def hooks(self) -> list[SpanHook]:
        return [self.hook]

    def flush(self, timeout_s: float = 5.0) -> bool:
        return self.worker.flush(timeout_s)

    def annotate(self, run_id: str, attributes: dict[str, Any]) -> bool:
        return self.worker.annotate(run_id, attributes)

    def shutdown(self) -> None:
        if not self._closed:
            self._closed = True
            self.worker.shutdown(self.timeout_s * 2 + 1)

    def __enter__(self) -> OtlpTracing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def traces_endpoint(base: str | None, protocol: str) -> str | None:
    """The URL spans go to: ``base`` (``--otlp``) or the OTLP variables; None when unset."""
    if base is None:
        full = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        if full:
            return full
        base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or None
        if base is None:
            return None
    base = base.strip()
    if "://" not in base:
        base = "http://" + base
    if protocol == "grpc" or base.rstrip("/").endswith("/v1/traces"):
        return base
    return base.rstrip("/") + "/v1/traces"


def protocol_from_env() -> str:
    value = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
             or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
    if value not in ("http/protobuf", "grpc"):
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={value!r}: modrag exports traces over "
                         "'http/protobuf' or 'grpc'")
    return value


def _timeout_from_env() -> float | None:
    value = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
             or os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") or "").strip()
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _exporter(endpoint: str, protocol: str, timeout_s: float | None,
              headers: dict[str, str] | None = None) -> SpanExporter:
    """The SDK's OTLP exporter with our encoder (``exporters``); ``headers`` None: the OTLP
    headers variables'."""
    from modrag_studio.run_tracing.exporters import grpc_exporter, http_exporter

    if timeout_s is None and _timeout_from_env() is None:
        timeout_s = DEFAULT_TIMEOUT_S
    if protocol == "grpc":
        return grpc_exporter(endpoint=endpoint, insecure=endpoint.startswith("http://"),
                             timeout=timeout_s,
                             headers=tuple(headers.items()) if headers else None)
    return http_exporter(endpoint=endpoint, timeout=timeout_s, headers=headers)
