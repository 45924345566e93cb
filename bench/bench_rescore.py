"""Re-scoring an evaluation in a warm process after a fusion param changed (issue 25).

In one process, as the studio keeps them between two evaluations (one ``Executor``, one
``NodeCache``, models loaded): the index is built first (untimed), then

- ``cold``: the first evaluation of ``--queries`` queries (every query-side node runs);
- ``changed``: the fusion param edited through the editor (``GraphEditor.set_param``, the
  properties panel's path; RRF ``k`` 60 -> 30 by default) and the evaluation run again;
- ``unchanged``: the same evaluation once more, nothing edited;
- both again ``--repeat`` times (k 31, 32, ...): the median and spread are printed, as a
  shared machine's load moves single figures.

For each, the seconds, and per node how many visits ran and how many the cache answered, the
time the nodes that ran took, and the time spent scoring. Then a fresh executor and cache
evaluate the edited graph cold: its fused top 10 of every query must equal the warm re-score's
(same chunk ids in the same order, scores within 1e-6), for the last edit.

Run: .venv/bin/python bench/bench_rescore.py [--docs 300] [--queries 300]
(SciFact train split from ../shared/data/scifact; the Chroma folder under --data-dir is
shared with bench_eval_loop.py.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_eval_loop import DATASET, GRAPH, dataset_dir  # noqa: E402

from modrag_studio.engine.run.hooks import RunHook  # noqa: E402


class NodeTally(RunHook):
    """Per node: visits that ran, visits the cache answered, seconds the runs took; and each
    query's fused top 10 (chunk id, score) by query text."""

    def __init__(self) -> None:
        self.ran: dict[str, int] = defaultdict(int)
        self.cached: dict[str, int] = defaultdict(int)
        self.seconds: dict[str, float] = defaultdict(float)
        self.texts: dict[str, str] = {}
        self.tops: dict[str, list[tuple[str, float]]] = {}

    def on_run_start(self, *, run_id: str, inputs: dict[str, Any], **kwargs: Any) -> None:
        self.texts[run_id] = str(inputs.get("query"))

    def on_node_end(self, *, run_id: str, visit: Any, outputs: dict[str, Any],
                    **kwargs: Any) -> None:
        if visit.node_id == "fusion" and outputs.get("results") is not None:
            self.tops[self.texts[run_id]] = [(c.chunk_id, float(c.score))
                                             for c in outputs["results"][:10]]
        if visit.status == "cached":
            self.cached[visit.node_id] += 1
        elif visit.status == "done" and not visit.cache_reason.startswith("planned"):
            self.ran[visit.node_id] += 1
            self.seconds[visit.node_id] += visit.duration_s


def evaluate(doc, dataset, executor, queries: int) -> dict[str, Any]:
    """One evaluation of ``fusion.results``: seconds, node tally, scoring seconds, top 10s."""
    from modrag_studio.evaluation import evaluate_graph

    tally = NodeTally()
    executor.hooks.append(tally)
    scoring = [0.0]
    ended = [0.0]

    class Ends(RunHook):  # a question's run ends, then it is scored, then progress is told
        def on_run_end(self, **kwargs: Any) -> None:
            ended[0] = time.perf_counter()

    def on_progress(done: int, total: int) -> None:
        scoring[0] += time.perf_counter() - ended[0]

    ends = Ends()
    executor.hooks.append(ends)
    started = time.perf_counter()
    try:
        report = evaluate_graph(doc, dataset, ["fusion.results"], executor=executor,
                                limit=queries, on_progress=on_progress)
    finally:
        executor.hooks.remove(tally)
        executor.hooks.remove(ends)
    seconds = time.perf_counter() - started
    ids = dataset.evaluated_query_ids()[:queries]
    tops = {q: tally.tops[dataset.queries[q]] for q in ids}
    return {"seconds": seconds, "tally": tally, "tops": tops, "scoring": scoring[0],
            "ndcg": report.outputs["fusion.results"]["ndcg@10"],
            "failures": len(report.failures)}


def same_tops(a: dict[str, list[tuple[str, float]]],
              b: dict[str, list[tuple[str, float]]]) -> int:
    """How many queries have the same top 10 ids in order with scores within 1e-6."""
    return sum(a[q] is not None and [c for c, _ in a[q]] == [c for c, _ in b.get(q, [])]
               and all(abs(x - y) <= 1e-6 for (_, x), (_, y) in zip(a[q], b[q], strict=True))
               for q in a)


