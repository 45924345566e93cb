"""Tolerant parsing of what language models write: yes/no verdicts, graded lists, item lists, JSON.

Small models wrap answers in chatter ("Sure! Here are the sub-queries:"), number them in
several styles and mix case; these helpers accept that and return ``None`` (or skip a line)
when a reply really cannot be read, so callers can say so in the trace.
"""

from __future__ import annotations

import json
import re
from typing import Any

_NEGATIVE = (
    r"not\s+(?:\w+\s+){0,2}?(?:relevant|supported|grounded|correct|related|useful)",
    r"(?:is\s+not|isn't|does\s+not|doesn't|do\s+not|don't|cannot|can't)\s+(?:\w+\s+){0,2}?"
    r"(?:relevant|support\w*|answer\w*|contain\w*|relate\w*|mention\w*|help\w*)",
    r"irrelevant", r"unsupported", r"ungrounded", r"unrelated", r"no", r"n", r"false",
    r"incorrect", r"nope",
)
_POSITIVE = (
    r"yes", r"y", r"true", r"relevant", r"supported", r"grounded", r"correct", r"yep",
    r"related", r"useful",
)
_VERDICT = re.compile(
    r"(?<![\w-])(?P<neg>" + "|".join(_NEGATIVE) + r")(?![\w-])|(?<![\w-])(?P<pos>"
    + "|".join(_POSITIVE) + r")(?![\w-])",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"^\s*(?:final\s+)?(?:answer|verdict|grade|relevance|relevant|judgement|judgment|"
    r"decision|result|output|label|supported)\s*[:=\-]\s*",
    re.IGNORECASE,
)


def parse_yes_no(text: str) -> bool | None:
    """The first yes/no-like verdict in ``text`` (``True`` for yes), or ``None`` when absent.

    Accepts "Yes", "NO.", "yes, relevant", "Answer: no", "**Yes**", "not relevant",
    "unsupported", "true"/"false". Single letters "y"/"n" count only as the whole reply.
    """
    if not text:
        return None
    cleaned = _strip_markup(text).strip()
    if re.fullmatch(r"[yYnN]\W*", cleaned):
        return cleaned[0].lower() == "y"
    labelled = _LABEL.sub("", cleaned, count=1)
    for match in _VERDICT.finditer(labelled):
        word = match.group(0).lower()
        if word in ("y", "n"):
            continue
        return match.group("pos") is not None
    return None


_INDEX_PATTERNS = (
    # [doc 0], [Doc #2], [document 3], (chunk 1), [1]
    re.compile(r"^\s*[\[(]\s*(?:doc(?:ument)?|chunk|passage|source|context|item)?\s*#?\s*"
               r"(?P<i>\d+)\s*[\])]\s*[:.\-–]?\s*", re.IGNORECASE),
    # Doc 2: NO, Document #3 - yes, Passage 4 = no
    re.compile(r"^\s*(?:doc(?:ument)?|chunk|passage|source|context|item)\s*#?\s*(?P<i>\d+)"
               r"\s*[:.)\-–=]?\s*", re.IGNORECASE),
    # 1. no, 2) yes, #3: yes, 4 - no, 5: yes
    re.compile(r"^\s*#?(?P<i>\d+)\s*[.):\-–=]\s*"),
)


_INLINE_GRADE = re.compile(
    r"(?:\s*[,;]\s*|\s+)(?=\[?(?:doc(?:ument)?|chunk|passage)\s*#?\s*\d+\s*[\]:.)\-])",
    re.IGNORECASE,
)


def parse_graded_lines(text: str, count: int) -> tuple[dict[int, bool], list[str]]:
    """Read one yes/no grade per document from a reply listing ``count`` documents.

    Returns ``(grades, unreadable)``: ``grades`` maps a 0-based document position to its
    verdict; ``unreadable`` holds the lines that named no verdict. Lines may carry an index
    ("[doc 0] yes", "1. no", "Doc 2: NO") or none ("yes, relevant"), in which case they are
    taken in order. Indexes are 1-based unless the reply uses 0 somewhere (then 0-based).
    """
    indexed: list[tuple[int, bool]] = []
    unindexed: list[bool] = []
    unreadable: list[str] = []
    # several grades on one line: "[doc 1] yes [doc 2] no", "Doc 1: yes, Doc 2: no"
    text = _INLINE_GRADE.sub("\n", text)
    for raw in text.splitlines():
        line = _strip_markup(raw).strip()
        if not line:
            continue
        index, rest = _line_index(line)
        verdict = parse_yes_no(rest)
        if verdict is None:
            if index is not None or _looks_like_grade_line(line):
                unreadable.append(raw.strip())
            continue
        if index is None:
            unindexed.append(verdict)
        else:
            indexed.append((index, verdict))
    grades: dict[int, bool] = {}
    if indexed:
        base = 0 if any(i == 0 for i, _ in indexed) else 1
        for index, verdict in indexed:
            position = index - base
            if 0 <= position < count and position not in grades:
                grades[position] = verdict
    if unindexed and not indexed:
        for position, verdict in enumerate(unindexed[:count]):
            grades[position] = verdict
    return grades, unreadable


def _line_index(line: str) -> tuple[int | None, str]:
    for pattern in _INDEX_PATTERNS:
        match = pattern.match(line)
        if match:
            return int(match.group("i")), line[match.end():]
    return None, line


def _looks_like_grade_line(line: str) -> bool:
    return bool(re.match(r"^\s*(?:doc|document|chunk|passage)\b", line, re.IGNORECASE))


