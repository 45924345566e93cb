"""Claims of an answer and where the evidence states them (no model call).

A claim is a number with its unit, a bare number, a date or time, an identifier (part
numbers, host names, contract ids), a proper name or a name of code (a `backticked` span or a
flag, found only as written: ``-installer`` is not ``--installer``). Text is compared after the
normalisation of the answer metrics: NFKC (full-width digits), case folding, thousands
separators removed; quantities compare as (value, unit), so "500 hours", "500小时" and
"五百小时" are one claim, and "四个小时" matches "4 hours".

Key terms of a question are its identifiers and content words (English words outside a
stop list, Chinese words cut by jieba when it is installed); a term no evidence block
contains is "absent", the sign of a question the evidence does not answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from modrag_nodes.text.normalise import normalise as flat
from modrag_nodes.text.normalise import normalise_map
from modrag_nodes.text.numbers import (
    DECIMAL,
    NUMBER,
    QUANTITY,
    STANDALONE_NUMBER,
    UNIT_GROUP,
    UNIT_OF,
    parse_number,
    quantities,
)
from modrag_nodes.text.scripts import HAN, LATIN_LETTERS, is_han, language_of
from modrag_nodes.text.stopwords import question_stop_words, word_list
from modrag_nodes.text.words import (
    LETTER_WORD,
    bigrams,
    chinese_action_words,
    contains_phrase,
    loaded_jieba,
)
from modrag_studio.engine.core.node import Claim

CITATION = re.compile(r"\[[^\[\]\n]{1,40}\]|【[^【】\n]{1,40}】|［[^［］\n]{1,40}］")
# a block named in prose ("found in evidence blocks 3 and 4", "证据块 2"): a citation, not a
# number the answer states (small models write them instead of, or beside, "[3]")
_BLOCK_REFERENCE = re.compile(
    r"\b(?:evidence\s+)?blocks?\s+\[?\d{1,3}\]?(?:\s*(?:,|and|or|&)\s*\[?\d{1,3}\]?)*"
    r"|证据块\s*\d{1,3}(?:\s*[、,，和与]\s*\d{1,3})*|第\s*\d{1,3}\s*(?:个)?(?:证据)?块",
    re.IGNORECASE)
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH_ALT = "|".join(_MONTHS) + "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
_DATE = re.compile(
    r"(?<![0-9])\d{4}-\d{1,2}(?:-\d{1,2})?(?![0-9])|\d{4}年\d{1,2}月(?:\d{1,2}[日号])?"
    r"|(?<![0-9])\d{1,2}:\d{2}(?![0-9])"
    rf"|\b(?:{_MONTH_ALT})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)? (?:{_MONTH_ALT})\.?(?: \d{{4}})?\b"
    rf"|\b(?:{_MONTH_ALT}) \d{{4}}\b")
_IDENTIFIER = re.compile(
    r"(?<![a-z0-9_\-.])(?=[a-z0-9_.\-]*[0-9])(?=[a-z0-9_.\-]*[a-z])"
    r"[a-z0-9]+(?:[\-_.][a-z0-9]+)+(?![a-z0-9_\-])"
    r"|(?<![a-z0-9_\-.])[a-z]{1,4}[0-9]{2,}(?![a-z0-9_\-])")
# Evidence may put one word between a number and its unit ("500 operating hours", "500运行小时"):
# the answer's "500 hours" is then stated there.
_LENIENT_QUANTITY = re.compile(NUMBER + rf"\s*(?:[a-z]+\s+|[{HAN}]{{1,2}})?"
                               + UNIT_GROUP)
# a name of code the answer writes: a `backticked` span or a command-line flag (--strict, -v)
_CODE_SPAN = re.compile(r"`([^`\n]{2,80})`|(?<![\w`-])(--?[a-z](?:[\w-]*[a-z0-9])?)(?![\w-])")
_UNIT_WORD = re.compile(r" ?([a-z]{1,5}|%|°c?)(?![a-z])")
_LIST_MARK = re.compile(r"^\s*\d{1,2}[.)]\s", re.MULTILINE)
_NAME = re.compile(r"(?<![\w'])[A-Z][A-Za-z]+(?:[ \-][A-Z][A-Za-z]+)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;。！？]|\n)\s*$")
# Words that start answers or name the prompt's parts, never a claim in themselves.
_ANSWER_WORDS = frozenset((
    "evidence", "block", "blocks", "document", "documents", "answer", "question", "source",
    "sources", "note", "yes", "no", "however", "therefore", "also", "according", "based",
    "both", "each", "every", "there", "these", "those", "this", "that", "it", "its",
    "they", "he", "she", "his", "her", "their", "the", "a", "an", "in", "on", "at", "if",
    "for", "from", "to", "of", "and", "or", "but", "as", "by", "with", "so", "then", "when",
))
@dataclass
class Block:
    """One evidence block, normalised once: its text, numbers and quantities."""

    text: str
    numbers: set[float] = field(default_factory=set)
    quantities: set[tuple[float, str]] = field(default_factory=set)

    @classmethod
    def of(cls, raw: str) -> Block:
        text = flat(raw)
        found = set(quantities(raw)) | {
            (value, UNIT_OF[m.group("unit")]) for m in _LENIENT_QUANTITY.finditer(text)
            if (value := parse_number(m.group("num"))) is not None}
        numbers = {float(n) for n in STANDALONE_NUMBER.findall(text)} | {v for v, _ in found}
        numbers |= {float(n) for n in DECIMAL.findall(text)}
        return cls(text, numbers, found)


def dictionary_entities(path: str | Path | None) -> list[tuple[str, str, set[str]]]:
    """(name, type, normalised spellings) of each entity of a corpus dictionary file
    (``entities[].name``, ``type`` and ``aliases``, the format of ``kg.extract_rules``)."""
    if not path:
        return []
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    entries = []
    for entity in data.get("entities", []):
        names = [entity.get("name", ""), *entity.get("aliases", [])]
        spellings = {flat(n) for n in names if n}
        entries.append((entity.get("name", ""), entity.get("type", ""), spellings))
    return entries


def alias_groups(entries: list[tuple[str, str, set[str]]]) -> list[set[str]]:
    """The spellings of each ``dictionary_entities`` entry that has more than one."""
    return [spellings for _, _, spellings in entries if len(spellings) > 1]


def spellings(claim_norm: str, aliases: list[set[str]]) -> set[str]:
    """A normalised name with every alias of the dictionary entity it spells."""
    found = {claim_norm}
    for group in aliases:
        if claim_norm in group:
            found |= group
    return found


def extract_claims(answer: str) -> list[Claim]:
    """The claims of ``answer`` in reading order, with spans into ``answer``. Citations
    (``[1]``, ``[doc_id]``, "evidence block 3" in prose) and list markers are not claims."""
    masked = CITATION.sub(lambda m: " " * len(m.group(0)), answer)
    masked = _BLOCK_REFERENCE.sub(lambda m: " " * len(m.group(0)), masked)
    masked = _LIST_MARK.sub(lambda m: " " * len(m.group(0)), masked)
    norm, index = normalise_map(masked)
    taken: list[tuple[int, int]] = []
    claims: list[Claim] = []

    def add(kind: str, first: int, last: int) -> None:
        if first >= last or any(s < last and first < e for s, e in taken):
            return
        taken.append((first, last))
        claims.append(Claim(text=answer[first:last], kind=kind, start=first, end=last))

    def add_norm(kind: str, match: re.Match[str]) -> None:
        if match.end() > match.start():
            add(kind, index[match.start()], index[match.end() - 1] + 1)

    for match in _CODE_SPAN.finditer(masked):  # a span a citation was put into is not judged
        group = 1 if match.group(1) is not None else 2
        if not CITATION.search(answer, match.start(group), match.end(group)):
            add("code", match.start(group), match.end(group))
    for match in _DATE.finditer(norm):
        add_norm("date", match)
    for match in _IDENTIFIER.finditer(norm):
        add_norm("identifier", match)
    for match in QUANTITY.finditer(norm):
        add_norm("quantity", match)
    for match in STANDALONE_NUMBER.finditer(norm):
        unit = _UNIT_WORD.match(norm, match.end())
        if unit and unit.group(1) not in question_stop_words():
            first = index[match.start()]
            add("number", first, index[unit.end() - 1] + 1)
        else:
            add_norm("number", match)
    for start, end in _names(masked):
        add("name", start, end)
    return sorted(claims, key=lambda c: c.start)


def _names(text: str) -> Iterable[tuple[int, int]]:
    """Spans of capitalised word runs that look like proper names ("Ingrid Holm",
    "Baltic Bearing Supply"); a sentence's first word counts only in a run of two."""
    for match in _NAME.finditer(text):
        words = [(m.start() + match.start(), m.end() + match.start())
                 for m in LATIN_LETTERS.finditer(match.group(0))]
        while words and text[words[0][0]:words[0][1]].lower() in _ANSWER_WORDS:
            words.pop(0)
        while words and text[words[-1][0]:words[-1][1]].lower() in _ANSWER_WORDS:
            words.pop()
        if not words:
            continue
        at_start = bool(_SENTENCE_START.search(text[:words[0][0]]))
        if len(words) == 1 and (at_start or len(text[words[0][0]:words[0][1]]) < 3):
            continue
        yield words[0][0], words[-1][1]


