"""Overhead of trace export (``--otlp``), side by side in one process: export off, the
previous pipeline ("before": live SDK spans on the run's thread, the SDK's batch processor)
and the current one ("now": the hook only notes events, the export thread makes and sends
the spans), each with and without content, on two runs:

- ``chain``: a cached re-run of a 200-node graph (every visit a cache hit; 201 spans a run);
- ``basic_rag``: ``sample_graphs/basic_rag.json`` with a new question each run (so the query
  embedding, both retrievers, fusion, the prompt, the LLM and the checks run; the indexing
  is cached), its LLM on the loopback OpenAI-compatible test fixture.

Two groups one after the other, "now" then "before" (``--only`` for one), each with export
off, its pipeline, and its pipeline with content (each group has its own "off": neither
pipeline's threads and heap weigh on the other's runs). In a group, first, modes take turns
run by run, in an order that rotates each round (so load drifts, and what the run before
leaves in the CPU's caches, hit all alike): ``run ms``, the wall
time of ``executor.run``, what a user waits for (median, and minimum: steadier where the
store's query time jumps, as Chroma's does), and ``run cpu``, the CPU time of the run's
thread in it (steady when other processes load the machine). "now" exports after a delay
(``OTEL_BSP_SCHEDULE_DELAY``): here the runs' spans wait, as they do while runs come
closer together than the delay, and go out before the second part. "before"'s batch
processor is flushed after each of its runs, untimed (its exports would otherwise land in
the next mode's run). A collection of garbage precedes each timed run, so that a run pays
for its own garbage, not for the one the mode before it left. Then, modes again taking
turns, each run followed by the export of its spans (flushed): ``all cpu``, the process's
CPU time over both (every thread: all the work tracing costs), and ``all ms``, their wall
time.
Spans go over OTLP/HTTP to a minimal receiver this script starts in a process of its own
on 127.0.0.1 (``--endpoint`` for a real collector).

Run: .venv/bin/python bench/bench_tracing.py [--nodes 200] [--repeat 30] [--rag-repeat 12]
Goal: "now" within 5% of "off" in ``run ms``.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

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
    for mode in all_modes:
        mode.close()
    return all_modes


GROUPS = ["now", "before"]


def measure_both(*args: Any) -> dict[str, list[Mode]]:
    """The groups one after the other, each with its own "off" (so that neither pipeline's
    threads and heap weigh on the other's runs)."""
    return {group: measure(group, *args) for group in GROUPS}


def report(title: str, groups: dict[str, list[Mode]]) -> None:
    med = statistics.median

    def cell(value: float, base: float) -> str:
        return f"{value * 1000:>9.2f}{(value / base - 1) * 100:>7.1f}%"

    print(title)
    print(f"{'export':<16}{'run ms':>9}{'vs off':>8}{'min':>9}{'vs off':>8}"
          f"{'run cpu':>9}{'vs off':>8}{'all cpu':>9}{'vs off':>8}{'all ms':>9}{'vs off':>8}")
    for group, rows in groups.items():
        off = rows[0]
        for m in rows:
            label = f"off ({group})" if m is off else m.label
            print(f"{label:<16}{cell(med(m.runs), med(off.runs))}"
                  f"{cell(min(m.runs), min(off.runs))}"
                  f"{cell(med(m.run_cpu), med(off.run_cpu))}"
                  f"{cell(med(m.all_cpu), med(off.all_cpu))}"
                  f"{cell(med(m.all_wall), med(off.all_wall))}")
    for suffix in ("", "+content"):
        added = {}
        for group, rows in groups.items():
            off, m = rows[0], next(r for r in rows if r.label == group + suffix)
            added[group] = (med(m.runs) - med(off.runs), med(m.run_cpu) - med(off.run_cpu),
                            med(m.all_cpu) - med(off.all_cpu))
        if len(added) < 2:
            continue
        b, n = added["before"], added["now"]
        print(f"  added to off{suffix or ''}, before -> now: run {b[0] * 1000:.2f} -> "
              f"{n[0] * 1000:.2f} ms, run cpu {b[1] * 1000:.2f} -> {n[1] * 1000:.2f} ms, "
              f"all cpu {b[2] * 1000:.2f} -> {n[2] * 1000:.2f} ms")


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
    import os

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
