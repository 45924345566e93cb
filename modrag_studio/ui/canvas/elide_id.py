"""Shorten a document or chunk id to fit a width, keeping what tells ids apart (no Qt).

Qt's middle elision turns ``en_maintenance.md#3`` into ``en…md`` in a narrow column: the
extension survives and both the name and the chunk number are lost. Here the id's stem keeps
its start, the ``#n`` chunk suffix is kept whole and the extension goes first:
``en_maintenance.md#3`` → ``en_maintenance…#3`` → ``en_maint…#3`` → ``en…#3``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

ELLIPSIS = "…"
_SUFFIX = re.compile(r"(#[^#/]*)$")         # a chunk's "#3" (or "#p2-c4")
_EXTENSION = re.compile(r"(\.[A-Za-z0-9]{1,5})$")


def split_id(text: str) -> tuple[str, str, str]:
    """(stem, extension, chunk suffix) of an id: ``"en_a.md#3"`` → ``("en_a", ".md", "#3")``."""
    suffix_match = _SUFFIX.search(text)
    suffix = suffix_match.group(1) if suffix_match else ""
    rest = text[:len(text) - len(suffix)]
    extension_match = _EXTENSION.search(rest)
    extension = extension_match.group(1) if extension_match and extension_match.start() else ""
    return rest[:len(rest) - len(extension)], extension, suffix


def elide_id(text: str, fits: Callable[[str], bool]) -> str:
    """The longest of ``text``, then ``stem[:k] + "…" + suffix`` (k falling) that ``fits``;
    when not even one character of the stem fits, the suffix alone with the ellipsis, else
    the ellipsis."""
    if fits(text):
        return text
    stem, _, suffix = split_id(text)
    low, high = 1, len(stem)  # the longest stem start that fits: binary search
    best = ""
    while low <= high:
        middle = (low + high) // 2
        candidate = stem[:middle] + ELLIPSIS + suffix
        if fits(candidate):
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    if best:
        return best
    return ELLIPSIS + suffix if suffix and fits(ELLIPSIS + suffix) else ELLIPSIS
