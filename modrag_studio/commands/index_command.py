"""``modrag index``: run the ingest part of a graph (loader -> splitters -> store / BM25), in
this process or as a Ray Data pipeline (``--ray local|auto|HOST:PORT``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from modrag_studio.commands.common import (
    add_trust_option,
    load_with_overrides,
    parse_pairs,
    refused_untrusted,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.run_command import ProgressPrinter


def add_ray_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--ray [ADDRESS]``: 'local' when given alone."""
    parser.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                        help=f"{what} on Ray: 'local' (default when the value is left out) "
                        "starts Ray on this machine, 'auto' or HOST:PORT joins a running "
                        "cluster (needs the 'distributed' extra)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    ix = subparsers.add_parser("index", help="index a corpus with a graph's ingest part "
                               "(locally or on Ray)")
    ix.add_argument("graph", help="graph JSON file")
    ix.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                    help="a graph input, e.g. corpus=PATH (repeatable)")
    ix.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")
    add_ray_option(ix, "index")
    ix.add_argument("--embed-actors", type=int, default=1, metavar="N",
                    help="Ray actors holding an embedding model each (default 1)")
    ix.add_argument("--actor-cpus", type=float, default=1.0, metavar="C",
                    help="CPUs reserved per embedding actor (default 1)")
    ix.add_argument("--block-lines", type=int, default=500, metavar="N",
                    help="JSONL lines per Ray read block (default 500)")
    ix.add_argument("--progress-bars", action="store_true",
                    help="also show Ray Data's own per-operator progress bars")
    ix.add_argument("--cache-dir", help="node result cache folder (local indexing)")
    add_trust_option(ix)
    ix.add_argument("--allow-delete", action="store_true",
                    help="let the store synchronisation delete more than its set share "
                    "(param 'max_delete_share'), locally and on Ray")
    ix.add_argument("--json", action="store_true", help="print the summary as JSON")
    ix.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    ix.set_defaults(func=run_index)


def run_index(args: argparse.Namespace) -> int:
    from modrag_studio.distributed.job import (
        IndexRequest,
        cli_inputs,
        run_index_job,
        summary_text,
    )
    from modrag_studio.distributed.plan import IngestGraphError, ingest_plan
    from modrag_studio.distributed.ray_index import RayIndexOptions
    from modrag_studio.engine.core.errors import ModragError, RunCancelled
    from modrag_studio.engine.trust.store_mode import allow_large_deletes

    doc = load_with_overrides(args.graph, args.set)
    if doc is None or refused_untrusted(args.graph, args.trust, doc):
        return EXIT_INVALID
    try:
        inputs = cli_inputs(doc, parse_pairs(args.input, "--input"))
        ingest_plan(doc)
    except (ValueError, IngestGraphError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    options = RayIndexOptions(embed_actors=args.embed_actors, actor_cpus=args.actor_cpus,
                              block_lines=args.block_lines, progress_bars=args.progress_bars)
    request = IndexRequest(doc, inputs, ray=args.ray, options=options,
                           cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    progress = None if args.quiet else _StageLine()
    hooks = [] if args.quiet or args.ray else [ProgressPrinter(sys.stderr, len(doc.nodes))]
    try:
        try:
            with allow_large_deletes(args.allow_delete):
                summary = run_index_job(request, on_progress=progress if args.ray else None,
                                        on_status=None if args.quiet else progress.status,
                                        hooks=hooks)
        finally:
            if progress is not None:
                progress.end()
    except RunCancelled as exc:
        print(f"cancelled: {exc}; the store keeps what was written (a re-run completes it)",
              file=sys.stderr)
        return EXIT_RUN_FAILED
    except ModragError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID if isinstance(exc, IngestGraphError) else EXIT_RUN_FAILED
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(summary_text(summary))
    return EXIT_OK


class _StageLine:
    """The Ray job's progress on one rewritten stderr line; status lines on lines of their
    own."""

    def __init__(self) -> None:
        self.open = False

    def __call__(self, progress: Any) -> None:
        print(f"\r{progress.line()}", end="", file=sys.stderr, flush=True)
        self.open = True

    def status(self, text: str) -> None:
        self.end()
        print(text, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False
