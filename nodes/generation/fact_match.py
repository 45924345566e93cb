"""What an answer states: numbers with units, facts and refusals, matched after one
normalisation (NFKC, case, thousands separators; Chinese and English number words).

The answer metrics (``modrag_studio.evaluation.answer_metrics``) score with it and the
grounding check (``check.grounding``) looks an answer's claims up with it, so both read a
text the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from modrag_studio.engine.core.datatypes import Answer

# --- numbers and units -----------------------------------------------------------------

UNITS: dict[str, tuple[str, ...]] = {
    "h": ("hours", "hour", "hrs", "hr", "h", "个小时", "小时", "钟头"),
    "min": ("minutes", "minute", "mins", "min", "分钟"),
    "s": ("seconds", "second", "secs", "sec", "s", "秒钟", "秒"),
    "day": ("days", "day", "天", "日"),
    "week": ("weeks", "week", "wks", "个星期", "星期", "周"),
    "month": ("months", "month", "个月", "月"),
    "year": ("years", "year", "yrs", "年"),
    "km": ("kilometres", "kilometers", "kilometre", "kilometer", "km", "公里", "千米"),
    "degc": ("degrees celsius", "degree celsius", "°c", "℃", "摄氏度", "度"),
    "t": ("tonnes", "tonne", "tons", "ton", "t", "吨"),
    "rpm": ("rpm", "revolutions per minute", "转每分钟", "转/分"),
    "pct": ("percent", "per cent", "%", "％"),
    "person": ("people", "persons", "employees", "staff", "人", "名员工", "名"),
}
UNIT_ALTERNATIVES = sorted(
    ((alias, unit) for unit, aliases in UNITS.items() for alias in aliases),
    key=lambda pair: -len(pair[0]),
)
UNIT_OF = dict(UNIT_ALTERNATIVES)
_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
              "六": 6, "七": 7, "八": 8, "九": 9}
_CN_SCALES = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_EN_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
}
NUMBER = (r"(?P<num>(?<![a-z0-9.\-])\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万]+|\b(?:"
           + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + r")\b)")
UNIT_GROUP = (r"(?P<unit>" + "|".join(re.escape(alias) for alias, _ in UNIT_ALTERNATIVES)
               + r")(?![a-z])")
QUANTITY = re.compile(NUMBER + r"\s*" + UNIT_GROUP)


@lru_cache(maxsize=32)
def quantity_pattern(fillers: tuple[str, ...] = ()) -> re.Pattern[str]:
    """Number, unit, and between them at most one of ``fillers`` (words a corpus puts
    there: "500 operating hours" with ``("operating",)``)."""
    if not fillers:
        return QUANTITY
    between = "|".join(re.escape(normalise(w)) for w in sorted(fillers, key=len, reverse=True))
    return re.compile(NUMBER + r"\s*(?:(?:" + between + r")\s*)?" + UNIT_GROUP)
BARE_NUMBER = re.compile(r"(?<![a-z0-9.\-])\d+(?:\.\d+)?(?![0-9a-z\-])")
# Words a fact may carry that an answer need not repeat once the quantities match (a
# corpus's own words, such as "operating" in "500 operating hours", are the ``fillers``
# argument of the functions below, never a default).
FILLERS = frozenset((
    "every", "each", "per", "of", "the", "a", "an", "about", "approximately", "around",
    "roughly", "is", "are", "at", "in", "on", "after", "within", "每", "约", "大约", "个",
    "为", "的", "是",
))


#: A thousands separator: the comma of "2,000" (removed before numbers are compared). The
#: group ends where the digits do: "每2,000小时" has no word boundary after its zeros.
THOUSANDS_SEPARATOR = re.compile(r"(?<=\d)[,，](?=\d{3}(?!\d))")


def normalise(text: str) -> str:
    """NFKC (full-width digits and letters to ASCII), case-folded, thousands separators
    removed, white space folded."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = THOUSANDS_SEPARATOR.sub("", text)
    return " ".join(text.split())


def _cn_number(text: str) -> float | None:
    total, current = 0, 0
    for char in text:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        elif char in _CN_SCALES:
            scale = _CN_SCALES[char]
            total += (current or 1) * scale
            current = 0
        else:
            return None
    return float(total + current)


def parse_number(token: str) -> float | None:
    if token[0].isdigit():
        return float(token)
    if token in _EN_NUMBERS:
        return float(_EN_NUMBERS[token])
    return _cn_number(token)


def _quantity_matches(text: str, fillers: Iterable[str] = ()
                      ) -> Iterator[tuple[re.Match[str], float, str]]:
    """Each quantity of ``text``: its match in the normalised text, value, canonical unit."""
    for match in quantity_pattern(tuple(fillers)).finditer(normalise(text)):
        value = parse_number(match.group("num"))
        if value is not None:
            yield match, value, UNIT_OF[match.group("unit")]


def quantities(text: str, fillers: Iterable[str] = ()) -> list[tuple[float, str]]:
    """(value, canonical unit) pairs in ``text``: "500 hours", "500小时", "５００ h",
    "四个小时" and "every 3 months" / "每3个月" all read the same."""
    return [(value, unit) for _, value, unit in _quantity_matches(text, fillers)]


_FREQUENCY_BEFORE = re.compile(r"(?:\b(?:every|each|per)\s+|每隔\s*|每\s*)$")


def frequencies(text: str) -> set[tuple[float, str]]:
    """The (value, unit) quantities of ``text`` stated as a frequency ("every 3 months",
    "每3个月"); "the last two years" states none."""
    return {(value, unit) for match, value, unit in _quantity_matches(text)
            if _FREQUENCY_BEFORE.search(match.string[:match.start()])}


def content_words(text: str, fillers: tuple[str, ...] = ()) -> list[str]:
    """Words (Latin runs) and single CJK characters of ``text``, quantities removed."""
    stripped = quantity_pattern(fillers).sub(" ", normalise(text))
    words = re.findall(r"[a-z0-9][a-z0-9\-_.]*[a-z0-9]|[a-z0-9]|[\u3400-\u9fff]", stripped)
    skip = FILLERS | {normalise(w) for w in fillers}
    return [w for w in words if w not in skip]


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
    if fact_n and contains_phrase(answer_n, fact_n):
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


def contains_phrase(text: str, phrase: str) -> bool:
    """``phrase`` in ``text``, not inside a longer Latin word or number ("640" not in "6400")."""
    left = r"(?<![a-z0-9])" if re.match(r"[a-z0-9]", phrase) else ""
    right = r"(?![a-z0-9])" if re.search(r"[a-z0-9]$", phrase) else ""
    return re.search(left + re.escape(phrase) + right, text) is not None


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

REFUSAL_PATTERNS = (
    r"\bi (?:do not|don't) know\b", r"\b(?:cannot|can't|can ?not|unable to) (?:be )?"
    r"(?:answer|determine|find|tell|say|provide)", r"\bnot (?:enough|sufficient) information\b",
    r"\b(?:no|insufficient) (?:relevant )?(?:information|evidence|data)\b",
    r"\b(?:does|do) not (?:contain|mention|say|support|provide|include|specify)",
    r"\b(?:doesn't|don't) (?:contain|mention|say|support|provide|include|specify)",
    r"\bnot (?:mentioned|stated|specified|provided|found|available|covered)\b",
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
