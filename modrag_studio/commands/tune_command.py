"""``modrag tune``: find the change to a graph that helps on the user's own questions.

Before anything runs it says what the set can show (a power estimate: the gain it finds
and the questions a given gain needs; ``--plan`` says only that). On a large set the
questions (an evaluation set, or a BEIR split) are cut into a tuning part and a held-out
part (seeded), the space is searched on the tuning part and the best trial compared with
the base on the held-out part (paired randomization test and bootstrap CI, as ``modrag
compare``); on a small set the search itself is cross-validated (repeated k-fold, corrected
resampled t-test). The choice is saved as a named variant of the graph file only when it is
significantly better (the base is never changed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from modrag_studio.commands.common import (
    add_trust_option,
    load_or_exit,
    parse_value,
    refused_untrusted,
    report_overwrites_input,
    run_hooks,
    shell_inputs,
    write_report,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.progress import ProgressLine, SetupNarrator, format_seconds
from modrag_studio.composition import default_registry
from modrag_studio.evaluation.metric_registry import PRIMARY
from modrag_studio.evaluation.tuning.power import (
    DEFAULT_FOLDS,
    DEFAULT_REPEATS,
    DEFAULT_SPREAD,
    METHODS,
    SMALL_SET,
    plan,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    tp = subparsers.add_parser(
        "tune", help="search graph changes on an evaluation set; test the best one against "
        "the base on held-out questions and save it as a variant")
    tp.add_argument("graph", help="graph JSON file")
    source = tp.add_mutually_exclusive_group()
    source.add_argument("--evalset", metavar="FILE.jsonl", help="evaluation set whose "
                        "questions name their expected documents or chunks")
    source.add_argument("--dataset", help="BEIR-layout folder (corpus, queries, qrels)")
    tp.add_argument("--split", default="test", help="--dataset: qrels split (default: test)")
    tp.add_argument("--output", required=True, metavar="NODE.PORT",
                    help="the ranked output to tune")
    tp.add_argument("--space", action="append", default=[], metavar="NODE.PARAM=V1,V2",
                    help="values to try (repeatable): node.param=v1,v2, node=type.a,type.b "
                    "(swap the type), node.bypass=false,true (turn a node off)")
    tp.add_argument("--budget", type=int, default=12, help="most trials (default 12); the "
                    "whole space when it is no larger, else a sampler picks")
    tp.add_argument("--sampler", default="auto", choices=("auto", "grid", "tpe", "random"),
                    help="auto (default): every combination when they fit the budget, else "
                    "Optuna's TPE (the 'tune' extra) or a seeded random sample")
    tp.add_argument("--metric", default=PRIMARY, help=f"metric to maximise (default {PRIMARY})")
    tp.add_argument("--held-out", type=float, default=0.3, metavar="FRACTION",
                    help="share of the questions kept for the final test (default 0.3)")
    tp.add_argument("--min-held-out", type=int, default=20, metavar="N",
                    help="fewest held-out questions to test on (default 20)")
    tp.add_argument("--method", default="auto", choices=METHODS,
                    help="how the choice is tested: held-out (a part kept aside), "
                    "cross-validation (repeated k-fold of the search, for small sets) or "
                    f"auto (default: cross-validation under {SMALL_SET} questions)")
    tp.add_argument("--folds", type=int, default=DEFAULT_FOLDS,
                    help=f"cross-validation folds (default {DEFAULT_FOLDS})")
    tp.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                    help=f"cross-validation repeats (default {DEFAULT_REPEATS})")
    tp.add_argument("--effect", type=float, default=0.05,
                    help="the gain of the metric the power estimate is for (default 0.05)")
    tp.add_argument("--spread", type=float, default=DEFAULT_SPREAD,
                    help="standard deviation of per-question differences for the power "
                    f"estimate (default {DEFAULT_SPREAD}; a tune reports the measured one)")
    tp.add_argument("--plan", action="store_true", help="only say how many questions the "
                    "test needs for --effect (and what the given set can find); run nothing")
    tp.add_argument("--seed", type=int, default=0, help="seed of the split and the sampler")
    tp.add_argument("--limit", type=int, help="only the first N questions (before the split)")
    tp.add_argument("--k", type=int, default=10, help="k of Hit@k (default 10)")
    tp.add_argument("--variant-name", default="tuned", help="name of the saved variant "
                    "(default: tuned)")
    tp.add_argument("--replace-variant", action="store_true",
                    help="replace a stored variant of the same name")
    tp.add_argument("--no-save", action="store_true", help="report only; change no file")
    tp.add_argument("--query-input", help="graph input that takes the query text")
    tp.add_argument("--corpus-input", help="graph input that takes the corpus path")
    tp.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                    help="graph input (with --evalset: the corpus, e.g. corpus=docs/)")
    tp.add_argument("--json", action="store_true", help="print the result as JSON")
    tp.add_argument("--report", metavar="FILE", help="write the result as JSON")
    tp.add_argument("--cache-dir", help="node result cache folder")
    add_trust_option(tp)
    tp.set_defaults(func=run_tune)


def _questions(args: argparse.Namespace, doc, extra: dict[str, str]):
    from modrag_studio.evaluation import load_beir
    from modrag_studio.evaluation.evalset import load_evalset
    from modrag_studio.evaluation.runner import pick_inputs
    from modrag_studio.evaluation.tuning import dataset_from_evalset

    if args.dataset:
        return load_beir(args.dataset, args.split)
    _query, corpus_name = pick_inputs(doc, args.query_input, args.corpus_input)
    corpus = extra.get(corpus_name) if corpus_name else None
    if corpus_name and not corpus:
        raise ValueError(f"--evalset: give the corpus as --input {corpus_name}=PATH")
    return dataset_from_evalset(load_evalset(args.evalset), corpus or ".")


def run_tune(args: argparse.Namespace) -> int:
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.tuning import parse_space, tune, winner_variant, write_variant
    from modrag_studio.evaluation.tuning.questions import subset
    from modrag_studio.evaluation.tuning.tuner import trial_reach_graphs

    if problem := report_overwrites_input(args.report, args.graph):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if args.effect <= 0 or args.spread <= 0:
        print("error: --effect and --spread must be positive", file=sys.stderr)
        return EXIT_INVALID
    if not (args.evalset or args.dataset):
        if args.plan:
            print(_plan(args, 0).need_text())
            return EXIT_OK
        print("error: give the questions: --evalset FILE.jsonl or --dataset DIR",
              file=sys.stderr)
        return EXIT_INVALID
    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID
    registry = default_registry()
    try:
        extra = shell_inputs(doc, args.input, registry)
        if args.plan:
            dataset = _questions(args, doc, extra)
            count = len(dataset.evaluated_query_ids())
            print(_plan(args, min(count, args.limit or count)).text())
            return EXIT_OK
        space = parse_space(args.space, doc, registry, parse_value)
        if refused_untrusted(args.graph, args.trust,
                             [doc, *trial_reach_graphs(doc, space, registry)]):
            return EXIT_INVALID
        dataset = _questions(args, doc, extra)
        if args.limit:
            dataset = subset(dataset, dataset.evaluated_query_ids()[: args.limit])
        executor = Executor(registry, cache=NodeCache(disk_dir=Path(args.cache_dir
                                                                    or cache_home())),
                            hooks=run_hooks(args))
        executor.check(doc, {})
        estimate = _plan(args, len(dataset.evaluated_query_ids()))
        print(f"plan: {estimate.text()}", file=sys.stderr)
        print(f"space: {space.size} combination(s) of {', '.join(space.names())}; "
              f"budget {args.budget}", file=sys.stderr)
        result = tune(doc, dataset, args.output, space, executor=executor,
                      budget=args.budget, metric=args.metric, seed=args.seed,
                      held_out=args.held_out, min_held_out=args.min_held_out,
                      sampler=args.sampler, method=estimate.method, folds=args.folds,
                      repeats=args.repeats, on_trial=_trial_printer(args.metric),
                      on_fold=_fold_printer(),
                      hit_k=args.k, query_input=args.query_input,
                      corpus_input=args.corpus_input, extra_inputs=extra,
                      setup_hooks=[SetupNarrator()])
        saved = None
        if result.better and not args.no_save:
            variant = winner_variant(doc, result, args.variant_name, registry)
            write_variant(args.graph, variant, replace=args.replace_variant)
            saved = variant.name
    except (ModragError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    data = {**result.to_dict(), "plan": estimate.to_dict(), "saved_variant": saved,
            "graph": str(args.graph)}
    if args.report and (problem := write_report(
            args.report, json.dumps(data, indent=2, ensure_ascii=False))):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else format_result(data))
    failed = result.base.failures or any(t.failures for t in result.trials)
    return EXIT_RUN_FAILED if failed else EXIT_OK


def _plan(args: argparse.Namespace, questions: int):
    return plan(questions, effect=args.effect, spread=args.spread,
                held_out_fraction=args.held_out, method=args.method, folds=args.folds,
                repeats=args.repeats, min_held_out=args.min_held_out, metric=args.metric)


def _fold_printer():
    line = ProgressLine("cross-validation folds", every_s=0)
    return lambda done, total: line.update(done, total, "")


def _trial_printer(metric: str):
    lines: list[ProgressLine] = []

    def show(trial, done: int, total: int) -> None:
        label = ", ".join(f"{k}={_short(v)}" for k, v in trial.settings.items()) or "base"
        score = "-" if trial.score is None else f"{trial.score:.4f}"
        note = f"{label}: {metric} {score}" + (f" ({trial.error})" if trial.error else "")
        if done == 0:  # the base, with the indexing: the trials' rate is timed after it
            print(f"base ({format_seconds(trial.seconds)}, with the setup): {metric} {score}",
                  file=sys.stderr)
            lines.append(ProgressLine("trials", every_s=0))
            return
        lines[-1].update(done, total, note)

    return show


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def format_result(data: dict[str, Any]) -> str:
    """The trial table, the test of the choice (its method named) and what was saved."""
    metric, base, test = data["metric"], data["base"], data["test"]
    if data["method"] == "cross-validation":
        how = (f"{test['questions']} questions, the choice on all of them and the search "
               f"cross-validated ({test['folds']} folds x {test['repeats']} repeats)")
    else:
        split = data["split"]
        how = (f"{split['tuning']} tuning and {split['held_out']} held-out questions "
               f"(seed {split['seed']})")
    lines = [f"tuning {data['output']} by {metric}: {how}, {data['sampler']} sampler, "
             f"{format_seconds(data['seconds'])}",
             f"{'#':>3}  {metric:>9}  {'secs':>6}  settings"]
    lines.append(f"{0:>3}  {base['score']:>9.4f}  {base['seconds']:>6.1f}  base")
    for trial in sorted(data["trials"], key=lambda t: -(t["score"] or -1)):
        score = "-" if trial["score"] is None else f"{trial['score']:.4f}"
        label = ", ".join(f"{k}={_short(v)}" for k, v in trial["settings"].items())
        note = f"  ({trial['error']})" if trial["error"] else ""
        lines.append(f"{trial['number']:>3}  {score:>9}  {trial['seconds']:>6.1f}  "
                     f"{label}{note}")
    if test:
        lines.append(test_line(data))
    best = data["best"]
    if best is None:
        lines.append("no trial beat the base on the tuning questions; nothing saved")
        return "\n".join(lines)
    if data["saved_variant"]:
        lines.append(f"saved as variant '{data['saved_variant']}' in {data['graph']} "
                     f"(modrag compare {data['graph']} --variant {data['saved_variant']} ...)")
    elif data["verdict"] == "better":
        lines.append("not saved (--no-save)")
    else:
        lines.append("not saved: the difference is not significant (p >= 0.05)"
                     if data["verdict"] != "worse" else
                     "not saved: significantly worse on questions the search never saw")
    return "\n".join(lines)


def test_line(data: dict[str, Any]) -> str:
    """The test of the choice in one line, naming its method and its measured spread."""
    metric, test = data["metric"], data["test"]
    stats = test["metrics"][metric]
    lo, hi = stats["ci95"]
    if data["method"] == "cross-validation":
        where = (f"out of fold ({stats['n']} question scores, {stats['splits']} splits, "
                 f"{test['base_chosen']} chose the base), corrected resampled t-test")
    else:
        where = f"held-out ({stats['n']} questions), paired randomization test"
    verdict = data["verdict"] if data["best"] else "nothing to save"
    line = (f"method: {data['method']}; {where}: {metric} {stats['a']:.4f} -> "
            f"{stats['b']:.4f}, delta {stats['delta']:+.4f}, CI95 [{lo:+.4f}, {hi:+.4f}], "
            f"p = {stats['p_value']:.4f}: {verdict}")
    if test.get("spread"):
        line += f" (measured spread {test['spread']:.3f}: pass --spread {test['spread']:.3f})"
    return line
