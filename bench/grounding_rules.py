"""Each rule of the grounding check, switched off alone, on every corpus of the development
suite: the answers it fixes and the answers it breaks, from the model's stored replies (no
model call; see ``grounding_replay.py``).

    .venv/bin/python bench/grounding_rules.py [--first] [--only demo pkgdocs cmrc]
        [--answers pkgdocs=FILE.jsonl ...] [--out bench/results/grounding_rules.md]

``--answers NAME=FILE`` replays another run's stored replies for that corpus of the suite (a
fresh ``bench_answer_metrics.py`` run, for example) instead of the file named below.

A rule *fixes* a question when the outcome is correct with it and not without it (an
answerable question answered right, an unanswerable one refused), and *breaks* one in the
other case; of the answerable questions answered wrongly either way, it *withholds* those it
refuses and would have been shown without it (the grounded label's precision gains), and
*lets through* the reverse. Replies are replayed attempt by attempt as recorded
(``--first``: the first reply only, every attempt), so a rule that sends an answer back is
scored on the reply the model gave then, where recorded, else on the same reply again.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from grounding_replay import DEMO_SET, Outcome, replay, stored_replies, summary  # noqa: E402

from modrag_studio.commands.common import apply_overrides  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine.cache.node_cache import NodeCache  # noqa: E402
from modrag_studio.engine.core.document import load  # noqa: E402
from modrag_studio.engine.run.executor import Executor  # noqa: E402
from modrag_studio.evaluation.evalset import load_evalset  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results"


@dataclass
class Corpus:
    name: str
    answers: Path
    evalset: Path
    sets: dict[str, str] = field(default_factory=dict)


SUITE = [
    Corpus("demo", RESULTS / "answers_qwen_relation_order.jsonl", DEMO_SET),
    Corpus("demo-unanswerable", RESULTS / "demo_unanswerable_qwen.jsonl", DEMO_SET),
    Corpus("pkgdocs", RESULTS / "pkgdocs_qwen.jsonl",
           SHARED / "corpora" / "pkgdocs-dev" / "questions.jsonl",
           {"corpus.default": str(SHARED / "corpora" / "pkgdocs-dev" / "docs"),
            "load.glob": "*.md", "store.collection": "pkgdocs_dev", "kg.name": "pkgdocs_dev"}),
    Corpus("cmrc", RESULTS / "cmrc_qwen_basic_rag.jsonl", RESULTS / "cmrc_evalset40_keyfacts.jsonl",
           {"corpus.default": str(SHARED / "cmrc2018-trial" / "corpus.jsonl"),
            "store.collection": "cmrc_trial", "kg.name": "cmrc_trial"}),
]
#: each rule and the setting that switches it off
RULES = {
    "claim alignment": {"ground.alignment": "false"},
    "answer words aligned (Chinese)": {"ground.term_alignment": "off"},
    "a citation required": {"ground.require_citation": "false"},
    "citations re-pointed / added": {"ground.fix_citations": "false"},
    "absent key terms: ask, identifiers refuse": {"ground.absent_terms": "off"},
    "restated absent terms refused": {"ground.restated_terms": "false"},
    "swapped subject (dictionary)": {"ground.subject_check": "false"},
    "asked value not given": {"ground.asked_value": "false"},
    "date of the opposite event (new)": {"ground.event_check": "false"},
    "unbacked later sentences cut": {"ground.cut_unbacked": "false"},
    "names of code are claims": {
        "ground.kinds": '["quantity", "number", "date", "identifier", "name"]'},
    "answer in the question's language": {"ground.check_language": "false"},
    "scope: claims in any block (not only cited)": {"ground.scope": "cited"},
}


def effect(on: list[Outcome], off: list[Outcome]) -> tuple[int, int, int, int]:
    """(fixed, broken, wrong answers withheld, wrong answers let through) by the rule."""
    before = {o.id: o for o in off}
    fixed = sum(o.correct and not before[o.id].correct for o in on)
    broken = sum(before[o.id].correct and not o.correct for o in on)
    wrong = [o for o in on if o.answerable and not o.right and not before[o.id].right]
    withheld = sum(o.refused and not before[o.id].refused for o in wrong)
    let_through = sum(before[o.id].refused and not o.refused for o in wrong)
    return fixed, broken, withheld, let_through


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--first", action="store_true", help="replay first replies only")
    parser.add_argument("--only", nargs="+", help="corpora of the suite to run")
    parser.add_argument("--out", type=Path, help="also write the tables (Markdown)")
    parser.add_argument("--answers", nargs="+", default=[], metavar="NAME=FILE",
                        help="stored replies to replay for a corpus, instead of the default")
    args = parser.parse_args()
    chosen = dict(pair.split("=", 1) for pair in args.answers)
    unknown = set(chosen) - {c.name for c in SUITE}
    if unknown:
        parser.error(f"--answers: no corpus named {', '.join(sorted(unknown))} in the suite")
    lines: list[str] = []
    effects: dict[str, dict[str, tuple[int, int]]] = {rule: {} for rule in RULES}
    corpora = [Corpus(c.name, Path(chosen[c.name]), c.evalset, c.sets) if c.name in chosen
               else c for c in SUITE if not args.only or c.name in args.only]
    for corpus in corpora:
        if not corpus.answers.is_file():
            print(f"{corpus.name}: no stored replies at {corpus.answers}", file=sys.stderr)
            continue
        rows = stored_replies(corpus.answers, "basic_rag")
        questions = load_evalset(corpus.evalset).questions
        base = apply_overrides(load(ROOT / "sample_graphs" / "basic_rag.json"), corpus.sets)
        executor = Executor(default_registry(), cache=NodeCache())  # retrieval shared in memory
        on = replay(base, questions, rows, executor, first_only=args.first)
        lines.append(f"### {corpus.name} ({len(on)} questions), every rule on")
        lines += [f"- {name}: {value}" for name, value in summary(on).items()]
        lines.append("")
        for rule, off_sets in RULES.items():
            off = replay(apply_overrides(base, off_sets), questions, rows, executor,
                         first_only=args.first)
            effects[rule][corpus.name] = effect(on, off)
            print(f"{corpus.name}: {rule}: {effects[rule][corpus.name]}", file=sys.stderr,
                  flush=True)
    names = [c.name for c in corpora if c.answers.is_file()]
    lines.append("| rule (switched off alone) | " + " | ".join(
        f"{n}: fixes / breaks / wrong withheld / wrong let through" for n in names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for rule in RULES:
        cells = [" / ".join(str(v) for v in effects[rule][n]) for n in names]
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
