"""Where a grounding check's ungrounded claims stand in an answer card, and the card's
text with them marked (red, underlined)."""

from __future__ import annotations

import html

from modrag_studio.engine.core.datatypes import Claim


def ungrounded_spans(body: str, claims: list[Claim]) -> list[tuple[int, int]]:
    """Where the ungrounded claims stand in the (flattened) answer text, in order."""
    spans, at = [], 0
    for claim in sorted(claims, key=lambda c: c.start):
        flat = " ".join(claim.text.split())
        found = body.find(flat, at)
        if found < 0:
            found = body.find(flat)
        if found >= 0:
            spans.append((found, found + len(flat)))
            at = found + len(flat)
    return spans


def marked_html(body: str, marks: list[tuple[int, int]], text_color: str,
                mark_color: str) -> str:
    """``body`` as HTML, the ``marks`` spans red and underlined."""
    parts, at = [], 0
    for start, end in sorted(marks):
        if start < at:
            continue
        parts.append(html.escape(body[at:start]))
        parts.append(f'<span style="color:{mark_color}; text-decoration: underline; '
                     f'font-weight: bold">{html.escape(body[start:end])}</span>')
        at = end
    parts.append(html.escape(body[at:]))
    return f'<span style="color:{text_color}">' + "".join(parts) + "</span>"

