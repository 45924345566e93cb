"""``modrag compare``: two variants on an evaluation set (paired statistics) or one question.

Variants are two graph files, or one graph plus ``--variant NAME:node.param=value``
(repeatable; a variant stored in the graph is named alone). Both run on one cache, so the
second runs only the nodes downstream of its changes. Two ``modrag eval --report`` files are
compared without running anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from modrag_studio.commands.common import (
    add_parallel_option,
    add_trust_option,
    load_or_exit,
    parse_pairs,
    parse_value,
    refused_untrusted,
    report_overwrites_input,
    run_hooks,
    shell_inputs,
    write_report,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.progress import ProgressLine
from modrag_studio.composition import default_registry
from modrag_studio.evaluation.metric_registry import METRICS, PRIMARY


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    cp = subparsers.add_parser(
        "compare", help="compare two graphs or variants: on a dataset with paired statistics, "
        "or node by node on one question")
    cp.add_argument("a", help="graph JSON file (or a modrag eval --report file)")
    cp.add_argument("b", nargs="?", help="second graph JSON file (or report); omit with "
                    "--variant")
    cp.add_argument("--variant", action="append", default=[], metavar="NAME[:CHANGE]",
                    help="NAME:node.param=value, NAME:node=type.id, NAME:node.port<-node.port "
                    "or a stored variant NAME (repeatable; one name: base vs it, two: A vs B)")
    add_trust_option(cp)
    cp.add_argument("--dataset", help="BEIR-layout folder: compare on its queries")
    cp.add_argument("--split", default="test", help="qrels split (default: test)")
    cp.add_argument("--output", metavar="NODE.PORT", help="ranked output of A to score")
    cp.add_argument("--output-b", metavar="NODE.PORT", help="ranked output of B "
                    "(default: the same as --output)")
    cp.add_argument("--k", type=int, default=10, help="k of Hit@k (default 10)")
    cp.add_argument("--limit", type=int, help="only the first N evaluated queries")
    cp.add_argument("--seed", type=int, default=None, help="seed of the paired tests")
    cp.add_argument("--query-input", help="graph input that takes the query text")
    cp.add_argument("--corpus-input", help="graph input that takes the corpus path")
    cp.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                    help="graph input; without --dataset: run one question through both")
    cp.add_argument("--evalset", metavar="FILE.jsonl", help="evaluation set: compare the "
                    "variants' answers (facts, citations, refusals, cost) and ranked outputs")
    cp.add_argument("--answer-output", metavar="NAME",
                    help="--evalset: the graph output holding the answer (default: answer)")
    cp.add_argument("--judge", metavar="BACKEND[:MODEL]", help="--evalset: judge "
                    "faithfulness and relevance of both variants' answers with this chat model")
    add_parallel_option(cp)
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.add_argument("--report", metavar="FILE", help="write the comparison as JSON")
    cp.add_argument("--cache-dir", help="node result cache folder")
    cp.set_defaults(func=run_compare)


def _as_report(path: str) -> dict[str, Any] | None:
    """The data of a ``modrag eval --report`` file, or None when ``path`` is a graph."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and {"test", "variants", "metrics"} <= data.keys():
        raise ValueError(f"{path} is the output of modrag compare; give two graphs or two "
                         "modrag eval --report files")
    if not isinstance(data, dict) or "graph" not in data:
        return None
    return data if "per_query" in data or "per_question" in data else None


def _variants(args: argparse.Namespace) -> list[tuple[str, Any, str | None]]:
    """[(label, graph document, file)] of A and B; raises ValueError / ModragError."""
    from modrag_studio.engine.edit.variants import base_of, parse_variant_args, resolve_variant

    doc_a = load_or_exit(args.a)
    if doc_a is None:
        raise ValueError(f"cannot load {args.a}")
    if args.b:
        if args.variant:
            raise ValueError("give two graph files or one graph with --variant, not both")
        doc_b = load_or_exit(args.b)
        if doc_b is None:
            raise ValueError(f"cannot load {args.b}")
        return [(Path(args.a).stem, base_of(doc_a), args.a),
                (Path(args.b).stem, base_of(doc_b), args.b)]
    specs = list(parse_variant_args(args.variant, parse_value).values())
    if not 1 <= len(specs) <= 2:
        raise ValueError("give a second graph file, or --variant naming one or two variants "
                         f"(got {len(specs)})")
    registry = default_registry()
    sides = [(spec.name, resolve_variant(doc_a, spec, registry), args.a) for spec in specs]
    if len(sides) == 1:
        sides.insert(0, ("base", base_of(doc_a), args.a))
    return sides


