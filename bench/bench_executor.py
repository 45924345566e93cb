"""Executor overhead: per-node cost on a 200-node chain and a 50-wide fan-out of no-op nodes,
and a fully cached re-run of the 200-node graph, next to calling the nodes directly.

Run: .venv/bin/python bench/bench_executor.py [--repeat 5]
Targets: overhead under 0.5 ms per node; cached re-run of 200 nodes under 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor, NodeCache
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import CancelToken, NodeContext


def chain(n: int) -> GraphDocument:
    nodes = [{"id": "n0", "type": "debug.constant", "params": {"value": "x"}}]
    edges = []
    for i in range(1, n):
        nodes.append({"id": f"n{i}", "type": "debug.passthrough", "params": {}})
        edges.append({"from": f"n{i - 1}.value", "to": f"n{i}.value"})
    return GraphDocument.model_validate({"metadata": {"name": f"chain{n}"}, "nodes": nodes,
                                         "edges": edges})


def fan_out(width: int) -> GraphDocument:
    nodes = [{"id": "src", "type": "debug.constant", "params": {"value": "x"}},
             {"id": "join", "type": "text.concat", "params": {}}]
    edges = []
    for i in range(width):
        nodes.append({"id": f"b{i}", "type": "debug.passthrough", "params": {}})
        edges.append({"from": "src.value", "to": f"b{i}.value"})
        edges.append({"from": f"b{i}.value", "to": "join.texts"})
    return GraphDocument.model_validate({"metadata": {"name": f"fan{width}"}, "nodes": nodes,
                                         "edges": edges})


def direct_calls(n: int) -> float:
    """The same node work without the executor: the floor the overhead is measured against."""
    registry = default_registry()
    node = registry.instance("debug.passthrough")
    params = registry.get("debug.passthrough").Params()
    ctx = NodeContext(node_id="n", type_id="debug.passthrough", iteration=0, cancel=CancelToken(),
                      on_progress=lambda f, m: None, on_stream=lambda t: None, logger=None,
                      work_dir=None, run_inputs={})
    start = time.perf_counter()
    value = "x"
    for _ in range(n):
        value = node.run(ctx, params, value=value)["value"]
    return time.perf_counter() - start


def timed_run(executor: Executor, doc: GraphDocument) -> float:
    start = time.perf_counter()
    executor.run(doc)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    docs = {"chain of 200": chain(200), "fan-out of 50": fan_out(50)}
    print(f"{'graph':<16} {'nodes':>5} {'cold run ms':>12} {'ms/node':>8} {'direct ms':>10} "
          f"{'cached re-run ms':>17}")
    for label, doc in docs.items():
        n = len(doc.nodes)
        cold, warm, direct = [], [], []
        for _ in range(args.repeat):
            executor = Executor(default_registry(), cache=NodeCache())
            cold.append(timed_run(executor, doc))
            warm.append(timed_run(executor, doc))
            direct.append(direct_calls(n))
        c, w, d = (statistics.median(x) * 1000 for x in (cold, warm, direct))
        print(f"{label:<16} {n:>5} {c:>12.1f} {(c - d) / n:>8.3f} {d:>10.2f} {w:>17.1f}")
    print("targets: ms/node (executor overhead) < 0.5; cached re-run of 200 nodes < 50 ms")


if __name__ == "__main__":
    main()
