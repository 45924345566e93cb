"""``modrag serve``: run a graph as an HTTP service (FastAPI + uvicorn)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from modrag_studio.cli import EXIT_INVALID, EXIT_OK
from modrag_studio.commands.common import load_or_exit


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser("serve", help="serve a graph over HTTP")
    serve.add_argument("graph", help="graph JSON file")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; others need an API key)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--api-key-file", help="file holding the API key "
                       "(else $MODRAG_API_KEY); required when binding beyond loopback")
    serve.add_argument("--max-body-bytes", type=int, default=1_000_000)
    serve.add_argument("--run-timeout", type=float, default=300.0, help="seconds per run")
    serve.add_argument("--max-concurrent-runs", type=int, default=8)
    serve.add_argument("--cache-dir", help="node result cache folder")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from modrag_studio.engine.errors import GraphInvalid
    from modrag_studio.engine.paths import cache_home
    from modrag_studio.server import ServerSettings, create_app
    from modrag_studio.server.security import is_loopback, resolve_api_key

    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID
    try:
        api_key = resolve_api_key(args.api_key_file)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if api_key is None and not is_loopback(args.host):
        print(f"error: binding to {args.host} needs an API key (--api-key-file or "
              "$MODRAG_API_KEY)", file=sys.stderr)
        return EXIT_INVALID
    settings = ServerSettings(
        api_key=api_key, max_body_bytes=args.max_body_bytes, run_timeout_s=args.run_timeout,
        max_concurrent_runs=args.max_concurrent_runs,
        cache_dir=Path(args.cache_dir) if args.cache_dir else cache_home(),
    )
    try:
        app = create_app(doc, settings)
    except GraphInvalid as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=int(max(1, min(args.run_timeout, 30))))
    return EXIT_OK
