"""Answer metrics of several graphs on one evaluation set, question by question, interleaved.

    .venv/bin/python bench/bench_answer_metrics.py [--evalset FILE.jsonl]
        [--graphs basic_rag modular_rag corrective_rag] [--out bench_answers.jsonl] [--limit N]
        [--model qwen|smollm2] [--set NODE.PARAM=VALUE ...] [--graph-dir bench/graphs]
        [--parallel N]

Each question is run on every graph before the next question starts, in a fixed shuffled
order, and each scored row is appended to ``--out`` at once; a run stopped early therefore
still gives every graph the same questions. ``--parallel N`` (N >= 1) runs each graph's
questions not yet in ``--out`` in one evaluation instead, in the same order, N at once
(``modrag eval --evalset --parallel N``; 1 is one at a time, as ``modrag eval`` runs a set),
appending rows as they are scored. ``--table`` prints the summary of an ``--out``
file (the same means as ``modrag eval --evalset``) without running anything.
``--verdicts FILE ... [--same-questions]`` prints, per model and graph, how many answers were
right: facts right (every expected fact found, not refused), citations right (at least one
citation, none invalid, one of them on expected evidence), refusals right (refused exactly
when unanswerable), split by language; the model is the row's ``model`` (or the file's name).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from answer_report import row_extras

from modrag_studio.commands.common import apply_overrides, parse_pairs
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import Answer
from modrag_studio.engine.core.document import load
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.engine.run.executor import Executor, RunResult
from modrag_studio.evaluation.answer_eval import evaluate_answers
from modrag_studio.evaluation.answer_metrics import mean
from modrag_studio.evaluation.evalset import EvalQuestion, EvalSet, load_evalset
from modrag_studio.evaluation.metric_registry import METRICS
from modrag_studio.evaluation.report import QuestionResult

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = tuple(METRICS.answer_columns("answer", "cost"))
MODELS = {"qwen": "qwen2.5-coder-1.5b-instruct", "smollm2": "SmolLM2-135M-Instruct"}


class RecordingExecutor(Executor):
    """An executor that keeps each run by its id, for the per-node times of each row."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.runs: dict[str, RunResult] = {}

    def run(self, *args, **kwargs):
        result = super().run(*args, **kwargs)
        self.runs[result.trace.run_id] = result
        return result


