"""``modrag eval GRAPH --evalset FILE.jsonl``: answer metrics per question, a summary, and
``--min METRIC=VALUE`` gates that fail the command (exit 1) so CI can guard a pipeline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from modrag_studio.commands.common import (
    add_parallel_option,
    apply_overrides,
    load_or_exit,
    parse_pairs,
    run_hooks,
    shell_inputs,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from modrag_studio.commands.progress import ProgressLine, SetupNarrator
from modrag_studio.composition import default_registry
from modrag_studio.evaluation.metric_registry import LATENCY, METRICS

#: The per-question columns: the answer metrics, then the seconds taken.
ROW_METRICS = [*(METRICS.get(n) for n in METRICS.answer_columns("answer")), LATENCY]


def add_arguments(ev: argparse.ArgumentParser) -> None:
    """The evaluation-set options of ``modrag eval``."""
    ev.add_argument("--evalset", metavar="FILE.jsonl",
                    help="evaluation set (JSON Lines, resources/evalset.schema.json): score "
                         "answers, citations and refusals instead of a BEIR dataset")
    ev.add_argument("--min", action="append", default=[], metavar="METRIC=VALUE",
                    help="fail (exit 1) when a summary metric is below VALUE, e.g. "
                         "fact_recall=0.6 or NODE.PORT:recall@5=0.8 (repeatable)")
    ev.add_argument("--answer-output", metavar="NAME",
                    help="--evalset: the graph output holding the answer (default: answer)")
    ev.add_argument("--judge", metavar="BACKEND[:MODEL]",
                    help="--evalset: judge faithfulness and relevance with this chat model "
                         "(e.g. embedded, ollama:qwen2.5:1.5b); a graph with an eval.judge "
                         "node needs no flag")
    add_parallel_option(ev)



def parse_gates(pairs: list[str]) -> dict[str, float]:
    gates: dict[str, float] = {}
    for name, raw in parse_pairs(pairs, "--min").items():
        try:
            gates[name] = float(raw)
        except ValueError:
            raise ValueError(f"--min {name}={raw}: the value must be a number") from None
    return gates


def check_gates(summary: dict[str, Any], ranking: dict[str, dict[str, float]],
                gates: dict[str, float]) -> list[str]:
    """A message for each gate that fails: the metric, its value and the minimum."""
    failures: list[str] = []
    for name, minimum in gates.items():
        if ":" in name:
            spec, _, metric = name.partition(":")
            value = ranking.get(spec, {}).get(metric)
        else:
            value = summary.get(name)
        if name not in summary and ":" not in name:
            known = ", ".join(k for k, v in summary.items() if v is not None)
            failures.append(f"--min {name}: no such metric in the summary (metrics: {known})")
        elif value is None:
            failures.append(f"--min {name}: no value (no question had this metric)")
        elif value < minimum:
            failures.append(f"{name} = {value:.4f} is below the minimum {minimum:.4f}")
    return failures


def judge_from_flag(flag: str | None):
    if not flag:
        return None
    from modrag_nodes.evaluation.api import chat_asker, judge_answer
    from modrag_nodes.llm.api import LLMSpec

    backend, _, model = flag.partition(":")
    ask_model = chat_asker(LLMSpec(backend=backend, model=model))
    return lambda question, answer: judge_answer(ask_model, question, answer)


def run_evalset(args: argparse.Namespace) -> int:
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.errors import ModragError
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.answer_eval import evaluate_answers
    from modrag_studio.evaluation.evalset import load_evalset

    doc = load_or_exit(args.graph)
    if doc is None:
        return EXIT_INVALID
    try:
        gates = parse_gates(args.min)
        doc = apply_overrides(doc, parse_pairs(args.set, "--set"))
        extra = shell_inputs(doc, args.input)
        evalset = load_evalset(args.evalset)
        executor = Executor(default_registry(),
                            cache=NodeCache(disk_dir=Path(args.cache_dir or cache_home())),
                            hooks=run_hooks(args))
        executor.check(doc, {})

        line = ProgressLine("questions", every_s=0, setup_first=True)  # each one is told

        def progress(done: int, total: int, row) -> None:
            mark = "error" if row.error else ("refused" if row.refused else "answered")
            line.update(done, total, f"{row.id}: {mark}, "
                                     f"{row.metrics.get(LATENCY.name, 0):.1f} s")

        report = evaluate_answers(doc, evalset, executor=executor,
                                  answer_output=args.answer_output,
                                  judge=judge_from_flag(args.judge), limit=args.limit,
                                  query_input=args.query_input, corpus_input=args.corpus_input,
                                  extra_inputs=extra, on_progress=progress,
                                  setup_hooks=[SetupNarrator()], parallel=args.parallel)
    except (ModragError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    data = report.to_dict()
    if args.report:
        Path(args.report).write_text(json.dumps(data, indent=2, ensure_ascii=False),
                                     encoding="utf-8")
    if args.json:
        print(json.dumps({k: v for k, v in data.items() if k != "per_question"}, indent=2,
                         ensure_ascii=False))
    else:
        print_summary(data)
    failures = check_gates(data["answers"], data["nodes"], gates)
    for message in failures:
        print(f"gate failed: {message}", file=sys.stderr)
    if data["failures"]:
        first = data["failures"][0]
        print(f"{len(data['failures'])} question runs failed; first: {first['id']}: "
              f"{first['reason']}", file=sys.stderr)
    return EXIT_RUN_FAILED if failures or data["failures"] else EXIT_OK


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_summary(data: dict[str, Any]) -> None:
    print(f"{data['graph']['name']} on {Path(data['evalset']['path']).name}: "
          f"{data['evalset']['questions']} questions, {data['seconds']:.1f} s")
    widths = [(metric, max(len(metric.short or metric.name) + 2, 7)) for metric in ROW_METRICS]
    print(f"{'id':<8}" + "".join(f"{m.short or m.name:>{w}}" for m, w in widths) + "  answer")
    for row in data["per_question"]:
        m = row["metrics"]
        answer = " ".join(row["answer"].split())[:60] or row["error"][:60]
        print(f"{row['id']:<8}" + "".join(f"{metric.format(m.get(metric.name)):>{w}}"
                                         for metric, w in widths) + f"  {answer}")
    print("answers: " + ", ".join(f"{k}={_fmt(v)}" for k, v in data["answers"].items()))
    if data["nodes"]:
        shown = METRICS.headline(scorer="evidence")
        print(f"{'ranked output':<28}" + "".join(f"{n:>10}" for n in shown))
        for spec, values in data["nodes"].items():
            print(f"{spec:<28}" + "".join(f"{values.get(n, 0.0):>10.3f}" for n in shown))
    for item in data["judge_unparsed"]:
        print(f"judge reply not understood ({item['id']}, {item['metric']}): {item['reply']!r}")
