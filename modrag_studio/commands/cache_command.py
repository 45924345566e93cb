"""``modrag cache info|prune|clear``: the node result cache on disk."""

from __future__ import annotations

import argparse
from pathlib import Path

from modrag_studio.commands.exit_codes import EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    cache = subparsers.add_parser(
        "cache", help="show, prune or clear the node result cache",
        description="The node result cache: results in memory and on disk, each bounded in "
        "bytes ($MODRAG_CACHE_MEMORY_MB, $MODRAG_CACHE_DISK_MB); least recently used results "
        "are dropped first.")
    cache.add_argument("action", choices=["info", "prune", "clear"],
                       help="info: size and limits; prune: down to the disk limit (or "
                       "--max-mb); clear: delete every stored result")
    cache.add_argument("--cache-dir", help="cache folder (default: $MODRAG_CACHE_DIR or the "
                       "user cache folder)")
    cache.add_argument("--max-mb", type=float, help="prune: keep at most this many MB")
    cache.set_defaults(func=run_cache)


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def run_cache(args: argparse.Namespace) -> int:
    from modrag_studio.engine.cache.node_cache import NodeCache, clear_disk, disk_usage
    from modrag_studio.engine.core.paths import cache_home

    folder = Path(args.cache_dir) if args.cache_dir else cache_home()
    cache = NodeCache(disk_dir=folder)
    if args.action == "info":
        used, entries = disk_usage(folder)
        print(f"cache folder: {folder}")
        print(f"on disk: {megabytes(used)} in {entries} result(s); limit "
              f"{megabytes(cache.disk_bytes)}")
        print(f"in memory (per process): limit {megabytes(cache.memory_bytes)}")
    elif args.action == "prune":
        limit = int(args.max_mb * 1024 * 1024) if args.max_mb is not None else None
        removed, freed = cache.prune(limit)
        print(f"removed {removed} result(s), {megabytes(freed)}; "
              f"{megabytes(disk_usage(folder)[0])} left")
    else:
        removed, freed = clear_disk(folder)
        print(f"removed {removed} result(s), {megabytes(freed)}")
    return EXIT_OK
