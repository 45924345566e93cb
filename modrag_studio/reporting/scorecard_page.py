"""The scorecard as one self-contained HTML page a user can send to someone else.

Built from the scorecard's JSON (``evaluation.scorecard.Scorecard.to_dict``), so a saved
scorecard renders again without the run: the headline figures, where the evidence is lost
(the funnel, node by node), the three worst questions with their cause, the one change the
tuner found significant (or that none was) and what to check before trusting the figures.
Styles are inline (``page.Page``); the page loads nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from modrag_studio.reporting.page import (
    Html,
    Page,
    badge,
    details,
    join,
    paragraph,
    table,
    tag,
)

STYLE = """
table.tiles{table-layout:fixed;border-collapse:separate;border-spacing:12px 0;margin:0 -12px;
width:calc(100% + 24px)}
td.tile{border:1px solid var(--line);border-radius:10px;padding:12px 14px;background:var(--wash)}
.tile .value{font-size:1.9em;font-weight:700;font-variant-numeric:tabular-nums}
.tile .label{color:var(--muted);font-size:.9em}
.tile.good .value{color:var(--good)}.tile.bad .value{color:var(--bad)}
.tile.warn .value{color:var(--warn)}
table.bar{width:100%;min-width:120px;border-collapse:separate;border-radius:5px;
overflow:hidden;background:var(--line)}
table.bar td{height:10px;padding:0;border:0}
table.bar td.bar-reached{background:var(--good)}
table.bar td.bar-lost{background:var(--bad)}
.worst{border-top:1px solid var(--line);padding:10px 0}
.worst:first-child{border-top:0}
.worst .q{font-weight:600}
.worst .a{white-space:pre-wrap;color:var(--muted);margin:4px 0}
pre{background:var(--wash);padding:10px;border-radius:6px;overflow:auto;font-size:.85em}
@media (max-width:760px){table.tiles td{display:block;margin-bottom:8px}}
"""
ANSWER_CHARS = 360
STATUS_TONES = {"significant": ("good", "significant"), "not significant": ("muted", "none"),
                "worse": ("muted", "none"), "base is best": ("muted", "none"),
                "not tested": ("warn", "not tested")}


def _tone(right: int, total: int) -> str:
    if not total:
        return "muted"
    share = right / total
    return "good" if share >= 0.75 else "warn" if share >= 0.5 else "bad"


def _tile(value: str, label: str, tone: str) -> Html:
    return tag("td", join([tag("div", value, class_="value"), tag("div", label,
                                                                  class_="label")]),
               class_=f"tile {tone}")


def _figures(card: Mapping[str, Any]) -> Html:
    h = card["headline"]
    precision = "-" if h["precision"] is None else f"{h['precision']:.2f}"
    tiles = [
        _tile(f"{h['facts_right']}/{h['answerable']}", "facts right: answerable questions "
              "answered with every expected fact", _tone(h["facts_right"], h["answerable"])),
        _tile(precision, f"grounded-label precision: {h['shown_right']} of the {h['shown']} "
              "answers shown as grounded are right",
              _tone(h["shown_right"], h["shown"])),
        _tile(f"{h['unanswerable_refused']}/{h['unanswerable']}",
              "unanswerable questions refused",
              _tone(h["unanswerable_refused"], h["unanswerable"])),
        _tile(f"{h['wrongly_refused']}/{h['answerable']}",
              "answerable questions wrongly refused",
              _tone(h["answerable"] - h["wrongly_refused"], h["answerable"])),
    ]
    return tag("table", tag("tr", join(tiles)), class_="tiles")


def _bar(reached: float, lost: float) -> Html:
    """A bar of three parts: reached (green), lost here (red), the rest."""
    cells = [tag("td", "", class_=f"bar-{name}", width=f"{share:.0f}%")
             for name, share in (("reached", reached), ("lost", lost),
                                 ("rest", 100 - reached - lost)) if round(share) > 0]
    return tag("table", tag("tr", join(cells)), class_="bar", width="100%")


def _funnel(card: Mapping[str, Any]) -> tuple[Html, str]:
    funnel: dict[str, dict[str, int]] = card["funnel"]
    total = card["funnel_questions"]
    if not funnel:
        return paragraph("No question named evidence that a node of the graph handles, so "
                         "there is no funnel to draw.", "muted"), ""
    rows = []
    classes = []
    lost = card.get("most_lost") or {}
    for node, counts in funnel.items():
        count = max(1, sum(counts.values()))
        reached = 100 * counts["reached"] / count
        lost_share = 100 * counts["lost_here"] / count
        bar = _bar(reached, lost_share)
        first = card.get("first_losses", {}).get(node, 0)
        rows.append([node, counts["reached"], counts["lost_here"], first,
                     counts["never_reached"], bar])
        classes.append("lost" if node == lost.get("node") else None)
    body = table(["node", "reached", "lost here", "first lost here", "never reached", ""],
                 rows, numeric=(1, 2, 3, 4), row_classes=classes)
    if lost:
        lead = (f"Most often the evidence is first lost at {lost['node']}: "
                f"{lost['questions']} of the {total} questions that name their evidence "
                "(lost there and carried to the answer by no other path).")
    else:
        lead = (f"The evidence of each of the {total} questions that name it reaches the "
                "answer.")
    return body, lead


def _shortened(text: str, limit: int = ANSWER_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _worst(card: Mapping[str, Any]) -> Html:
    worst = card["worst"]
    if not worst:
        return paragraph("Every question was answered right or refused rightly.", "muted")
    items = []
    for item in worst:
        items.append(tag("div", join([
            tag("div", join([badge(item["id"], "muted"), " ", item["question"]]), class_="q"),
            tag("div", _shortened(item["answer"]) or "(no answer)", class_="a"),
            paragraph(join([badge(item["problem"], "bad"), " ", item["cause"]])),
        ]), class_="worst"))
    return join(items)


def _suggestion(card: Mapping[str, Any]) -> Html:
    s = card["suggestion"]
    tone, word = STATUS_TONES.get(s["status"], ("muted", s["status"]))
    parts: list[object] = [paragraph(join([badge(word, tone), " ", s["text"]]))]
    if s["settings"]:
        parts.append(table(["setting", "value"],
                           [[k, json.dumps(v) if not isinstance(v, str) else v]
                            for k, v in s["settings"].items()]))
    if s.get("variant"):
        parts.append(paragraph("In the studio, Apply as variant stores it beside the graph "
                               "(the graph itself is not changed); the same change as a "
                               "variant file entry:", "muted"))
        parts.append(details("the variant", tag("pre", json.dumps(s["variant"], indent=2))))
    return join(parts)


def _checks(card: Mapping[str, Any]) -> Html:
    notes: list[str] = list(card.get("warnings", []))
    generation = card.get("generation", {})
    notes += generation.get("notes", [])
    if card.get("failures"):
        notes.append(f"{card['failures']} question run(s) failed (they count as wrong).")
    if generation.get("source") == "generated":
        what = (f"{generation['questions']} questions of {generation['requested']} asked were "
                f"written by {generation['model']} and each verified against its passage "
                f"({generation['calls']} model calls)")
    else:
        what = f"{generation.get('questions', 0)} questions read from {card['evalset']}"
    parts: list[object] = [paragraph(f"{what}. Small sets say little: a figure here moves by "
                                     "a question or two.")]
    if notes:
        parts.append(tag("ul", join(tag("li", n) for n in notes)))
    seconds = card.get("seconds", {})
    if seconds:
        parts.append(paragraph("Time: " + ", ".join(f"{k} {v:.0f} s"
                                                    for k, v in seconds.items()), "muted"))
    return join(parts)


def scorecard_page(card: Mapping[str, Any]) -> Page:
    """The page of a scorecard's JSON."""
    corpus = Path(card["corpus"]).name or card["corpus"] or "the corpus"
    written = ("written from" if card.get("generation", {}).get("source") == "generated"
               else "about")
    page = Page(f"Scorecard: {card['graph']} on {corpus}",
                lead=f"The graph {card['graph']} answered questions {written} the folder "
                     f"{card['corpus']}: what it got right, where it loses the evidence and "
                     "the one change worth making.", style=STYLE,
                footer=f"ModRAG Studio scorecard of {card['graph']} · questions in "
                       f"{Path(card['evalset']).name}")
    page.add("Figures", _figures(card), "In the model's own words: text the pipeline appended "
             "does not count.", anchor="figures")
    funnel, lead = _funnel(card)
    page.add("Where the evidence is lost", funnel, lead, anchor="funnel")
    page.add("The three worst questions", _worst(card), "Each with what went wrong and why, "
             "from the evidence's path through the run.", anchor="worst")
    page.add("Suggested change", _suggestion(card), "The tuner tried a few settings between "
             "the question and the evidence the prompt reads, and tested its choice on "
             "questions its search never saw.", anchor="change")
    page.add("Before you trust these figures", _checks(card), anchor="checks")
    return page


def write_scorecard(card: Mapping[str, Any], path: str | Path) -> Path:
    """Save the scorecard page (atomically)."""
    return scorecard_page(card).write(path)


def scorecard_html(card: Mapping[str, Any]) -> str:
    return scorecard_page(card).render()

