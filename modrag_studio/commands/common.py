"""Helpers shared by the sub-commands: loading a graph with a clear error, parsing pairs and
the graph inputs given on the command line."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from modrag_studio import run_tracing
from modrag_studio.commands.exit_codes import EXIT_INVALID
from modrag_studio.engine.core.document import GraphDocument, load
from modrag_studio.engine.core.errors import GraphLoadError

if TYPE_CHECKING:
    from modrag_studio.engine.core.registry import NodeRegistry


def scrub_logs() -> None:
    """Every log line of the command scrubbed of keys (``engine.core.redact``)."""
    from modrag_studio.engine.core.redact import scrub_log_records

    scrub_log_records()


def traced(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run ``command`` with the trace export ``--otlp`` / the OTLP variables ask for: its
    executors take ``run_hooks(args)``; what is queued is sent when the command ends."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            tracing = run_tracing.from_args(args, hold=bool(getattr(args, "expect", None)))
        except (RuntimeError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INVALID
        args.run_hooks = tracing.hooks
        args.tracing = tracing
        try:
            return command(args)
        finally:
            tracing.shutdown()

    return run


def run_hooks(args: argparse.Namespace) -> list[Any]:
    """The hooks every executor of this command takes (trace export; none when off)."""
    return list(getattr(args, "run_hooks", None) or [])


def load_or_exit(path: str) -> GraphDocument | None:
    """Load a graph, printing the error (and returning None) when it cannot be read."""
    try:
        return load(path)
    except GraphLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    """``name=value`` strings to a dict; raises ValueError naming the bad one."""
    result: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"{what} '{pair}' is not of the form name=value")
        result[name] = value
    return result


def shell_inputs(docs: GraphDocument | Iterable[GraphDocument], pairs: list[str],
                 registry: NodeRegistry | None = None) -> dict[str, str]:
    """``--input name=value`` pairs as every sub-command passes them to the graph(s) ``docs``:
    a value naming an existing path relative to the working directory made absolute (the
    shell meant it; a run resolves relative paths against the graph's folder), and the
    path-like inputs of each graph tidied (``normalise_path_inputs``), so all compute the
    cache keys ``modrag run`` does. Raises ValueError naming a pair without '='."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.paths import absolute_if_exists
    from modrag_studio.engine.trust.reach import normalise_path_inputs

    inputs = {name: absolute_if_exists(value)
              for name, value in parse_pairs(pairs, "--input").items()}
    if not inputs:
        return inputs
    registry = registry or default_registry()
    for doc in [docs] if isinstance(docs, GraphDocument) else docs:
        inputs = {name: str(value)  # tidy_path keeps text text
                  for name, value in normalise_path_inputs(doc, inputs, registry).items()}
    return inputs


def parse_value(text: str) -> Any:
    """A --set value: JSON when it parses (numbers, booleans, lists), else the plain text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def apply_overrides(doc: GraphDocument, sets: dict[str, str]) -> GraphDocument:
    """A copy of ``doc`` with ``node_id.param=value`` overrides applied."""
    doc = doc.model_copy(deep=True)
    for target, raw in sets.items():
        node_id, sep, param = target.partition(".")
        if not sep or not param:
            raise ValueError(f"--set '{target}' must be node_id.param=value")
        try:
            node = doc.node(node_id)
        except KeyError:
            raise ValueError(f"--set: no node '{node_id}' in the graph") from None
        node.params[param] = parse_value(raw)
    return doc


def load_with_overrides(path: str, sets: list[str]) -> GraphDocument | None:
    """Load a graph and apply ``--set node.param=value`` pairs, printing the error (and
    returning None) when the file or a pair is not usable."""
    doc = load_or_exit(path)
    if doc is None:
        return None
    try:
        return apply_overrides(doc, parse_pairs(sets, "--set"))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def add_trust_option(parser: Any) -> None:
    """``--trust``: run a graph from elsewhere that reaches outside its folder."""
    parser.add_argument("--trust", action="store_true",
                        help="run a graph that was not made or run here although it reaches "
                        "outside its folder (files, non-loopback hosts, environment "
                        "variables; 'modrag validate' lists them); it is trusted from then on")


def refused_untrusted(path: str, trust_given: bool, executed: Any = None) -> bool:
    """True (with the list and the way out printed) when the graph file at ``path`` is not
    the user's own, what the command is about to run from it reaches outside its folder and
    ``--trust`` was not given; with ``--trust`` its hosts are approved and the file trusted.
    ``executed`` is that document, or a list of them (a variant applied, ``--set`` changes,
    a tuner's trials); the file itself (every stored variant) is listed too, since consent
    trusts the file. The decision is the studio's (``engine.trust.gate``); a file that cannot
    be loaded is left to the command to report."""
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.trust.gate import accept, disclosure, refusal

    try:
        stored = load(path)
    except GraphLoadError:
        return False
    runs = [] if executed is None else [executed] if isinstance(executed, GraphDocument) \
        else list(executed)
    found = disclosure([stored, *runs], default_registry(), path)
    if found is None or found.empty:
        return False
    if trust_given:
        accept(path, found)
        return False
    print(f"error: {refusal(path, found, 'run it again with --trust')}", file=sys.stderr)
    return True


def add_parallel_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parallel", type=positive_int, default=1, metavar="N",
                        help="--evalset: ask N questions at once (the embedded model decodes "
                             "their answers in one batch: faster on a CPU, but an answer may "
                             "differ from the one-at-a-time run's; default 1)")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be 1 or more")
    return value


def report_overwrites_input(report: str | None, *inputs: str | None) -> str | None:
    """Why ``--report`` cannot be written (it names a file the command reads: ``tune G
    --report G`` would replace the graph with its report), else None."""
    import os

    if not report:
        return None
    target = os.path.realpath(report)
    for name in inputs:
        if name and (os.path.realpath(name) == target or os.path.exists(report)
                     and os.path.exists(name) and os.path.samefile(name, report)):
            return (f"--report {report} is the file {name} this command reads; "
                    "give the report another name")
    return None


def write_report(path: str, text: str) -> str | None:
    """Write a ``--report`` file atomically (a failed write leaves the earlier file whole);
    the error to print when it cannot be written, else None."""
    from pathlib import Path

    from modrag_studio.engine.core.document import atomic_write_text

    try:
        atomic_write_text(Path(path), text)
    except OSError as exc:
        return f"cannot write the report {path}: {exc.strerror or exc}"
    return None
