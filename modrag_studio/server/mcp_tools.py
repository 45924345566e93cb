"""Graphs as MCP tools: one tool per graph, under the same rules as ``modrag serve``.

A tool's name comes from the graph's name, its description from the graph's metadata and its
input schema from the inputs a client may set (``Exposure``: text inputs, plus path inputs
exposed under the data root). A call runs the graph through a ``RunManager`` (stores
read-only, the time limit, the concurrency limit), reports each finished node as progress and
stops the run when the client cancels. The result is the answer text, with the answer's
citations and the run's outputs (``result_body``, as ``/run`` returns them) as structured
content. This module needs no MCP package; ``mcp_transport`` speaks the protocol.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
from pydantic import BaseModel, ValidationError

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import GraphInvalid
from modrag_studio.engine.core.graph_io import graph_input_names
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import errors_only
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.reporting.answer_view import answer_of, citation_line
from modrag_studio.server.app import ServerSettings
from modrag_studio.server.disclosure import ClientView
from modrag_studio.server.exposure import Exposure, ExposureError, PathOutsideRoot
from modrag_studio.server.runs import QueueFull, RunManager, answer_text, result_body
from modrag_studio.server.schemas import request_model

MCP_EXTRA_HINT = ("the MCP server needs the optional 'mcp' extra: "
                  "pip install 'modrag-studio[mcp]'")
Report = Callable[[float, float | None, str], Awaitable[None]]

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "the answer text"},
        "citations": {"type": "array", "items": {"type": "object"},
                      "description": "the evidence the answer cites (ref, doc_id, chunk_id)"},
        "run_id": {"type": "string"},
        "status": {"type": "string", "description": "ok, failed or cancelled"},
        "outputs": {"type": "object", "description": "every graph output, as /run returns it"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["answer", "citations", "status", "outputs"],
}


class ToolArgumentError(ValueError):
    """A call's arguments do not fit the tool's inputs; the message names the input."""


def tool_name(graph_name: str) -> str:
    """A tool name MCP accepts (letters, digits, ``_``, ``-``, ``.``; at most 64 here)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", graph_name.strip()).strip("_.-")
    return (name or "graph")[:64]