def claim_found(claim: Claim, block: Block, aliases: list[set[str]]) -> bool:
    """Whether ``block`` states ``claim``."""
    text = flat(claim.text)
    if claim.kind == "quantity":
        wanted = quantities(claim.text)
        return bool(wanted) and all(q in block.quantities for q in wanted)
    if claim.kind == "number":
        value = DECIMAL.match(text)
        return value is not None and float(value.group(0)) in block.numbers
    if claim.kind == "date":
        if contains_phrase(block.text, text):
            return True
        parts = [float(n) for n in re.findall(r"\d+", text)]
        month = next((n for n, name in enumerate(_MONTHS, 1) if name[:3] in text), None)
        parts += [float(month)] if month else []
        return bool(parts) and all(p in block.numbers for p in parts)
    if claim.kind == "code":  # as written, not a part of a longer name (-x is not --x)
        return re.search(rf"(?<![\w-]){re.escape(text)}(?![\w-])", block.text) is not None
    if any(contains_phrase(block.text, s) for s in spellings(text, aliases)):
        return True
    if claim.kind == "name" and re.search(r"[a-z]{3}s$", text):  # "Reporting Services"
        singular = re.sub(r"(?:(?<=ss)es|(?<=[^s])s)$", "", text)
        return any(contains_phrase(block.text, s) for s in spellings(singular, aliases))
    return False


