"""A cached re-run of ``modular_rag`` with its hybrid retrieval block as a subgraph (the
shipped sample, linked to components/hybrid_retrieval.subgraph.json) next to the same graph
with the block expanded in place, on one executor and one cache, timed side by side.

The chat model is a canned backend (no model download); the embedder is the packaged e5.
Run: .venv/bin/python bench/bench_subgraph_rerun.py [--repeat 100]
Target: the subgraph's cached re-run costs no more than the flat one: ratio of the medians
(and of the fastest runs) <= 1.0, within the run-to-run noise printed beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BACKEND = "bench-canned"


class Canned:
    """A chat backend with fixed replies: the router asks, the checks say yes."""

    def chat(self, spec, messages, *, on_token, cancel):
        from modrag_nodes.llm.client import ChatResult

        user = messages[-1].content
        text = ("general" if user.startswith("Classify the question")
                else "yes" if "check answers against evidence" in messages[0].content
                else "How often is the LP-07 pump serviced?"
                if user.startswith("Split the question")
                else "The lubrication pump is serviced as the schedule says [1].")
        return ChatResult(text=text, model="canned", prompt_tokens=1, completion_tokens=1,
                          duration_s=0.0)


def documents():
    from modrag_studio.engine.compose.inline import inline
    from modrag_studio.engine.core.document import load

    doc = load(ROOT / "sample_graphs" / "modular_rag.json")
    for node in doc.nodes:
        if node.type == "llm.model":
            node.params["backend"] = BACKEND
        elif node.type == "graph.input" and node.params.get("name") == "corpus":
            node.params["default"] = str(ROOT / "resources" / "sample_corpus")
    flat = inline(doc, "hybrid")
    assert doc.node("hybrid").subgraph is not None and "hybrid" not in flat.node_ids()
    return doc, flat


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-subgraph-"))
    os.environ.setdefault("MODRAG_DATA_DIR", str(home / "data"))
    os.environ.setdefault("MODRAG_CACHE_DIR", str(home / "cache"))
    from modrag_nodes.llm.client import register_backend
    from modrag_studio.composition import default_registry
    from modrag_studio.engine import Executor, NodeCache
    from modrag_studio.engine.compose.expand import expand

    register_backend(BACKEND, Canned)
    sub, flat = documents()
    executor = Executor(default_registry(), cache=NodeCache(disk_dir=home / "nodes"),
                        work_dir=home / "data")
    question = {"question": "How often is the lubrication pump serviced?"}
    start = time.perf_counter()
    first = executor.run(flat, question)
    cold = time.perf_counter() - start
    assert first.ok, first.trace.failure_summary()
    served = executor.run(sub, question)  # the flat run's cache serves the subgraph's nodes
    inner = [v for v in served.trace.visits if v.node_id.startswith("hybrid/")]
    assert served.ok and inner and all(v.status == "cached" for v in inner)
    assert served.outputs["answer"].text == first.outputs["answer"].text
    times: dict[str, list[float]] = {"flat": [], "subgraph": []}
    pair = [("flat", flat), ("subgraph", sub)]
    for round_ in range(args.repeat):
        for label, doc in pair if round_ % 2 else pair[::-1]:  # interleaved, either first
            start = time.perf_counter()
            result = executor.run(doc, question)
            times[label].append(time.perf_counter() - start)
            assert all(v.status in ("cached", "skipped") or v.type_id == "graph.input"
                       for v in result.trace.visits), label
    expansions = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        expand(sub)
        expansions.append(time.perf_counter() - start)
    f, s = (statistics.median(times[k]) * 1000 for k in ("flat", "subgraph"))
    noise = statistics.pstdev(times["flat"]) * 1000
    print(f"modular_rag, {len(flat.nodes)} nodes flat / {len(sub.nodes)} with the subgraph "
          f"({len(inner)} inner); cold run {cold:.1f} s; {args.repeat} cached re-runs each")
    print(f"{'graph':<10} {'median ms':>10} {'min ms':>8}")
    for label in ("flat", "subgraph"):
        print(f"{label:<10} {statistics.median(times[label]) * 1000:>10.2f} "
              f"{min(times[label]) * 1000:>8.2f}")
    print(f"expansion of the subgraph alone: {statistics.median(expansions) * 1000:.2f} ms "
          "(link check: reads and hashes the component file)")
    fastest = min(times["subgraph"]) / min(times["flat"])
    print(f"ratio subgraph / flat: medians {s / f:.3f}, fastest runs {fastest:.3f} (flat "
          f"run-to-run stdev {noise:.2f} ms = {noise / f:.1%}); target <= 1.0 within that "
          f"noise: {'met' if s <= f + noise else 'NOT met'}")


if __name__ == "__main__":
    main()
