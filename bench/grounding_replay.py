"""Replays stored answers through a graph's checks, without the model: each question runs
the graph (real retrieval, prompt, parser, grounding check, refusal) with the LLM node on a
backend that replies with the answer stored for that question in ``--answers`` (a
``bench_answer_metrics.py --out`` file; asked to translate a reply, as ``answer.translate``
does, it gives the row's stored final answer). What the checks decide then is what they would
decide on the model's answer, so a change to the checks is measured on a whole set in a
minute, not in the half hour the model takes. Rows whose stored answer is already a
refusal our own node wrote (``fallback``) are replayed too: the refusal text is the reply.

    .venv/bin/python bench/grounding_replay.py --answers FILE.jsonl
        [--graph basic_rag] [--graph-dir sample_graphs] [--evalset SET.jsonl]
        [--set NODE.PARAM=VALUE ...] [--input NAME=VALUE ...] [--first] [--show]
        [--rows OUT.jsonl]

Prints the honest headline, in the model's own words (nothing appended counts):
- facts right: answerable questions whose final answer states every expected fact, not refused;
- grounded-label precision: of the answers shown as grounded (not refused), the share that
  are right (an answer to an unanswerable question is never right);
- unanswerable refused, answerable wrongly refused, answers with an invented number.
A stored answer is the model's final one: a first attempt the old check sent back is not
in the file, so a rule that now lets a first attempt through is not measured here.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from answer_report import invented_numbers  # noqa: E402

from modrag_nodes.generation.fact_match import fact_recall, is_refusal  # noqa: E402
from modrag_nodes.llm.client import ChatResult, register_backend  # noqa: E402
from modrag_studio.commands.common import apply_overrides, parse_pairs  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine.cache.node_cache import NodeCache  # noqa: E402
from modrag_studio.engine.core.datatypes import Answer  # noqa: E402
from modrag_studio.engine.core.document import GraphDocument, load  # noqa: E402
from modrag_studio.engine.run.executor import Executor  # noqa: E402
from modrag_studio.evaluation.evalset import EvalQuestion, load_evalset  # noqa: E402
from modrag_studio.evaluation.scorecard.figures import headline  # noqa: E402

REPLIES: dict[str, list[str]] = {}  # question -> the model's replies, attempt by attempt
TRANSLATED: dict[str, str] = {}  # a reply -> the stored final answer (the translation node's)
CALLS: dict[str, int] = {}
GENERATE_NODES = ("generate",)  # basic_rag's node that calls the model
DEMO_SET = ROOT / "resources" / "sample_corpus" / "eval_questions.jsonl"


class StoredReplies:
    """The backend: the stored answer of the question the prompt asks."""

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        text = "\n".join(m.content for m in messages)
        for question, replies in REPLIES.items():
            if question in text:
                attempt = CALLS.get(question, 0)
                CALLS[question] = attempt + 1
                return ChatResult(text=replies[min(attempt, len(replies) - 1)], model="replay")
        plain = _letters(text)  # answer.translate asks with the parsed reply alone
        for reply, final in TRANSLATED.items():
            if _letters(reply) and _letters(reply) in plain:
                return ChatResult(text=final, model="replay")
        if all(m.role == "user" for m in messages):
            # a translation (answer.translate asks with no system message) the live run never
            # asked for, as a retry's parse left other text: an empty reply, which it does not use
            return ChatResult(text="", model="replay")
        raise RuntimeError("no stored answer for this prompt")


def _letters(text: str) -> str:
    """``text``'s letters and digits only (a parsed reply loses its markup)."""
    return "".join(ch for ch in text if ch.isalnum())


@dataclass
class Outcome:
    """What the checks made of one stored answer."""

    id: str
    answerable: bool
    language: str
    refused: bool
    right: bool       # answerable, every expected fact stated, not refused
    invented: bool    # a number or date no evidence block holds, not refused
    route: str
    reason: str
    text: str

    @property
    def correct(self) -> bool:
        """Right, or refused when unanswerable."""
        return self.right if self.answerable else self.refused


