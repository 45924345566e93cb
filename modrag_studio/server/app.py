"""The FastAPI application serving one graph."""

import contextlib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from modrag_studio.engine.cache import NodeCache
from modrag_studio.engine.document import GraphDocument, to_json_dict
from modrag_studio.engine.errors import GraphInvalid
from modrag_studio.engine.executor import Executor
from modrag_studio.engine.health import HealthReport, check_health
from modrag_studio.engine.registry import NodeRegistry, default_registry
from modrag_studio.engine.validation import errors_only, validate
from modrag_studio.server.runs import RunManager, result_body, stream_run
from modrag_studio.server.schemas import request_model, response_model
from modrag_studio.server.security import GuardMiddleware

log = logging.getLogger(__name__)


class SafeJSONResponse(JSONResponse):
    """JSON that stays valid UTF-8 when a text holds a lone surrogate (sent as a \\u escape)."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")
        except ValueError:  # NaN or infinity (e.g. echoed from a rejected body): as text
            return json.dumps(_finite(content), ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by their names (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


@dataclass
class ServerSettings:
    api_key: str | None = None
    max_body_bytes: int = 1_000_000
    run_timeout_s: float = 300.0
    max_concurrent_runs: int = 8
    cache_dir: Path | None = None


def create_app(doc: GraphDocument, settings: ServerSettings | None = None, *,
               registry: NodeRegistry | None = None,
               executor: Executor | None = None) -> FastAPI:
    """An app that runs ``doc``; the request and response schemas come from its inputs/outputs."""
    settings = settings or ServerSettings()
    registry = registry or default_registry()
    problems = errors_only(validate(doc, registry))
    if problems:
        raise GraphInvalid(problems)
    executor = executor or Executor(registry, cache=NodeCache(disk_dir=settings.cache_dir))
    manager = RunManager(doc, executor, max_concurrent=settings.max_concurrent_runs,
                         timeout_s=settings.run_timeout_s)
    inputs_model = request_model(doc)
    result_model = response_model(doc)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if manager.active_runs:
            log.info("shutting down: cancelling %d running request(s)", manager.active_runs)
        manager.cancel_all()

    app = FastAPI(
        title=f"ModRAG Studio: {doc.metadata.name}",
        description=doc.metadata.description or "A RAG graph served by ModRAG Studio.",
        version="1",
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
    )
    app.state.manager = manager
    app.state.executor = executor
    app.add_middleware(GuardMiddleware, api_key=settings.api_key,
                       max_body_bytes=settings.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own handler fails (500) on a body that is not UTF-8: decode it leniently.
        detail = jsonable_encoder(exc.errors(), custom_encoder={
            bytes: lambda raw: raw.decode("utf-8", "replace")})
        return SafeJSONResponse(status_code=422, content={"detail": detail})

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("request %s failed", request.url.path)
        return JSONResponse(status_code=500,
                            content={"detail": f"internal error: {type(exc).__name__}"})

    @app.post("/run", response_model=result_model, summary="Run the graph once")
    async def run(body: inputs_model,  # type: ignore[valid-type]
                  trace: bool = Query(False, description="include the run trace")) -> Any:
        result, timed_out = await manager.run(body.model_dump())
        return result_body(result, with_trace=trace, timed_out=timed_out)

    @app.post("/run/stream", summary="Run the graph, streaming events (server-sent events)",
              response_class=StreamingResponse,
              responses={200: {"content": {"text/event-stream": {}}}})
    async def run_stream(body: inputs_model,  # type: ignore[valid-type]
                         trace: bool = Query(False, description="include the trace at the end")):
        return StreamingResponse(stream_run(manager, body.model_dump(), trace),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    @app.get("/graph", summary="The graph document (JSON)")
    async def graph() -> dict[str, Any]:
        return to_json_dict(doc)

    @app.get("/graph.mmd", response_class=PlainTextResponse, summary="The graph as Mermaid")
    async def graph_mermaid() -> str:
        from modrag_studio.engine.render import to_mermaid

        return to_mermaid(doc, registry)

    @app.get("/graph.svg", summary="The graph drawn by graphviz",
             responses={200: {"content": {"image/svg+xml": {}}}, 503: {}})
    async def graph_svg() -> Response:
        from modrag_studio.engine.render import to_svg

        try:
            svg = await anyio.to_thread.run_sync(to_svg, doc, registry)
        except Exception as exc:  # graphviz missing: say so instead of failing obscurely
            return JSONResponse(status_code=503, content={"detail": str(exc)})
        return Response(content=svg, media_type="image/svg+xml")

    @app.get("/health", response_model=HealthReport, summary="Graph, stores and models answer")
    async def health() -> JSONResponse:
        report = await anyio.to_thread.run_sync(check_health, doc, registry)
        return JSONResponse(status_code=200 if report.ok else 503, content=report.model_dump())

    return app
