"""``modrag scorecard GRAPH --input corpus=DIR``: the first-run scorecard of a folder.

Questions are generated from the folder with the graph's own loader and splitter and verified
(``--evalset`` reads a set instead), the graph answers them, each question's evidence is
followed through its run, and a small tune tests one change. The result is one
self-contained HTML page (``--out``), the generated set beside it (``NAME.questions.jsonl``)
and, with ``--json``, the figures as JSON. ``--save-variant`` stores the suggested change as
a variant of the graph file when the tuner found it significant (the base is never changed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from modrag_studio.commands.common import (
    add_trust_option,
    load_with_overrides,
    refused_untrusted,
    report_overwrites_input,
    shell_inputs,
    write_report,
)
from modrag_studio.commands.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED

DEFAULT_QUESTIONS = 20


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sc = subparsers.add_parser(
        "scorecard", help="score a graph on a folder: generate and verify questions, answer "
        "them, show facts right, refusals, grounded-label precision, where evidence is lost, "
        "the worst questions and one tested change, as one HTML page")
    sc.add_argument("graph", help="graph JSON file")
    sc.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                    help="a graph input, e.g. corpus=DIR (repeatable)")
    sc.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                    help="change a param for this scorecard (repeatable)")
    sc.add_argument("--questions", "-n", type=int, default=DEFAULT_QUESTIONS,
                    help=f"questions to generate (default {DEFAULT_QUESTIONS})")
    sc.add_argument("--evalset", metavar="SET.jsonl",
                    help="score on this evaluation set instead of generating one")
    sc.add_argument("--out", "-o", default="scorecard.html", metavar="PAGE.html",
                    help="the page to write (default scorecard.html); the generated set goes "
                         "beside it as PAGE.questions.jsonl")
    sc.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    sc.add_argument("--seed", type=int, default=0, help="seed of the questions and the tune")
    sc.add_argument("--model", default="embedded", metavar="BACKEND[:MODEL]",
                    help="the chat model writing the questions (default: the best embedded "
                         "model installed)")
    sc.add_argument("--host", help="server URL of an ollama or openai backend")
    sc.add_argument("--no-tune", action="store_true", help="skip the tested change")
    sc.add_argument("--save-variant", metavar="NAME", nargs="?", const="scorecard",
                    help="store a significant change as a variant of the graph file (name "
                         "default: scorecard)")
    sc.add_argument("--cache-dir", help="node result cache folder")
    add_trust_option(sc)
    sc.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    sc.set_defaults(func=run_scorecard)


class _Progress:
    """One progress line per stage (questions kept, answers), each closed when the next
    stage starts."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.stage = ""
        self.line = None

    def status(self, text: str) -> None:
        if not self.quiet:
            self.close()
            print(text, file=sys.stderr, flush=True)

    def update(self, stage: str, done: int, total: int) -> None:
        from modrag_studio.commands.progress import ProgressLine

        if self.quiet:
            return
        if stage != self.stage:
            self.close()
            unit = "questions kept" if stage == "questions" else stage
            self.line = ProgressLine(unit, every_s=0 if stage == "questions" else 10,
                                     setup_first=stage == "answers")
            self.stage = stage
        self.line.update(done, total)

    def close(self) -> None:
        if self.line is not None:
            self.line.close()
        self.line, self.stage = None, ""


def run_scorecard(args: argparse.Namespace) -> int:
    from modrag_studio.commands.evalset_generate_command import llm_from_flag
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.errors import ModragError, RunCancelled
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.edit.variants import VariantError
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.evaluation.generation import GenerationConfig
    from modrag_studio.evaluation.scorecard import (
        ScorecardError,
        ScorecardRequest,
        build_scorecard,
    )
    from modrag_studio.reporting.scorecard_page import write_scorecard

    out = Path(args.out)
    if problem := (report_overwrites_input(args.out, args.graph, args.evalset)
                   or report_overwrites_input(args.json, args.graph, args.evalset)):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if not out.parent.is_dir():
        print(f"error: --out {out}: the folder {out.parent} does not exist", file=sys.stderr)
        return EXIT_INVALID
    doc = load_with_overrides(args.graph, args.set)
    if doc is None or refused_untrusted(args.graph, args.trust, doc):
        return EXIT_INVALID
    registry = default_registry()
    progress = _Progress(args.quiet)
    try:
        inputs = shell_inputs(doc, args.input, registry)
        generation = None
        questions = Path(args.evalset) if args.evalset else out.with_suffix(".questions.jsonl")
        if not args.evalset:
            generation = GenerationConfig(n=args.questions, llm=llm_from_flag(args.model,
                                                                             args.host),
                                          seed=args.seed)
            generation.check()
        executor = Executor(registry, cache=NodeCache(disk_dir=Path(args.cache_dir or
                                                                    cache_home())))
        executor.check(doc, {})
        card = build_scorecard(ScorecardRequest(doc, inputs, questions, generation, args.seed,
                                                tune=not args.no_tune),
                               executor=executor, on_status=progress.status,
                               on_progress=progress.update)
    except RunCancelled as exc:
        progress.close()
        print(f"cancelled: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except ScorecardError as exc:  # the folder gave no question that passed the checks
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except KeyboardInterrupt:
        progress.close()
        print("interrupted", file=sys.stderr)
        return EXIT_RUN_FAILED
    except (ModragError, ValueError) as exc:
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    progress.close()
    data = card.to_dict()
    saved = None
    if args.save_variant and card.suggestion.significant:
        try:
            saved = save_suggestion(args.graph, data["suggestion"]["variant"], args.save_variant)
        except VariantError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INVALID
    write_scorecard(data, out)
    if args.json and (problem := write_report(args.json, json.dumps(data, indent=2,
                                                                    ensure_ascii=False))):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    print(format_card(data))
    if saved:
        print(f"saved the change as variant '{saved}' in {args.graph}")
    print(f"wrote {out}" + ("" if args.evalset else f" and its questions {questions}"))
    return EXIT_RUN_FAILED if card.failures else EXIT_OK


def save_suggestion(graph: str, variant: dict, name: str) -> str:
    """Store the suggested change as variant ``name`` of the graph file (atomically)."""
    from modrag_studio.engine.core.document import VariantSpec
    from modrag_studio.evaluation.tuning import write_variant

    spec = VariantSpec.model_validate({**variant, "name": name})
    write_variant(graph, spec)
    return name


def format_card(data: dict) -> str:
    """The scorecard in a few lines for the terminal."""
    lines = [f"scorecard of {data['graph']} on {data['corpus']}"]
    lines += [f"  {name}: {value}" for name, value in data["headline"]["lines"].items()]
    lost = data["most_lost"]
    lines.append(f"  evidence most often first lost at: {lost['node']} ({lost['questions']} "
                 f"of {data['funnel_questions']})" if lost else "  evidence lost at no node")
    for item in data["worst"]:
        lines.append(f"  worst {item['id']}: {item['problem']}: {item['cause']}")
    lines.append(f"  suggested change: {data['suggestion']['text']}")
    return "\n".join(lines)
