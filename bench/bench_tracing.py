"""Overhead of trace export (``--otlp``) on a cached re-run of a 200-node graph: export off,
on, and on with content, side by side in one process.

"On" sends every run's 201 spans over OTLP/HTTP to a minimal receiver this script starts on
127.0.0.1 (it accepts each batch and answers an empty ``ExportTraceServiceResponse``; pass
``--endpoint URL`` to use a real collector such as Phoenix instead). The batch processor
exports on its own thread, so its cost shows up as the time it takes from the runs.

Run: .venv/bin/python bench/bench_tracing.py [--nodes 200] [--repeat 30]
Goal: export on within 5% of export off.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from modrag_studio import run_tracing
from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache
from modrag_studio.engine.core.document import GraphDocument


def chain(n: int) -> GraphDocument:
    nodes = [{"id": "n0", "type": "debug.constant", "params": {"value": "x" * 200}}]
    edges = []
    for i in range(1, n):
        nodes.append({"id": f"n{i}", "type": "debug.passthrough", "params": {}})
        edges.append({"from": f"n{i - 1}.value", "to": f"n{i}.value"})
    return GraphDocument.model_validate({"metadata": {"name": f"chain{n}"}, "nodes": nodes,
                                         "edges": edges})


class _BenchReceiver(BaseHTTPRequestHandler):
    """The bench's OTLP/HTTP receiver: reads a batch, answers 200 with an empty response."""

    spans_bytes = 0

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        length = int(self.headers.get("Content-Length") or 0)
        _BenchReceiver.spans_bytes += len(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


def timed(executor: Executor, doc: GraphDocument, repeat: int) -> list[float]:
    executor.run(doc)  # warm: fills the cache (and the hook's imports)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = executor.run(doc)
        times.append(time.perf_counter() - start)
        assert len(result.trace.from_cache()) >= len(doc.nodes) - 1, result.trace.ran()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--endpoint", help="a real OTLP/HTTP collector (default: the bench's)")
    args = parser.parse_args()
    server = None
    endpoint = args.endpoint
    if endpoint is None:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _BenchReceiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    doc = chain(args.nodes)
    rows = []
    with tempfile.TemporaryDirectory(prefix="modrag-bench-tracing-") as scratch:
        for label, content in (("off", None), ("on", False), ("on+content", True)):
            tracing = (run_tracing.NoTracing() if content is None
                       else run_tracing.start(endpoint, content=content,
                                              service_name="modrag-bench"))
            executor = Executor(default_registry(),
                                cache=NodeCache(disk_dir=Path(scratch) / label),
                                hooks=tracing.hooks)
            times = timed(executor, doc, args.repeat)
            flush_start = time.perf_counter()
            tracing.shutdown()
            rows.append((label, statistics.median(times), min(times),
                         time.perf_counter() - flush_start))
    base = rows[0][1]
    print(f"cached re-run of a {args.nodes}-node chain, {args.repeat} runs each, "
          f"export to {endpoint}")
    print(f"{'export':<12}{'median ms':>11}{'min ms':>9}{'vs off':>9}{'flush ms':>10}")
    for label, median, fastest, flush in rows:
        print(f"{label:<12}{median * 1000:>11.2f}{fastest * 1000:>9.2f}"
              f"{(median / base - 1) * 100:>8.1f}%{flush * 1000:>10.1f}")
    if server is not None:
        print(f"receiver got {_BenchReceiver.spans_bytes / 1e6:.2f} MB of OTLP")
        server.shutdown()


if __name__ == "__main__":
    main()