def show(name: str, row: dict[str, Any]) -> None:
    tally: NodeTally = row["tally"]
    nodes = sorted(set(tally.ran) | set(tally.cached))
    ran = sum(tally.seconds.values())
    print(f"{name:<10}{row['seconds']:>8.2f} s   nodes ran {ran:.2f} s, scoring "
          f"{row['scoring']:.2f} s, rest (executor, batching) "
          f"{row['seconds'] - ran - row['scoring']:.2f} s   nDCG@10 {row['ndcg']:.4f}")
    print("          " + ", ".join(
        f"{n} {tally.ran.get(n, 0)} ran/{tally.cached.get(n, 0)} cached"
        + (f" {tally.seconds[n]:.2f} s" if tally.ran.get(n) else "") for n in nodes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--docs", type=int, default=300, help="first N abstracts (0: all)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--param", default="k", help="the fusion param edited (default k)")
    parser.add_argument("--value", default="30", help="its new value (JSON)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="edits (value, value+1, ...), each re-scored, then unchanged")
    parser.add_argument("--graph", default=str(GRAPH))
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir())
                                                   / "modrag-bench-eval"))
    args = parser.parse_args()

    import json

    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.edit.editor import GraphEditor
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation import load_beir

    data_dir = Path(args.data_dir) / f"docs-{args.docs or 'all'}"
    data_dir.mkdir(parents=True, exist_ok=True)
    dataset = load_beir(dataset_dir(Path(args.dataset), args.docs, data_dir), args.split)
    registry = default_registry()
    editor = GraphEditor(registry, load(args.graph))
    with tempfile.TemporaryDirectory(prefix="modrag-bench-cache-") as cache_dir:
        executor = Executor(registry, cache=NodeCache(disk_dir=Path(cache_dir) / "warm"),
                            work_dir=data_dir)
        warm_up = executor.run(editor.document(), {
            "corpus": str(dataset.corpus_path),
            "query": dataset.queries[dataset.evaluated_query_ids()[-1]]})
        if not warm_up.ok:
            raise SystemExit(f"warm-up run failed: {warm_up.trace.failures()}")
        cold = evaluate(editor.document(), dataset, executor, args.queries)
        changes, sames = [], []
        for step in range(args.repeat):  # a new value each time, so fusion runs again
            value = json.loads(args.value)
            editor.set_param("fusion", args.param, value + step if step else value)
            changes.append(evaluate(editor.document(), dataset, executor, args.queries))
            sames.append(evaluate(editor.document(), dataset, executor, args.queries))
        changed, unchanged = changes[-1], sames[-1]
        fresh_executor = Executor(registry, cache=NodeCache(disk_dir=Path(cache_dir) / "cold"),
                                  work_dir=data_dir)
        fresh = evaluate(editor.document(), dataset, fresh_executor, args.queries)
    n = len(cold["tops"])
    print(f"{Path(args.graph).name}: {n} queries, {args.docs or 'all'} docs; "
          f"fusion.{args.param} -> {args.value} (then +1 per repeat); the rows below show the "
          f"last edit")
    for name, row in (("cold", cold), ("changed", changed), ("unchanged", unchanged),
                      ("fresh", fresh)):
        show(name, row)
    after = sorted(r["seconds"] for r in changes)
    same = sorted(r["seconds"] for r in sames)
    median = after[len(after) // 2]
    print(f"warm re-score after the change, {len(after)} edits: median {median:.2f} s "
          f"(best {after[0]:.2f}, worst {after[-1]:.2f}; {median / cold['seconds']:.2f}x "
          f"the cold evaluation); unchanged: median {same[len(same) // 2]:.2f} s "
          f"(best {same[0]:.2f}, worst {same[-1]:.2f}); "
          f"goal <= 2 s: {'met' if median <= 2.0 else 'NOT met'} (median)")
    print(f"same fused top 10 as a fresh cold run of the edited graph: "
          f"{same_tops(changed['tops'], fresh['tops'])} of {n} (changed), "
          f"{same_tops(unchanged['tops'], fresh['tops'])} of {n} (unchanged); "
          f"the first evaluation differs from it for "
          f"{n - same_tops(cold['tops'], fresh['tops'])} queries")


if __name__ == "__main__":
    main()
