"""Cheap, deterministic question candidates: sentences of a content chunk that state a value
(a number with its unit, a version, a default, a flag, an identifier, a code) about a named
subject. The value is the expected fact, found here, not by the model; the model only
rephrases the sentence into a question that names the subject, in a short prompt whose
instructions come first (the same prefix every call, which the backend can reuse)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import language_of
from modrag_nodes.text.words import words
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.checks.misreads import example_code_value, widened
from modrag_studio.evaluation.generation.reading.content import (
    document_subject,
    first_person,
    package_name,
    prose,
    skip_reason,
)
from modrag_studio.evaluation.generation.reading.prompts import closed_question
from modrag_studio.evaluation.generation.reading.subjects import named_subjects

_UNITS = (r"%|x|×|ms|milliseconds?|s|sec|seconds?|minutes?|min|hours?|h|days?|weeks?|months?|"
          r"years?|[kKMGT]i?B|bytes?|bits?|tokens?|dimensions?|dims?|parameters?|params|layers?|"
          r"threads?|cores?|tons?|t|kg|g|mm|cm|m|km|bar|°C|rpm|V|W|kW|Hz|MHz|GHz|"
          r"times faster|times|languages?|models?|characters?|chars?|lines?|rows?|columns?")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("default", re.compile(r"\bdefaults? (?:to|is|of|value is)\s+(?P<v>`[^`]{1,40}`|[\w.\-/+]+)",
                           re.I)),
    ("quantity", re.compile(rf"(?<![\w.\-])(?P<v>\d+(?:[.,]\d+)*(?:\s?-\s?\d+(?:[.,]\d+)*)?"
                            rf"(?:\+(?![\w+]))?\s?(?:[a-z]+[ -])?(?:{_UNITS}))(?![\w])")),
    ("version", re.compile(r"\b(?P<v>(?:Python|CUDA|Rust|Node(?:\.js)?|GCC|Java|Go)\s+"
                           r"\d+(?:\.\d+)*(?:\+(?![\w+]))?)", re.I)),
    ("flag", re.compile(r"(?<![\w-])(?P<v>--[a-z][\w-]{1,30}(?:=\S+)?)")),
    ("identifier", re.compile(r"(?P<v>`[^`\s][^`]{0,38}[^`\s]`|`[^`\s]`)")),
    ("name", re.compile(r"(?<![\w-])(?P<v>[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+)(?![\w-])")),
    ("code", re.compile(r"(?<![\w-])(?P<v>[A-Z]{2,}[A-Z0-9]*-[A-Z0-9][A-Z0-9-]*)(?![\w-])")),
)
#: the kinds of value, the most question-worthy first
KIND_RANK = {kind: i for i, (kind, _) in enumerate(_PATTERNS)}
# prose cut finer than the checks' sentences (``reading.sentences``): at semicolons and list
# items, no end after an abbreviation ("needs a C compiler, e.g. `gcc`, then ..."); the
# checks' rule here drops 13 and adds 11 of pkgdocs-dev's value facts
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bcf\.)\s+"
                       r"(?=[A-Z`\"'(\d])|;\s+|\n\s*\n|\n\s*[-*+]\s+|\n(?=\s*\d+\.\s)")
MIN_WORDS, MAX_WORDS = 6, 45
_NOT_NAME_START = frozenset(("the", "a", "an", "how", "what", "why", "on", "in", "this",
                             "pull", "open", "see", "please", "if", "for"))


@dataclass(frozen=True)
class ValueFact:
    """A sentence stating ``value`` (of ``kind``) about ``subject``."""

    sentence: str
    value: str
    kind: str
    subject: str
    language: str = "en"


def sentences(text: str) -> list[str]:
    """The sentences of ``text``'s prose (headings, badges and code left out), joined over
    line wraps."""
    parts = _SENTENCE.split(prose(text))
    return [_TRAILING_MARKS.sub("", re.sub(r"\s+", " ", p).lstrip(" -*+"))
            for p in parts if p and p.strip()]


# what ends a sentence's text but is none of it: emphasis, a dash, a "+" standing alone
# (a list marker); a "+" that ends a word is kept ("Python 3.8+", "C++")
_TRAILING_MARKS = re.compile(r"(?:[\s*-]|(?<![\w+])\+)+$")


# words before a value that make it an example, not a fact ("like a username ... `username=alice`")
_EXAMPLE = re.compile(r"\b(?:e\.g\.|for (?:example|instance)|such as|like|i\.e\.)(?:\W|$)",
                      re.I)
# placeholder names examples use
_PLACEHOLDER = re.compile(r"\b(?:foo|bar|baz|qux|spam|eggs|alice|bob|example|my_\w+|your_\w+)\b",
                          re.I)
# an identifier that reads as a name: a word, dotted or dashed path, maybe called ("load()")
_WORDLIKE = re.compile(r"[A-Za-z_][\w.\-/]*[\w](?:\(\))?|[A-Za-z]{2,}")
_COORDINATED = re.compile(r"^\W{0,3}(?:,\s+(?:the\s+)?[`A-Z0-9]|\s+(?:or|and|nor)\s+\W{0,2}\w|"
                          r"\s*[/&]\s*\W?\w)|(?:,|\bor|\band|\bnor|/|&)\s+(?:the\s+)?\W{0,3}$")


def link_labels(text: str) -> list[str]:
    """The labels of the links in ``text`` (Markdown ``[label](url)``, ``[label][ref]``,
    reStructuredText
    ``label <url>`_``, ```label`_``): words that point elsewhere, no fact of the text."""
    found = re.findall(r"\[([^\]]{2,80})\](?:\([^)]*\)|\[[^\]]*\])|"
                       r"`([^`<]{2,80}?)\s*<[^>]*>`_{1,2}|`([^`<]{2,80}?)\s*`_{1,2}", text)
    return [label.strip() for group in found for label in group if label.strip()]


def _coordinated(sentence: str, start: int, end: int) -> bool:
    """Whether the value at ``start:end`` is one of a list ("A and B", "`x`, `y` or `z`"):
    a question asking for it has several answers."""
    return bool(_COORDINATED.search(sentence[end:end + 12]) or
                _COORDINATED.search(sentence[max(0, start - 8):start]))


def _value(sentence: str, subjects: list[str], labels: list[str] = ()) -> tuple[str, str] | None:
    """The first value of ``sentence`` (by kind, then position) that is none of
    ``subjects`` nor part of one, no link label, no example, not one of a list and (an
    identifier) a name rather than a snippet; a quantity with the bound or range its
    sentence gives it ("less than 20 seconds"), a version or amount with the "+" ending it
    ("Python 3.8+", "3+ GB")."""
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            value = match.group("v").strip().rstrip("`.,:;)")
            if any(value in s or s in value or _same_name(value, s) for s in subjects) or (
                    kind == "name" and (value.split()[0].lower() in _NOT_NAME_START
                                        or not sentence[:match.start()].strip())):
                continue  # a sentence's first capitalised words are no name ("With Hypothesis")
            if kind not in ("identifier", "flag") and _in_code(sentence, match.start()):
                continue  # "1s" of ``{2i+2d+1s<=4}``: code, not a quantity
            if kind == "flag" and _in_code(sentence, match.start()) and not re.search(
                    rf"`{re.escape(value)}`", sentence):
                continue  # one flag of a command line ("`--sdist --wheel`")
            if kind == "name" and (re.search(r"(?:[A-Z][\w-]*|[\\/])\s?$",
                                             sentence[:match.start()])
                                   or re.match(r"\s+of\s+[A-Z]", sentence[match.end():])):
                continue  # part of a longer name ("GGML Universal File", "International
                # System of Units") or of a path ("C:\Program Files")
            bare = value.strip("`")
            before = sentence[max(0, match.start() - 30):match.start()]
            if any(bare.lower() in label.lower() for label in labels) or (
                    _EXAMPLE.search(before) or _PLACEHOLDER.search(bare)):
                continue  # a link's label or an example value, no fact
            if len(re.findall(rf"(?<![\w-]){re.escape(bare)}(?![\w-])", sentence, re.I)) > 1:
                continue  # said twice: its blank is two ("To redirect ``sys.stdout`` ...
                # ``file=sys.stdout``"), or a question keeps it ("the string ... ``string``")
            if _negated(sentence, match.start(), match.end()):
                continue
            if kind in ("name", "code", "identifier") and _coordinated(
                    sentence, match.start(), match.end()):
                continue
            if kind == "identifier":
                value = bare
                if (len(words(value)) > 4 or value.lower() in ("true", "false", "none")
                        or "=" in value or not _WORDLIKE.fullmatch(value)):
                    continue
            if kind == "quantity" and re.fullmatch(r"[12]\d{3}\s?s?", value):
                continue  # a year ("2019s"), not a quantity
            if kind == "quantity":  # with its bound or range: "less than 20 seconds"
                at = sentence.index(value, match.start())
                start, end = widened(sentence, at, at + len(value))
                value = sentence[start:end].strip()
            if kind in ("default", "flag"):  # "`dist`)" and "--config-json=<value>`:"
                value = value.strip("`").rstrip("=")
            return value, kind
    return None


