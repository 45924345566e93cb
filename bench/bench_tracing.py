"""Overhead of trace export (``--otlp``), side by side in one process: export off, the
previous pipeline ("before": live SDK spans on the run's thread, the SDK's batch processor)
and the current one ("now": the hook only notes events, the export thread makes and sends
the spans), each with and without content, on two runs:

- ``chain``: a cached re-run of a 200-node graph (every visit a cache hit; 201 spans a run);
- ``basic_rag``: ``sample_graphs/basic_rag.json`` with a new question each run (so the query
  embedding, both retrievers, fusion, the prompt, the LLM and the checks run; the indexing
  is cached), its LLM on the loopback OpenAI-compatible test fixture.

Three groups one after the other, "now", "sent" and "before" (``--only`` for one), each
with export off as its own baseline (neither pipeline's threads and heap weigh on the
other's runs). In "now" and "before", with export off, the pipeline, and the pipeline with
content, first, modes take turns run by run, in an order that rotates each round (so load
drifts, and what the run before leaves in the CPU's caches, hit all alike): ``run ms``, the
wall time of ``executor.run``, what a user waits for (median, minimum, and ``paired``: the
median of each run's ratio to the "off" run of its own round, milliseconds apart, so load
that drifts cancels out), and ``run cpu``, the CPU time of the run's thread in it (steadier
when other processes load the machine). "now" exports after a delay here
(``OTEL_BSP_SCHEDULE_DELAY``): the runs' spans wait, as they do while runs come closer
together than the delay, and go out before the second part. "before"'s batch processor is
flushed after each of its runs, untimed (its exports would otherwise land in the next
mode's run). A collection of garbage precedes each timed run, and the run's result is freed
after it, untimed, so that a run pays for its own garbage, not for the one another mode
left. Then, modes again taking turns, each run followed by the export of its spans
(flushed): ``all cpu``, the process's CPU time over both (every thread: all the work
tracing costs), and ``all ms``, their wall time. "now: hook alone" is the hook's own work
on the run's thread without the run (a run's events replayed through it, best of 15): the
part of the overhead that noise cannot hide.
"sent": runs back to back in blocks of 8 of one mode, the spans of "now" due 20 ms after
each run, so the export thread works between and during the block's later runs: "now,
sent" with a queue that holds the block (its spans wait for a gap between runs, at most
2 s), "now, pressed" with the default queue (2048 spans: a block of 200-node runs fills it
to half, and then its spans go out while runs are in progress), and "now, sent, SDK encoder":
"sent" with the SDK's encoder in place of ours (``run_tracing/encoding.py``), as before it.
Spans go over OTLP/HTTP to a minimal receiver this script starts in a process of its own
on 127.0.0.1 (``--endpoint`` for a real collector).

Run: .venv/bin/python bench/bench_tracing.py [--nodes 200] [--repeat 30] [--rag-repeat 12]
Goal: "now" within 5% of "off" in ``run ms`` (the verdict line: paired run ms and run cpu).
The load average is printed with each table: on a loaded machine, trust the paired ratios
and the hook alone. The math libraries run on one thread (``OMP_NUM_THREADS`` and the like,
unless set): their worker threads' spin-waits made a basic_rag run's CPU time vary threefold.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # one thread of math: no spin-waits on a loaded machine

from modrag_studio import run_tracing  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine import Executor, NodeCache, load  # noqa: E402
from modrag_studio.engine.core.document import GraphDocument  # noqa: E402

QUESTION = "How often is the lubrication pump LP-07 serviced?"
REPLY = "The lubrication pump LP-07 is serviced every 500 operating hours [1]."


def chain(n: int) -> GraphDocument:
    nodes = [{"id": "n0", "type": "debug.constant", "params": {"value": "x" * 200}}]
    edges = []
    for i in range(1, n):
        nodes.append({"id": f"n{i}", "type": "debug.passthrough", "params": {}})
        edges.append({"from": f"n{i - 1}.value", "to": f"n{i}.value"})
    return GraphDocument.model_validate({"metadata": {"name": f"chain{n}"}, "nodes": nodes,
                                         "edges": edges})


def basic_rag(llm_host: str) -> GraphDocument:
    doc = load(ROOT / "sample_graphs" / "basic_rag.json")
    doc.node("corpus").params["default"] = str(ROOT / "resources" / "sample_corpus")
    doc.node("llm").params.clear()
    doc.node("llm").params.update({"backend": "openai", "model": "fixture-chat",
                                   "host": llm_host, "retries": 0,
                                   "api_key_env": "MODRAG_BENCH_OPENAI_KEY"})
    return doc


class _BenchReceiver(BaseHTTPRequestHandler):
    """The bench's OTLP/HTTP receiver: reads a batch, answers 200 with an empty response."""

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@dataclass
class Mode:
    label: str
    hooks: list[Any]
    drain: Callable[[], object]
    close: Callable[[], object]
    settle: Callable[[], object] = lambda: None  # after a timed run, untimed
    runs: list[float] = field(default_factory=list)
    run_cpu: list[float] = field(default_factory=list)
    all_cpu: list[float] = field(default_factory=list)  # a run and the export of its spans
    all_wall: list[float] = field(default_factory=list)