def stored_replies(answers: Path, graph: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return {r["id"]: r for r in rows if r.get("graph") == graph}


def replies_of(row: dict, first_only: bool = False) -> list[str]:
    """The model's replies of a stored row: its raw attempts when recorded (the first alone
    with ``first_only``), else its final answer."""
    raw = [text or "" for text in row.get("raw_answers") or []]
    if raw:
        return raw[:1] if first_only else raw
    return [row.get("answer") or ""]


def replay(doc: GraphDocument, questions: list[EvalQuestion], rows: dict[str, dict],
           executor: Executor, inputs: dict[str, str] | None = None,
           first_only: bool = False, answers: dict[str, Answer] | None = None
           ) -> list[Outcome]:
    """Each question of ``questions`` with a stored row, run on ``doc`` (its LLM replaying
    the stored replies in order, the last one again when the checks ask for more; a
    translation of a reply is the row's final answer). ``answers``, when given, gets each
    question's final Answer by id."""
    register_backend("replay", StoredReplies)
    for q in questions:
        if q.id in rows:
            REPLIES[q.question] = replies_of(rows[q.id], first_only)
            for reply in replies_of(rows[q.id], first_only):
                TRANSLATED[reply] = rows[q.id].get("answer") or ""
    doc = apply_overrides(doc, {"llm.backend": "replay"})
    out = []
    for q in questions:
        if q.id not in rows:
            continue
        CALLS.pop(q.question, None)
        # the model's node always runs: a reply cached by an earlier replay would skip the
        # count of attempts, and a later attempt would get the first reply again
        result = executor.run(doc, {**(inputs or {}), "question": q.question},
                              rerun=GENERATE_NODES)
        answer = result.outputs.get("answer")
        if answers is not None and answer is not None:
            answers[q.id] = answer
        text = answer.text if answer is not None else ""
        refused = bool(answer is not None and (answer.fallback or is_refusal(answer)))
        recall, _ = fact_recall(q.expected_facts, text) if q.answerable else (None, [])
        blocks = [item.chunk.text for item in answer.evidence] if answer is not None else []
        ground = [v for v in result.trace.visits if v.node_id == "ground"]
        notes = ground[-1].details if ground else {}
        out.append(Outcome(
            q.id, q.answerable, q.language or "?", refused,
            bool(q.answerable and not refused and recall == 1.0),
            bool(not refused and invented_numbers(text, blocks)),
            str(notes.get("route", "")), str(notes.get("reason", "")), text))
    return out


def summary(outcomes: list[Outcome]) -> dict[str, str]:
    """The headline (the scorecard's own figures) and the invented numbers."""
    return {**headline(outcomes).lines(),
            "invented numbers": str(sum(o.invented for o in outcomes))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=Path, required=True)
    parser.add_argument("--graph", default="basic_rag")
    parser.add_argument("--graph-dir", default=str(ROOT / "sample_graphs"),
                        help="folder of the graph (a variant of a sample beside the samples)")
    parser.add_argument("--evalset", type=Path, default=DEMO_SET)
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--show", action="store_true", help="print every row's decision")
    parser.add_argument("--rows", type=Path, help="write each question's outcome (JSON lines)")
    parser.add_argument("--first", action="store_true",
                        help="replay the model's first reply only, for every attempt")
    parser.add_argument("--input", action="append", default=[], dest="inputs",
                        metavar="NAME=VALUE", help="a graph input (e.g. corpus=DIR)")
    args = parser.parse_args()
    rows = stored_replies(args.answers, args.graph)
    doc = load(Path(args.graph_dir) / f"{args.graph}.json")
    doc = apply_overrides(doc, parse_pairs(args.sets, "--set"))
    executor = Executor(default_registry(), cache=NodeCache())  # memory only: replies vary
    outcomes = replay(doc, load_evalset(args.evalset).questions, rows, executor,
                      parse_pairs(args.inputs, "--input"), args.first)
    if args.show:
        for o in outcomes:
            mark = "ok " if o.correct else "BAD"
            print(f"{mark} {o.id} {'A' if o.answerable else 'U'} refused={o.refused!s:5} "
                  f"route={o.route} | {o.text[:90]!r} | {o.reason[:80]}")
    if args.rows:
        args.rows.write_text("".join(json.dumps(asdict(o), ensure_ascii=False) + "\n"
                                     for o in outcomes), encoding="utf-8")
    for name, value in summary(outcomes).items():
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
