"""``modrag cache info|prune|clear|history``: the node result cache and the run history on
disk."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    cache = subparsers.add_parser(
        "cache", help="show, prune or clear the node result cache and the run history",
        description="The node result cache: results in memory and on disk, each bounded in "
        "bytes ($MODRAG_CACHE_MEMORY_MB, $MODRAG_CACHE_DISK_MB); least recently used results "
        "are dropped first. Beside it, the run history: recorded runs, bounded in runs per "
        "graph ($MODRAG_HISTORY_RUNS) and bytes ($MODRAG_HISTORY_MB, default a quarter of the "
        "disk limit); the oldest runs are dropped first, a graph's baseline last.")
    cache.add_argument("action", choices=["info", "prune", "clear", "history"],
                       help="info: size and limits; prune: down to the limits (or --max-mb, "
                       "--max-runs); clear: delete every stored result and recorded run; "
                       "history: list the recorded runs (newest first)")
    cache.add_argument("--cache-dir", help="cache folder (default: $MODRAG_CACHE_DIR or the "
                       "user cache folder)")
    cache.add_argument("--max-mb", type=float, help="prune: keep at most this many MB")
    cache.add_argument("--max-runs", type=int, help="prune: keep at most this many runs "
                       "per graph")
    cache.add_argument("--history-dir", help="the run history folder (default <cache dir>/"
                       "history; what `modrag serve --allow-record` keeps: <cache dir>/"
                       "served-history)")
    cache.add_argument("--graph", help="history, clear: only the runs of this graph file")
    cache.add_argument("--limit", type=int, default=50, help="history: list at most this "
                       "many runs (default 50)")
    cache.set_defaults(func=run_cache)


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def run_cache(args: argparse.Namespace) -> int:
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.history.store import HistoryError, RunHistory
    from modrag_studio.engine.run.pins import graph_key

    folder = Path(args.cache_dir) if args.cache_dir else cache_home()
    cache = NodeCache(disk_dir=folder)
    history = RunHistory(Path(args.history_dir) if args.history_dir else folder / "history")
    graph = graph_key(path=args.graph) if args.graph else None
    try:
        return cache_action(args, folder, cache, history, graph)
    except HistoryError as exc:  # a damaged index: named, with the way out
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID


def cache_action(args: argparse.Namespace, folder: Path, cache, history, graph: str | None
                 ) -> int:
    from modrag_studio.engine.cache.node_cache import clear_disk, disk_usage

    if args.action == "info":
        used, entries = disk_usage(folder)
        print(f"cache folder: {folder}")
        print(f"on disk: {megabytes(used)} in {entries} result(s); limit "
              f"{megabytes(cache.disk_bytes)}")
        print(f"in memory (per process): limit {megabytes(cache.memory_bytes)}")
        size, runs = history.usage()
        print(f"run history: {runs} run(s), {megabytes(size)}; limits "
              f"{history.max_runs} runs per graph, {megabytes(history.max_bytes)}")
    elif args.action == "prune":
        limit = int(args.max_mb * 1024 * 1024) if args.max_mb is not None else None
        removed, freed = cache.prune(limit)
        print(f"removed {removed} result(s), {megabytes(freed)}; "
              f"{megabytes(disk_usage(folder)[0])} left")
        runs, freed = history.prune(limit, args.max_runs)
        print(f"removed {runs} recorded run(s), {megabytes(freed)}; "
              f"{history.usage()[1]} left")
    elif args.action == "history":
        print_history(history, graph, args.limit)
    else:
        if graph is None:
            removed, freed = clear_disk(folder)
            print(f"removed {removed} result(s), {megabytes(freed)}")
        runs, freed = history.clear(graph)
        reset = " (the damaged history index was reset)" if history.was_reset else ""
        print(f"removed {runs} recorded run(s), {megabytes(freed)}{reset}")
    return EXIT_OK


def print_history(history, graph: str | None, limit: int) -> None:
    """One line per recorded run: when, outcome, seconds, origin, variant, question."""
    records = history.runs(graph, limit=limit)
    if not records:
        print("no recorded runs" + (f" of {graph}" if graph else ""))
        return
    shown = graph
    for record in records:
        if record.graph != shown:
            print(f"== {record.graph} ==")
            shown = record.graph
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
        variant = f" [{record.variant}]" if record.variant else ""
        print(f"{record.run_id}  {when}  {record.status:<9} {record.duration_s:7.2f} s  "
              f"{record.origin:<10}{variant} {record.question[:70]}")
