"""The grounding check on the canvas and in presentation mode: claim rows, red spans,
the narrated reason."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Answer, Claim
from modrag_studio.engine.run.trace import NodeVisit
from modrag_studio.reporting.narrate import describe_visit
from modrag_studio.ui.inspection.card_content import DOWN, answer_content
from modrag_studio.ui.inspection.grounding_marks import marked_html, ungrounded_spans

TEXT = "PR-300 is rated at 15,000 psi [1]."
CLAIMS = [Claim(text="PR-300", kind="identifier", start=0, end=6, verdict="cited", block=1),
          Claim(text="15,000 psi", kind="number", start=19, end=29, verdict="missing")]


def test_answer_card_marks_ungrounded_claims_red() -> None:
    content = answer_content(Answer(text=TEXT, claims=CLAIMS))
    assert content.title == "Answer · 0 citations · 1 ungrounded"
    assert content.marks == [(19, 29)] and content.body[19:29] == "15,000 psi"
    rows = content.rows(0, 4)
    assert [row[0].text for row in rows] == ["✓", "✗"]
    assert rows[1][1].text == "15,000 psi · in no document" and rows[1][1].color == DOWN
    html = marked_html(content.body, content.marks, "#ffffff", "#f07178")
    assert '<span style="color:#f07178; text-decoration: underline; font-weight: bold">' \
           "15,000 psi</span>" in html


def test_refusal_card_lists_claims_without_marks() -> None:
    content = answer_content(Answer(text="The documents do not mention 15,000 psi.",
                                    claims=CLAIMS, fallback=True))
    assert content.marks == [] and content.total == 2


def test_spans_follow_reading_order_and_flattened_text() -> None:
    claims = [Claim(text="5 h", kind="quantity", start=9, end=12, verdict="missing"),
              Claim(text="5 h", kind="quantity", start=0, end=3, verdict="missing")]
    assert ungrounded_spans("5 h, then 5 h", claims) == [(0, 3), (10, 13)]


def test_presentation_tells_the_grounding_check() -> None:
    visit = NodeVisit(node_id="ground", type_id="check.grounding", status="done", details={
        "route": "ungrounded", "reason": "the answer says 15,000 psi; no document says that",
        "claims": [{"claim": "PR-300"}, {"claim": "15,000 psi"}]})
    assert describe_visit(visit, "Grounding check") == (
        "Grounding check looked up 2 claims of the answer in the documents: the answer says "
        "15,000 psi; no document says that; the answer goes on as “ungrounded”.")
