"""Cheap, deterministic question candidates: sentences of a content chunk that state a value
(a number with its unit, a version, a default, a flag, an identifier, a code) about a named
subject. The value is the expected fact, found here, not by the model; the model only
rephrases the sentence into a question that names the subject, in a short prompt whose
instructions come first (the same prefix every call, which the backend can reuse)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\d])|\n\s*\n|\n\s*[-*+]\s+|\n(?=\s*\d+\.\s)")
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


def _value(sentence: str, subjects: list[str]) -> tuple[str, str] | None:
    """The first value of ``sentence`` (by kind, then position) that is none of
    ``subjects`` nor part of one."""
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            value = match.group("v").strip().rstrip("`.,:;)")
            if any(value in s or s in value for s in subjects) or (
                    kind == "name" and (value.split()[0].lower() in _NOT_NAME_START
                                        or not sentence[:match.start()].strip())):
                continue  # a sentence's first capitalised words are no name ("With Hypothesis")
            if kind == "identifier":
                value = value.strip("`")
                if len(words(value)) > 4 or value.lower() in ("true", "false", "none"):
                    continue
            if kind == "quantity" and re.fullmatch(r"[12]\d{3}\s?s?", value):
                continue  # a year ("2019s"), not a quantity
            return value, kind
    return None


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
        hit = _value(sentence, [subject])
        if hit is None:
            continue
        found.append(ValueFact(sentence, hit[0], hit[1], subject))
    found.sort(key=lambda f: KIND_RANK[f.kind])
    return found


SYSTEM = "You turn a statement into an exam question. You reply only in the format asked."
PROMPT = ("Rewrite the statement below as one question whose answer is the given answer.\n"
          "Rules: the question names the subject; it makes sense to someone who has not read "
          "the statement; it does not contain the answer; at most 20 words.\n"
          "Reply with exactly one line:\nQUESTION: <the question>\n\n"
          "Subject: {subject}\nStatement: {sentence}\nAnswer: {value}")


def build_fact_prompt(fact: ValueFact) -> tuple[str, str]:
    """(system, user) messages asking to rephrase ``fact`` as a question naming its subject
    (the fixed instructions first: every call shares that prefix)."""
    return SYSTEM, PROMPT.format(subject=fact.subject, sentence=fact.sentence,
                                 value=fact.value)