def locate(claims: list[Claim], blocks: list[Block], cited: set[int], question: str,
           aliases: list[set[str]]) -> list[Claim]:
    """Each claim with its verdict: ``cited`` (in a block the answer cites; every block
    when it cites none), ``evidence`` (another block), ``question`` or ``missing``."""
    asked = Block.of(question)
    located = []
    for claim in claims:
        hits = [n for n, block in enumerate(blocks, start=1)
                if claim_found(claim, block, aliases)]
        in_cited = [n for n in hits if n in cited or not cited]
        if in_cited:
            verdict, block = "cited", in_cited[0]
        elif hits:
            verdict, block = "evidence", hits[0]
        elif claim_found(claim, asked, aliases):
            verdict, block = "question", None
        else:
            verdict, block = "missing", None
        located.append(claim.model_copy(update={"verdict": verdict, "block": block}))
    return located


def key_terms(question: str, extra_stop_words: Iterable[str] = ()) -> list[str]:
    """The question's identifiers and content words, normalised, in order."""
    norm = flat(question)
    stop = question_stop_words() | {flat(w) for w in extra_stop_words}
    terms: list[str] = []
    for match in _IDENTIFIER.finditer(norm):
        terms.append(match.group(0))
    rest = _IDENTIFIER.sub(" ", norm)
    for word in LETTER_WORD.findall(rest):
        word = word.removesuffix("'s")
        if len(word) < 3 or word in stop or word.endswith("ly"):
            continue
        terms.append(word)
    chinese = "".join(ch if is_han(ch) else " " for ch in rest)
    for word in _cut_chinese(chinese):
        if len(word) >= 2 and word not in word_list("question_words_zh") and word not in stop:
            terms.append(word)
    return list(dict.fromkeys(terms))


