"""Cost of ``modrag tune``: 12 trials on 300 SciFact queries with the indexes cached, against
evaluating the same variants one by one the way separate runs would (a fresh executor each:
the disk cache is shared, nothing is held in memory between them).

Both sides score the same variants on the same questions, in one process, one after the
other; the ratio "separate / tune" per variant is what running the trials on one executor
saves (models, stores and indexes opened once; shared upstream results re-used).

Run: .venv/bin/python bench/bench_tune.py [--queries 300] [--trials 12] [--separate 3]
The first run embeds the SciFact corpus into the Chroma folder of the data dir (minutes);
later runs reuse it. ``--separate N`` times N of the variants the separate way (each takes
about as long as one ``modrag eval``) and scales the mean to the whole tune.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from modrag_studio.commands.common import parse_value
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import load
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation import evaluate_graph, load_beir
from modrag_studio.evaluation.tuning import parse_space, tune
from modrag_studio.evaluation.tuning.questions import subset
from modrag_studio.evaluation.tuning.tuner import trial_graph

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT.parent / "shared" / "data" / "scifact"
GRAPH = ROOT / "sample_graphs" / "scifact_hybrid.json"
SPACE = ["fusion=fuse.rrf,fuse.convex", "fusion.k=20,60",
         'fusion.weights={},{"dense": 2},{"bm25": 2}', "bm25.top_k=100,200"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--split", default="train")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--separate", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    registry = default_registry()
    doc = load(GRAPH)
    dataset = load_beir(args.dataset, args.split)
    dataset = subset(dataset, dataset.evaluated_query_ids()[: args.queries])
    space = parse_space(SPACE, doc, registry, parse_value)
    cache = Path(cache_home())
    output = "rerank.results"

    warm = Executor(registry, NodeCache(disk_dir=cache))
    t0 = time.perf_counter()
    evaluate_graph(doc, subset(dataset, dataset.evaluated_query_ids()[:2]), [output],
                   executor=warm)
    warm_seconds = time.perf_counter() - t0  # indexes built or opened: not timed below
    del warm

    executor = Executor(registry, NodeCache(disk_dir=cache))
    t0 = time.perf_counter()
    result = tune(doc, dataset, output, space, executor=executor, budget=args.trials,
                  held_out=0.3, seed=0, sampler="random")
    tune_seconds = time.perf_counter() - t0
    evaluations = 1 + len(result.trials) + (2 if result.best else 0)

    tuning = subset(dataset, result.split.tuning)
    separate = []
    for trial in result.trials[: args.separate]:
        fresh = Executor(registry, NodeCache(disk_dir=cache))
        t0 = time.perf_counter()
        evaluate_graph(trial_graph(doc, trial.variant, registry), tuning, [output],
                       executor=fresh)
        separate.append(time.perf_counter() - t0)
    per_separate = sum(separate) / len(separate)
    per_tune = tune_seconds / evaluations
    data = {"queries": len(dataset.queries), "tuning": len(result.split.tuning),
            "held_out": len(result.split.held_out), "trials": len(result.trials),
            "evaluations": evaluations, "warm_up_s": round(warm_seconds, 1),
            "tune_s": round(tune_seconds, 1), "per_evaluation_in_tune_s": round(per_tune, 2),
            "per_evaluation_separate_s": round(per_separate, 2),
            "separate_over_tune": round(per_separate / per_tune, 2),
            "best": result.best.settings if result.best else None, "verdict": result.verdict}
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(f"{data['trials']} trials + base (+ held-out pair) on {data['tuning']} tuning / "
              f"{data['held_out']} held-out of {data['queries']} queries")
        print(f"tune: {tune_seconds:.1f} s in all, {per_tune:.2f} s per evaluation")
        print(f"separate (fresh executor per variant, {len(separate)} timed): "
              f"{per_separate:.2f} s per evaluation")
        print(f"ratio separate / tune per evaluation: {data['separate_over_tune']:.2f}x")
        print(f"best: {data['best']}  verdict: {data['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
