"""The main job's time, split: ``modrag run sample_graphs/basic_rag.json`` with a new question
each time (the index and the model file already made, so caches are warm but the answer is
not cached), in a fresh process like a user's, and where its time goes: process start
(interpreter, imports, graph load, until the run starts), embedder load (the node; a cached
run loads the model itself on its first query, inside retrieval), retrieval (query
embedding, vector and BM25 search, fusion), the chat model's load, prompt processing (the
LLM's time to its first token, model load apart), decoding (the rest of generation), the
retry when the grounding check asked for one, and the rest (graph checks, parsing, output,
the interpreter's exit).

    .venv/bin/python bench/bench_main_job.py [--runs 3] [--set llm.threads=2 ...] [--warm]
        [--graph GRAPH.json --evalset QUESTIONS.jsonl --input corpus=DIR --goal 15]

``--graph``/``--evalset``/``--input`` time another graph on its own questions (for example
the graph ``modrag new --from-folder`` built on a folder, indexed first): the first
``--runs`` answerable questions of the set, in file order.

``--warm`` answers the same questions in this one process instead, after one untimed
warm-up question (the LP-07 one), as the studio's run worker does (one executor, the models,
the Chroma client and the graph kept loaded between runs): the time from pressing Run to the
answer, whose goal is 5 s; "process start" is then the graph checks before the run starts.

Questions: the English answerable ones of the demo set, in order (``--runs`` of them), with
``--rerun generate --rerun retrieve`` so that an answer or a query embedding cached by an
earlier evaluation is not reused: every run is a new question to the model;
``HF_HUB_OFFLINE=1``. Goal (issue: the fast loop): 8 s or less from ``modrag run`` to the
answer on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALSET = ROOT / "resources" / "sample_corpus" / "eval_questions.jsonl"
PARTS = ("process start", "embedder load", "retrieval", "chat model load", "prompt processing",
         "decoding", "retry (2nd LLM call)", "rest")
RETRIEVAL_TYPES = ("retrieve.", "fuse.", "bm25.", "store.")


def questions(count: int, evalset: Path = EVALSET) -> list[str]:
    rows = [json.loads(line) for line in evalset.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [r["question"] for r in rows
            if r.get("answerable") and r.get("language", "en") == "en"][:count]


def split(trace: dict, spawned_at: float, wall: float) -> dict[str, float]:
    """Seconds per part of one run, from its trace and the wall time of its process."""
    parts = dict.fromkeys(PARTS, 0.0)
    parts["process start"] = trace["started_at"] - spawned_at
    for visit in trace["visits"]:
        seconds, details = visit.get("duration_s") or 0.0, visit.get("details") or {}
        if visit["type_id"] == "embed.model":
            parts["embedder load"] += seconds
        elif visit["type_id"].startswith(RETRIEVAL_TYPES):
            parts["retrieval"] += seconds
        elif "prompt_tokens" in details and not visit.get("cached"):
            first = details.get("time_to_first_token_s") or 0.0  # from the request, load apart
            generation = details.get("generation_s") or seconds
            if visit.get("iteration"):
                parts["retry (2nd LLM call)"] += seconds
            else:
                parts["prompt processing"] += first
                parts["decoding"] += max(0.0, generation - first)
                parts["chat model load"] += max(0.0, seconds - generation)
    parts["rest"] += max(0.0, wall - sum(parts.values()))
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], dest="sets",
                        help="NODE.PARAM=VALUE for every run")
    parser.add_argument("--warm", action="store_true",
                        help="answer in this process after a warm-up, as the studio's worker")
    parser.add_argument("--graph", type=Path, default=ROOT / "sample_graphs" / "basic_rag.json")
    parser.add_argument("--evalset", type=Path, default=EVALSET)
    parser.add_argument("--input", action="append", default=[], dest="inputs",
                        help="NAME=VALUE graph input for every run (besides the question)")
    parser.add_argument("--goal", type=float, default=None, help="seconds (default 8; 5 warm)")
    args = parser.parse_args()
    if args.warm:
        report(warm_rows(args), "warm worker", args.goal or 5)
        return
    # bytecode is written and read (``__pycache__``) as on a user's machine: an environment
    # with PYTHONDONTWRITEBYTECODE would compile every imported module from source each run
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    modrag = str(Path(sys.executable).parent / "modrag")
    rows = []
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for question in questions(args.runs, args.evalset):
        with tempfile.TemporaryDirectory() as tmp:
            trace_file = Path(tmp) / "trace.json"
            command = [modrag, "run", str(args.graph), "-q",
                       "--json", "--input", f"question={question}", "--trace-out",
                       str(trace_file), "--rerun", "generate", "--rerun", "retrieve",
                       *(f"--input={i}" for i in args.inputs),
                       *(f"--set={s}" for s in args.sets)]
            spawned_at, start = time.time(), time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
            wall = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"modrag run failed ({done.returncode}): {done.stderr[-2000:]}")
            trace = json.loads(trace_file.read_text(encoding="utf-8"))
        answer = json.loads(done.stdout)["outputs"].get("answer", {})
        parts = split(trace, spawned_at, wall)
        rows.append((wall, parts))
        generate = [v for v in trace["visits"] if "prompt_tokens" in (v.get("details") or {})]
        tokens = generate[0]["details"] if generate else {}
        print(f"{wall:6.2f} s  {question[:60]!r}: prompt {tokens.get('prompt_tokens')} tokens, "
              f"{tokens.get('completion_tokens')} generated; "
              f"{(answer.get('text') if isinstance(answer, dict) else str(answer))[:70]!r}")
    report(rows, "modrag run", args.goal or 8)


def warm_rows(args: argparse.Namespace) -> list[tuple[float, dict[str, float]]]:
    """Each question answered by one executor that stays loaded, like the studio's worker."""
    from modrag_studio.commands.common import load_with_overrides
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.cache.node_cache import NodeCache
    from modrag_studio.engine.core.paths import cache_home
    from modrag_studio.engine.run.executor import Executor

    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    doc = load_with_overrides(str(args.graph), args.sets)
    inputs = dict(pair.split("=", 1) for pair in args.inputs)
    executor = Executor(default_registry(), NodeCache(cache_home()))
    warm_up = "How often is the lubrication pump LP-07 serviced?"  # not one of the measured
    executor.run(doc, {**inputs, "question": warm_up}, rerun=["generate", "retrieve"])
    rows = []
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for question in questions(args.runs, args.evalset):  # as the fresh processes
        spawned_at, start = time.time(), time.perf_counter()
        result = executor.run(doc, {**inputs, "question": question},
                              rerun=["generate", "retrieve"])
        wall = time.perf_counter() - start
        trace = json.loads(result.trace.to_json())
        rows.append((wall, split(trace, spawned_at, wall)))
        answer = result.outputs.get("answer")
        print(f"{wall:6.2f} s  {question[:60]!r}: {getattr(answer, 'text', answer)!s:.70}")
    return rows


def report(rows: list[tuple[float, dict[str, float]]], label: str, goal: float) -> None:
    print(f"\n{'part':<24}{'median s':>10}{'share':>8}")
    walls = [w for w, _ in rows]
    for part in PARTS:
        median = statistics.median(p[part] for _, p in rows)
        print(f"{part:<24}{median:>10.2f}{median / statistics.median(walls) * 100:>7.0f}%")
    print(f"{f'wall ({label})':<24}{statistics.median(walls):>10.2f}   goal <= {goal:g} s: "
          f"{'met' if statistics.median(walls) <= goal else 'NOT met'}")


if __name__ == "__main__":
    main()
