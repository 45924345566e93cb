"""The round-trip check: a candidate question is asked again, of its source chunk(s) among the
passages a search over the whole corpus ranks highest for it, by the same chat model. An
answerable question is kept when that answer agrees with its expected fact(s): a question
that a reader would answer otherwise ("Who is the head of maintenance engineering?" with the
fact "Missed services are reported to the head of maintenance engineering", "Who is the
mentor for the new engineers?" with "an experienced colleague" while the corpus names the
mentors) is rejected. An unanswerable question is rejected when the model answers it with
words the passages hold (the corpus does say something about it)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from modrag_nodes.generation.api import fact_found, is_refusal
from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.numbers import BARE_NUMBER, CN_NUMERALS, EN_NUMBER_WORDS, quantities
from modrag_nodes.text.words import word_count
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.reading.prompts import clip
from modrag_studio.evaluation.generation.reading.search import CorpusSearch
from modrag_studio.evaluation.generation.reading.terms import key_terms, overlap

PASSAGES = 3
PASSAGE_CHARS = 260  # of each passage, the sentences about the question (a prompt of ~250 tokens)
REPLY_TOKENS = 32

# The instructions are the system message, the same for every call: the backend reads them
# once and keeps them (reuse_prefix); each call reads only its passages and question.
SYSTEM = {
    "en": "You answer questions from the passages given. Answer with a short phrase copied "
          "from the passages (a question in two parts: both answers, separated by ';'). If "
          "the passages do not answer it, reply NONE. You reply with the answer only.",
    "zh": "你根据给出的段落回答问题。用从段落中原样复制的简短短语回答（两部分的问题：两个答案，用"
          "“；”分开）。如果段落没有回答这个问题，回复“无”。只回复答案。",
}
PROMPT = {
    "en": "Passages:\n{passages}\n\nQuestion: {question}",
    "zh": "段落：\n{passages}\n\n问题：{question}",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_NONE = re.compile(r"^\W*(?:none|n/?a|no answer|unknown|not (?:stated|given|mentioned)|无|没有|"
                   r"未提及|不知道)\W*$", re.IGNORECASE)
_LABEL = re.compile(r"^\W*(?:answer|答案|回答)\s*[:：]\s*", re.IGNORECASE)


@dataclass
class RoundTrip:
    """The model's answer from the searched passages, and whether it agrees."""

    answer: str
    agrees: bool
    passages: list[str]


def window(text: str, question: str, limit: int = PASSAGE_CHARS) -> str:
    """The part of ``text`` about ``question``: the sentence holding most of its key terms
    (the first of equals), then the sentences around it while ``limit`` characters allow. A
    passage is chosen by the question alone, so the source is shown as any other passage is
    (not cut around its fact)."""
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    if len(text) <= limit or len(parts) <= 1:
        return clip(text, limit)
    terms = set(key_terms(question))
    scores = [len(terms & set(key_terms(p))) for p in parts]
    best = scores.index(max(scores))
    first = last = best
    size = len(parts[best])
    while True:
        grown = False
        for side in (last + 1, first - 1):  # the next sentence first, then the one before
            if 0 <= side < len(parts) and size + len(parts[side]) + 1 <= limit:
                size += len(parts[side]) + 1
                first, last = min(first, side), max(last, side)
                grown = True
        if not grown:
            break
    return clip(" ".join(parts[first:last + 1]), limit)


def numbered(passages: list[Chunk], question: str = "") -> str:
    """The passages as the prompts show them: ``[1] text``, one a line, each cut to the
    sentences about ``question`` (clipped from its start without one)."""
    return "\n".join(f"[{i}] {window(c.text, question) if question else clip(c.text, 700)}"
                     for i, c in enumerate(passages, 1))


def build_prompt(language: str, question: str, passages: list[Chunk]) -> tuple[str, str]:
    """(system, user) messages asking ``question`` of ``passages``, numbered."""
    lang = language if language in SYSTEM else "en"
    return SYSTEM[lang], PROMPT[lang].format(passages=numbered(passages, question),
                                             question=question.strip())


