"""What an answer states: facts and refusals, matched after one normalisation (NFKC, case,
thousands separators; Chinese and English number words) with the quantities of
``modrag_nodes.text.numbers``.

The answer metrics (``modrag_studio.evaluation.answer_metrics``) score with it and the
grounding check (``check.grounding``) looks an answer's claims up with it, so both read a
text the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.numbers import BARE_NUMBER, quantities, quantity_pattern
from modrag_nodes.text.words import contains_phrase, split
from modrag_studio.engine.core.node import Answer

# Words a fact may carry that an answer need not repeat once the quantities match (a
# corpus's own words, such as "operating" in "500 operating hours", are the ``fillers``
# argument of the functions below, never a default).
FILLERS = frozenset((
    "every", "each", "per", "of", "the", "a", "an", "about", "approximately", "around",
    "roughly", "is", "are", "at", "in", "on", "after", "within", "每", "约", "大约", "个",
    "为", "的", "是",
))


def content_words(text: str, fillers: tuple[str, ...] = ()) -> list[str]:
    """Words (Latin runs) and single CJK characters of ``text``, quantities removed."""
    stripped = quantity_pattern(fillers).sub(" ", normalise(text))
    skip = FILLERS | {normalise(w) for w in fillers}
    return [w for w in split(stripped, han="chars") if w not in skip]


def _written_forms(fact_n: str) -> tuple[str, ...]:
    """A fact as written, and its English plural when it ends on a letter word ("Monday"
    is stated by "on Mondays")."""
    if re.search(r"[a-z]{3,}$", fact_n):
        return fact_n, fact_n + "s", fact_n + "es"
    return (fact_n,)


def fact_found(fact: str, answer_text: str, fillers: Iterable[str] = ()) -> bool:
    """Whether ``answer_text`` states ``fact``.

    A plain substring match after normalisation counts. Otherwise, a fact holding numbers
    with units counts when each of its quantities appears in the answer (in any unit
    spelling or language) and its remaining words do too; a bare number ("640") must appear
    as a number. ``fillers``: words of the corpus that may stand between a number and its
    unit and that a fact may carry without the answer repeating them.
    """
    fillers = tuple(fillers)
    fact_n, answer_n = normalise(fact), normalise(answer_text)
    if fact_n and any(contains_phrase(answer_n, form) for form in _written_forms(fact_n)):
        return True
    fact_quantities = quantities(fact, fillers)
    if fact_quantities:
        answer_quantities = quantities(answer_text, fillers)
        if not all(q in answer_quantities for q in fact_quantities):
            return False
    else:
        numbers = BARE_NUMBER.findall(fact_n)
        if not numbers:
            return False
        answer_numbers = {float(n) for n in BARE_NUMBER.findall(answer_n)}
        if not all(float(n) in answer_numbers for n in numbers):
            return False
    answer_words = set(content_words(answer_text, fillers))
    return all(word in answer_words for word in content_words(fact, fillers))


def fact_recall(expected_facts: Sequence[Sequence[str]], answer_text: str,
                fillers: Iterable[str] = ()) -> tuple[float | None, list[str]]:
    """Share of expected facts stated (an item is stated when any alternative is), and the
    facts missed (their first alternative)."""
    if not expected_facts:
        return None, []
    missed = [alts[0] for alts in expected_facts
              if not any(fact_found(alt, answer_text, fillers) for alt in alts)]
    return 1 - len(missed) / len(expected_facts), missed


# --- refusals --------------------------------------------------------------------------

_SOURCE_WORDS = ("evidence|documents?|docs|context|texts?|passages?|sources?|blocks?|excerpts?"
                 "|information|materials?|records?|data")
REFUSAL_PATTERNS = (
    r"\bi (?:do not|don't) know\b", r"\b(?:cannot|can't|can ?not|unable to) (?:be )?"
    r"(?:answer|determine|find|tell|say|provide)", r"\bnot (?:enough|sufficient) information\b",
    r"\b(?:no|insufficient) (?:relevant )?(?:information|evidence|data)\b",
    r"\b(?:does not|do not|doesn't|don't) (?:mention|say|specify|state)\b",
    # "does not support / contain …" declines only when the evidence is what lacks it: "The
    # library does not support Python 2" is an answer, "The documents do not contain …" is not
    rf"\b(?:{_SOURCE_WORDS})\b(?:\s+[\w'-]+){{0,3}}\s+"
    r"(?:does not|do not|doesn't|don't) (?:contain|support|provide|include|cover|answer)\b",
    r"\bnot (?:mentioned|stated|specified)\b",
    # "not found / provided / available" likewise: "raises KeyError if the key is not found"
    # is an answer; "not found in the documents", "the information is not available" are not
    rf"\bnot (?:provided|found|available|covered|given) (?:in|by) (?:the |any |these )?"
    rf"(?:{_SOURCE_WORDS})\b",
    rf"\b(?:{_SOURCE_WORDS})\b(?:\s+[\w'-]+){{0,3}}\s+(?:is|are) not "
    r"(?:provided|found|available|covered|given)\b",
    r"\bthere is no (?:mention|information|record)\b", r"\bnone of the documents\b",
    r"无法回答", r"无法确定", r"无法找到", r"不知道", r"没有(?:提到|提及|相关|找到|关于|足够)",
    r"未(?:提及|提到|找到|说明|记载)", r"(?:证据|文档|资料|材料)中?(?:没有|并未|未)", r"不清楚",
    r"无相关", r"没有.{0,12}信息",
)
REFUSAL = re.compile("|".join(REFUSAL_PATTERNS), re.IGNORECASE)


def is_refusal(answer: Answer | str) -> bool:
    """A fallback answer, or one whose text declines to answer (English or Chinese)."""
    if isinstance(answer, Answer):
        if answer.fallback:
            return True
        answer = answer.text
    return bool(REFUSAL.search(normalise(answer)))
