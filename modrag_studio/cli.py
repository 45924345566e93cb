"""``modrag``: validate, run, inspect and serve graphs from the command line.

Exit codes: 0 success, 1 the run failed or was cancelled, 2 the graph or the command line is
invalid.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from modrag_studio.commands.exit_codes import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_RUN_FAILED,
    INVALID_SETTINGS,
)

# Each module defines ``add_parser(subparsers)`` which registers one sub-command whose
# ``func(args) -> int`` does the work. Heavy imports stay inside ``func``.
COMMAND_MODULES = [
    "modrag_studio.commands.graph_commands",
    "modrag_studio.commands.run_command",
    "modrag_studio.commands.eval_command",
    "modrag_studio.commands.compare_command",
    "modrag_studio.commands.tune_command",
    "modrag_studio.commands.serve_command",
    "modrag_studio.commands.mcp_command",
    "modrag_studio.commands.cache_command",
    "modrag_studio.commands.index_command",
    "modrag_studio.commands.evalset_generate_command",
    "modrag_studio.commands.scorecard.scorecard_command",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modrag", description="Design, run and debug RAG graphs headless."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # a command not built into this installation
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    from modrag_studio.commands.common import scrub_logs

    scrub_logs()  # an upstream error echoing a key stays out of every log line
    try:
        return int(args.func(args))
    except BrokenPipeError:
        return EXIT_OK
    except INVALID_SETTINGS as exc:  # MODRAG_CACHE_DISK_MB=inf and the like: named, not a crash
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_RUN_FAILED


if __name__ == "__main__":
    sys.exit(main())
