"""``modrag eval``: retrieval metrics of one or more graph outputs on a BEIR-layout dataset."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from modrag_studio import run_tracing
from modrag_studio.commands import evalset_command, recorded_calls
from modrag_studio.commands.attribution_cli import (
    EvalAttribution,
    add_attribute_option,
    add_to_report,
    format_funnel,
)
from modrag_studio.commands.common import (
    add_trust_option,
    apply_overrides,
    load_or_exit,
    parse_pairs,
    parse_value,
    refused_untrusted,
    run_hooks,
    shell_inputs,
    traced,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.progress import ProgressLine, SetupNarrator
from modrag_studio.composition import default_registry
from modrag_studio.evaluation.metric_registry import GAINS, METRICS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    ev = subparsers.add_parser("eval", help="score retrieval outputs on a BEIR-layout dataset")
    ev.add_argument("graph", help="graph JSON file")
    ev.add_argument("--dataset", help="folder with corpus.jsonl, queries.jsonl, "
                    "qrels/<split>.tsv")
    ev.add_argument("--split", default="test", help="qrels split (default: test)")
    ev.add_argument("--output", action="append", default=[], metavar="NODE.PORT",
                    help="a ranked output to score (repeatable: several nodes in one pass)")
    ev.add_argument("--k", type=int, default=10, help="k of Hit@k (default 10)")
    ev.add_argument("--ndcg-gain", choices=GAINS, default="linear",
                    help="nDCG gain of a relevance grade g: linear (g, as trec_eval and BEIR's "
                         "published figures; default) or exponential (2^g - 1)")
    ev.add_argument("--limit", type=int, help="only the first N evaluated queries")
    ev.add_argument("--query-input", help="graph input that takes the query text")
    ev.add_argument("--corpus-input", help="graph input that takes the corpus path")
    ev.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                    help="another graph input (repeatable)")
    ev.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")
    ev.add_argument("--json", action="store_true", help="print the summary as JSON")
    ev.add_argument("--report", metavar="FILE", help="write the full report (per query) as JSON")
    ev.add_argument("--cache-dir", help="node result cache folder")
    add_trust_option(ev)
    add_attribute_option(ev)
    evalset_command.add_arguments(ev)
    ev.add_argument("--grid", action="append", default=[], metavar="NODE.PARAM=V1,V2",
                    help="evaluate every combination on one cache (repeatable; NODE=TYPE.A,TYPE.B "
                    "swaps the node type); a table, "
                    "grid.json and a PNG per metric in --grid-dir")
    ev.add_argument("--grid-dir", help="folder for the grid's plots and grid.json "
                    "(default: grid-<graph name>)")
    ev.add_argument("--grid-scratch", action="store_true", help="also time every cell on an "
                    "empty cache, to show what the shared cache saves")
    ev.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                    help="spread the queries over Ray actors: 'local' (when the value is left "
                    "out), 'auto' or HOST:PORT (needs the 'distributed' extra)")
    ev.add_argument("--ray-actors", type=int, default=2, metavar="N",
                    help="Ray actors holding the graph's query side (default 2)")
    run_tracing.add_arguments(ev)
    recorded_calls.add_arguments(ev)
    ev.set_defaults(func=traced(recorded_calls.with_recorded_calls(run_eval)))


def _executed(args: argparse.Namespace) -> list[Any] | None:
    """What the evaluation runs: the graph with its ``--set`` changes, every ``--grid`` cell
    (None when they cannot be made: the command reports why, running nothing)."""
    import itertools

    from modrag_studio.engine.core.document import load
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.evaluation.grid import cell_graph, parse_grid

    try:
        doc = apply_overrides(load(args.graph), parse_pairs(args.set, "--set"))
        axes = parse_grid(args.grid, doc, parse_value) if args.grid else []
        return [doc, *(cell_graph(doc, axes, values)
                       for values in itertools.product(*(a.values for a in axes)))]
    except (ModragError, ValueError):
        return None


def run_eval(args: argparse.Namespace) -> int:
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation import evaluate_graph, load_beir

    if refused_untrusted(args.graph, args.trust, _executed(args)):
        return EXIT_INVALID
    if args.evalset:
        return evalset_command.run_evalset(args)
    if not args.dataset or not args.output or args.min:
        print("error: give --evalset (answer metrics, --min gates) or --dataset and --output "
              "(BEIR ranking metrics)", file=sys.stderr)
        return EXIT_INVALID
    if args.grid:
        from modrag_studio.commands.compare_command import run_eval_grid
        return run_eval_grid(args)
    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID
    try:
        doc = apply_overrides(doc, parse_pairs(args.set, "--set"))
        extra = shell_inputs(doc, args.input)
        dataset = load_beir(args.dataset, args.split)
        executor = Executor(default_registry(),
                            cache=NodeCache(disk_dir=Path(args.cache_dir or cache_home())),
                            hooks=run_hooks(args))
        executor.check(doc, {})

        progress = ProgressLine("queries", setup_first=True).update

        funnel = (EvalAttribution(doc, dataset.qrels, [o.partition(".")[0] for o in args.output])
                  if args.attribute else None)
        common = dict(executor=executor, hit_k=args.k, ndcg_gain=args.ndcg_gain, limit=args.limit,
                      query_input=args.query_input, corpus_input=args.corpus_input,
                      extra_inputs=extra, on_progress=progress)
        if args.ray:
            if funnel is not None:
                raise ValueError("--attribute needs each query's run in this process: "
                                 "run it without --ray")
            from modrag_studio.distributed.ray_eval import evaluate_on_ray

            report = evaluate_on_ray(args.ray, doc, dataset, args.output,
                                     actors=args.ray_actors, **common)
        else:
            report = evaluate_graph(doc, dataset, args.output,
                                    on_result=funnel and funnel.add,
                                    setup_hooks=[SetupNarrator()], **common)
    except (ModragError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    data = report.to_dict()
    if funnel is not None:
        add_to_report(data, funnel)
    if args.report:
        Path(args.report).write_text(json.dumps(data, indent=2), encoding="utf-8")
    if args.json:
        summary = {k: v for k, v in data.items()
                   if k not in ("per_query", "first_loss", "missing_docs")}
        print(json.dumps(summary, indent=2))
    else:
        columns = [(n, max(11, len(n) + 1)) for n in METRICS.table(args.k)]
        print(f"{report.graph_name} on {Path(report.source.path).name}/{report.source.split}: "
              f"{report.queries} queries, {report.seconds:.1f} s")
        print(f"{'output':<28}" + "".join(f"{n:>{w}}" for n, w in columns))
        for spec, values in report.outputs.items():
            print(f"{spec:<28}" + "".join(f"{values.get(n, 0.0):>{w}.4f}" for n, w in columns))
        if funnel is not None:
            print(format_funnel(data["attribution"]))
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if report.failures:
        print(f"{len(report.failures)} query runs failed; first: {report.failures[0]}",
              file=sys.stderr)
        return EXIT_RUN_FAILED
    return EXIT_OK
