"""A model check of generated questions against their value's sentence, measured on kept sets
whose rows were checked by hand: the chat model reads the sentence stating the expected value
(and the one before it), the question and the value, and says whether the sentence, read as
written, gives that value as the answer to that question. Per corpus, the poor and the good
answerable rows each prompt would reject (rows of several hand-checked sets asked alike are
counted once). Measured and not built: neither prompt rejects more poor rows than good ones
(``bench/results/evalset_sentence_judge.txt``).

    .venv/bin/python bench/evalset_sentence_judge.py [--prompts v1 v2] [--cache-dir DIR]

Reads the round-6 and round-7 kept sets (``bench/results/evalset_quality_r{6,7}_*.jsonl``), their
hand-check verdicts (the tables of ``bench/results/evalset_quality_before_after.md``) and the
corpora's chunks as generation reads them; asks the embedded Qwen2.5-Coder-1.5B, greedy."""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalset_misread_checks import RESULTS, corpus_chunks, verdicts

from modrag_nodes.llm.api import chat
from modrag_nodes.llm.client import LLMSpec
from modrag_studio.engine.core.datatypes import ChatMessage, Chunk
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.evaluation.generation.checks.verify import fact_sentences
from modrag_studio.evaluation.generation.config import generation_context
from modrag_studio.evaluation.generation.reading.prompts import clip

REPLY_TOKENS = 4
SENTENCE_CHARS = 500

# The instructions are the system message, the same for every call (reuse_prefix).
PROMPTS: dict[str, dict[str, tuple[str, str]]] = {
    "v1": {
        "en": ("You check quiz questions against the text they were written from. "
               "You reply YES or NO only.",
               "Text: {text}\n\nQuestion: {question}\nProposed answer: {value}\n\n"
               "Reading the text exactly as written, is \"{value}\" the correct answer to this "
               "question? Reply YES or NO."),
        "zh": ("你根据出题的原文核对测验题。只回复“是”或“否”。",
               "原文：{text}\n\n问题：{question}\n给出的答案：{value}\n\n"
               "严格按原文的字面意思，“{value}”是这个问题的正确答案吗？只回复“是”或“否”。"),
    },
    "v2": {
        "en": ("You check quiz questions against the text they were written from. A question is "
               "wrong when it changes what the text says, asks about something the text does "
               "not say, or when the text gives its answer for something else. "
               "You reply YES or NO only.",
               "Text: {text}\n\nQuestion: {question}\nProposed answer: {value}\n\n"
               "Does the text say that \"{value}\" is the answer to exactly this question? "
               "Reply YES or NO."),
        "zh": ("你根据出题的原文核对测验题。如果问题改变了原文的意思、问了原文没说的内容，"
               "或者原文说的答案属于别的事物，这道题就是错的。只回复“是”或“否”。",
               "原文：{text}\n\n问题：{question}\n给出的答案：{value}\n\n"
               "原文是否说明“{value}”正是这个问题的答案？只回复“是”或“否”。"),
    },
}
DEFAULT_PROMPT = "v1"
_NO = re.compile(r"^\W*(?:no|否|不是|不)\b", re.IGNORECASE)
_NO_ZH = re.compile(r"^\W*(?:否|不是|不)")


@dataclass
class SentenceJudgement:
    """The model's reply and whether it accepts the question."""

    reply: str
    agrees: bool
    text: str


def read_verdict(reply: str) -> bool:
    """Whether a reply accepts: anything but a leading "no" (an unreadable reply is no
    evidence against the question, which has passed every other check)."""
    return not (_NO.match(reply) or _NO_ZH.match(reply))


def judge(ask: Callable[[str, str], str], language: str, question: str, value: str,
          chunk: Chunk, prompt: str = DEFAULT_PROMPT) -> SentenceJudgement:
    """Ask whether the sentence(s) of ``chunk`` stating ``value`` give it as the answer to
    ``question``; a value no single sentence states is not judged (accepted)."""
    sentences = fact_sentences(value, chunk.text)
    if not sentences:
        return SentenceJudgement("", True, "")
    text = clip(" ".join(dict.fromkeys(sentences)), SENTENCE_CHARS)
    system, user = PROMPTS[prompt]["zh" if language == "zh" else "en"]
    reply = ask(system, user.format(text=text, question=question.strip(), value=value))
    return SentenceJudgement(reply.strip(), read_verdict(reply), text)