_BULLET = re.compile(
    r"^\s*(?:[-*•·‣◦]+|\(?\d{1,3}[.):]|\(?[a-zA-Z][.)](?=\s)|#\d+[:.)]?|"
    r"(?:sub[\s-]?)?(?:query|question|q)\s*#?\d*\s*[:.)\-])\s*",
    re.IGNORECASE,
)
_PREAMBLE = re.compile(
    r"^(?:sure|okay|ok|certainly|of course|here (?:are|is)|below (?:are|is)|the following)\b",
    re.IGNORECASE,
)


def parse_list(text: str, max_items: int | None = None) -> list[str]:
    """Items written one per line, with bullets, numbering, quotes and chatter removed.

    A line ending with ':' ("Here are the sub-questions:") and an opening "Sure"/"Here are"
    line are skipped; duplicates (ignoring case) are dropped; at most ``max_items`` kept.
    """
    items: list[str] = []
    seen: set[str] = set()
    for raw in text.splitlines():
        line = _strip_markup(raw).strip()
        if not line or line.endswith(":") or line.startswith("```"):
            continue
        if _PREAMBLE.match(line) and not _BULLET.match(raw):
            continue
        item = _BULLET.sub("", line, count=1).strip()
        item = _strip_quotes(item)
        if not item or item.lower() in seen:
            continue
        seen.add(item.lower())
        items.append(item)
        if max_items is not None and len(items) >= max_items:
            break
    return items


_REWRITE_LABEL = re.compile(
    r"^\s*(?:(?:the\s+)?(?:rewritten|reformulated|improved|new|better|search)\s+"
    r"(?:query|question|search\s+query)|query|question|rewrite|answer|hypothetical\s+"
    r"(?:answer|passage|document)|passage)\s*[:\-]\s*",
    re.IGNORECASE,
)


_LEAD_IN = re.compile(
    r"^[^:\n]{0,60}?\b(?:rewrit\w*|reformulat\w*|query|question|passage|here)\b[^:\n?]{0,30}:\s+",
    re.IGNORECASE,
)


def clean_single_text(text: str) -> str:
    """One clean line or paragraph from a reply: chatter, labels and quotes removed.

    "Sure! Here is the rewritten query:\\n\\"solar panel output in winter\\"" becomes
    "solar panel output in winter".
    """
    lines = [_strip_markup(line).strip() for line in text.strip().splitlines()]
    lines = [line for line in lines if line and not line.startswith("```")]
    while len(lines) > 1 and (lines[0].endswith(":") or _PREAMBLE.match(lines[0])):
        lines.pop(0)
    joined = " ".join(lines)
    if not lines:
        return ""
    if ":" in joined and _PREAMBLE.match(joined):
        joined = joined.split(":", 1)[1]
    joined = _REWRITE_LABEL.sub("", joined.strip(), count=1)
    joined = _LEAD_IN.sub("", joined, count=1)
    return _strip_quotes(joined.strip())


def extract_json(text: str) -> Any:
    """The first JSON object (or array) found in ``text``; raises ``ValueError`` when none.

    Looks inside ```json fences first, then scans for balanced braces; tolerates trailing
    commas, typographic quotes and Python literals (True/False/None).
    """
    candidates: list[str] = []
    for fenced in re.finditer(r"```(?:json|JSON)?\s*(.*?)```", text, re.DOTALL):
        candidates.append(fenced.group(1))
    candidates.append(text)
    errors: list[str] = []
    for candidate in candidates:
        for start, block in _balanced_blocks(candidate):
            for variant in _repairs(block):
                try:
                    return json.loads(variant)
                except json.JSONDecodeError as exc:
                    errors.append(f"at character {start + exc.pos}: {exc.msg}")
    detail = f" (first error {errors[0]})" if errors else ""
    raise ValueError(f"no JSON object found in the reply{detail}")


def _balanced_blocks(text: str) -> list[tuple[int, str]]:
    blocks: list[tuple[int, str]] = []
    for start, char in enumerate(text):
        if char not in "{[":
            continue
        end = _matching_close(text, start)
        if end is not None:
            blocks.append((start, text[start:end + 1]))
            if char == "{":
                break
    return sorted(blocks, key=lambda item: (item[1][0] != "{", item[0]))


def _matching_close(text: str, start: int) -> int | None:
    depth, in_string, escaped = 0, False, False
    quote = ""
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                in_string = False
            continue
        if char in "\"“”":
            in_string, quote = True, ('"' if char == '"' else "”")
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return pos
    return None


def _repairs(block: str) -> list[str]:
    fixed = block.replace("“", '"').replace("”", '"').replace("’", "'")
    fixed = re.sub(r",\s*([}\]])", r"\1", fixed)
    python = re.sub(r"\bTrue\b", "true", fixed)
    python = re.sub(r"\bFalse\b", "false", python)
    python = re.sub(r"\bNone\b", "null", python)
    variants = [block, fixed, python]
    if "'" in python and '"' not in python:
        variants.append(python.replace("'", '"'))
    return list(dict.fromkeys(variants))


def _strip_markup(text: str) -> str:
    return re.sub(r"\*\*|__|(?<!`)`(?!`)", "", text)


def _strip_quotes(text: str) -> str:
    pairs = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"))
    changed = True
    while changed and len(text) >= 2:
        changed = False
        for left, right in pairs:
            if text.startswith(left) and text.endswith(right):
                text = text[1:-1].strip()
                changed = True
    return text
