"""Three checks of what an answer is about, for the grounding check (no model call):

- **restated absent terms**: the answer states, as its own words, a key term of the question
  that no evidence block contains ("The head of purchasing at Norvale is …" when no block
  says "purchasing"; "… 的首席执行官是王芳" when no block says "首席执行官"). A small model
  that finds no answer often pins a real fact of the evidence on the question's words.
- **swapped subject**: the question names an entity of the corpus dictionary (a site, a
  service, a machine…), the answer does not name it but names another entity of the same
  type, and restates the question's other key terms ("山顶工厂的食堂几点开门？" answered
  "东岸工厂的食堂早上六点开门": the evidence speaks of the other plant).
- **the question repeated**: the answer is the question again ("哪些服务依赖仓储数据库？[1]、[2]"),
  with at most its citations and punctuation added.
- **the value asked for, not given**: the question asks for a price, a count or a date and
  the answer states no number or date that could be one ("What is the unit price of …?"
  answered "The contract fixes the unit price for two years": two years is no price).

Entities and their types come from the corpus dictionary (``check.grounding.aliases_file``,
the ``kg.extract_rules`` format); without one there is no subject check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from modrag_nodes.grounding.claims import (
    CITATION,
    extract_claims,
    key_terms,
)
from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.normalise import normalise as flat
from modrag_nodes.text.numbers import CN_NUMERALS, NUMBER, quantities
from modrag_nodes.text.scripts import is_han
from modrag_nodes.text.words import contains_phrase


@dataclass(frozen=True)
class Entity:
    name: str
    type: str
    spellings: frozenset[str]  # normalised name and aliases

    def named_in(self, norm_text: str) -> bool:
        return any(contains_phrase(norm_text, s) for s in self.spellings)


def typed_entities(entries: list[tuple[str, str, set[str]]]) -> list[Entity]:
    """The ``dictionary_entities`` entries that have a type, as entities."""
    return [Entity(name, kind, frozenset(spellings))
            for name, kind, spellings in entries if kind and spellings]


def type_words(entries: list[tuple[str, str, set[str]]]) -> list[str]:
    """The dictionary's entity types as words ("person", "persons", "machine" …): they name a
    kind of thing, which documents write by name ("the person responsible" is Chen Hao), so
    they are no key term a document must contain."""
    kinds = {kind.lower() for _, kind, _ in entries if kind}
    return sorted(kinds | {f"{kind}s" for kind in kinds})


def restated_terms(absent: list[str], answer: str, question: str = "",
                   present: Callable[[str], bool] | None = None) -> list[str]:
    """The absent key terms (as the question spells them) that the answer's text contains,
    leaving out its refusal-like clauses ("… do not mention X" names X without stating it)
    and the word that names the answer's type ("which company …": documents write the
    company's name, not "company", so an answer saying "the company is …" states nothing).
    A Chinese type word is a modifier and a head ("货运公司", freight company): its head
    (公司) names the type, and the modifier (货运) counts when the answer states it and
    ``present`` (whether some evidence block contains a term) says no block does."""
    norm = flat(_without_negations(answer))
    typed = answer_type_words(question)
    found = []
    for term in absent:
        key = flat(term)
        if key not in typed:
            if contains_phrase(norm, key):
                found.append(term)
        elif is_han(key) and len(key) >= 4 and present is not None:
            modifier = key[:-2]
            if contains_phrase(norm, modifier) and not present(modifier):
                found.append(term)
    return found


_TYPE_AFTER_EN = re.compile(r"\b(?:which|what)\s+([a-z][a-z\-]+)")
_TYPE_AFTER_ZH = ("哪家", "哪个", "哪台", "哪份", "哪位", "哪种", "哪一", "哪些", "什么")


def answer_type_words(question: str) -> set[str]:
    """The words right after "which"/"what" (哪家, 哪个, 什么 …) in ``question``, normalised."""
    norm = flat(question)
    words = set(_TYPE_AFTER_EN.findall(norm))
    for term in key_terms(question):
        if any(wh + term in norm for wh in _TYPE_AFTER_ZH):
            words.add(term)
    return words


_NEGATION = re.compile(
    r"[^.!?。！？\n]*(?:\bnot\b|\bno\b|n't|\bnever\b|没有|未|不)[^.!?。！？\n]*[.!?。！？]?",
    re.IGNORECASE)


def _without_negations(text: str) -> str:
    return _NEGATION.sub(" ", text)


def swapped_subjects(question: str, answer: str, entities: list[Entity],
                     extra_stop_words: list[str] | None = None) -> list[tuple[str, str]]:
    """(asked, answered) pairs: an entity the question names and the answer does not, and an
    entity of the same type the answer names instead, when the answer also restates another
    key term of the question (so it answers the question about the other entity)."""
    q_norm = flat(question)
    a_norm = flat(answer)
    asked = [e for e in entities if e.named_in(q_norm)]
    if not asked:
        return []
    spelled = {s for e in asked for s in e.spellings}
    others = [t for t in key_terms(question, extra_stop_words or [])
              if not any(t in s or s in t for s in spelled)]
    if not any(contains_phrase(a_norm, t) for t in others):
        return []
    pairs = []
    for entity in asked:
        if entity.named_in(a_norm):
            continue
        instead = [e for e in entities if e.type == entity.type and e is not entity
                   and e.named_in(a_norm) and not e.named_in(q_norm)]
        pairs.extend((entity.name, e.name) for e in instead)
    return pairs


_NOT_TEXT = re.compile(r"\[\d{1,3}\]|[\W_]+", re.UNICODE)


def says_nothing(answer: str) -> bool:
    """Whether ``answer`` holds no word or number, only block numbers and punctuation ("[2]":
    what a parser leaves of a reply that repeats the answer it was sent back for)."""
    return not _NOT_TEXT.sub("", normalise(answer))


def repeats_question(question: str, answer: str) -> bool:
    """Whether ``answer`` is ``question`` again (citations, punctuation and case aside), or
    the question with a few characters more."""
    q = _NOT_TEXT.sub("", normalise(question))
    a = _NOT_TEXT.sub("", normalise(answer))
    return bool(q) and bool(a) and (a == q or (q in a and len(a) <= len(q) + 3))


_ASKS_PRICE = re.compile(
    r"\b(?:price|prices|priced|cost|costs)\b|单价|价格|价钱|多少钱|费用|成本")
_ASKS_COUNT = re.compile(r"多少(?:个|台|名|人|家|份|次)|几(?:个|台|名|家|份|次)")
_ASKS_DATE = re.compile(
    r"\bwhen\b.*\b(?:expire|expires|end|ends|start|starts|begin|begins|open|opens|close|"
    r"closes|signed|founded|renewed|due)\b|\bwhat (?:date|day|time|year)\b|"
    r"什么时候|何时|哪一天|哪天|几点|哪一年|哪年|几月")
# a period named by its dynasty or era (唐末, 清代, 宋朝初年, 民国时期): a Chinese answer to
# "when" often gives one instead of a year
_CN_PERIOD = (r"(?:[夏商周秦汉晋隋唐宋辽金元明清]|三国|南北朝|五代|民国)"
              r"(?:朝|代)?(?:初年|末年|初期|中期|后期|晚期|前期|中叶|年间|时期|初|末)"
              r"|(?:[夏商周秦汉晋隋唐宋辽金元明清])(?:朝|代)")
DATE_WORDS = re.compile(  # a year (1227年, 1997), a century, decade or era, a clock hour (六点)
    rf"(?<![0-9\-])(?:1\d{{3}}|20\d{{2}})(?![0-9\-])|[0-9{CN_NUMERALS}]+\s*(?:年|世纪|点|时)"
    rf"|{_CN_PERIOD}"
    r"|\b(?:\d{1,2}(?:st|nd|rd|th)\s+century|(?:1\d|20)\d0s|bc|ad)\b")
# a technical question that asks for a name of code: an answer must write one (`x`, --flag,
# NAME_IN_CAPS, snake_case, dotted.name, call(), CamelCase)
_ASKS_CODE = re.compile(
    r"\b(?:which|what)\s+(?:[\w-]+\s+){0,3}?(?:flags?|options?|commands?|"
    r"environment variables?|variables?|arguments?|parameters?|keywords?|switch(?:es)?)\b")
_CODE = re.compile(
    r"`[^`\n]+`|(?<![\w-])--?[a-z][\w-]*|\b[A-Za-z]\w*_\w+\b|\b\w+\(\)"
    r"|\b[a-z_]\w*\.[a-z_]\w*\b|\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\b")
# a question whose first question word asks for an amount ("how long", "which compression
# level", "多高"): an answer must state a number
_WH = re.compile(r"\b(?:how|which|what|whose|who|whom|when|where|why)\b")
_ASKS_AMOUNT = re.compile(
    r"how (?:much|many|long|often|high|big|large|fast|old|far|tall|wide|deep|heavy)\b"
    r"|(?:which|what)\s+(?:[\w-]+\s+){0,2}?(?:number|count|size|length|height|width|depth|"
    r"weight|speed|rate|temperature|pressure|percentage|ratio|timeout|interval|duration|port|"
    r"threshold|level|amount|capacity|frequency)s?\b")
_ASKS_AMOUNT_ZH = re.compile(r"多(?:少|高|长|大|久|重|快|远|宽|深)")
# how often, in words: an answer to "how often" need not hold a digit
_FREQUENCY_WORD = re.compile(
    r"\b(?:hourly|daily|weekly|fortnightly|monthly|quarterly|yearly|annually|once|twice)\b"
    r"|\b(?:every|each)\s+(?:other\s+)?(?:hour|day|week|fortnight|month|quarter|year|shift)\b"
    r"|每(?:天|日|周|星期|月|季度|年|小时)")
_TIME_UNITS = frozenset(("h", "min", "s", "day", "week", "month", "year"))
# a number as the answer metrics read one (digits, 五百, "five"), or a count word
_NUMBER_WORD = re.compile(NUMBER + r"|\b(?:thousand|dozen)\b")


def _asks_amount(question: str) -> bool:
    """Whether the question's first question word asks for an amount (English), or it asks
    多少, 多高, 多久 … (Chinese)."""
    first = _WH.search(question)
    if first and _ASKS_AMOUNT.match(question, first.start()):
        return True
    return bool(_ASKS_AMOUNT_ZH.search(question))


def missing_asked_value(question: str, answer: str) -> str:
    """What the question asks for ("a price", "a number", "a date") when the answer states
    nothing that could be it; "" when it does or the question asks for none of them."""
    q_norm = flat(question)
    claims = extract_claims(answer)
    if _ASKS_PRICE.search(q_norm):
        for claim in claims:
            if claim.kind == "number":
                return ""
            if claim.kind == "quantity" and any(
                    unit not in _TIME_UNITS for _, unit in quantities(claim.text)):
                return ""
        return "a price"
    if _ASKS_COUNT.search(q_norm) or _asks_amount(q_norm):
        if any(c.kind in ("number", "quantity", "date") for c in claims):
            return ""
        stated = flat(_without_negations(CITATION.sub(" ", answer)))  # "[3]" is no count
        return ("" if _NUMBER_WORD.search(stated) or _FREQUENCY_WORD.search(stated)
                else "a number")
    if _ASKS_CODE.search(q_norm) and not _CODE.search(_without_negations(answer)):
        return "a name of code (a flag, option, command or variable)"
    if _ASKS_DATE.search(q_norm):
        if any(c.kind == "date" for c in claims) or DATE_WORDS.search(flat(answer)):
            return ""
        return "a date"
    return ""
