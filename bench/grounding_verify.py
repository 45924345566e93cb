"""A model's yes/no verification of the answers the grounding check shows as grounded, on the
fresh replies of the development suite: each answer asked about against only the evidence
sentences that back it (wordings in ``WORDINGS``), and ``check.support`` (the whole-evidence
judge, default params) as the baseline. Per corpus: wrong answers caught (the model says no:
they would be refused), right answers broken, and the grounded-label precision and the
answerable wrongly refused that would follow.

    MODRAG_CACHE_DIR=... .venv/bin/python bench/grounding_verify.py
        [--only demo pkgdocs cmrc] [--wordings sentences_v1 sentences_v2 support]
        [--rows OUT.jsonl] [--out OUT.md] [--limit N]

The replies are replayed through ``basic_rag``'s checks (``grounding_replay.py``); the judge
is the graph's own model (Qwen2.5-Coder-1.5B, embedded, greedy). Only the final answer is
judged: in the graph a "no" on the first attempt would send it back once, and the reply the
model would give then is not stored, so a "no" is counted as a refusal.

Backing sentences (fixed before any verdict was read): for each value the answer states (a
claim found in the evidence that is not itself a subject of the question), two evidence
sentences that state it, those linked to a sentence naming a subject of the question (the
claim alignment's antecedents and bridges) first; a stating sentence that does not name a
subject brings the first linked one that does. When no value has one: the two sentences of
the cited blocks (all blocks when none is cited) sharing most content words with the answer.
At most six (stating sentences first), shown in evidence order. None: not asked (passes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from grounding_replay import replay, stored_replies  # noqa: E402
from grounding_rules import RESULTS, SUITE  # noqa: E402

from modrag_nodes.generation.llm_call import ask  # noqa: E402
from modrag_nodes.generation.messy_parsing import parse_yes_no  # noqa: E402
from modrag_nodes.generation.self_check import SupportCheck  # noqa: E402
from modrag_nodes.grounding.alignment import (  # noqa: E402
    _linked,
    _written_subjects,
    evidence_sentences,
)
from modrag_nodes.grounding.claims import (  # noqa: E402
    CITATION,
    alias_groups,
    dictionary_entities,
    key_terms,
    spellings,
)
from modrag_nodes.llm.chat_types import LLMSpec  # noqa: E402
from modrag_nodes.text.normalise import normalise as flat  # noqa: E402
from modrag_nodes.text.words import contains_phrase  # noqa: E402
from modrag_studio.commands.common import apply_overrides  # noqa: E402
from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine.cache.node_cache import NodeCache  # noqa: E402
from modrag_studio.engine.core.datatypes import Answer  # noqa: E402
from modrag_studio.engine.core.document import load  # noqa: E402
from modrag_studio.engine.core.node import node_context  # noqa: E402
from modrag_studio.engine.core.paths import resolve_path, using_graph_folder  # noqa: E402
from modrag_studio.engine.core.resources import process_resources  # noqa: E402
from modrag_studio.engine.run.executor import Executor  # noqa: E402
from modrag_studio.evaluation.evalset import load_evalset  # noqa: E402

PER_VALUE = 2
MOST_SENTENCES = 6
SYSTEM = "You check whether a text states an answer. You reply with yes or no."
WORDINGS = {
    "sentences_v1": (
        "Question: {question}\n\nText:\n{sentences}\n\nProposed answer: {answer}\n\n"
        "Does the text state this answer to the question? Reply with one word, yes or no."
        "\nVerdict:"),
    "sentences_v2": (
        "Question: {question}\n\nText:\n{sentences}\n\nProposed answer: {answer}\n\n"
        "Does the text say this about what the question asks? Reply no if the text gives "
        "this value for something else, or does not say it. Reply with one word, yes or no."
        "\nVerdict:"),
}
QWEN = LLMSpec(backend="embedded", model="qwen2.5-coder-1.5b-instruct", max_tokens=160)


def backing_sentences(answer: Answer, aliases: list[set[str]]) -> list[str]:
    """The evidence sentences that back ``answer``'s values (see the module doc)."""
    items, question = answer.evidence, answer.query
    sentences = evidence_sentences(items, aliases)
    if not sentences:
        return []
    _, written = _written_subjects(question, items, aliases) if question else ([], [])
    subject = set().union(*(s.spellings for s in written)) if written else set()
    picks: list[int] = []  # by priority: each value's stating sentences, then the links
    links: list[int] = []
    for claim in answer.claims:
        if claim.verdict not in ("cited", "evidence"):
            continue
        key = flat(claim.text)
        value = spellings(key, aliases)
        if value & subject or any(key in s or s in key for s in subject):
            continue
        holding = [i for i, s in enumerate(sentences) if s.states(claim, aliases)]
        groups = [(i, _linked(i, sentences, value)) for i in holding]
        if subject:  # a sentence linked to one naming the question's subject first
            groups.sort(key=lambda g: not any(s.names(subject) for s in g[1]))
        for i, group in groups[:PER_VALUE]:
            picks.append(i)
            if subject and not sentences[i].names(subject):
                links += [sentences.index(s) for s in group if s.names(subject)][:1]
    chosen = list(dict.fromkeys([*picks, *links]))
    if not chosen:
        words = set(key_terms(CITATION.sub(" ", answer.text)))
        cited = {n for n, item in enumerate(items, start=1) if any(
            c.valid and c.chunk_id == item.chunk.chunk_id for c in answer.citations)}
        overlap = sorted(((sum(contains_phrase(s.text, w) for w in words), i)
                          for i, s in enumerate(sentences)
                          if not cited or s.block in cited), reverse=True)
        chosen = [i for score, i in overlap[:2] if score > 0]
    return [sentences[i].raw for i in sorted(chosen[:MOST_SENTENCES])]