def read_answer(reply: str) -> str:
    """The answer line of a reply ('' when it declines): labels, bold and quotes dropped."""
    for line in reply.strip().splitlines():
        text = _LABEL.sub("", re.sub(r"\*\*|__|`", "", line)).strip().strip("\"“”'「」")
        if text:
            return "" if _NONE.match(text) or is_refusal(text) else text
    return ""


def split_parts(answer: str) -> list[str]:
    """The parts of an answer to a question in two parts ("Zhang Min; every 3 months")."""
    return [p for p in re.split(r"\s*[;；]\s*", answer) if p]


def wordy(answer: str, facts: list[str]) -> bool:
    """An answer of whole sentences where short facts are expected (over 20 words, or 40
    Chinese characters, and three times the facts' length): the model copied its passages
    instead of picking an answer ("New engineers at Norvale are paired with an experienced
    colleague for their first two years. The mentor meets ..." for "Who is the mentor for the
    new engineers?"), which is no agreement."""
    return word_count(answer) > max(20, 3 * sum(word_count(f) for f in facts))


def agrees_with(fact: str, answer: str) -> bool:
    """The answer states the fact, or is a part of it that holds a key term or a number
    ("3 months" for "every 3 months"), or says it in other word forms: every number of the
    fact and most of its key terms ("3 months before expiration" for "Three months before
    they expire")."""
    if not answer:
        return False
    if fact_found(fact, answer):
        return True
    if key_terms(answer) and fact_found(answer, fact):
        return True
    numbers = set(quantities(fact)) or set(BARE_NUMBER.findall(normalise(fact)))
    answered = set(quantities(answer)) | set(BARE_NUMBER.findall(normalise(answer)))
    return numbers <= answered and overlap(fact, answer) >= 0.6


def states_all(answer: str, facts: list[str]) -> bool:
    """Whether ``answer``, whole or one of its ';' parts, agrees with each of ``facts``."""
    said = [answer, *split_parts(answer)]
    return all(any(agrees_with(f, part) for part in said) for f in facts)


def passages_for(search: CorpusSearch, question: str, sources: list[Chunk],
                 seed: int) -> list[Chunk]:
    """The source chunk(s) and the chunks a search ranks highest besides them, to make
    ``PASSAGES`` at least (one more than the sources), in an order seeded by ``seed`` and the
    question (the source is not always first). The source is always there, so a question is
    not kept or dropped for how well a search finds it: the set would then favour that search."""
    wanted = max(PASSAGES, len(sources) + 1)
    ids = {c.chunk_id for c in sources}
    others = [c for c in search.top(question, wanted + len(sources)) if c.chunk_id not in ids]
    passages = [*sources, *others[: wanted - len(sources)]]
    random.Random(f"{seed}:{question}").shuffle(passages)
    return passages


def check(search: CorpusSearch, ask, language: str, question: str, facts: list[str],
          sources: list[Chunk], seed: int = 0) -> RoundTrip:
    """Ask ``question`` of its ``sources`` and the passages a search finds besides them;
    ``facts`` empty: an unanswerable question, which agrees when the model gives no answer
    about what it names from those passages."""
    passages = passages_for(search, question, sources, seed)
    answer = read_answer(ask(*build_prompt(language, question, passages)))
    ids = [c.chunk_id for c in passages]
    if facts:
        return RoundTrip(answer, not wordy(answer, facts) and states_all(answer, facts), ids)
    return RoundTrip(answer, not answers_it(question, answer, passages), ids)


# a question asking when, how often or how much, and an answer that says a time or an amount
# (no other answer is one: "HT-2023-0415" for "When is the renewal scheduled?" is a guess)
_ASKS_WHEN = re.compile(r"^\s*(?:when|how (?:often|long|many|much))\b|多久|多少|几|何时|什么时候",
                        re.IGNORECASE)
