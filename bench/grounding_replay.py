"""Replays stored answers through a graph's checks, without the model: each question runs
the graph (real retrieval, prompt, parser, grounding check, refusal) with the LLM node on a
backend that replies with the answer stored for that question in ``--answers`` (a
``bench_answer_metrics.py --out`` file). What the checks decide then is what they would
decide on the model's answer, so a change to the checks is measured on all 52 questions in
a minute, not in the half hour the model takes. Rows whose stored answer is already a
refusal our own node wrote (``fallback``) are replayed too: the refusal text is the reply.

    .venv/bin/python bench/grounding_replay.py --answers bench/results/answers_qwen_after3.jsonl
        [--graph basic_rag] [--graph-dir sample_graphs] [--set NODE.PARAM=VALUE ...] [--show]

Prints, for answerable and unanswerable questions, how many end refused, by language.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from modrag_nodes.generation.fact_match import is_refusal  # noqa: E402
from modrag_nodes.llm.client import ChatResult, register_backend  # noqa: E402
from modrag_studio.commands.common import apply_overrides, parse_pairs  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine.cache.node_cache import NodeCache  # noqa: E402
from modrag_studio.engine.core.document import load  # noqa: E402
from modrag_studio.engine.run.executor import Executor  # noqa: E402
from modrag_studio.evaluation.evalset import load_evalset  # noqa: E402

REPLIES: dict[str, str] = {}


class StoredReplies:
    """The backend: the stored answer of the question the prompt asks."""

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        text = "\n".join(m.content for m in messages)
        for question, reply in REPLIES.items():
            if question in text:
                return ChatResult(text=reply, model="replay")
        raise RuntimeError("no stored answer for this prompt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=Path, required=True)
    parser.add_argument("--graph", default="basic_rag")
    parser.add_argument("--graph-dir", default=str(ROOT / "sample_graphs"),
                        help="folder of the graph (a variant of a sample beside the samples)")
    parser.add_argument("--evalset", type=Path,
                        default=ROOT / "resources" / "sample_corpus" / "eval_questions.jsonl")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--show", action="store_true", help="print every row's decision")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.answers.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    rows = {r["id"]: r for r in rows if r.get("graph") == args.graph}
    evalset = load_evalset(args.evalset)
    for q in evalset.questions:
        if q.id in rows:
            REPLIES[q.question] = rows[q.id]["answer"] or ""
    register_backend("replay", StoredReplies)
    doc = load(Path(args.graph_dir) / f"{args.graph}.json")
    doc = apply_overrides(doc, {"llm.backend": "replay", **parse_pairs(args.sets, "--set")})
    executor = Executor(default_registry(), cache=NodeCache())  # memory only: replies vary
    counts: dict[tuple[bool, str], list[int]] = {}
    for q in evalset.questions:
        if q.id not in rows:
            continue
        result = executor.run(doc, {"question": q.question})
        answer = result.outputs.get("answer")
        refused = bool(answer is not None and (answer.fallback or is_refusal(answer)))
        key = (q.answerable, q.language or "?")
        tally = counts.setdefault(key, [0, 0])
        tally[0] += refused
        tally[1] += 1
        if args.show:
            ground = [v for v in result.trace.visits if v.node_id == "ground"]
            notes = ground[-1].details if ground else {}
            print(f"{q.id} {'A' if q.answerable else 'U'} refused={refused!s:5} "
                  f"route={notes.get('route')} absent={notes.get('absent_terms')} "
                  f"| {(answer.text if answer else '')[:90]!r}")
    for answerable in (True, False):
        parts = [f"{lang}: {c[0]}/{c[1]}" for (a, lang), c in sorted(counts.items())
                 if a == answerable]
        total = [sum(c[i] for (a, _), c in counts.items() if a == answerable) for i in (0, 1)]
        label = "answerable refused" if answerable else "unanswerable refused"
        print(f"{label}: {total[0]}/{total[1]} ({', '.join(parts)})")


if __name__ == "__main__":
    main()
