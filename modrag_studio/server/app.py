"""The FastAPI application serving one graph."""

import contextlib
import html
import json
import logging
import math
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.core.document import GraphDocument, to_json_dict
from modrag_studio.engine.core.errors import GraphInvalid
from modrag_studio.engine.core.redact import scrub
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import errors_only
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.health import HealthReport, check_health
from modrag_studio.server.disclosure import ClientView
from modrag_studio.server.exposure import Exposure, PathOutsideRoot
from modrag_studio.server.openai_compat import add_openai_routes
from modrag_studio.server.recording import RECORDING_OFF, SERVED_HISTORY, ServedHistory
from modrag_studio.server.runs import QueueFull, RunManager, result_body, stream_run
from modrag_studio.server.schemas import request_model, response_model
from modrag_studio.server.security import GuardMiddleware, bound_host_names, is_loopback

log = logging.getLogger(__name__)


def add_docs_pages(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc with the graph's name escaped in their HTML."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html

    title = html.escape(app.title)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> Response:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json",
                                   title=f"{title} - Swagger UI")

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> Response:
        return get_redoc_html(openapi_url=app.openapi_url or "/openapi.json",
                              title=f"{title} - ReDoc")


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
    """How a graph is served. A client chooses only the ``exposed`` inputs (text inputs, plus
    the path inputs named in ``expose_inputs``, confined to ``data_root``)."""

    api_key: str | None = None
    max_body_bytes: int = 1_000_000
    run_timeout_s: float = 300.0
    max_concurrent_runs: int = 8
    max_queued_runs: int = 32
    cache_dir: Path | None = None
    host: str = "127.0.0.1"
    allowed_hosts: list[str] | None = None  # None: the names the bound address answers to
    expose_inputs: list[str] = field(default_factory=list)
    fixed_inputs: dict[str, str] = field(default_factory=dict)
    data_root: Path | None = None
    remote_trace: bool = False  # traces (paths, tracebacks) also to non-loopback clients
    index_at_startup: bool = True
    allow_record: bool = False  # ?record=true keeps runs in the server's own history
    history_dir: Path | None = None  # default <cache dir>/served-history
    record_runs_per_client: int = 100
    record_mb_per_client: float = 32.0