def run_compare(args: argparse.Namespace) -> int:
    from modrag_studio.engine.core.errors import ModragError

    if problem := report_overwrites_input(args.report, args.a, args.b):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    try:
        reports = [_as_report(args.a), _as_report(args.b) if args.b else None]
        if all(reports):
            result = _compare_report_files(args, reports)
        else:
            sides = _variants(args)
            runs: dict[str, list[Any]] = {}
            for _label, doc, file in sides:  # each file decided on what runs from it
                runs.setdefault(file, []).append(doc)
            if any(refused_untrusted(file, args.trust, docs) for file, docs in runs.items()):
                return EXIT_INVALID
            if args.evalset:
                result = _compare_on_evalset(args, sides)
            elif args.dataset:
                result = _compare_on_dataset(args, sides)
            elif args.input:
                return _compare_one_question(args, sides)
            else:
                raise ValueError("give --dataset DIR (BEIR dataset), --evalset FILE.jsonl "
                                 "(answers) or --input NAME=VALUE (one question)")
    except (ModragError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    return _emit(args, result)


def _emit(args: argparse.Namespace, result: dict[str, Any]) -> int:
    from modrag_studio.evaluation.compare import format_comparison

    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.report and (problem := write_report(args.report, text)):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    print(text if args.json else format_comparison(result))
    failures = sum(v.get("failures", 0) for v in result["variants"].values())
    if failures:
        print(f"{failures} query runs failed (see the eval reports)", file=sys.stderr)
        return EXIT_RUN_FAILED
    return EXIT_OK if result["comparable"] else EXIT_RUN_FAILED


def _seed_kwargs(args: argparse.Namespace) -> dict[str, int]:
    return {} if args.seed is None else {"seed": args.seed}


def _compare_report_files(args: argparse.Namespace,
                          reports: list[dict[str, Any] | None]) -> dict[str, Any]:
    from modrag_studio.evaluation.compare import compare_reports, report_identity
    from modrag_studio.evaluation.report import is_answer_report, report_from_dict

    kinds = [is_answer_report(r) for r in reports]
    if kinds[0] != kinds[1]:
        which = args.a if kinds[0] else args.b
        raise ValueError(f"{which} is a modrag eval --evalset report and the other a dataset "
                         "report: compare reports of the same kind")
    a, b = (report_from_dict(r) for r in reports if r is not None)
    outputs: dict[str, Any] = {}
    if not a.on_evalset:
        output_a = args.output or next(iter(a.ranked_outputs), "")
        output_b = args.output_b or output_a
        for report, spec, path in ((a, output_a, args.a), (b, output_b, args.b)):
            if spec not in report.ranked_outputs:
                raise ValueError(f"{path}: no output '{spec}' (outputs: "
                                 f"{', '.join(report.ranked_outputs)}); use --output/--output-b")
        outputs = {"output_a": output_a, "output_b": output_b}
    return compare_reports(a, b, identity_a=report_identity(Path(args.a).stem, a, args.a),
                           identity_b=report_identity(Path(args.b).stem, b, args.b), **outputs,
                           **_seed_kwargs(args))


def _executor(args: argparse.Namespace):
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor

    return Executor(default_registry(),
                    cache=NodeCache(disk_dir=Path(args.cache_dir or cache_home())),
                    hooks=run_hooks(args))


def _compare_on_dataset(args: argparse.Namespace, sides) -> dict[str, Any]:
    from modrag_studio.evaluation import evaluate_graph, load_beir
    from modrag_studio.evaluation.compare import (
        compare_reports,
        dataset_identity,
        report_identity,
        shared_ranked_outputs,
    )

    if not args.output:
        raise ValueError("--output NODE.PORT is required with --dataset")
    (label_a, doc_a, file_a), (label_b, doc_b, file_b) = sides
    output_b = args.output_b or args.output
    dataset = load_beir(args.dataset, args.split)
    executor = _executor(args)
    extra = shell_inputs([doc_a, doc_b], args.input, executor.registry)
    shared = shared_ranked_outputs(doc_a, doc_b, executor.registry)
    reports = []
    for label, doc, output in ((label_a, doc_a, args.output), (label_b, doc_b, output_b)):
        executor.check(doc, {})
        outputs = [output, *(s for s in shared if s != output)]
        reports.append(evaluate_graph(
            doc, dataset, outputs, executor=executor, hit_k=args.k, limit=args.limit,
            query_input=args.query_input, corpus_input=args.corpus_input,
            extra_inputs=extra, on_progress=ProgressLine(f"queries of {label}").update))
    identity = dataset_identity(dataset)
    return compare_reports(
        reports[0], reports[1], output_a=args.output, output_b=output_b, shared=shared,
        identity_a=report_identity(label_a, reports[0], file_a),
        identity_b=report_identity(label_b, reports[1], file_b),
        dataset_a=identity, dataset_b=identity, **_seed_kwargs(args))


def _compare_on_evalset(args: argparse.Namespace, sides) -> dict[str, Any]:
    from modrag_studio.commands.evalset_command import judge_from_flag
    from modrag_studio.evaluation.answer_eval import run_variants_on_evalset
    from modrag_studio.evaluation.compare import compare_reports, report_identity
    from modrag_studio.evaluation.evalset import load_evalset

    evalset = load_evalset(args.evalset)

    lines: dict[str, ProgressLine] = {}

    def progress(label: str, done: int, total: int, row) -> None:
        mark = "error" if row.error else ("refused" if row.refused else "answered")
        line = lines.setdefault(label, ProgressLine(f"questions of {label}", every_s=0))
        line.update(done, total, f"{row.id}: {mark}")

    executor = _executor(args)
    reports = run_variants_on_evalset(
        [(label, doc) for label, doc, _ in sides], evalset, executor=executor,
        answer_output=args.answer_output, judge=judge_from_flag(args.judge), limit=args.limit,
        query_input=args.query_input, corpus_input=args.corpus_input,
        extra_inputs=shell_inputs([doc for _, doc, _ in sides], args.input, executor.registry),
        on_progress=progress,
        parallel=args.parallel)
    (label_a, _, file_a), (label_b, _, file_b) = sides
    return compare_reports(
        reports[0], reports[1], identity_a=report_identity(label_a, reports[0], file_a),
        identity_b=report_identity(label_b, reports[1], file_b), **_seed_kwargs(args))




def _compare_one_question(args: argparse.Namespace, sides) -> int:
    from modrag_studio.engine.edit.variants import diff_graphs
    from modrag_studio.evaluation.run_diff import diff_runs, format_run_diff

    executor = _executor(args)
    (label_a, doc_a, _), (label_b, doc_b, _) = sides
    inputs = shell_inputs([doc_a, doc_b], args.input, executor.registry)
    result_a = executor.run(doc_a, inputs)
    result_b = executor.run(doc_b, inputs)
    nodes = diff_runs(doc_a, result_a, doc_b, result_b)
    changes = diff_graphs(doc_a, doc_b)
    data = {"variants": {"a": label_a, "b": label_b}, "inputs": inputs,
            "status": {"a": result_a.status, "b": result_b.status},
            "changed_nodes": sorted(changes.changed), "ran_b": result_b.trace.ran(),
            "nodes": nodes}
    text = json.dumps(data, indent=2, default=str)
    if args.report and (problem := write_report(args.report, text)):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    print(text if args.json else format_run_diff(nodes, (label_a, label_b)))
    return EXIT_OK if result_a.ok and result_b.ok else EXIT_RUN_FAILED


def run_eval_grid(args: argparse.Namespace) -> int:
    """``modrag eval --grid``: every combination of the grid's values on one cache."""
    from modrag_studio.commands.common import apply_overrides
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.evaluation import load_beir
    from modrag_studio.evaluation.grid import format_grid, parse_grid, plot_grid, run_grid

    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID

    def progress(done: int, total: int, cell) -> None:
        value = cell.metrics.get(args.output[0], {}).get(PRIMARY, 0.0)
        print(f"cell {done}/{total} ({cell.label()}): {METRICS.label(PRIMARY)} {value:.4f}, "
              f"{cell.seconds:.1f} s", file=sys.stderr, flush=True)

    try:
        doc = apply_overrides(doc, parse_pairs(args.set, "--set"))
        axes = parse_grid(args.grid, doc, parse_value)
        dataset = load_beir(args.dataset, args.split)
        executor = _executor(args)
        result = run_grid(doc, dataset, args.output, axes, executor=executor,
                          from_scratch=args.grid_scratch, on_cell=progress, hit_k=args.k,
                          limit=args.limit, query_input=args.query_input,
                          corpus_input=args.corpus_input,
                          extra_inputs=shell_inputs(doc, args.input, executor.registry))
    except (ModragError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    folder = Path(args.grid_dir or f"grid-{doc.metadata.name}")
    folder.mkdir(parents=True, exist_ok=True)
    data = {"graph": doc.metadata.name, "dataset": str(dataset.root), "split": dataset.split,
            "output": args.output[0], **result.to_dict()}
    (folder / "grid.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    plots = plot_grid(result, args.output[0], folder)
    if args.report:
        Path(args.report).write_text(json.dumps(data, indent=2), encoding="utf-8")
    print(json.dumps(data, indent=2) if args.json else format_grid(result, args.output[0]))
    print(f"wrote {folder / 'grid.json'}" + (f" and {len(plots)} plots" if plots else
          " (no plots: matplotlib is not installed; pip install '.[plots]')"), file=sys.stderr)
    return EXIT_RUN_FAILED if any(c.failures for c in result.cells) else EXIT_OK
