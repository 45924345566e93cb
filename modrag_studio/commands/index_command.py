"""``modrag index``: run the ingest part of a graph (loader -> splitters -> store / BM25), in
this process or as a Ray Data pipeline (``--ray local|auto|HOST:PORT``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from modrag_studio.cli import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.common import load_with_overrides, parse_pairs


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
    ix.add_argument("--json", action="store_true", help="print the summary as JSON")
    ix.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    ix.set_defaults(func=run_index)


def run_index(args: argparse.Namespace) -> int:
    from modrag_studio.distributed.plan import IngestGraphError, ingest_plan
    from modrag_studio.engine.errors import ModragError, RunCancelled

    doc = load_with_overrides(args.graph, args.set)
    if doc is None:
        return EXIT_INVALID
    try:
        inputs = parse_pairs(args.input, "--input")
        plan = ingest_plan(doc)
    except (ValueError, IngestGraphError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        summary = (_index_ray(args, doc, plan, inputs) if args.ray
                   else _index_local(args, doc, plan, inputs))
    except RunCancelled as exc:
        print(f"\ncancelled: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except ModragError as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return EXIT_INVALID if isinstance(exc, IngestGraphError) else EXIT_RUN_FAILED
    if summary is None:
        return EXIT_RUN_FAILED
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        parts = [f"{summary['documents']} documents", f"{summary['chunks']} chunks"]
        if summary.get("store_count") is not None:
            parts.append(f"{summary['store_count']} vectors in '{summary['collection']}'")
        if summary.get("bm25_chunks") is not None:
            parts.append(f"BM25 over {summary['bm25_chunks']} chunks")
        print(f"indexed ({summary['mode']}, {summary['seconds']:.1f} s): " + ", ".join(parts))
    return EXIT_OK


def _index_local(args: argparse.Namespace, doc: Any, plan: Any,
                 inputs: dict[str, str]) -> dict[str, Any] | None:
    from modrag_studio.commands.run_command import ProgressPrinter
    from modrag_studio.distributed.plan import index_locally
    from modrag_studio.engine.cache import NodeCache
    from modrag_studio.engine.executor import Executor
    from modrag_studio.engine.paths import cache_home

    executor = Executor(cache=NodeCache(disk_dir=Path(args.cache_dir or cache_home())))
    hooks = [] if args.quiet else [ProgressPrinter(sys.stderr, len(doc.nodes))]
    started = time.perf_counter()
    results = index_locally(doc, plan, inputs, executor, hooks=hooks)
    for result in results.values():
        for visit in result.trace.visits:
            if visit.status == "failed" and visit.error is not None:
                print(f"error: node '{visit.node_id}' ({visit.type_id}) failed: "
                      f"{visit.error.message}", file=sys.stderr)
        if not result.ok:
            return None
    last = next(iter(results.values()))
    chunks = last.output_of(plan.chain[-1].node_id, "chunks")
    summary: dict[str, Any] = {"mode": "local", "documents": len({c.doc_id for c in chunks}),
                               "chunks": len(chunks),
                               "seconds": round(time.perf_counter() - started, 2)}
    if plan.store is not None:
        index = results[plan.store.node_id].output_of(plan.store.node_id, "index")
        summary.update(store_count=index.count, collection=index.collection)
    if plan.bm25 is not None:
        summary["bm25_chunks"] = results[plan.bm25.node_id].output_of(
            plan.bm25.node_id, "index").n_chunks
    return summary


def _index_ray(args: argparse.Namespace, doc: Any, plan: Any,
               inputs: dict[str, str]) -> dict[str, Any]:
    from modrag_studio.distributed import ray_session
    from modrag_studio.distributed.plan import corpus_root, embedder_of_plan
    from modrag_studio.distributed.ray_index import RayIndexOptions, index_on_ray

    root = corpus_root(plan, inputs)
    embedder = embedder_of_plan(doc, plan, inputs) if plan.store is not None else None
    options = RayIndexOptions(embed_actors=args.embed_actors, actor_cpus=args.actor_cpus,
                              block_lines=args.block_lines, progress_bars=args.progress_bars)
    with ray_session(args.ray):
        try:
            summary = index_on_ray(plan, root, embedder, options,
                                   on_progress=None if args.quiet else print_stages)
        finally:
            if not args.quiet:
                print(file=sys.stderr)
    result: dict[str, Any] = {"mode": f"ray {args.ray}", "documents": summary.documents,
                              "chunks": summary.chunks, "embedded": summary.embedded,
                              "seconds": round(summary.seconds, 2), "stages": summary.stages}
    if plan.store is not None:
        result.update(store_count=summary.store_count,
                      collection=plan.store.params["collection"])
    if summary.bm25 is not None:
        result["bm25_chunks"] = summary.bm25.n_chunks
    return result


def print_stages(stages: dict[str, list[int]]) -> None:
    """One progress line: blocks and rows per stage."""
    from modrag_studio.distributed.ray_index import STAGES

    line = " | ".join(f"{name} {stages[name][0]} blocks {stages[name][1]} rows"
                      for name in STAGES if name in stages)
    print(f"\r{line}", end="", file=sys.stderr, flush=True)
