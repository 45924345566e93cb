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
from modrag_studio.evaluation.generation.content import (
    document_subject,
    package_name,
    prose,
    skip_reason,
)
from modrag_studio.evaluation.generation.subjects import named_subjects

_UNITS = (r"%|x|×|ms|milliseconds?|s|sec|seconds?|minutes?|min|hours?|h|days?|weeks?|months?|"
          r"years?|[kKMGT]i?B|bytes?|bits?|tokens?|dimensions?|dims?|parameters?|params|layers?|"
          r"threads?|cores?|tons?|t|kg|g|mm|cm|m|km|bar|°C|rpm|V|W|kW|Hz|MHz|GHz|"
          r"times faster|times|languages?|models?|characters?|chars?|lines?|rows?|columns?")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("default", re.compile(r"\bdefaults? (?:to|is|of|value is)\s+(?P<v>`[^`]{1,40}`|[\w.\-/+]+)",
                           re.I)),
    ("quantity", re.compile(rf"(?<![\w.\-])(?P<v>\d+(?:[.,]\d+)*(?:\s?-\s?\d+(?:[.,]\d+)*)?\s?"
                            rf"(?:[a-z]+[ -])?(?:{_UNITS}))(?![\w])")),
    ("version", re.compile(r"\b(?P<v>(?:Python|CUDA|Rust|Node(?:\.js)?|GCC|Java|Go)\s+"
                           r"\d+(?:\.\d+)*\+?)", re.I)),
    ("flag", re.compile(r"(?<![\w-])(?P<v>--[a-z][\w-]{1,30}(?:=\S+)?)")),
    ("identifier", re.compile(r"(?P<v>`[^`\s][^`]{0,38}[^`\s]`|`[^`\s]`)")),
    ("name", re.compile(r"(?<![\w-])(?P<v>[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+)(?![\w-])")),
    ("code", re.compile(r"(?<![\w-])(?P<v>[A-Z]{2,}[A-Z0-9]*-[A-Z0-9][A-Z0-9-]*)(?![\w-])")),
)
#: the kinds of value, the most question-worthy first
KIND_RANK = {kind: i for i, (kind, _) in enumerate(_PATTERNS)}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\d])|;\s+|\n\s*\n|\n\s*[-*+]\s+|\n(?=\s*\d+\.\s)")
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


def sentences(text: str) -> list[str]:
    """The sentences of ``text``'s prose (headings, badges and code left out), joined over
    line wraps."""
    parts = _SENTENCE.split(prose(text))
    return [re.sub(r"\s+", " ", p).strip(" -*+") for p in parts if p and p.strip()]


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
    identifier) a name rather than a snippet."""
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            value = match.group("v").strip().rstrip("`.,:;)")
            if any(value in s or s in value for s in subjects) or (
                    kind == "name" and (value.split()[0].lower() in _NOT_NAME_START
                                        or not sentence[:match.start()].strip())):
                continue  # a sentence's first capitalised words are no name ("With Hypothesis")
            bare = value.strip("`")
            before = sentence[max(0, match.start() - 30):match.start()]
            if any(bare.lower() in label.lower() for label in labels) or (
                    _EXAMPLE.search(before) or _PLACEHOLDER.search(bare)):
                continue  # a link's label or an example value, no fact
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
            return value, kind
    return None


def _frame(fact: ValueFact) -> str:
    """The sentence of ``fact`` with its value taken out: two facts of one frame ("Zhang Min
    is the mentor of Wang Fang." / "... of Lukas Berg.") are answers of one question."""
    return normalise(fact.sentence.replace(fact.value, " "))


def value_facts(chunk: Chunk) -> list[ValueFact]:
    """The sentences of a content chunk that state one value about a named subject (the
    chunk's package or title, or a code or name the sentence holds other than its value),
    in text order; none for a chunk the content filter skips."""
    if skip_reason(chunk.text, chunk.metadata.get("heading_path") or ()) is not None:
        return []
    if language_of(chunk.text) != "en":
        return []
    package = package_name(chunk)
    document = document_subject(chunk)
    found: list[ValueFact] = []
    labels = link_labels(chunk.text)
    for sentence in sentences(chunk.text):
        if not MIN_WORDS <= len(sentence.split()) <= MAX_WORDS or skip_reason(sentence):
            continue
        if sentence.endswith(("?", ":")) or sentence.count("|") >= 2 or re.search(
                r"https?://|\bassert\b", sentence):
            continue
        named = named_subjects(sentence, "en")
        subject = package or (named[0] if named else document)
        if not subject:
            continue
        hit = _value(sentence, [subject], labels)
        if hit is None:
            continue
        found.append(ValueFact(sentence, hit[0], hit[1], subject))
    frames = Counter(_frame(f) for f in found)
    found = [f for f in found if frames[_frame(f)] == 1]
    found.sort(key=lambda f: KIND_RANK[f.kind])
    return found


# The instructions are the system message, the same for every call (the backend reads them
# once and keeps them: reuse_prefix); a call's own part is its subject, statement and answer.
SYSTEM = ("You turn statements into exam questions. For each statement, write one question "
          "whose answer is the given answer. Rules: the question names the subject; it makes "
          "sense to someone who has not read the statement; it does not contain the answer; "
          "at most 20 words. Reply with one line per statement, in order:\n"
          "QUESTION: <the question>")
# a paraphrase: the same, worded apart from its statement
OWN_WORDS = (" Use your own words: keep the names, but say the rest differently from the "
             "statement.")
ITEM = "Subject: {subject}\nStatement: {sentence}\nAnswer: {value}"
REPLY_TOKENS = 48  # one question line; a second one for a two-statement prompt


def build_fact_prompt(*facts: ValueFact, own_words: bool = False) -> tuple[str, str]:
    """(system, user) messages asking to rephrase each of ``facts`` as a question naming
    its subject (``own_words``: worded apart from its statement, for a paraphrase)."""
    system = SYSTEM + (OWN_WORDS if own_words else "")
    return system, "\n\n".join(ITEM.format(subject=f.subject, sentence=f.sentence,
                                             value=f.value) for f in facts)


_QUESTION_LINE = re.compile(r"^\W{0,4}(?:\d[.)]\s*)?\W{0,3}(?:question|q)\s*\d?\s*\**\s*[:：]\s*"
                            r"\**\s*(?P<q>.+?)\s*$", re.I)


def parse_fact_questions(reply: str) -> list[str]:
    """The questions of a reply to ``build_fact_prompt``, in order: labelled lines, else
    lines ending in a question mark."""
    lines = [ln.strip() for ln in reply.splitlines() if ln.strip()]
    found = [m.group("q").strip("*\"' ") for ln in lines if (m := _QUESTION_LINE.match(ln))]
    return found or [ln.strip("*\"' ") for ln in lines if ln.endswith(("?", "？"))]