_NEGATION = re.compile(r"\b(?:not|never|cannot|no longer|neither|nor)\b|n't\b", re.I)
# what ends a clause: punctuation, or a word opening another clause
_CLAUSE_BREAK = re.compile(r"[,;:()!]|\b(?:and|but|so|because|which|while|if|unless|"
                           r"otherwise|since|when|where)\b", re.I)


def _negated(sentence: str, start: int, end: int) -> bool:
    """Whether the value at ``start:end`` of ``sentence`` stands in a negated clause ("yarl
    cannot decide how to serialize ``bool``"): a question rewritten from it tends to drop
    the negation and ask the opposite ("What should yarl serialize?")."""
    for match in _NEGATION.finditer(sentence):
        between = sentence[match.end():start] if match.start() < start else sentence[
            end:match.start()]
        if not _CLAUSE_BREAK.search(between):
            return True
    return False


def _same_name(value: str, subject: str) -> bool:
    """Whether ``value`` names ``subject`` in another spelling ("Beautiful Soup" for
    beautifulsoup4): their letters, lower case, one holding the other (five or more)."""
    a, b = (re.sub(r"[^a-z]", "", t.lower()) for t in (value, subject))
    return min(len(a), len(b)) >= 5 and (a in b or b in a)


def _in_code(sentence: str, position: int) -> bool:
    """Whether ``position`` of ``sentence`` is inside an inline code span (`...`, ``...``)."""
    return any(m.start() < position < m.end() for m in re.finditer(r"(`+)[^`]+\1", sentence))