@dataclass
class GraphTool:
    """One graph served as a tool."""

    name: str
    doc: GraphDocument
    exposure: Exposure
    inputs_model: type[BaseModel]
    manager: RunManager
    graph_inputs: list[str]

    @property
    def description(self) -> str:
        about = self.doc.metadata.description.strip()
        text = about or f"Runs the ModRAG graph '{self.doc.metadata.name}'."
        return text + " Returns the answer text; its citations and every graph output come " \
                      "as structured content."

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.inputs_model.model_json_schema()
        schema.setdefault("properties", {})
        schema["type"] = "object"
        return schema

    def run_inputs(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The executor's inputs for a call (validated like a ``/run`` body; exposed paths
        confined to the data root). Raises ToolArgumentError naming the input."""
        try:
            body = self.inputs_model.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            raise ToolArgumentError(self._explain(exc)) from None
        try:
            return self.exposure.run_inputs(body.model_dump(exclude_unset=True))
        except PathOutsideRoot as exc:
            raise ToolArgumentError(str(exc)) from None  # the client's own value

    def _explain(self, exc: ValidationError) -> str:
        allowed = ", ".join(self.exposure.exposed) or "none"
        problems = []
        for error in exc.errors():
            name = ".".join(str(part) for part in error.get("loc", ())) or "(arguments)"
            if error.get("type") == "extra_forbidden":
                fixed = " (fixed by the server)" if name in self.graph_inputs else ""
                problems.append(f"input '{name}' is not an input of this tool{fixed}")
            else:
                problems.append(f"input '{name}': {error.get('msg', 'invalid')}")
        return f"{'; '.join(problems)} (tool '{self.name}' takes: {allowed})"


def plan_tools(docs: Iterable[GraphDocument], settings: ServerSettings, *,
               registry: NodeRegistry | None = None,
               executor: Executor | None = None) -> list[GraphTool]:
    """A tool per graph. ``settings.expose_inputs`` and ``settings.fixed_inputs`` apply to
    every graph that has the named input; a name no graph has is an ExposureError, as are
    the other ``Exposure.plan`` refusals. Raises GraphInvalid for an invalid graph."""
    registry = registry or default_registry()
    docs = list(docs)
    executor = executor or Executor(registry, cache=NodeCache(disk_dir=settings.cache_dir))
    names_of = [set(graph_input_names(doc, registry)) for doc in docs]
    wanted = [*settings.expose_inputs, *settings.fixed_inputs]
    for name in wanted:
        if not any(name in names for names in names_of):
            raise ExposureError(f"no graph has an input '{name}'")
    tools: list[GraphTool] = []
    taken: set[str] = set()
    for doc, names in zip(docs, names_of, strict=True):
        problems = errors_only(validate(doc, registry))
        if problems:
            raise GraphInvalid(problems)
        try:
            exposure = Exposure.plan(
                doc, expose=[n for n in settings.expose_inputs if n in names],
                fixed={k: v for k, v in settings.fixed_inputs.items() if k in names},
                data_root=settings.data_root, registry=registry)
        except ExposureError as exc:
            raise ExposureError(f"graph '{doc.metadata.name}': {exc}") from None
        name = base = tool_name(doc.metadata.name)
        count = 1
        while name in taken:
            count += 1
            name = f"{base}_{count}"
        taken.add(name)
        manager = RunManager(doc, executor, max_concurrent=settings.max_concurrent_runs,
                             timeout_s=settings.run_timeout_s,
                             max_queued=settings.max_queued_runs,
                             view=ClientView.of(doc, executor.registry, settings.data_root,
                                               exposure.fixed))
        tools.append(GraphTool(name=name, doc=doc, exposure=exposure, manager=manager,
                               graph_inputs=sorted(names),
                               inputs_model=request_model(doc, exposure.exposed,
                                                          registry=registry)))
    return tools


def tool_result(result: RunResult, *, timed_out: bool,
                view: ClientView | None = None) -> tuple[str, dict[str, Any], bool]:
    """(text, structured content, is_error) for a finished run (errors as ``view`` shows
    them: no keys, no server paths)."""
    view = view or ClientView()
    body = result_body(result, with_trace=False, timed_out=timed_out, view=view)
    name, _ = answer_of(result.outputs)
    answer = body["outputs"].get(name)
    citations = answer.get("citations", []) if isinstance(answer, dict) else []
    text, failed = answer_text(result, body, timed_out=timed_out, view=view)
    lines = [text]
    lines += [citation_line(str(cite.get("ref")), cite.get("doc_id") or "", cite.get("chunk_id"))
              for cite in citations]
    structured = {"answer": text, "citations": citations, **body}
    return "\n".join(lines) if citations else text, structured, failed


class ProgressHook(RunHook):
    """Puts one progress event per finished node visit on an anyio stream (the executor's
    worker thread hands them to the event loop)."""

    def __init__(self, send: Any, token: Any, total: int) -> None:
        self.send = send
        self.token = token
        self.total = total
        self.done = 0

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict, outputs: dict,
                    **kwargs: Any) -> None:
        self.done += 1
        total = float(max(self.total, self.done))
        message = f"{visit.node_id} ({visit.type_id}) {visit.status}"
        anyio.from_thread.run_sync(self.send.send_nowait, (float(self.done), total, message),
                                   token=self.token)


async def call_tool(tool: GraphTool, arguments: Mapping[str, Any] | None,
                    report: Report) -> tuple[str, dict[str, Any] | None, bool]:
    """Run the tool's graph: (text, structured content, is_error). Raises ToolArgumentError.
    When the caller's scope is cancelled (the client cancelled the call) the run's cancel
    token is set, the executor stops at its next check and the cancellation propagates."""
    inputs = tool.run_inputs(arguments)
    run_id = uuid.uuid4().hex[:12]
    send, receive = anyio.create_memory_object_stream[tuple[float, float, str]](math.inf)
    hook = ProgressHook(send, anyio.lowlevel.current_token(), len(tool.doc.nodes))
    watching = anyio.CancelScope()

    async def forward() -> None:
        async with receive:
            async for progress, total, message in receive:
                await report(progress, total, message)

    async def watch() -> None:
        try:
            with watching:
                await anyio.sleep_forever()
        finally:
            tool.manager.cancel(run_id)  # a no-op once the run is over

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        group.start_soon(watch)
        try:
            result, timed_out = await tool.manager.run(inputs, [hook], run_id=run_id)
        except QueueFull:
            return "server busy: too many runs waiting; retry later", None, True
        finally:
            send.close()
            watching.cancel()
    return tool_result(result, timed_out=timed_out, view=tool.manager.view)
