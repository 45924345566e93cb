"""Markdown sections: heading-aware spans with the heading path of each section."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from modrag_nodes.ingest.spans import Span, recursive_spans, trim

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_LISTISH = re.compile(r"^\s*([-*+]|\d+[.)])\s")


@dataclass
class Section:
    start: int
    end: int
    path: list[str] = field(default_factory=list)
    level: int = 0


def headings(text: str) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of every ATX or setext heading outside fenced code.

    An ATX heading (``# Title``) counts only at the start, after a blank line or after
    another heading: ``#`` lines inside running text (shell comments in a PDF's code
    listing) are not headings."""
    found: list[tuple[int, int, str]] = []
    in_fence = False
    offset = 0
    previous = ""
    previous_offset = 0
    for line in _lines(text):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            atx = _ATX.match(line)
            setext = _SETEXT.match(line)
            after_break = (not previous.strip() or offset == 0
                           or bool(found and found[-1][0] == previous_offset))
            if atx and after_break:
                found.append((offset, len(atx.group(1)), atx.group(2).strip()))
            elif (setext and previous.strip() and not _LISTISH.match(previous)
                  and not _ATX.match(previous)
                  and (not found or found[-1][0] != previous_offset)):
                level = 1 if setext.group(1).startswith("=") else 2
                found.append((previous_offset, level, previous.strip()))
        previous, previous_offset = line, offset
        offset += len(line) + 1
    return found


def _lines(text: str) -> Iterator[str]:
    """``text.split("\\n")`` one line at a time (a large file is never a list of lines)."""
    offset = 0
    while (cut := text.find("\n", offset)) >= 0:
        yield text[offset:cut]
        offset = cut + 1
    yield text[offset:]


def sections(text: str) -> list[Section]:
    """Sections from each heading to the next; text before the first heading has path []."""
    marks = headings(text)
    result: list[Section] = []
    if not marks or marks[0][0] > 0:
        first_end = marks[0][0] if marks else len(text)
        if text[:first_end].strip():
            result.append(Section(0, first_end))
    stack: list[tuple[int, str]] = []
    for number, (offset, level, title) in enumerate(marks):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = marks[number + 1][0] if number + 1 < len(marks) else len(text)
        result.append(Section(offset, end, [t for _, t in stack], level))
    return result


def markdown_spans(text: str, size: int, overlap: int, min_section: int = 50
                   ) -> list[tuple[Span, list[str]]]:
    """Spans that never cross a section boundary, with their heading path. Sections shorter
    than ``min_section`` characters (a heading with no body) are joined to the next one,
    whose heading path it takes; long sections are split recursively."""
    merged: list[Section] = []
    pending: Section | None = None
    for section in sections(text):
        if pending is not None:
            section = Section(pending.start, section.end, section.path, section.level)
            pending = None
        body = trim(text, section.start, section.end)
        if body[1] - body[0] < min_section:
            pending = section
            continue
        merged.append(section)
    if pending is not None:  # a short last section stays on its own (its own path)
        merged.append(pending)
    out: list[tuple[Span, list[str]]] = []
    for section in merged:
        for span in recursive_spans(text, size, overlap, section.start, section.end):
            out.append((span, section.path))
    return out
