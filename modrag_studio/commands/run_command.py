"""``modrag run``: run a graph headless, progress on stderr, result on stdout."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from modrag_studio import run_tracing
from modrag_studio.commands import recorded_calls
from modrag_studio.commands.attribution_cli import (
    add_expect_option,
    expected_from_args,
    run_evidence,
)
from modrag_studio.commands.common import (
    add_trust_option,
    load_with_overrides,
    refused_untrusted,
    run_hooks,
    shell_inputs,
    traced,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.formatting import failure
from modrag_studio.engine.core.serialize import to_jsonable
from modrag_studio.engine.run.hooks import RunHook
from modrag_studio.engine.trust.store_mode import allow_large_deletes


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="run a graph and print its outputs")
    run.add_argument("graph", help="graph JSON file")
    run.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                     help="a graph input (repeatable)")
    run.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                     help="override a node param for this run (JSON values are parsed)")
    run.add_argument("--trace-out", metavar="FILE", help="write the run trace as JSON")
    run.add_argument("--json", action="store_true", help="print outputs as JSON")
    run.add_argument("--report-html", metavar="FILE",
                     help="write the run as one self-contained HTML page anyone can open: the "
                          "question, the answer and its sources, the steps, the evidence, the "
                          "grounding verdict (and with --expect, where the evidence was lost)")
    run.add_argument("--to", metavar="NODE", help="run only this node and what it needs")
    run.add_argument("--rerun", action="append", default=[], metavar="NODE",
                     help="execute this node even when its result is cached")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the disk cache")
    run.add_argument("--cache-dir", help="node result cache folder")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    add_trust_option(run)
    run.add_argument("--allow-delete", action="store_true",
                     help="let a store synchronisation delete more than its set share")
    run.add_argument("--use-pins", action="store_true",
                     help="use the outputs pinned in the studio for this graph file instead of "
                          "running those nodes (off by default: a graph never runs pinned "
                          "values by surprise)")
    run.add_argument("--record", action="store_true",
                     help="keep this run in the graph's run history (beside the node cache; "
                          "the studio's History panel and `modrag cache history` list it)")
    add_expect_option(run)
    run_tracing.add_arguments(run)
    recorded_calls.add_arguments(run)
    run.set_defaults(func=traced(recorded_calls.with_recorded_calls(run_graph)))


class ProgressPrinter(RunHook):
    """Prints one line per node visit (and streamed text) to stderr."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.count = 0
        self._streaming = False

    def on_node_stream(self, *, run_id: str, node_id: str, text: str, **kwargs: Any) -> None:
        if not self._streaming:
            self.stream.write(f"        {node_id} » ")
            self._streaming = True
        self.stream.write(text)
        self.stream.flush()

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict, outputs: dict,
                    **kwargs: Any) -> None:
        if self._streaming:
            self.stream.write("\n")
            self._streaming = False
        self.count += 1
        status = visit.status
        extra = visit.skip_reason or (visit.error.message if visit.error else visit.cache_reason)
        loop = f" #{visit.iteration + 1}" if visit.iteration else ""
        self.stream.write(
            f"[{self.count:>3}] {status:<9} {visit.node_id}{loop} ({visit.type_id}) "
            f"{visit.duration_s * 1000:8.1f} ms  {extra}\n"
        )
        self.stream.flush()


def format_trace_table(trace: Any) -> str:
    """A per-node summary table of a trace, for terminals."""
    lines = [f"{'node':<22} {'iter':>4} {'status':<9} {'ms':>9}  outputs / reason"]
    for visit in trace.visits:
        outs = ", ".join(
            f"{port}: {s.type}" + (f" x{s.count}" if s.count is not None else "")
            for port, s in visit.outputs.items()
        )
        why = visit.skip_reason or (visit.error.message if visit.error else "")
        lines.append(
            f"{visit.node_id:<22} {visit.iteration:>4} {visit.status:<9} "
            f"{visit.duration_s * 1000:>9.1f}  {outs or why}"
        )
    return "\n".join(lines)


def render_output(value: Any) -> str:
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(value, str):
        return value
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)