_SAYS_WHEN = re.compile(r"\b\d+(?:[.,]\d+)?\s*[a-z%]|(?<![\w-])(?:1[5-9]|20)\d\d(?![\w-])|"
                        r"\b(?:before|after|since|until|every|each|daily|weekly|"
                        rf"monthly|yearly|annually|once|twice|{EN_NUMBER_WORDS})\b"
                        rf"|[年月日周天时点次个{CN_NUMERALS}]",
                        re.IGNORECASE)


def check_elsewhere(search: CorpusSearch, ask, language: str, question: str,
                    facts: list[str], sources: list[Chunk]) -> RoundTrip:
    """Ask ``question`` of the passages a search ranks highest besides its ``sources``: a
    question specific to its source gets no answer from them, or the same facts (another
    chunk states them too). It disagrees (the question fits more than one thing) when the
    model answers otherwise with the passages' own words ("Zhang Min" for "Who is the mentor
    for the new engineers?" with the fact "an experienced colleague"); an answer the
    passages do not hold is the model's invention, and an answer without a time or amount
    to a question asking when or how much is a guess: neither says anything of the
    question."""
    ids = {c.chunk_id for c in sources}
    passages = [c for c in search.top(question, PASSAGES + len(sources))
                if c.chunk_id not in ids][:PASSAGES]
    answer = read_answer(ask(*build_prompt(language, question, passages)))
    said = " ".join(split_parts(answer))
    text = " ".join(c.text for c in passages)
    other = (bool(said) and bool(key_terms(said)) and overlap(said, text) >= 0.5
             and (not _ASKS_WHEN.search(question) or bool(_SAYS_WHEN.search(said)))
             and not states_all(answer, facts))
    return RoundTrip(answer, not other, [c.chunk_id for c in passages])


def answers_it(question: str, answer: str, passages: list[Chunk]) -> bool:
    """Whether an answer to an unanswerable question shows that the corpus answers it: its
    words are the passages' (not invented) and it says something of what the question names
    (a key term of the question). A small model asked for the warranty of CP-12 gives its
    service interval ("every 3 months"), or a contract id: words of the passages about
    nothing the question names, which keep the question (an answer a RAG pipeline must not
    give). "Ingrid Holm; mentor of Tomas Reyes" for "What is the relationship between Ingrid
    Holm and Tomas Reyes?" rejects it."""
    parts = [p for p in split_parts(answer) if not _NONE.match(p)]
    said = " ".join(parts)
    if not said or not key_terms(said):
        return False
    text = " ".join(c.text for c in passages)
    return overlap(said, text) >= 0.5 and overlap(question, said) > 0


CLAIM_SYSTEM = {
    "en": "You answer questions from the passages given. You reply with the answer only.",
    "zh": "你根据给出的段落回答问题。只回复答案。",
}
CLAIM_PROMPT = {
    "en": "Passages:\n{passages}\n\nStatement: {claim}\n\nWhich passage is this statement "
          "about? Reply with the passage number only.",
    "zh": "段落：\n{passages}\n\n陈述：{claim}\n\n这句陈述说的是哪一段？只回复段落编号。",
}


def check_claim(search: CorpusSearch, ask, language: str, claim: str, sources: list[Chunk],
                seed: int = 0) -> RoundTrip:
    """A claim agrees when the model, shown its source among the passages a search ranks
    highest for it, names the source as the passage it is about."""
    passages = passages_for(search, claim, sources, seed)
    lang = language if language in SYSTEM else "en"
    reply = ask(CLAIM_SYSTEM[lang], CLAIM_PROMPT[lang].format(passages=numbered(passages, claim),
                                                        claim=claim.strip()))
    number = re.search(r"\d+", reply)
    picked = int(number.group(0)) if number else 0
    ids = {c.chunk_id for c in sources}
    agrees = 1 <= picked <= len(passages) and passages[picked - 1].chunk_id in ids
    return RoundTrip(f"passage [{picked}]" if picked else "", agrees,
                     [c.chunk_id for c in passages])