def is_plain_word(term: str) -> bool:
    """Whether a key term is one English word (not a phrase, an identifier or a Chinese
    word)."""
    term = term.strip()
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z\-']*", term)) and not is_identifier(term)


def is_identifier(term: str) -> bool:
    """Whether a key term is an identifier (a part number, host name, contract id)."""
    return bool(_IDENTIFIER.fullmatch(flat(term)))


def _cut_chinese(text: str) -> list[str]:
    if not text.strip():
        return []
    try:
        jieba = loaded_jieba()
    except ImportError:  # no segmenter: whole runs of Chinese characters
        return text.split()
    return [w.strip() for w in jieba.lcut(text) if w.strip()]


def term_present(term: str, blocks: list[Block], aliases: list[set[str]]) -> bool:
    """Whether some block contains ``term`` (an English word also by its first letters:
    "serviced" finds "service"; a Chinese word of three or more characters also when all
    but one of its two-character pieces appear)."""
    written = spellings(term, aliases)
    for block in blocks:
        if any(contains_phrase(block.text, s) for s in written):
            return True
        if re.fullmatch(r"[a-z][a-z\-']+", term):
            stem = term[: max(4, len(term) - 3)]
            if re.search(r"(?<![a-z])" + re.escape(stem), block.text):
                return True
        elif is_han(term) and len(term) >= 3:
            pieces = bigrams(term)
            if sum(p in block.text for p in pieces) >= len(pieces) - 1:
                return True
    return False


def absent_terms(question: str, blocks: list[Block], raw_blocks: list[str],
                 aliases: list[set[str]], extra_stop_words: Iterable[str] = ()) -> list[str]:
    """Key terms of ``question`` that no block contains, spelt as in the question. A word is
    judged only when every block is written in its script (an English word may be translated
    in a Chinese block); identifiers are judged always."""
    scripts = {language_of(text) for text in raw_blocks}
    norm, index = normalise_map(question)
    # a Chinese question's verbs and adjectives say how it asks; documents write them in other
    # words (担任 as 任, 擅长 as 善于): only its nouns and names must be written
    actions = chinese_action_words(norm) if any(is_han(ch) for ch in norm) else set()
    absent = []
    for term in key_terms(question, extra_stop_words):
        identifier = is_identifier(term)
        script = "zh" if is_han(term) else "en"
        if not identifier and (scripts - {script} or term in actions):
            continue
        if not term_present(term, blocks, aliases):
            at = norm.find(term)
            absent.append(question[index[at]:index[at + len(term) - 1] + 1] if at >= 0 else term)
    if not scripts - {"en"}:  # a Chinese block may translate the phrase
        for phrase in compound_terms(question, extra_stop_words):
            if (not any(word in absent for word in phrase.split(" of "))
                    and not any(contains_phrase(block.text, phrase) for block in blocks)):
                at = norm.find(phrase)
                absent.append(question[index[at]:index[at + len(phrase) - 1] + 1])
    return absent


_COMPOUND = re.compile(
    r"(?<![a-z0-9_\-])([a-z][a-z\-]{2,}) of ([a-z][a-z\-]{2,})(?![a-z0-9_\-])")


def compound_terms(question: str, extra_stop_words: Iterable[str] = ()) -> list[str]:
    """The question's "<noun> of <noun>" phrases with no article between ("head of
    purchasing", not "price of the bearing"): a role or a measure that the evidence names as
    a whole; each of its two words may be written in the evidence apart ("the head of IT",
    "Purchasing keeps a register") while the phrase is not."""
    stop = question_stop_words() | {flat(w) for w in extra_stop_words}
    norm = flat(question)
    return list(dict.fromkeys(
        match.group(0) for match in _COMPOUND.finditer(norm)
        if match.group(1) not in stop and match.group(2) not in stop))