def _frame(fact: ValueFact) -> str:
    """The sentence of ``fact`` with its value taken out: two facts of one frame ("Zhang Min
    is the mentor of Wang Fang." / "... of Lukas Berg.") are answers of one question."""
    return normalise(fact.sentence.replace(fact.value, " "))


def value_facts(chunk: Chunk) -> list[ValueFact]:
    """The sentences of a content chunk that state one value about a named subject (the
    chunk's package or title, or a code or name the sentence holds other than its value),
    in text order; none for a chunk the content filter skips, nor a name that only the
    chunk's example code defines."""
    if skip_reason(chunk.text, chunk.metadata.get("heading_path") or ()) is not None:
        return []
    language = language_of(chunk.text)
    if language == "zh":
        return _chinese_facts(chunk)
    if language != "en":
        return []
    package = package_name(chunk)
    document = document_subject(chunk)
    found: list[ValueFact] = []
    labels = link_labels(chunk.text)
    for sentence in sentences(chunk.text):
        if not MIN_WORDS <= len(sentence.split()) <= MAX_WORDS or skip_reason(sentence):
            continue
        if sentence.endswith(("?", ":")) or sentence.count("|") >= 2 or re.search(
                r"https?://|\bassert\b", sentence) or first_person(sentence):
            continue  # a question, a table row, a link, code, or one user's report
        named = named_subjects(sentence, "en")
        subject = package or (named[0] if named else document)
        if not subject:
            continue
        hit = _value(sentence, [subject], labels)
        if hit is None or example_code_value(hit[0], chunk.text, subject):
            continue  # (a name of the chunk's example code: a class the example defines)
        found.append(ValueFact(sentence, hit[0], hit[1], subject))
    return _ranked(found)