def run_graph(args: argparse.Namespace) -> int:
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.engine.core.node import CancelToken
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor

    doc = load_with_overrides(args.graph, args.set)
    if doc is None or refused_untrusted(args.graph, args.trust, doc):
        return EXIT_INVALID
    try:
        inputs = shell_inputs(doc, args.input)
        expected = expected_from_args(args.expect)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    cache_dir = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else cache_home()
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=cache_dir),
                        hooks=run_hooks(args))
    cancel = CancelToken()
    hooks = [] if args.quiet else [ProgressPrinter(sys.stderr, len(doc.nodes))]
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: cancel.cancel())
    pins = load_pins(args.graph) if args.use_pins else None
    try:
        with allow_large_deletes(args.allow_delete):
            result = executor.run(doc, inputs, hooks=hooks, cancel=cancel, target=args.to,
                                  rerun=args.rerun, pins=pins)
    except ModragError as exc:  # an invalid graph (GraphInvalid) among them
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    evidence = run_evidence(result, doc, expected) if expected else None
    if evidence is not None and getattr(args, "tracing", None) is not None:
        args.tracing.annotate(result.trace.run_id, run_tracing.attribution_attributes(evidence))
    if args.json:
        payload = {"status": result.status, "outputs": to_jsonable(result.outputs)}
        if evidence is not None:
            payload["evidence"] = evidence.to_dict()
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        if not args.quiet:
            print(format_trace_table(result.trace), file=sys.stderr)
        for name, value in result.outputs.items():
            print(f"== {name} ==")
            print(render_output(value))
        if evidence is not None:
            print("== evidence ==")
            print(evidence.table())
    for note in result.trace.problems:  # params written for another corpus, and the like
        if note.get("node_id") and note.get("severity") == "warning":
            print(f"warning: {note['node_id']}: {note['message']}", file=sys.stderr)
    for visit in result.trace.visits:
        if visit.status == "failed" and visit.error is not None:
            name = doc.node(visit.node_id).params.get("name", visit.node_id)
            hint = (f" (give it with --input {name}=...)"
                    if visit.error.type == "MissingRunInput" else "")
            print(f"error: node '{visit.node_id}' ({visit.type_id}) failed: {failure(visit)}"
                  f"{hint}", file=sys.stderr)
    if result.status == "cancelled":
        done = ", ".join(result.trace.ran() + result.trace.from_cache()) or "none"
        print(f"cancelled; completed nodes: {done}", file=sys.stderr)
    if args.record:
        record_run(args, doc, inputs, result)
    if args.trace_out and not write_trace(Path(args.trace_out), result.trace.to_json()):
        return EXIT_INVALID
    if args.report_html and not write_report(Path(args.report_html), doc, result, evidence):
        return EXIT_INVALID
    return EXIT_OK if result.ok else EXIT_RUN_FAILED


def record_run(args: argparse.Namespace, doc: Any, inputs: dict[str, Any], result: Any) -> None:
    """Keep the run in the history of the graph file (a failure to record is a warning: the
    run itself succeeded or failed on its own)."""
    from modrag_studio.engine.history.store import RunHistory
    from modrag_studio.engine.run.pins import graph_key

    root = Path(args.cache_dir) / "history" if args.cache_dir else None
    try:
        record = RunHistory(root).record(graph_key(path=args.graph), doc, inputs, result,
                                         origin="cli")
    except Exception as exc:
        print(f"warning: the run was not recorded in the history: {exc}", file=sys.stderr)
        return
    if not args.quiet:
        print(f"recorded run {record.run_id} in the history", file=sys.stderr)


def load_pins(graph_path: str) -> dict[str, Any]:
    """The pins of the graph file at ``graph_path``, announced on stderr."""
    from modrag_studio.engine.run.pins import PinStore, graph_key

    pins = PinStore().load(graph_key(path=graph_path))
    named = ", ".join(sorted(pins)) or "none"
    print(f"--use-pins: pinned outputs used for: {named}", file=sys.stderr)
    return pins


def write_report(path: Path, doc: Any, result: Any, evidence: Any) -> bool:
    """Write the run report (``--report-html``); a clear error instead of a traceback."""
    from modrag_studio.reporting.run_report import write_run_report

    try:
        write_run_report(path, doc, result, attribution=evidence)
    except OSError as exc:
        print(f"error: --report-html {path}: cannot write the report: {exc.strerror or exc}",
              file=sys.stderr)
        return False
    print(f"run report written to {path}", file=sys.stderr)
    return True


def write_trace(path: Path, text: str) -> bool:
    """Write the trace after the outputs were printed; a clear error instead of a traceback."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: --trace-out {path}: cannot write the trace: {exc.strerror or exc}"
              f"{' (the folder does not exist)' if not path.parent.is_dir() else ''}",
              file=sys.stderr)
        return False
    return True
