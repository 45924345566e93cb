"""Small text helpers shared by the CLI, the trace and the studio (no Qt here)."""

from __future__ import annotations

from typing import Any


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