def modes(group: str, endpoint: str, repeat: int, spans_per_run: int) -> list[Mode]:
    """Export off, and ``group``'s pipeline without and with content."""
    from tracing_before import sdk_pipeline

    made = [Mode("off", [], lambda: None, lambda: None)]
    for content in (False, True):
        label = group + ("+content" if content else "")
        if group == "before":
            hook, provider = sdk_pipeline(endpoint, content=content,
                                          service_name="modrag-bench")
            made.append(Mode(label, [hook], provider.force_flush, provider.shutdown,
                             settle=provider.force_flush))
        else:
            now = run_tracing.start(endpoint, content=content, service_name="modrag-bench",
                                    delay_s=600, queue_size=spans_per_run * (repeat + 4))
            made.append(Mode(label, now.hooks, now.flush, now.shutdown))
    return made


def measure_sent(doc: GraphDocument, repeat: int, endpoint: str, cache: NodeCache,
                 inputs: Callable[[int], dict[str, Any]], check: Callable[[Any], None],
                 block: int = 8) -> list[Mode]:
    """Export off, and "now" with its spans due 20 ms after each run: runs back to back in
    blocks of ``block`` of one mode, blocks taking turns; in a block of "now", earlier runs'
    spans are made and sent between and during its later runs (not during another mode's:
    each block is followed by an untimed flush). "sent": a queue that holds a block's spans
    (they wait for a gap between runs); "pressed": the default queue (2048 spans), which a
    block of large runs fills to half, so its spans go out while runs are in progress."""
    off = Mode("off", [], lambda: None, lambda: None)
    made = [off]
    held = len(doc.nodes) * 2 * (block + 2)
    for label, queue in (("now, sent", held), ("now, pressed", None),
                         ("now, sent, SDK encoder", held)):
        now = run_tracing.start(endpoint, service_name="modrag-bench", delay_s=0.02,
                                queue_size=queue)
        if label.endswith("SDK encoder"):  # the SDK's own exporter: its encoder, ours before
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )

            now.exporter.inner = OTLPSpanExporter(endpoint=endpoint, timeout=5)
        made.append(Mode(label, now.hooks, now.flush, now.shutdown))
    executors = [Executor(default_registry(), cache=cache, hooks=m.hooks) for m in made]
    for executor, mode in zip(executors, made, strict=True):
        executor.run(doc, inputs(-1))
        mode.drain()
    for n in range(max(1, repeat // block) * len(made)):
        executor, mode = executors[n % len(made)], made[n % len(made)]
        for i in range(block):
            question = inputs(n * block + i)
            gc.collect()
            thread, start = time.thread_time(), time.perf_counter()
            result = executor.run(doc, question)
            mode.runs.append(time.perf_counter() - start)
            mode.run_cpu.append(time.thread_time() - thread)
            check(result)
            del result
        mode.drain()
    for mode in made:
        mode.close()
    return made


def measure(group: str, doc: GraphDocument, repeat: int, endpoint: str, cache: NodeCache,
            inputs: Callable[[int], dict[str, Any]], check: Callable[[Any], None]) -> list[Mode]:
    all_modes = modes(group, endpoint, repeat, len(doc.nodes) * 2 + 1)
    executors = [Executor(default_registry(), cache=cache, hooks=m.hooks) for m in all_modes]
    for _ in range(2):  # warm: the cache, imports, the store's first queries
        for executor, mode in zip(executors, all_modes, strict=True):
            executor.run(doc, inputs(-1))
            mode.drain()
    pairs = list(zip(executors, all_modes, strict=True))

    def turns(n: int) -> list[tuple[Executor, Mode]]:  # who follows whom changes each round
        shift = n % len(pairs)
        return pairs[shift:] + pairs[:shift]

    for n in range(repeat):  # what a run takes, modes taking turns
        for executor, mode in turns(n):
            question = inputs(n)
            gc.collect()  # each run pays for its own garbage, not for the mode's before it
            thread, start = time.thread_time(), time.perf_counter()
            result = executor.run(doc, question)
            mode.runs.append(time.perf_counter() - start)
            mode.run_cpu.append(time.thread_time() - thread)
            mode.settle()
            check(result)
            del result  # freed here, untimed (else in the next run's time, whatever its mode)
    for mode in all_modes:
        mode.drain()
    for n in range(repeat):  # what tracing costs in all: each run with its export
        for executor, mode in turns(n):
            question = inputs(n)
            gc.collect()
            cpu, start = time.process_time(), time.perf_counter()
            executor.run(doc, question)
            mode.drain()
            mode.all_cpu.append(time.process_time() - cpu)
            mode.all_wall.append(time.perf_counter() - start)
    if group == "now":
        all_modes.append(hook_alone(executors[0], all_modes[1], doc, inputs(-2)))
    for mode in all_modes:
        mode.close()
    return all_modes


def hook_alone(executor: Executor, mode: Mode, doc: GraphDocument,
               inputs: dict[str, Any]) -> Mode:
    """The hook's own work on the run's thread, without the run: a run's events (its visits
    and values) replayed through ``mode``'s hooks (their sink not called: what it does is
    the export thread's) and through no hook, in turns; the difference, as a mode."""
    from modrag_studio.engine.run.hooks import HookSet

    result = executor.run(doc, inputs)
    ids = [v.node_id for v in result.trace.visits]
    events = [("on_run_start", {"run_id": "replay", "graph_name": doc.metadata.name,
                                "inputs": inputs, "node_ids": ids})]
    for visit in result.trace.visits:
        key = (visit.node_id, visit.iteration)
        events.append(("on_node_end", {"run_id": "replay", "visit": visit,
                                       "inputs": result.node_inputs[key],
                                       "outputs": result.node_outputs[key]}))
    events.append(("on_run_end", {"run_id": "replay", "trace": result.trace}))
    hooks = [type(hook)(lambda record: None) for hook in mode.hooks]
    sets = {"none": HookSet(), "hook": HookSet(hooks)}
    best = dict.fromkeys(sets, float("inf"))
    for _ in range(15):
        for name, hook_set in sets.items():
            gc.collect()
            thread = time.thread_time()
            for _ in range(20):
                for event, kwargs in events:
                    hook_set.emit(event, **kwargs)
            best[name] = min(best[name], (time.thread_time() - thread) / 20)
    alone = Mode(f"{mode.label}: hook", [], lambda: None, lambda: None)
    alone.run_cpu = [best["hook"] - best["none"]]
    return alone


GROUPS = ["now", "sent", "before"]


def measure_both(*args: Any) -> dict[str, list[Mode]]:
    """The groups one after the other, each with its own "off" (so that neither pipeline's
    threads and heap weigh on the other's runs)."""
    return {group: (measure_sent if group == "sent" else partial(measure, group))(*args)
            for group in GROUPS}


def paired(values: list[float], base: list[float]) -> float:
    """The median of the round-by-round ratios (each run against the "off" run of its own
    round, a few milliseconds apart: load that drifts cancels out), minus 1."""
    return statistics.median(v / b for v, b in zip(values, base, strict=True)) - 1


def report(title: str, groups: dict[str, list[Mode]]) -> None:
    med = statistics.median

    def cell(values: list[float], base: list[float], pick: Callable = med) -> str:
        if not values:  # not measured
            return f"{'':>17}"
        return f"{pick(values) * 1000:>9.2f}{(pick(values) / pick(base) - 1) * 100:>7.1f}%"

    print(f"{title} (load average {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    print(f"{'export':<24}{'run ms':>9}{'vs off':>8}{'min':>9}{'vs off':>8}{'paired':>8}"
          f"{'run cpu':>9}{'vs off':>8}{'paired':>8}{'all cpu':>9}{'vs off':>8}"
          f"{'all ms':>9}{'vs off':>8}")
    for group, rows in groups.items():
        off = rows[0]
        for m in rows:
            if not m.runs:
                continue
            label = f"off ({group})" if m is off else m.label
            print(f"{label:<24}{cell(m.runs, off.runs)}{cell(m.runs, off.runs, min)}"
                  f"{paired(m.runs, off.runs) * 100:>7.1f}%{cell(m.run_cpu, off.run_cpu)}"
                  f"{paired(m.run_cpu, off.run_cpu) * 100:>7.1f}%"
                  f"{cell(m.all_cpu, off.all_cpu)}{cell(m.all_wall, off.all_wall)}")
    for rows in groups.values():
        off = rows[0]
        for m in rows:
            if not m.runs:  # the hook alone: one figure
                print(f"  {m.label} alone (events replayed, best of 15): "
                      f"{m.run_cpu[0] * 1e6:.0f} us of run cpu a run = "
                      f"{m.run_cpu[0] / min(off.run_cpu) * 100:.2f}% of off's fastest run")
    for suffix in ("", "+content"):
        added = {}
        for group, rows in groups.items():
            if group == "sent":
                continue
            off, m = rows[0], next(r for r in rows if r.label == group + suffix)
            added[group] = (med(m.runs) - med(off.runs), med(m.run_cpu) - med(off.run_cpu),
                            med(m.all_cpu) - med(off.all_cpu))
        if len(added) < 2:
            continue
        b, n = added["before"], added["now"]
        print(f"  added to off{suffix or ''}, before -> now: run {b[0] * 1000:.2f} -> "
              f"{n[0] * 1000:.2f} ms, run cpu {b[1] * 1000:.2f} -> {n[1] * 1000:.2f} ms, "
              f"all cpu {b[2] * 1000:.2f} -> {n[2] * 1000:.2f} ms")
    for group, index in (("now", 1), ("sent", 1), ("sent", 2)):
        if group not in groups:
            continue
        off, m = groups[group][0], groups[group][index]
        worst = max(paired(m.runs, off.runs), paired(m.run_cpu, off.run_cpu))
        print(f"  verdict, {m.label} vs off: paired run ms {paired(m.runs, off.runs) * 100:+.1f}%"
              f", run cpu {paired(m.run_cpu, off.run_cpu) * 100:+.1f}%: "
              f"{'within' if worst < 0.05 else 'NOT within'} the 5% goal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rag-repeat", type=int, default=12, help="0: skip basic_rag")
    parser.add_argument("--endpoint", help="a real OTLP/HTTP collector (default: the bench's)")
    parser.add_argument("--only", choices=GROUPS, help="measure one group only")
    parser.add_argument("--receiver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receiver:
        _serve_receiver()
        return
    if args.only:
        GROUPS[:] = [args.only]
    receiver = None
    endpoint = args.endpoint
    if endpoint is None:  # a process of its own, as a collector is: its work is not ours
        receiver = subprocess.Popen([sys.executable, __file__, "--receiver"],
                                    stdout=subprocess.PIPE, text=True)
        assert receiver.stdout is not None
        endpoint = receiver.stdout.readline().strip()
    with tempfile.TemporaryDirectory(prefix="modrag-bench-tracing-") as scratch:
        doc = chain(args.nodes)

        def all_cached(result: Any) -> None:
            assert len(result.trace.from_cache()) >= len(doc.nodes) - 1, result.trace.ran()

        rows = measure_both(doc, args.repeat, endpoint,
                            NodeCache(disk_dir=Path(scratch) / "chain"), lambda n: {},
                            all_cached)
        report(f"cached re-run of a {args.nodes}-node chain, {args.repeat} runs per mode, "
               f"export to {endpoint}", rows)
        if args.rag_repeat:
            rag_rows = _basic_rag(args.rag_repeat, endpoint, Path(scratch))
            report(f"\nbasic_rag, a new question each run, LLM on the loopback OpenAI "
                   f"fixture, {args.rag_repeat} runs per mode", rag_rows)
    if receiver is not None:
        receiver.terminate()
        receiver.wait()


def _serve_receiver() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BenchReceiver)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def _basic_rag(repeat: int, endpoint: str, scratch: Path) -> dict[str, list[Mode]]:
    from tests.llm.openai_fixture_server import OpenAIFixtureServer

    os.environ["MODRAG_BENCH_OPENAI_KEY"] = "bench"
    os.environ.setdefault("MODRAG_CACHE_DIR", str(scratch / "model-cache"))

    def answered(result: Any) -> None:
        assert result.ok and "500" in result.outputs["answer"].text, result.trace.status

    asked = itertools.count(1)  # a question no mode asked before: nothing after the index cached
    with OpenAIFixtureServer(pieces=[REPLY]) as llm:
        return measure_both(basic_rag(llm.base_url), repeat, endpoint,
                            NodeCache(disk_dir=scratch / "rag"),
                            lambda n: {"question": f"{QUESTION} ({next(asked)})"}, answered)


if __name__ == "__main__":
    main()