SETS = (("pkgdocs", "evalset_quality_r6_pkgdocs", "### Round 6, pkgdocs-dev"),
        ("demo", "evalset_quality_r6_demo", "### Round 6, demo corpus"),
        ("cmrc", "evalset_quality_r6_cmrc", "### Round 6, cmrc2018-trial"),
        ("pkgdocs", "evalset_quality_r7_pkgdocs", "### Round 7, pkgdocs-dev (40"),
        ("demo", "evalset_quality_r7_demo", "### Round 7, demo corpus"),
        ("cmrc", "evalset_quality_r7_cmrc", "### Round 7, cmrc2018-trial"),
        ("pkgdocs", "evalset_quality_r7_pkgdocs_seed1", "### Round 7, pkgdocs-dev, seed 1"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", nargs="+", default=list(PROMPTS))
    parser.add_argument("--cache-dir", default="", help="node cache (default: a temporary one)")
    parser.add_argument("--out", default="", help="write every judged row here (JSON lines)")
    args = parser.parse_args()
    chunks = {name: {c.chunk_id: c for c in corpus}
              for name, corpus in corpus_chunks(args.cache_dir, "sentence_judge_").items()}
    rows: dict[tuple[str, str, str], tuple[dict, str]] = {}
    for corpus, stem, heading in SETS:
        hand = verdicts(heading)
        for line in (RESULTS / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            kind = next(t[5:] for t in row["tags"] if t[:5] == "type:")
            if row["id"] in hand and row["answerable"] and kind in ("single", "paraphrase"):
                rows.setdefault((corpus, row["question"], row["expected_facts"][0]),
                                (row, hand[row["id"]]))
    spec = LLMSpec(backend="embedded", model="qwen2.5-coder-1.5b-instruct", temperature=0.0,
                   seed=0, max_tokens=REPLY_TOKENS,
                   extra={"reuse_prefix": True})
    ctx = generation_context(CancelToken(), None)

    def ask(system: str, user: str) -> str:
        messages = [ChatMessage(role="system", content=system),
                    ChatMessage(role="user", content=user)]
        return chat(spec, messages, ctx=ctx, stream=False).text

    table: dict[str, Counter] = defaultdict(Counter)
    totals: Counter = Counter()
    out = []
    start = time.perf_counter()
    for (corpus, question, fact), (row, verdict) in rows.items():
        totals[(corpus, verdict)] += 1
        chunk = chunks[corpus][row["expected_evidence"]["chunk_ids"][0]]
        record = {"corpus": corpus, "id": row["id"], "verdict": verdict, "question": question,
                  "fact": fact}
        for name in args.prompts:
            judged = judge(ask, row["language"], question, fact, chunk,
                                          prompt=name)
            record[name] = judged.reply
            if not judged.agrees:
                table[name][(corpus, verdict)] += 1
        out.append(record)
    seconds = time.perf_counter() - start
    corpora = ("pkgdocs", "demo", "cmrc")
    print(f"{len(rows)} answerable single/paraphrase rows, {len(args.prompts)} prompt(s), "
          f"{seconds:.0f} s\n")
    print("rows (poor / good): " + ", ".join(
        f"{c} {totals[(c, 'poor')]} / {totals[(c, 'good')]}" for c in corpora))
    print("\nrejected, poor / good\n| prompt | " + " | ".join(corpora) + " |\n|---|"
          + "---|" * len(corpora))
    for name in args.prompts:
        print(f"| {name} | " + " | ".join(
            f"{table[name][(c, 'poor')]} / {table[name][(c, 'good')]}" for c in corpora) + " |")
    print("\nrows any prompt rejected:")
    for record in out:
        said = {n: record[n] for n in args.prompts
                if not read_verdict(record[n])}
        if said:
            print(f"  {record['corpus']} {record['id']} {record['verdict']}: "
                  f"{record['question'][:70]!r} -> {record['fact'][:30]!r}; rejected by "
                  + ", ".join(said))
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out),
                                  encoding="utf-8")


if __name__ == "__main__":
    main()