def _ranked(found: list[ValueFact]) -> list[ValueFact]:
    """``found`` without facts that share a frame with another, the best kinds first."""
    frames = Counter(_frame(f) for f in found)
    found = [f for f in found if frames[_frame(f)] == 1]
    found.sort(key=lambda f: KIND_RANK.get(f.kind, len(KIND_RANK)))
    return found


# --- Chinese ---------------------------------------------------------------------------

_ZH_TIME_UNITS = "个月|个小时|小时|分钟|个星期|星期|周|天|年"
_ZH_UNITS = (f"{_ZH_TIME_UNITS}|秒钟|秒|倍|岁|公斤|千克|克|吨|平方公里|平方米|公里|千米|厘米|毫米|"
             "米|公顷|亩|万元|亿元|美元|元|人|名|位|台|座|家|所|项|种|条|层|部|篇|届|场|度|℃|%|％")
_ZH_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(r"(?<![A-Za-z0-9.\-])(?P<v>\d{3,4}年(?:\d{1,2}月(?:\d{1,2}日)?)?)"
                        r"(?!代)")),
    # a number in Chinese numerals counts only after a word saying it is an amount (九年
    # alone is a reign's ninth year)
    ("quantity", re.compile(rf"(?P<v>每?(?<![A-Za-z0-9.\-])(?!\d{{3,4}}年)\d+(?:[.,]\d+)*\s?"
                            rf"(?:{_ZH_UNITS})|"
                            rf"(?:(?<=[约共前达近])|每)[一二两三四五六七八九十百千]+"
                            rf"(?:{_ZH_TIME_UNITS}))")),
    ("code", _PATTERNS[-1][1]),
)
# (cut at ；and at every line break: the checks' rule here drops 44 of cmrc's value facts)
_ZH_SENTENCE = re.compile(r"(?<=[。！？；])|\n+")
ZH_MIN_CHARS, ZH_MAX_CHARS = 8, 90


def _zh_title(chunk: Chunk) -> str:
    """A short document title (an article's name: 尤金袋鼠), '' for a long one."""
    title = str(chunk.metadata.get("title") or "").strip()
    return title if 0 < len(title) <= 12 and not re.search(r"[：:，,（(]", title) else ""


def _chinese_facts(chunk: Chunk) -> list[ValueFact]:
    """Chinese sentences stating a date, an amount with its unit or a code about a thing:
    a code they name, else the document's short title (an article's subject, which its
    sentences often leave unsaid), else a name they give (jieba's names are often pieces:
    伊利诺 of 伊利诺州)."""
    title = _zh_title(chunk)
    found: list[ValueFact] = []
    for sentence in (p.strip() for p in _ZH_SENTENCE.split(prose(chunk.text))):
        if not ZH_MIN_CHARS <= len(sentence) <= ZH_MAX_CHARS or sentence.endswith(
                ("？", "?", "：", ":")):
            continue
        named = named_subjects(sentence, "zh")  # a code first, then the title, then names
        codes = [n for n in named if n.isascii()]
        named = [*codes, *([title] if title else []), *(n for n in named if n not in codes)]
        for kind, pattern in _ZH_PATTERNS:
            hits = [sentence[slice(*widened(sentence, m.start("v"), m.end("v")))]
                    for m in pattern.finditer(sentence)]  # with a bound or range: 15至20厘米
            subject = next((n for n in named if not any(n in h or h in n for h in hits)),
                           title)
            hits = [h for h in hits if subject and h not in subject and subject not in h]
            if len(hits) == 1:  # one value of that kind: the question has one answer
                found.append(ValueFact(sentence, hits[0], kind, subject, "zh"))
                break
    return _ranked(found)


