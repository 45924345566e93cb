"""Run tracing for the commands, the server and the studio: OTLP export of every run an
executor makes, as executor hooks (``Executor(hooks=tracing.hooks)``).

Off unless ``--otlp URL`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``)
says where; importing this package never imports OpenTelemetry (the ``otel`` extra is
optional). Content (document text, messages, questions, answers) is exported only with
``--otlp-content`` or ``MODRAG_OTLP_CONTENT=1``.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("modrag_studio.run_tracing")

__all__ = ["ExportSettings", "NoTracing", "Tracing", "TracingSwitch", "add_arguments",
           "attribution_attributes", "available", "from_args", "parse_headers", "start"]

CONTENT_ENV = "MODRAG_OTLP_CONTENT"
INSTALL_HINT = "pip install 'modrag-studio[otel]'"


class Tracing(Protocol):
    @property
    def hooks(self) -> list[Any]: ...

    def annotate(self, run_id: str, attributes: dict[str, Any]) -> bool: ...

    def shutdown(self) -> None: ...


class NoTracing:
    """Tracing turned off: no hooks, nothing to shut down."""

    hooks: list[Any] = []

    def annotate(self, run_id: str, attributes: dict[str, Any]) -> bool:
        return False

    def shutdown(self) -> None:
        return None

    def __enter__(self) -> NoTracing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--otlp URL`` and ``--otlp-content`` (``modrag run``, ``eval``, ``serve``)."""
    parser.add_argument("--otlp", metavar="URL",
                        help="export traces over OTLP to this collector (e.g. "
                        "http://127.0.0.1:6006 for Phoenix, http://127.0.0.1:4318 for an "
                        "OpenTelemetry Collector); default: $OTEL_EXPORTER_OTLP_ENDPOINT, "
                        "else off")
    parser.add_argument("--otlp-content", action="store_true",
                        help="also export document text, messages, questions and answers "
                        f"(default: ids, scores and counts only; or ${CONTENT_ENV}=1)")


def content_from_env() -> bool:
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def available() -> bool:
    """Whether the ``otel`` extra is installed (without importing it)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("opentelemetry.sdk", "openinference.semconv"))


def parse_headers(text: str) -> dict[str, str]:
    """``key=value,key2=value2`` (the ``OTEL_EXPORTER_OTLP_HEADERS`` form, values
    URL-encoded) as a dict; ValueError naming the part without ``=``."""
    headers: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{part.strip()!r} is not key=value")
        headers[urllib.parse.unquote(key.strip())] = urllib.parse.unquote(value.strip())
    return headers


def start(endpoint: str | None = None, *, content: bool | None = None,
          **options: Any) -> Tracing:
    """An OTLP pipeline to ``endpoint`` (else the OTLP variables), or ``NoTracing`` when
    neither names one (or ``OTEL_SDK_DISABLED=true``). RuntimeError when the ``otel`` extra
    is missing; ValueError on a bad protocol."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" and endpoint is None:
        return NoTracing()
    if endpoint is None and not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
                                 or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                                   "").strip()):
        return NoTracing()
    try:
        from modrag_studio.run_tracing.otlp import (
            OtlpTracing,
            protocol_from_env,
            traces_endpoint,
        )
    except ImportError as exc:
        raise RuntimeError(f"trace export needs the otel extra ({INSTALL_HINT}): "
                           f"{exc}") from None
    protocol = protocol_from_env()
    url = traces_endpoint(endpoint, protocol)
    assert url is not None
    return OtlpTracing(url, protocol=protocol,
                       content=content_from_env() if content is None else content, **options)


def from_args(args: argparse.Namespace, *, hold: bool = False) -> Tracing:
    """The tracing ``add_arguments``' options (and the OTLP variables) ask for. ``hold``:
    spans wait until ``shutdown`` (so ``annotate`` finds every run: ``modrag run
    --expect`` adds the attribution verdict after the run)."""
    content = True if getattr(args, "otlp_content", False) else None
    options: dict[str, Any] = {"delay_s": 24 * 3600.0} if hold else {}
    return start(getattr(args, "otlp", None), content=content, **options)


def attribution_attributes(attribution: Any) -> dict[str, Any]:
    """The ``modrag.attribution.*`` attributes of an ``engine.evidence`` ``Attribution``:
    the verdict, the first node that lost the expected evidence, what was expected."""
    attrs: dict[str, Any] = {"modrag.attribution.verdict": str(attribution.verdict),
                             "modrag.attribution.expected": [str(e) for e in
                                                             attribution.expected]}
    if attribution.first_loss:
        attrs["modrag.attribution.first_loss"] = str(attribution.first_loss)
    return attrs


@dataclass(frozen=True)
class ExportSettings:
    """The studio's trace export setting (Run > Trace Export…), sent with each run request.
    ``headers`` in the ``OTEL_EXPORTER_OTLP_HEADERS`` form; empty: that variable's."""

    endpoint: str
    headers: str = ""
    content: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "headers": self.headers, "content": self.content}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ExportSettings | None:
        if not data or not str(data.get("endpoint", "")).strip():
            return None
        return cls(str(data["endpoint"]).strip(), str(data.get("headers", "")),
                   bool(data.get("content", False)))


class TracingSwitch:
    """The pipeline for the settings the last run asked for (the studio's run process, or
    its run thread): the same settings keep the pipeline, new ones replace it (the old one
    sends what it holds on a thread of its own), none turn export off. A setting that
    cannot start (the extra missing, a bad header) is logged once and the run goes on."""

    def __init__(self) -> None:
        self._settings: ExportSettings | None = None
        self._tracing: Tracing = NoTracing()
        self._refused: ExportSettings | None = None

    def hooks(self, settings: ExportSettings | None) -> list[Any]:
        if settings != self._settings:
            self._replace(settings)
        return list(self._tracing.hooks)

    def _replace(self, settings: ExportSettings | None) -> None:
        old, self._tracing, self._settings = self._tracing, NoTracing(), settings
        if not isinstance(old, NoTracing):
            threading.Thread(target=old.shutdown, name="modrag-otlp-close", daemon=True).start()
        if settings is None:
            return
        try:
            headers = parse_headers(settings.headers) if settings.headers.strip() else None
            self._tracing = start(settings.endpoint, content=settings.content, headers=headers)
        except (RuntimeError, ValueError) as exc:
            if settings != self._refused:
                self._refused = settings
                log.warning("trace export to %s is off: %s", settings.endpoint, exc)

    def close(self) -> None:
        """Send what is queued (bounded by the export timeout) and stop."""
        self._tracing.shutdown()
        self._tracing, self._settings = NoTracing(), None
