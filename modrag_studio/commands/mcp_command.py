"""``modrag mcp``: serve graphs as MCP tools (stdio for a desktop agent, or streamable HTTP)."""

from __future__ import annotations

import argparse
import contextlib
import sys

from modrag_studio import run_tracing
from modrag_studio.commands.common import (
    add_trust_option,
    load_or_exit,
    refused_untrusted,
    run_hooks,
    traced,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK
from modrag_studio.commands.serve_command import add_service_arguments, settings_from_args


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    mcp = subparsers.add_parser(
        "mcp", help="serve graphs as MCP tools",
        description="Serve each graph as an MCP tool (named after the graph, its inputs as "
        "the tool's input schema) over stdio or streamable HTTP (at /mcp). The rules of "
        "'modrag serve' hold: clients choose only text inputs unless a path input is exposed "
        "with --expose-input under --data-root; stores are indexed at start-up and calls "
        "never change them. A graph from elsewhere that reaches outside its folder needs --trust. "
        "Needs the 'mcp' extra.")
    mcp.add_argument("graphs", nargs="+", metavar="GRAPH", help="graph JSON file(s)")
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                     help="stdio (default: a desktop agent starts this command) or http")
    mcp.add_argument("--port", type=int, default=8000, help="http: the port (default 8000)")
    add_service_arguments(mcp)
    add_trust_option(mcp)
    mcp.add_argument("--log-level", default="warning", help="http: uvicorn's log level")
    run_tracing.add_arguments(mcp)
    mcp.set_defaults(func=traced(run_mcp))


def run_mcp(args: argparse.Namespace) -> int:
    from modrag_studio.engine.core.errors import GraphInvalid
    from modrag_studio.server.exposure import ExposureError

    # an agent's config starts this command and nobody reads its stderr: a graph from
    # elsewhere that reaches outside its folder is refused, never served, unless --trust
    docs = [load_or_exit(path) for path in args.graphs]
    if any(doc is None for doc in docs) or any(
            refused_untrusted(path, args.trust, doc) for path, doc in zip(args.graphs, docs,
                                                                         strict=True)):
        return EXIT_INVALID
    try:
        from modrag_studio.server.mcp_transport import McpMissing, require_mcp

        require_mcp()
    except McpMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ModuleNotFoundError as exc:  # the server extra (fastapi) is missing
        print(f"error: {exc}; the MCP server needs the 'mcp' extra: "
              "pip install 'modrag-studio[mcp]'", file=sys.stderr)
        return EXIT_INVALID
    import anyio

    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.server.app import index_stores
    from modrag_studio.server.mcp_tools import plan_tools
    from modrag_studio.server.mcp_transport import build_server, http_app, serve_stdio

    registry = default_registry()
    try:
        settings = settings_from_args(args, docs, registry)
        executor = Executor(registry, cache=NodeCache(disk_dir=settings.cache_dir),
                            hooks=run_hooks(args))  # trace export (--otlp), when on
        tools = plan_tools(docs, settings, registry=registry, executor=executor)
    except (ValueError, ExposureError, GraphInvalid, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    # Requests only read the stores. Over stdio, stdout is the protocol: what indexing
    # prints goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        for tool in tools:
            index_stores(tool.doc, tool.manager.executor, registry, tool.exposure.fixed)
    server = build_server(tools)
    if args.transport == "stdio":
        anyio.run(serve_stdio, server)
        return EXIT_OK
    import uvicorn

    from modrag_studio.server.protocol import HeaderTimeoutProtocol

    print(f"MCP tools {', '.join(t.name for t in tools)} at "
          f"http://{args.host}:{args.port}/mcp", file=sys.stderr)
    uvicorn.run(http_app(server, settings), host=args.host, port=args.port,
                log_level=args.log_level, http=HeaderTimeoutProtocol,
                timeout_graceful_shutdown=int(max(1, min(args.run_timeout, 30))))
    return EXIT_OK
