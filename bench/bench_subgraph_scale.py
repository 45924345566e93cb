"""Expanding a graph with thousands of subgraph instances: the one-pass inlining
(``engine/compose/flatten.py``) against inlining one subgraph at a time (what every run,
validation and check did before, still used for subgraphs that carry an ``origin``).

The graph: a question through N instances of a one-node component in a chain, then out
(each block of wires lands inside the previous one: the worst case for the order labels).
Prints seconds per expansion for each N and both ways; the one-at-a-time way is skipped
above --max-slow instances (it grows with N squared: 8,000 took minutes).

Run: .venv/bin/python bench/bench_subgraph_scale.py [--sizes 500 1000 2000 4000 8000]
Target: the one-pass time grows linearly (8,000 instances in about a second).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modrag_studio.engine.compose.expand import inlined_one_at_a_time  # noqa: E402
from modrag_studio.engine.compose.flatten import flatten  # noqa: E402
from tests.compose.test_subgraph_scale import chain, leaf  # noqa: E402


def seconds(work, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000])
    parser.add_argument("--max-slow", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'instances':>9}  {'one pass s':>10}  {'one at a time s':>15}  ratio")
    for size in args.sizes:
        doc = chain([leaf() for _ in range(size)])
        fast = seconds(lambda d=doc: flatten(d), args.repeat)
        if size <= args.max_slow:
            slow = seconds(lambda d=doc: inlined_one_at_a_time(d, []), 1)
            print(f"{size:>9}  {fast:>10.3f}  {slow:>15.2f}  {slow / fast:6.1f}x", flush=True)
        else:
            print(f"{size:>9}  {fast:>10.3f}  {'(skipped)':>15}", flush=True)


if __name__ == "__main__":
    main()
