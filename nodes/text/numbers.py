"""Numbers and quantities with units, English and Chinese: "500 hours", "500小时", "５００ h",
"五百小时", "四个小时" and "every 3 months" / "每3个月" read as (value, canonical unit).
Patterns match normalised text (``modrag_nodes.text.normalise``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from modrag_nodes.text.normalise import normalise

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
#: Chinese numeral characters and English number words, as pattern pieces.
CN_NUMERALS = "".join(_CN_DIGITS) + "".join(_CN_SCALES)
EN_NUMBER_WORDS = "|".join(sorted(_EN_NUMBERS, key=len, reverse=True))
NUMBER = (rf"(?P<num>(?<![a-z0-9.\-])\d+(?:\.\d+)?|[{CN_NUMERALS}]+|\b(?:{EN_NUMBER_WORDS})\b)")
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
#: A decimal number, as written ("2", "1.5"), wherever it stands.
DECIMAL = re.compile(r"\d+(?:\.\d+)?")
#: A number with its separators, as written: "2,000", "1.5", "3/15/2024", "10:30".
NUMBER_RUN = re.compile(r"\d+(?:[.,/:-]\d+)*")
#: A decimal number that stands alone: not part of a word, an identifier, a time or a range.
STANDALONE_NUMBER = re.compile(r"(?<![a-z0-9.\-:])\d+(?:\.\d+)?(?![0-9a-z\-:])")


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