def create_app(doc: GraphDocument, settings: ServerSettings | None = None, *,
               registry: NodeRegistry | None = None,
               executor: Executor | None = None) -> FastAPI:
    """An app that runs ``doc``; the request and response schemas come from its inputs/outputs."""
    settings = settings or ServerSettings()
    registry = registry or default_registry()
    problems = errors_only(validate(doc, registry))
    if problems:
        raise GraphInvalid(problems)
    exposure = Exposure.plan(doc, expose=settings.expose_inputs, fixed=settings.fixed_inputs,
                             data_root=settings.data_root, registry=registry)
    executor = executor or Executor(registry, cache=NodeCache(disk_dir=settings.cache_dir))
    view = ClientView.of(doc, registry, settings.data_root, exposure.fixed)
    manager = RunManager(doc, executor, max_concurrent=settings.max_concurrent_runs,
                         timeout_s=settings.run_timeout_s, max_queued=settings.max_queued_runs,
                         view=view)
    inputs_model = request_model(doc, exposure.exposed, registry=registry)
    result_model = response_model(doc, registry)
    recorder = served_history(doc, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.index_at_startup:
            await anyio.to_thread.run_sync(index_stores, doc, executor, registry,
                                           exposure.fixed)
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
        docs_url=None, redoc_url=None,  # FastAPI's own put the title into HTML unescaped
    )
    add_docs_pages(app)
    app.state.manager = manager
    app.state.executor = executor
    app.state.exposure = exposure
    allowed = set(settings.allowed_hosts) if settings.allowed_hosts \
        else bound_host_names(settings.host)
    app.add_middleware(GuardMiddleware, api_key=settings.api_key,
                       max_body_bytes=settings.max_body_bytes, allowed_hosts=allowed)

    def request_inputs(body: Any) -> dict[str, Any]:
        """Only what the client set (unset fields take the graph's defaults), paths confined."""
        try:
            return exposure.run_inputs(body.model_dump(exclude_unset=True))
        except PathOutsideRoot as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from None

    def trace_allowed(request: Request, trace: bool) -> None:
        client = request.client.host if request.client else ""
        if trace and not settings.remote_trace and not is_loopback(client):
            raise HTTPException(status_code=403, detail="traces (file paths, tracebacks) go "
                                "to loopback clients only unless the server runs with "
                                "--remote-trace")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own handler fails (500) on a body that is not UTF-8: decode it leniently.
        detail = jsonable_encoder(exc.errors(), custom_encoder={
            bytes: lambda raw: raw.decode("utf-8", "replace")})
        if request.url.path.startswith("/v1/"):  # OpenAI clients read {"error": {...}}
            first = detail[0] if detail else {}
            where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
            return SafeJSONResponse(status_code=400, content={"error": {
                "message": f"{where or 'body'}: {first.get('msg', 'invalid request')}",
                "type": "invalid_request_error", "param": where or None,
                "code": "invalid_request", "detail": detail}})
        return SafeJSONResponse(status_code=422, content={"detail": detail})

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("request %s failed: %s", request.url.path,
                  scrub("".join(traceback.format_exception(exc))))
        return JSONResponse(status_code=500,
                            content={"detail": f"internal error: {type(exc).__name__}"})

    @app.post("/run", response_model=result_model, summary="Run the graph once")
    async def run(request: Request, body: inputs_model,  # type: ignore[valid-type]
                  trace: bool = Query(False, description="include the run trace"),
                  record: bool = Query(False, description="keep the run in the server's "
                                       "run history (when its operator allows it)")) -> Any:
        trace_allowed(request, trace)
        record_allowed(record)
        inputs = request_inputs(body)
        try:
            result, timed_out = await run_until_disconnect(manager, request, inputs)
        except QueueFull:
            return busy(settings.run_timeout_s)
        answer = result_body(result, with_trace=trace, timed_out=timed_out, view=view)
        if record and recorder is not None:
            answer["recorded"] = await anyio.to_thread.run_sync(
                recorder.record, result, inputs, client_of(request))
        return answer

    def record_allowed(record: bool) -> None:
        if record and recorder is None:
            raise HTTPException(status_code=403, detail=RECORDING_OFF)

    @app.post("/run/stream", summary="Run the graph, streaming events (server-sent events)",
              response_class=StreamingResponse,
              responses={200: {"content": {"text/event-stream": {}}}})
    async def run_stream(request: Request, body: inputs_model,  # type: ignore[valid-type]
                         trace: bool = Query(False, description="include the trace at the end"),
                         record: bool = Query(False, description="keep the run in the "
                                              "server's run history (when allowed)")):
        trace_allowed(request, trace)
        record_allowed(record)
        inputs = request_inputs(body)
        if not manager.has_room():
            return busy(settings.run_timeout_s)
        keep = None
        if record and recorder is not None:
            client = client_of(request)
            keep = lambda result, inputs: recorder.record(result, inputs, client)  # noqa: E731
        return StreamingResponse(stream_run(manager, inputs, trace, keep),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    add_openai_routes(app, doc=doc, registry=registry, manager=manager, exposure=exposure,
                      inputs_model=inputs_model, view=view,
                      run_timeout_s=settings.run_timeout_s,
                      run_until_disconnect=run_until_disconnect)

    @app.get("/graph", summary="The graph document (JSON)")
    async def graph() -> dict[str, Any]:
        return view.value(to_json_dict(doc))

    @app.get("/graph.mmd", response_class=PlainTextResponse, summary="The graph as Mermaid")
    async def graph_mermaid() -> str:
        from modrag_studio.engine.layout.render import to_mermaid

        return to_mermaid(doc, registry)

    @app.get("/graph.svg", summary="The graph drawn by graphviz",
             responses={200: {"content": {"image/svg+xml": {}}}, 503: {}})
    async def graph_svg() -> Response:
        from modrag_studio.engine.layout.render import to_svg

        try:
            svg = await anyio.to_thread.run_sync(to_svg, doc, registry)
        except Exception as exc:  # graphviz missing: say so instead of failing obscurely
            return JSONResponse(status_code=503, content={"detail": view.text(str(exc))})
        return Response(content=svg, media_type="image/svg+xml")

    @app.get("/health", response_model=HealthReport, summary="Graph, stores and models answer")
    async def health() -> JSONResponse:
        report = await anyio.to_thread.run_sync(check_health, doc, registry)
        return JSONResponse(status_code=200 if report.ok else 503,
                            content=view.health(report.model_dump()))

    return app


def client_of(request: Request) -> str:
    return request.client.host if request.client else ""


def served_history(doc: GraphDocument, settings: ServerSettings) -> ServedHistory | None:
    """Where recorded runs go when the operator allows recording (None: refused)."""
    if not settings.allow_record:
        return None
    from modrag_studio.engine.core.paths import cache_home

    root = settings.history_dir or (settings.cache_dir or cache_home()) / SERVED_HISTORY
    budget_mb = settings.record_mb_per_client
    return ServedHistory(doc, root, runs_per_client=settings.record_runs_per_client,
                         bytes_per_client=int(budget_mb * 1024 * 1024)
                         if math.isfinite(budget_mb) and budget_mb < 1e9 else 0)


def busy(run_timeout_s: float) -> JSONResponse:
    retry = str(max(1, min(int(run_timeout_s), 60)))
    return JSONResponse(status_code=503, headers={"Retry-After": retry},
                        content={"detail": "server busy: too many runs waiting; retry later"})


async def run_until_disconnect(manager: RunManager, request: Request,
                               inputs: dict[str, Any]) -> tuple[Any, bool]:
    """Run, cancelling the run when the client hangs up before the answer."""
    import asyncio
    import uuid

    run_id = uuid.uuid4().hex[:12]
    task = asyncio.ensure_future(manager.run(inputs, run_id=run_id))
    try:
        while not task.done():
            done, _ = await asyncio.wait({task}, timeout=0.2)
            if not done and await request.is_disconnected():
                manager.cancel(run_id)
                break
        return await task
    finally:
        if not task.done():
            manager.cancel(run_id)


def index_stores(doc: GraphDocument, executor: Executor, registry: NodeRegistry,
                 fixed: dict[str, str]) -> None:
    """Bring the graph's stores (types with a ``store_role``) up to date before serving
    (requests only read them)."""
    stores = registry.type_ids(where=lambda t: t.store_role is not None)
    for spec in doc.nodes:
        if spec.type not in stores:
            continue
        try:
            result = executor.run(doc, fixed, target=spec.id)
        except Exception as exc:  # reported; requests then fail with a read-only message
            log.warning("indexing %s at start-up failed: %s", spec.id, scrub(str(exc)))
            continue
        for visit in result.trace.visits:
            if visit.error is not None:
                log.warning("indexing at start-up: node %s failed: %s", visit.node_id,
                            visit.error.message)
