"""``modrag serve``: run a graph as an HTTP service (FastAPI + uvicorn)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from modrag_studio import run_tracing
from modrag_studio.commands.common import load_or_exit, run_hooks, shell_inputs, traced
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK

if TYPE_CHECKING:
    from modrag_studio.engine.core.document import GraphDocument
    from modrag_studio.engine.core.registry import NodeRegistry


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser(
        "serve", help="serve a graph over HTTP",
        description="Serve a graph over HTTP. Clients choose only the graph's text inputs; "
        "path inputs stay at their defaults (or --input values) unless exposed with "
        "--expose-input and confined to --data-root. Stores are indexed at start-up and "
        "requests never change them.")
    serve.add_argument("graph", help="graph JSON file")
    add_service_arguments(serve)
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--remote-trace", action="store_true",
                       help="also send traces (file paths, errors) to non-loopback clients")
    serve.add_argument("--keep-alive-timeout", type=float, default=5.0,
                       help="seconds an idle connection stays open")
    serve.add_argument("--allow-record", action="store_true",
                       help="let clients keep runs with ?record=true, in the server's own "
                       "history (--history-dir), never the user's")
    serve.add_argument("--history-dir", help="where recorded runs go (default "
                       "<cache dir>/served-history)")
    serve.add_argument("--record-runs-per-client", type=int, default=100,
                       help="runs each client address keeps in the served history; its "
                       "oldest go first (default 100)")
    serve.add_argument("--record-mb-per-client", type=float, default=32.0,
                       help="MB each client address keeps in the served history (default 32)")
    serve.add_argument("--log-level", default="info")
    run_tracing.add_arguments(serve)
    serve.set_defaults(func=traced(run_serve))


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``modrag serve`` and ``modrag mcp`` share: where to bind, the API key, which
    inputs a client may set, and the run limits (``settings_from_args`` reads them)."""
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; others need an API key)")
    parser.add_argument("--api-key-file", help="file holding the API key "
                        "(else $MODRAG_API_KEY); required when binding beyond loopback")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="a Host header name to answer (repeatable; default: the names of "
                        "the bound address; '*' answers any)")
    parser.add_argument("--expose-input", action="append", default=[], metavar="NAME",
                        help="let clients set this path input (repeatable; needs --data-root)")
    parser.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                        help="fix a graph input for every request (repeatable)")
    parser.add_argument("--data-root", help="the folder exposed path inputs must stay inside")
    parser.add_argument("--max-body-bytes", type=int, default=1_000_000)
    parser.add_argument("--run-timeout", type=float, default=300.0,
                        help="seconds per run, time waiting in the queue included")
    parser.add_argument("--max-concurrent-runs", type=int, default=8)
    parser.add_argument("--max-queued-runs", type=int, default=32,
                        help="runs that may wait for a worker; more are refused as busy")
    parser.add_argument("--cache-dir", help="node result cache folder")


def settings_from_args(args: argparse.Namespace, docs: Iterable[GraphDocument] = (),
                       registry: NodeRegistry | None = None):
    """ServerSettings from the command line (the ``--input`` values as ``shell_inputs`` reads
    them for the served graphs ``docs``); ValueError with the reason when they cannot work."""
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.server import ServerSettings
    from modrag_studio.server.security import is_loopback, resolve_api_key

    if not args.host.strip():
        raise ValueError("--host is empty; give an address (127.0.0.1 for this machine only, "
                         "0.0.0.0 for every interface)")
    try:
        api_key = resolve_api_key(args.api_key_file)
    except OSError as exc:
        raise ValueError(str(exc)) from None
    if api_key is None and not is_loopback(args.host):
        raise ValueError(f"binding to {args.host} needs an API key (--api-key-file or "
                         "$MODRAG_API_KEY)")
    return ServerSettings(
        api_key=api_key, max_body_bytes=args.max_body_bytes, run_timeout_s=args.run_timeout,
        max_concurrent_runs=args.max_concurrent_runs, max_queued_runs=args.max_queued_runs,
        cache_dir=Path(args.cache_dir) if args.cache_dir else cache_home(),
        host=args.host, allowed_hosts=args.allowed_host or None,
        expose_inputs=args.expose_input, fixed_inputs=shell_inputs(docs, args.input, registry),
        data_root=Path(args.data_root) if args.data_root else None,
        remote_trace=getattr(args, "remote_trace", False),
        allow_record=getattr(args, "allow_record", False),
        history_dir=Path(args.history_dir) if getattr(args, "history_dir", None) else None,
        record_runs_per_client=getattr(args, "record_runs_per_client", 100),
        record_mb_per_client=getattr(args, "record_mb_per_client", 32.0),
    )


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from modrag_studio.commands.graph_commands import print_reach
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.errors import GraphInvalid
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.server import create_app
    from modrag_studio.server.exposure import ExposureError
    from modrag_studio.server.protocol import HeaderTimeoutProtocol

    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID
    print_reach(doc, args.graph, file=sys.stderr)  # the operator runs it: listed, not asked
    try:
        registry = default_registry()
        settings = settings_from_args(args, [doc], registry)
        executor = Executor(registry, cache=NodeCache(disk_dir=settings.cache_dir),
                            hooks=run_hooks(args))
        app = create_app(doc, settings, registry=registry, executor=executor)
    except (ValueError, ExposureError, GraphInvalid, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                http=HeaderTimeoutProtocol, timeout_keep_alive=max(1, int(args.keep_alive_timeout)),
                h11_max_incomplete_event_size=64 * 1024,
                timeout_graceful_shutdown=int(max(1, min(args.run_timeout, 30))))
    return EXIT_OK
