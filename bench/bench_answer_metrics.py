"""Answer metrics of several graphs on one evaluation set, question by question, interleaved.

    .venv/bin/python bench/bench_answer_metrics.py [--evalset FILE.jsonl]
        [--graphs basic_rag modular_rag corrective_rag] [--out bench_answers.jsonl] [--limit N]
        [--model qwen|smollm2] [--set NODE.PARAM=VALUE ...]

Each question is run on every graph before the next question starts, in a fixed shuffled
order, and each scored row is appended to ``--out`` at once; a run stopped early therefore
still gives every graph the same questions. ``--table`` prints the summary of an ``--out``
file (the same means as ``modrag eval --evalset``) without running anything.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from modrag_studio.commands.common import apply_overrides, parse_pairs
from modrag_studio.engine.cache import NodeCache
from modrag_studio.engine.document import load
from modrag_studio.engine.executor import Executor
from modrag_studio.engine.paths import cache_home
from modrag_studio.evaluation.answer_eval import ANSWER_METRICS, evaluate_answers
from modrag_studio.evaluation.answer_metrics import mean
from modrag_studio.evaluation.evalset import EvalSet, load_evalset

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = (*ANSWER_METRICS, "answer_length", "latency_s", "tokens")
MODELS = {"qwen": "qwen2.5-coder-1.5b-instruct", "smollm2": "SmolLM2-135M-Instruct"}


def run(evalset: EvalSet, graphs: list[str], out: Path, limit: int | None, seed: int,
        cache_dir: Path, sets: dict[str, str]) -> None:
    executor = Executor(cache=NodeCache(disk_dir=cache_dir))
    docs = {name: apply_overrides(load(ROOT / "sample_graphs" / f"{name}.json"), sets)
            for name in graphs}
    order = list(evalset.questions)
    random.Random(seed).shuffle(order)
    done = {(r["graph"], r["id"]) for r in _rows(out)}
    for n, question in enumerate(order[: limit or None], start=1):
        for name, doc in docs.items():
            if (name, question.id) in done:
                continue
            single = EvalSet(evalset.path, [question], evalset.sha256)
            report = evaluate_answers(doc, single, executor=executor)
            row = {"graph": name, **report.results[0].to_dict()}
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"[{n}/{len(order)}] {name} {question.id}: "
                  f"{row['metrics'].get('latency_s')} s", file=sys.stderr, flush=True)


def _rows(out: Path) -> list[dict]:
    if not out.is_file():
        return []
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]


def table(out: Path) -> str:
    rows = _rows(out)
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    common = set.intersection(*({r["id"] for r in rows if r["graph"] == g} for g in graphs))
    lines = [f"questions scored on every graph: {len(common)}",
             "| graph | " + " | ".join(COLUMNS) + " |",
             "|---" * (len(COLUMNS) + 1) + "|"]
    for graph in graphs:
        picked = [r for r in rows if r["graph"] == graph and r["id"] in common]
        values = [mean(r["metrics"].get(c) for r in picked) for c in COLUMNS]
        lines.append(f"| {graph} | " + " | ".join(
            "-" if v is None else f"{v:.3f}" if v < 100 else f"{v:.0f}" for v in values) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evalset", default=str(ROOT / "resources/sample_corpus/"
                                                  "eval_questions.jsonl"))
    parser.add_argument("--graphs", nargs="+",
                        default=["basic_rag", "modular_rag", "corrective_rag"])
    parser.add_argument("--out", default="bench_answers.jsonl")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--model", choices=sorted(MODELS),
                        help="the embedded chat model (sets llm.model); default: the graphs' own")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                        help="a param override applied to every graph (repeatable)")
    parser.add_argument("--cache-dir", help="node result cache (default: the user cache)")
    parser.add_argument("--table", action="store_true", help="only print the summary of --out")
    args = parser.parse_args()
    out = Path(args.out)
    sets = parse_pairs(args.set, "--set")
    if args.model:
        sets["llm.model"] = MODELS[args.model]
    if not args.table:
        run(load_evalset(args.evalset), args.graphs, out, args.limit, args.seed,
            Path(args.cache_dir) if args.cache_dir else cache_home(), sets)
    print(table(out))


if __name__ == "__main__":
    main()