# The instructions are the system message, the same for every call (the backend reads them
# once and keeps them: reuse_prefix); a call's own part is its subject, statement and answer.
# The statement shows its value as a blank (____): a question rewritten from it asks for the
# blank and cannot copy the value (asked with the value in the statement, the model put it
# back into 8 of 28 questions).
SYSTEM = ("You turn statements into exam questions. For each statement, write one question "
          "whose answer is the given answer, which fills the blank (____). Rules: the question "
          "names the subject; it makes sense to someone who has not read the statement; it "
          "contains neither the answer nor a blank; at most 20 words. Reply with one line per "
          "statement, in order:\nQUESTION: <the question>")
# a paraphrase: the same, worded apart from its statement
OWN_WORDS = (" Use your own words: keep the names, but say the rest differently from the "
             "statement.")
ITEM = "Subject: {subject}\nStatement: {sentence}\nAnswer: {value}"
ZH_SYSTEM = ("你把陈述改写成考试题。每条陈述写一个问题，答案是给定的答案，即填入空白（____）的"
             "内容。要求：问题写出主题；不看陈述也能看懂；问题里既没有答案也没有空白；不超过30个字。"
             "每条陈述回复一行，按顺序：\n问题：<问题>")
ZH_OWN_WORDS = "用自己的话：保留名称，其余用与陈述不同的说法。"
ZH_ITEM = "主题：{subject}\n陈述：{sentence}\n答案：{value}"
REPLY_TOKENS = 48  # one question line; a second one for a two-statement prompt


def build_fact_prompt(*facts: ValueFact, own_words: bool = False) -> tuple[str, str]:
    """(system, user) messages asking to rephrase each of ``facts`` as a question naming
    its subject (``own_words``: worded apart from its statement, for a paraphrase)."""
    zh = facts[0].language == "zh"
    system = (ZH_SYSTEM if zh else SYSTEM) + ((ZH_OWN_WORDS if zh else OWN_WORDS)
                                              if own_words else "")
    return system, "\n\n".join((ZH_ITEM if zh else ITEM).format(
        subject=f.subject, sentence=blanked(f), value=f.value) for f in facts)


BLANK = "____"


def blanked(fact: ValueFact) -> str:
    """The sentence of ``fact`` with its value as a blank."""
    return fact.sentence.replace(fact.value, BLANK)


_QUESTION_LINE = re.compile(r"^\W{0,4}(?:\d[.)]\s*)?\W{0,3}(?:question|q|问题)\s*\d?\s*\**\s*"
                            r"[:：]\s*\**\s*(?P<q>.+?)\s*$", re.I)


def parse_fact_questions(reply: str) -> list[str]:
    """The questions of a reply to ``build_fact_prompt``, in order: labelled lines, else
    lines ending in a question mark (a question that kept a blank is checked and rejected as
    any other: it does not ask for its value)."""
    lines = [ln.strip() for ln in reply.splitlines() if ln.strip()]
    found = [closed_question(m.group("q").strip("*\"' ")) for ln in lines
             if (m := _QUESTION_LINE.match(ln))]
    return found or [ln.strip("*\"' ") for ln in lines if ln.endswith(("?", "？"))]
