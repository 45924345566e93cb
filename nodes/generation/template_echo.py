"""Prompt-template text that small models copy into their replies, and its removal.

Small models echo the answer pattern of the prompt: "<sentence with the facts> [block
number]", "<The evidence does not say.>", or a whole instruction line. ``strip_echo``
removes what comes from the prompt's instructions (never from its evidence): placeholders
``<...>`` and bracketed words such as ``[block number]`` are deleted, a sentence of the
instructions (or any prose of three words or more) wrapped in angle brackets is unwrapped,
what is left of a copied answer pattern is dropped, a refusal sentence standing beside a
cited answer (or after an answer that states something and denies nothing) is dropped, and a
decimal written with a space after its point ("1. 44平方公里") is joined.
"""

from __future__ import annotations

import re

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import HAN, LATIN_LETTERS
from modrag_studio.engine.core.node import Prompt

_ANGLE = re.compile(r"<\s*([^<>\n]{1,600}?)\s*>")
_WORD_BRACKET = re.compile(r"\[([A-Za-z]+ [A-Za-z ]{2,40})\]")
_CITED = re.compile(r"\[\d{1,3}(?:\s*[,;]\s*\d{1,3})*\]|【\d{1,3}】")
# "1. 44平方公里": a decimal point with a space after it, the digits run into a Chinese unit
# (a list number or a sentence's end is followed by a space or a capital, not by that)
_SPLIT_DECIMAL = re.compile(rf"(?<![\d.])(\d{{1,4}})\. (\d+)(?=[{HAN}%‰℃])")
# words that make what comes before a refusal an explanation of it, not an answer
_NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|cannot|unknown)\b|没有|并未|未提|"
                       r"不清楚|无法|未说明|未给出", re.IGNORECASE)
MIN_ANSWER_CHARACTERS = 12


def _refusal_pattern(refusal: str) -> str:
    """``refusal`` as a pattern, whatever the spaces between its words."""
    return r"\s*".join(map(re.escape, refusal.split()))


def _trails_an_answer(text: str, refusal: str) -> bool:
    """Whether ``refusal`` is the reply's last sentence after an answer that states
    something (at least a dozen letters, no negation): "《卡拉OK.LIVE！》是…第六张国语专辑。
    The evidence does not say." The answer stays; a reply explaining why it refuses ("The
    documents give HP-03's interval but not its warranty. The evidence does not say.") stays
    a refusal."""
    match = re.search(_refusal_pattern(refusal) + r"\s*$", text, re.IGNORECASE)
    if match is None:
        return False
    head = text[:match.start()]
    letters = len(re.findall(rf"[A-Za-z0-9{HAN}]", head))
    return letters >= MIN_ANSWER_CHARACTERS and not _NEGATION.search(head)
_PROSE = re.compile(rf"\w+\s+\w+\s+\w+|[{HAN}]{{2}}")


def _like(text: str, placeholder: str) -> bool:
    """A placeholder half translated or reworded ("<句子 with the facts>"): most of its
    words are there. Both are normalised (lower case)."""
    words = placeholder.split()
    if len(words) < 3:
        return False
    have = set(LATIN_LETTERS.findall(text))
    return sum(w in have for w in words) >= 0.6 * len(words)


def instruction_text(prompt: Prompt) -> str:
    """The prompt's messages without the evidence texts."""
    text = "\n".join(m.content for m in prompt.messages)
    for item in prompt.evidence:
        chunk = item.chunk.text.strip()
        if chunk:
            text = text.replace(chunk, " ")
    return text


def strip_echo(reply: str, prompt: Prompt | None, refusal: str = "") -> tuple[str, list[str]]:
    """``reply`` without copied template text, and the pieces removed."""
    if prompt is None:
        return reply, []
    instructions = instruction_text(prompt)
    folded = normalise(instructions)
    placeholders = {normalise(m.group(1)) for m in _ANGLE.finditer(instructions)}
    words = {normalise(m.group(1)) for m in _WORD_BRACKET.finditer(instructions)}
    removed: list[str] = []

    def angle(match: re.Match[str]) -> str:
        inner = normalise(match.group(1))
        if inner in placeholders or any(_like(inner, p) for p in placeholders):
            removed.append(match.group(0))
            return ""
        if len(inner) >= 8 and inner in folded or _PROSE.search(inner):
            removed.append(match.group(0))  # a sentence of the prompt, or prose, in <...>
            return match.group(1)
        return match.group(0)

    text = _ANGLE.sub(angle, reply)

    def bracket(match: re.Match[str]) -> str:
        if normalise(match.group(1)) in words:
            removed.append(match.group(0))
            return ""
        return match.group(0)

    text = _WORD_BRACKET.sub(bracket, text)
    if removed:  # what is left of a copied answer pattern ("Write the answer as:")
        lines = []
        for line in text.splitlines():
            line_folded = normalise(line)
            if (len(line_folded) >= 10 and line_folded in folded
                    and line_folded != normalise(refusal)):
                removed.append(line)
                continue
            lines.append(line)
        text = "\n".join(lines)
    if refusal and normalise(refusal) in normalise(text) and (_CITED.search(text)
                                                      or _trails_an_answer(text, refusal)):
        rest = normalise(text).replace(normalise(refusal), " ")
        if re.search(rf"[\w{HAN}]{{2,}}", _CITED.sub(" ", rest)):
            text = re.sub(_refusal_pattern(refusal), " ", text, flags=re.IGNORECASE)
            removed.append(refusal)
    split = [m.group(0) for m in _SPLIT_DECIMAL.finditer(text)]
    if split:
        removed += split
        text = _SPLIT_DECIMAL.sub(r"\1.\2", text)
    if text.lstrip().startswith("<") and ">" not in text:  # an answer pattern left open
        removed.append("<")
        text = text.lstrip()[1:]
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"^\s*[:：-]\s*", "", text.strip())
    return text.strip(), removed
