"""Run tracing for the commands, the server and the studio: OTLP export of every run an
executor makes, as executor hooks (``Executor(hooks=tracing.hooks)``).

Off unless ``--otlp URL`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``)
says where; importing this package never imports OpenTelemetry (the ``otel`` extra is
optional). Content (document text, messages, questions, answers) is exported only with
``--otlp-content`` or ``MODRAG_OTLP_CONTENT=1``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Protocol

__all__ = ["NoTracing", "Tracing", "add_arguments", "from_args", "start"]

CONTENT_ENV = "MODRAG_OTLP_CONTENT"
INSTALL_HINT = "pip install 'modrag-studio[otel]'"


class Tracing(Protocol):
    @property
    def hooks(self) -> list[Any]: ...

    def shutdown(self) -> None: ...


class NoTracing:
    """Tracing turned off: no hooks, nothing to shut down."""

    hooks: list[Any] = []

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


def from_args(args: argparse.Namespace) -> Tracing:
    """The tracing ``add_arguments``' options (and the OTLP variables) ask for."""
    content = True if getattr(args, "otlp_content", False) else None
    return start(getattr(args, "otlp", None), content=content)
