"""The MCP protocol side of ``modrag mcp``: a low-level MCP server over the graph tools of
``mcp_tools``, served over stdio or streamable HTTP. The ``mcp`` package (the ``mcp`` extra)
is imported here only, when a server is built."""

from __future__ import annotations

import importlib
import json
import logging
from typing import Any

from modrag_studio.server.app import ServerSettings
from modrag_studio.server.mcp_tools import (
    MCP_EXTRA_HINT,
    OUTPUT_SCHEMA,
    GraphTool,
    ToolArgumentError,
    call_tool,
)
from modrag_studio.server.security import GuardMiddleware, bound_host_names

log = logging.getLogger(__name__)
SERVER_NAME = "modrag"
MCP_PATH = "/mcp"


class McpMissing(RuntimeError):
    """The ``mcp`` package is not installed."""


def require_mcp() -> None:
    """Raise McpMissing (naming the extra) when the MCP SDK cannot be imported."""
    try:
        importlib.import_module("mcp.server.lowlevel")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in {"mcp", "mcp_types"}:
            raise McpMissing(MCP_EXTRA_HINT) from None
        raise


def build_server(tools: list[GraphTool]) -> Any:
    """A low-level ``mcp`` Server listing ``tools`` and running them on ``tools/call``."""
    require_mcp()
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    by_name = {tool.name: tool for tool in tools}

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=tool.name, title=tool.doc.metadata.name,
                       description=tool.description, input_schema=tool.input_schema,
                       output_schema=OUTPUT_SCHEMA)
            for tool in tools])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        tool = by_name.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"unknown tool '{params.name}'; the tools are: "
                                   f"{', '.join(by_name) or 'none'}")

        async def report(progress: float, total: float | None, message: str) -> None:
            await ctx.session.report_progress(progress, total, message)

        try:
            text, structured, failed = await call_tool(tool, params.arguments, report)
        except ToolArgumentError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))],
                                        is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=structured, is_error=failed)

    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("modrag-studio")
    except PackageNotFoundError:
        ours = "0"
    return Server(SERVER_NAME, version=ours,
                  instructions="Each tool runs one ModRAG Studio graph and answers with "
                               "cited evidence.",
                  on_list_tools=list_tools, on_call_tool=on_call_tool)


async def serve_stdio(server: Any) -> None:
    """Serve one client over this process's stdin and stdout until it closes them; a line
    the SDK cannot read is answered with a JSON-RPC error (``unreadable_reply``)."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    async with stdio_server() as (read_stream, write_stream):
        readable_in, readable = create_context_streams[SessionMessage | Exception](0)

        async def answer_unreadable() -> None:
            async with readable_in:
                async for item in read_stream:
                    if isinstance(item, Exception) and (reply := unreadable_reply(item)):
                        await write_stream.send(SessionMessage(reply))
                    else:
                        await readable_in.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer_unreadable)
            await server.run(readable, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()


def unreadable_reply(exc: Exception) -> Any:
    """The JSON-RPC error answering a message the SDK could not parse (a lone surrogate
    ``\\ud800``, which Python's JSON reads but the SDK's does not, or text that is not JSON):
    with the request's id when Python's JSON finds one, else id null (JSON-RPC's parse
    error). None when the failure is not about the message's text."""
    import mcp_types as types

    try:
        raw = exc.errors()[0]["input"]  # type: ignore[attr-defined]
    except Exception:
        return None
    if not isinstance(raw, str | bytes):
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    request_id = data.get("id") if isinstance(data, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    if data is not None and _has_lone_surrogate(data):
        code, message = types.INVALID_PARAMS, ("the request holds a lone surrogate (a "
                                               "\\ud800-\\udfff escape without its pair): "
                                               "not Unicode text; send valid UTF-8")
    elif data is not None:
        code, message = types.INVALID_REQUEST, "not a valid JSON-RPC message"
    else:
        code, message = types.PARSE_ERROR, "the message is not valid JSON"
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message))


MAX_SESSIONS = 256  # open HTTP sessions; at the limit the longest idle one makes room


def http_app(server: Any, settings: ServerSettings, *, max_sessions: int = MAX_SESSIONS
             ) -> Any:
    """The streamable HTTP app (at ``/mcp``) behind the same guard as ``modrag serve``: the
    Host header must name the bound address (DNS rebinding), the API key when one is set,
    the body size limit. At most ``max_sessions`` sessions are open: a new client takes the
    place of the session idle longest (clients that opened one and went away never lock
    others out); only when every session is serving a request is a new one refused."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = None
    if settings.allowed_hosts:  # the operator chose the names; the guard checks them
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=settings.host,
                                     transport_security=security,
                                     max_request_body_size=settings.max_body_bytes,
                                     max_sessions=max_sessions)
    evict_idle_sessions(server.session_manager)
    allowed = set(settings.allowed_hosts) if settings.allowed_hosts \
        else bound_host_names(settings.host)
    return GuardMiddleware(app, api_key=settings.api_key, max_body_bytes=settings.max_body_bytes,
                           allowed_hosts=allowed)


def _has_lone_surrogate(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def evict_idle_sessions(manager: Any) -> None:
    """Make ``manager`` (the SDK's session manager) admit a new session at its limit by
    ending the session idle longest (no request in flight, the earliest idle deadline)."""
    admit = manager._admit_session

    def admit_or_evict(requestor: Any) -> Any:
        sessions = manager._server_instances
        if manager.max_sessions is not None and len(sessions) >= manager.max_sessions:
            idle = [(transport.idle_scope.deadline, session_id)
                    for session_id, transport in sessions.items()
                    if transport.idle_scope is not None and not transport._requests_in_flight]
            if idle:
                _, session_id = min(idle)
                transport = sessions.pop(session_id)  # answers 404 from now on
                manager._session_owners.pop(session_id, None)
                transport.idle_scope.cancel()  # its server task ends and terminates it
                log.info("MCP session %s closed to make room (idle longest)", session_id[:12])
        return admit(requestor)

    manager._admit_session = admit_or_evict