def run(evalset: EvalSet, graphs: list[str], out: Path, limit: int | None, seed: int,
        cache_dir: Path, sets: dict[str, str], graph_dir: Path = ROOT / "sample_graphs",
        parallel: int = 0) -> None:
    executor = RecordingExecutor(default_registry(), cache=NodeCache(disk_dir=cache_dir))
    docs = {name: apply_overrides(load(graph_dir / f"{name}.json"), sets) for name in graphs}
    order = list(evalset.questions)
    random.Random(seed).shuffle(order)
    order = order[: limit or None]
    done = {(r["graph"], r["id"]) for r in _rows(out)}

    def write(name: str, question: EvalQuestion, row_result: QuestionResult, n: int) -> None:
        result = executor.runs.pop(row_result.run_id, None)
        visits = result.trace.visits if result is not None else []
        row = {"graph": name, "model": _model(docs[name]), **row_result.to_dict(),
               "node_seconds": {v.node_id: round(v.duration_s, 1)
                                for v in visits if v.duration_s >= 1},
               "routes": {v.node_id: v.details["route"] for v in visits
                          if v.details.get("route")}}
        generators = {n.id for n in docs[name].nodes if n.type == "llm.generate"}
        row["raw_answers"] = [  # the model's own replies, attempt by attempt (for replays)
            outputs["answer"].text for (node, _), outputs in sorted(
                (result.node_outputs if result is not None else {}).items(),
                key=lambda kv: kv[0][1])
            if node in generators and isinstance(outputs.get("answer"), Answer)]
        answer = result.shared_outputs.get("answer") if result is not None else None
        if isinstance(answer, Answer):
            row.update(row_extras(answer, question.question))
        with out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"[{n}/{len(order)}] {name} {question.id}: "
              f"{row['metrics'].get('latency_s')} s", file=sys.stderr, flush=True)

    if parallel >= 1:
        for name, doc in docs.items():
            todo = [q for q in order if (name, q.id) not in done]
            started = time.perf_counter()
            evaluate_answers(doc, EvalSet(evalset.path, todo, evalset.sha256),
                             executor=executor, parallel=parallel,
                             on_progress=lambda n, _total, row, name=name, todo=todo:
                             write(name, todo[n - 1], row, n))
            print(f"{name}: {len(todo)} questions, {parallel} at once, "
                  f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        return
    for n, question in enumerate(order, start=1):
        for name, doc in docs.items():
            if (name, question.id) in done:
                continue
            single = EvalSet(evalset.path, [question], evalset.sha256)
            report = evaluate_answers(doc, single, executor=executor)
            write(name, question, report.results[0], n)


def _model(doc) -> str:
    models = [n.params.get("model", "") for n in doc.nodes if n.type == "llm.model"]
    return models[0] if models else ""


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


def _verdict(row: dict) -> dict[str, bool | None]:
    m = row["metrics"]
    answerable = bool(row.get("answerable", True))
    facts = m.get("fact_recall") == 1.0 and not row.get("refused") if answerable else None
    citations = ((m.get("citation_validity") == 1.0 and (m.get("citation_recall") or 0) > 0)
                 if answerable else None)
    return {"facts": facts, "citations": citations, "refusal": m.get("refusal_accuracy") == 1.0}


def verdicts(files: list[Path], languages: dict[str, str], same_questions: bool = False) -> str:
    """The right/total table per model, graph and language (each graph over the questions it
    answered: the shuffled order gives every graph a prefix of the same sequence; with
    ``same_questions`` over the questions every graph of the model answered)."""
    by_model: dict[str, list[dict]] = {}
    for file in files:
        for row in _rows(file):
            by_model.setdefault(row.get("model") or file.stem, []).append(row)
    lines = ["| model | graph | questions (en/zh) | facts right | citations right "
             "| refusals right | median s |", "|---|---|---|---|---|---|---|"]
    for model, rows in by_model.items():
        if same_questions:
            graphs = list(dict.fromkeys(r["graph"] for r in rows))
            common = set.intersection(*({r["id"] for r in rows if r["graph"] == g}
                                        for g in graphs))
            rows = [r for r in rows if r["id"] in common]
        for graph in dict.fromkeys(r["graph"] for r in rows):
            picked = [r for r in rows if r["graph"] == graph]
            cells = []
            for key in ("facts", "citations", "refusal"):
                parts = []
                for lang in ("en", "zh"):
                    judged = [v for r in picked if languages.get(r["id"]) == lang
                              for v in [_verdict(r)[key]] if v is not None]
                    parts.append(f"{sum(judged)}/{len(judged)}")
                cells.append(" · ".join(parts))
            secs = sorted(r["metrics"].get("latency_s") or 0 for r in picked)
            n_en = sum(languages.get(r["id"]) == "en" for r in picked)
            lines.append(f"| {model} | {graph} | {len(picked)} ({n_en}/{len(picked) - n_en}) | "
                         + " | ".join(cells) + f" | {secs[len(secs) // 2]:.0f} |")
    lines.append("cells: English · Chinese, right/judged (facts and citations: answerable "
                 "questions only)")
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
    parser.add_argument("--graph-dir", default=str(ROOT / "sample_graphs"),
                        help="folder of the graphs named by --graphs")
    parser.add_argument("--parallel", type=int, default=0, metavar="N",
                        help="one evaluation per graph, N questions at once (default 0: "
                             "question by question, graphs interleaved)")
    parser.add_argument("--table", action="store_true", help="only print the summary of --out")
    parser.add_argument("--verdicts", nargs="+", type=Path, metavar="FILE",
                        help="only print the right/total table of these --out files")
    parser.add_argument("--same-questions", action="store_true",
                        help="with --verdicts: only the questions every graph of a model "
                             "answered")
    args = parser.parse_args()
    out = Path(args.out)
    if args.verdicts:
        evalset = load_evalset(args.evalset)
        print(verdicts(args.verdicts, {q.id: q.language or "en" for q in evalset.questions},
                       args.same_questions))
        return
    sets = parse_pairs(args.set, "--set")
    if args.model:
        sets["llm.model"] = MODELS[args.model]
    if not args.table:
        run(load_evalset(args.evalset), args.graphs, out, args.limit, args.seed,
            Path(args.cache_dir) if args.cache_dir else cache_home(), sets, Path(args.graph_dir),
            args.parallel)
    print(table(out))


if __name__ == "__main__":
    main()
