"""Small text helpers shared by the CLI, the trace and the studio (no Qt here)."""

from __future__ import annotations

import unicodedata
from typing import Any

#: format characters that reorder or hide text (bidirectional marks, zero-width characters)
_HIDING = frozenset("\u061c\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u202a\u202b"
                    "\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff")


def shown(text: Any) -> str:
    """``text`` as a person must see it in a list they decide on: control characters (escape
    sequences, carriage returns, new lines) and characters that reorder or hide text are
    written as escapes (``\\x1b``, ``\\u202e``), so a value cannot rewrite the line it is
    on or the lines above it."""
    text = str(text)
    if text.isprintable() and not _HIDING.intersection(text):
        return text
    return "".join(_escaped(char) for char in text)


def _escaped(char: str) -> str:
    if char in _HIDING or unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl",
                                                          "Zp"):
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 \
            else f"\\U{code:08x}"
    return char


def short(text: Any, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = str(text)
    if len(text) > 2 * limit:  # a preview of a long text (a chunk) flattens only its start:
        flat = " ".join(text[: 2 * limit].split())  # a prefix of the whole text's flat form
        if len(flat) > limit:
            return flat[: limit - 1] + "…"
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def duration(seconds: float) -> str:
    """``850 ms``, ``2.35 s`` or ``1.5 min``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def failure(visit: Any, with_type: bool = True) -> str:
    """What went wrong in a failed node visit: ``ErrorType: message`` (or just the message)."""
    error = getattr(visit, "error", None)
    if error is None:
        return "failed"
    return f"{error.type}: {error.message}" if with_type else error.message
