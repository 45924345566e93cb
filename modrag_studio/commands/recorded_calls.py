"""``--record-calls`` / ``--replay-calls`` / ``--live-check`` of ``modrag run`` and ``eval``.

A command wrapped by ``with_recorded_calls`` runs with a cassette active
(``modrag_nodes.calls.cassette``). Such a run reads no node results cached by earlier runs
(``run``: a memory-only cache; ``eval``: a fresh cache folder): every model call of the run is
made, so every one is recorded, replayed or checked.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
from collections.abc import Callable

from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_RUN_FAILED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("recorded model calls")
    group.add_argument("--record-calls", metavar="FILE",
                       help="write every chat-model and embedder call of the run (request, "
                            "response, model and options) to FILE")
    group.add_argument("--record-kinds", default="chat,embed", metavar="KINDS",
                       help="--record-calls: the calls to record, 'chat', 'embed' or both "
                            "(default chat,embed); kinds not recorded run live on replay")
    group.add_argument("--replay-calls", metavar="FILE",
                       help="answer the run's model calls from FILE with no model loaded; a "
                            "call not in FILE fails with a diff against the closest recorded "
                            "request")
    group.add_argument("--live-check", action="store_true",
                       help="--replay-calls: make every call live and report the calls whose "
                            "response differs from FILE (exit 1 when one does)")


def with_recorded_calls(
    command: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """Run ``command`` with the cassette its options ask for (none: unchanged)."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        from modrag_nodes.calls.api import Cassette, using
        from modrag_studio.engine.core.errors import ModragError

        record, replay = args.record_calls, args.replay_calls
        if record and replay:
            print("error: --record-calls and --replay-calls: give one of them", file=sys.stderr)
            return EXIT_INVALID
        if args.live_check and not replay:
            print("error: --live-check needs --replay-calls FILE", file=sys.stderr)
            return EXIT_INVALID
        if not record and not replay:
            return command(args)
        try:
            if record:
                kinds = tuple(k.strip() for k in args.record_kinds.split(",") if k.strip())
                tape = Cassette.record(record, kinds)
            else:
                tape = Cassette.replay(replay, live_check=args.live_check)
        except (ModragError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INVALID
        scratch = tempfile.mkdtemp(prefix="modrag-calls-")
        if hasattr(args, "no_cache"):  # run: a memory-only cache (--record's history stays)
            args.no_cache = True
        else:  # eval: a fresh cache folder; either way every call of the run is made
            args.cache_dir = scratch
        try:
            with using(tape):
                code = command(args)
            tape.save()
        except OSError as exc:
            print(f"error: --record-calls {record}: cannot write: {exc.strerror or exc}",
                  file=sys.stderr)
            return EXIT_INVALID
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(tape.summary(), file=sys.stderr)
        for drift in tape.drift:
            print(f"drift: {drift.describe()}", file=sys.stderr)
        for missing in tape.new:
            print(f"drift: {missing} is not in the recorded calls", file=sys.stderr)
        return EXIT_RUN_FAILED if code == 0 and (tape.drift or tape.new) else code

    return run