def verify(answer: Answer, sentences: list[str], wording: str) -> tuple[bool | None, str]:
    """The model's verdict (True: stated, False: not, None: unreadable) and its reply."""
    prompt = (WORDINGS[wording].replace("{question}", answer.query)
              .replace("{sentences}", "\n".join(f"- {s}" for s in sentences))
              .replace("{answer}", " ".join(CITATION.sub(" ", answer.text).split())))
    ctx = node_context("verify", "check.grounding", resources=process_resources())
    reply = ask(ctx, QWEN, SYSTEM, prompt, purpose="verify", max_tokens=24)
    return parse_yes_no(reply), reply


def support(answer: Answer) -> tuple[bool, str]:
    """``check.support``'s verdict (default params) and its judge's replies."""
    ctx = node_context("support", "check.support", resources=process_resources())
    out = SupportCheck().run(ctx, SupportCheck.Params(), answer=answer, llm=QWEN)
    return "supported" in out, " | ".join(ctx.details.get("judge_replies", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", default=["demo", "pkgdocs", "cmrc"])
    parser.add_argument("--wordings", nargs="+", default=[*WORDINGS, "support"])
    parser.add_argument("--rows", type=Path, default=RESULTS / "grounding_verify_rows.jsonl")
    parser.add_argument("--out", type=Path, default=RESULTS / "grounding_verify.md")
    parser.add_argument("--limit", type=int, default=0, help="answers per corpus (0: all)")
    args = parser.parse_args()
    done = {}
    if args.rows.is_file():  # resume: a verdict already written is not asked again
        for line in args.rows.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[(row["corpus"], row["id"], row["wording"])] = row
    table: list[dict] = []
    for corpus in [c for c in SUITE if c.name in args.only]:
        answers_file = RESULTS / f"{corpus.name}_qwen_fresh.jsonl"
        rows = stored_replies(answers_file, "basic_rag")
        doc = apply_overrides(load(ROOT / "sample_graphs" / "basic_rag.json"), corpus.sets)
        ground = next(n for n in doc.nodes if n.id == "ground")
        aliases_file = ground.params.get("aliases_file")
        with using_graph_folder(ROOT / "sample_graphs"):
            entries = dictionary_entities(resolve_path(aliases_file)) if aliases_file else []
        aliases = alias_groups(entries)
        finals: dict[str, Answer] = {}
        outcomes = replay(doc, load_evalset(corpus.evalset).questions, rows,
                          Executor(default_registry(), cache=NodeCache()), answers=finals)
        shown = [o for o in outcomes if not o.refused and o.id in finals]
        if args.limit:
            shown = shown[:args.limit]
        for o in shown:
            answer = finals[o.id]
            backing = backing_sentences(answer, aliases)
            for wording in args.wordings:
                key = (corpus.name, o.id, wording)
                if key in done:
                    table.append(done[key])
                    continue
                start = time.perf_counter()
                if wording == "support":
                    stated, reply = support(answer)
                elif backing:
                    stated, reply = verify(answer, backing, wording)
                else:
                    stated, reply = True, "(no backing sentence: not asked)"
                row = {"corpus": corpus.name, "id": o.id, "wording": wording,
                       "answerable": o.answerable, "right": o.right,
                       "question": answer.query, "answer": answer.text,
                       "sentences": backing if wording != "support" else [],
                       "stated": stated, "reply": reply,
                       "seconds": round(time.perf_counter() - start, 2)}
                with args.rows.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                table.append(row)
                print(f"{corpus.name} {o.id} {wording}: right={o.right} stated={stated} "
                      f"({row['seconds']} s) {reply[:60]!r}", file=sys.stderr, flush=True)
        table.append({"corpus": corpus.name, "summary": summary_of(outcomes)})
    text = report(table, args.wordings)
    print(text)
    args.out.write_text(text + "\n", encoding="utf-8")


def summary_of(outcomes) -> dict:
    """What the verdicts are counted against: answerable, shown, right shown, refused."""
    answerable = [o for o in outcomes if o.answerable]
    return {"answerable": len(answerable),
            "shown": sum(not o.refused for o in outcomes),
            "right_shown": sum(o.right for o in outcomes),
            "wrongly_refused": sum(o.refused for o in answerable)}


def report(table: list[dict], wordings: list[str]) -> str:
    """One row per corpus and wording: wrong caught, right broken, precision and wrongly
    refused before and after."""
    lines = ["| corpus | judge | shown (right/wrong) | wrong caught | right broken | "
             "unreadable | precision before -> after | answerable wrongly refused before -> "
             "after | mean s per answer |", "|---|---|---|---|---|---|---|---|---|"]
    sums = {c["corpus"]: c["summary"] for c in table if "summary" in c}
    for corpus, base in sums.items():
        for wording in wordings:
            rows = [r for r in table if r.get("corpus") == corpus and r.get("wording") == wording]
            if not rows:
                continue
            right = [r for r in rows if r["right"]]
            caught = sum(r["stated"] is not True for r in rows if not r["right"])
            broken = sum(r["stated"] is not True for r in right)
            unreadable = sum(r["stated"] is None for r in rows)
            shown, good = base["shown"], base["right_shown"]
            after_shown = shown - caught - broken
            precision = f"{good / shown:.2f} ({good}/{shown}) -> " + (
                f"{(good - broken) / after_shown:.2f} ({good - broken}/{after_shown})"
                if after_shown else "-")
            n, refused = base["answerable"], base["wrongly_refused"]
            seconds = sum(r["seconds"] for r in rows) / len(rows)
            lines.append(f"| {corpus} | {wording} | {len(rows)} ({len(right)}/"
                         f"{len(rows) - len(right)}) | {caught} | {broken} | {unreadable} | "
                         f"{precision} | {refused}/{n} -> {refused + broken}/{n} | "
                         f"{seconds:.1f} |")
    lines += ["", "| corpus | judge | wrong caught | right broken | wrong let through |",
              "|---|---|---|---|---|"]
    for corpus in sums:
        for wording in wordings:
            rows = [r for r in table if r.get("corpus") == corpus and r.get("wording") == wording]
            if rows:
                said_no = [r for r in rows if r["stated"] is not True]
                lines.append(f"| {corpus} | {wording} | " + " | ".join(
                    ", ".join(r["id"] for r in group) or "-" for group in (
                        [r for r in said_no if not r["right"]],
                        [r for r in said_no if r["right"]],
                        [r for r in rows if r["stated"] is True and not r["right"]])) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
