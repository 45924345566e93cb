"""Self-contained HTML pages built from sections: one file with its CSS, script and drawings
inline, that opens from a disk, a mail attachment or a chat, with no server and no network.

A page is a title, a lead paragraph and sections; a section is a heading, an optional lead
and its body. Bodies are built with the helpers here (``paragraph``, ``table``, ``badge``,
``details``), each escaping the text it is given, so a run report and an evaluation
scorecard share one look and one escaping rule. ``Html`` marks text that is already HTML.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from modrag_studio.engine.core.document import atomic_write_text


class Html(str):
    """Text that is already HTML (built by these helpers); everything else gets escaped."""


def esc(value: object) -> Html:
    """``value`` as HTML text (``Html`` passes through unchanged)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[object], separator: str = "") -> Html:
    return Html(separator.join(esc(part) for part in parts))


def tag(name: str, content: object = "", **attributes: object) -> Html:
    """``<name attr="...">content</name>``; an attribute ``class_`` is written ``class``,
    one set to None or False is left out, one set to True is written bare."""
    attrs = []
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        key = key.rstrip("_").replace("_", "-")
        attrs.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    return Html(f"<{name}{''.join(attrs)}>{esc(content)}</{name}>")


def paragraph(content: object, class_: str | None = None) -> Html:
    return tag("p", content, class_=class_)


Tone = str  # "good", "bad", "warn", "info", "muted"


def badge(text: object, tone: Tone = "info") -> Html:
    return tag("span", text, class_=f"badge {tone}")


def details(summary: object, body: object, open_: bool = False) -> Html:
    return Html(f"<details{' open' if open_ else ''}>{tag('summary', summary)}"
                f"{esc(body)}</details>")


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], *,
          numeric: Iterable[int] = (), row_ids: Sequence[str | None] | None = None,
          row_classes: Sequence[str | None] | None = None) -> Html:
    """A table; columns in ``numeric`` are right-aligned."""
    right = set(numeric)
    head = "".join(str(tag("th", h, class_="num" if i in right else None))
                   for i, h in enumerate(headers))
    body = []
    for n, row in enumerate(rows):
        cells = "".join(str(tag("td", c, class_="num" if i in right else None))
                        for i, c in enumerate(row))
        row_id = row_ids[n] if row_ids else None
        row_class = row_classes[n] if row_classes else None
        body.append(str(tag("tr", Html(cells), id=row_id, class_=row_class)))
    return Html(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


@dataclass
class Section:
    """One part of a page: a heading (with an anchor), an optional lead and a body."""

    title: str
    body: Html
    lead: str = ""
    anchor: str = ""

    def render(self) -> str:
        anchor = self.anchor or "s-" + "".join(c if c.isalnum() else "-"
                                               for c in self.title.lower())
        lead = paragraph(self.lead, "lead") if self.lead else ""
        return f'<section id="{esc(anchor)}"><h2>{esc(self.title)}</h2>{lead}{self.body}</section>'


@dataclass
class Page:
    """A titled page of sections; ``render`` gives the whole HTML file."""

    title: str
    lead: str = ""
    sections: list[Section] = field(default_factory=list)
    footer: str = ""
    script: str = ""  # extra inline script, after the page's own
    style: str = ""  # extra inline CSS, after the page's own

    def add(self, title: str, body: Html, lead: str = "", anchor: str = "") -> Section:
        section = Section(title, body, lead, anchor)
        self.sections.append(section)
        return section

    def render(self) -> str:
        made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        nav = "".join(f'<a href="#{esc(s.anchor)}">{esc(s.title)}</a>'
                      for s in self.sections if s.anchor)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(self.title)}</title><style>{CSS}{self.style}</style></head><body><main>"
            f"<header><h1>{esc(self.title)}</h1>"
            f"{paragraph(self.lead, 'lead') if self.lead else ''}"
            f"{f'<nav>{nav}</nav>' if nav else ''}</header>"
            + "".join(s.render() for s in self.sections)
            + f"<footer>{esc(self.footer)} · written {made}</footer></main>"
            f"<script>{SCRIPT}{self.script}</script></body></html>\n")

    def write(self, path: str | Path) -> Path:
        """Save the page (atomically: a reader never sees half a file)."""
        path = Path(path)
        atomic_write_text(path, self.render())
        return path


CSS = """
:root{--ink:#1f2430;--muted:#5b6475;--line:#d9dee7;--paper:#fff;--wash:#f5f7fa;
--good:#1f7a4d;--good-bg:#e3f4ea;--bad:#a3261b;--bad-bg:#fbe6e3;--warn:#8a5a00;
--warn-bg:#fff2d6;--info:#1d4f91;--info-bg:#e4edf9;--hl:#fff3b0}
*{box-sizing:border-box}
body{margin:0;background:var(--wash);color:var(--ink);
font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","PingFang SC",
"Microsoft YaHei",sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px 28px 40px}
header h1{font-size:1.7em;margin:.2em 0 .1em}
h2{font-size:1.2em;margin:0 0 .5em;padding-bottom:.25em;border-bottom:1px solid var(--line)}
section{background:var(--paper);border:1px solid var(--line);border-radius:10px;
padding:18px 22px;margin:16px 0}
.lead{color:var(--muted);margin:.2em 0 .8em}
nav{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:.9em}
nav a,a{color:var(--info)}
table{border-collapse:collapse;width:100%;font-size:.92em}
th,td{border-bottom:1px solid var(--line);padding:6px 8px;text-align:left;vertical-align:top}
th{background:var(--wash);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.hit td{background:var(--info-bg)}
tr.lost td{background:var(--bad-bg)}
tr:target td{background:var(--hl)}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:.85em;
font-weight:600;white-space:nowrap}
.badge.good{background:var(--good-bg);color:var(--good)}
.badge.bad{background:var(--bad-bg);color:var(--bad)}
.badge.warn{background:var(--warn-bg);color:var(--warn)}
.badge.info{background:var(--info-bg);color:var(--info)}
.badge.muted{background:var(--wash);color:var(--muted)}
.question{font-size:1.25em;font-weight:600}
.answer{font-size:1.15em;background:var(--wash);border-left:4px solid var(--info);
padding:12px 16px;border-radius:6px;white-space:pre-wrap}
a.cite{font-weight:700;text-decoration:none;background:var(--info-bg);border-radius:4px;
padding:0 3px;cursor:pointer}
.passage{border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:10px 0;
white-space:pre-wrap;font-size:.93em}
.passage:target,.passage.shown{outline:3px solid var(--hl);background:#fffdf0}
.passage h3{margin:0 0 4px;font-size:.95em;color:var(--muted)}
.steps{list-style:none;padding:0;margin:0}
.steps li{padding:8px 10px;border-bottom:1px solid var(--line);display:grid;
grid-template-columns:1fr auto;gap:4px 12px}
.steps li:target{background:var(--hl)}
.steps .time{color:var(--muted);font-variant-numeric:tabular-nums;white-space:nowrap}
.pipeline{width:100%;height:auto;border:1px solid var(--line);border-radius:8px;background:#fbfcfe}
.pipeline a text{cursor:pointer}
.muted{color:var(--muted)}
footer{color:var(--muted);font-size:.85em;margin-top:24px;text-align:center}
details summary{cursor:pointer;color:var(--info)}
@media print{body{background:#fff}section{break-inside:avoid;border-color:#ccc}nav{display:none}}
"""

SCRIPT = """
document.addEventListener('click', function (event) {
  var link = event.target.closest('a.cite');
  if (!link) return;
  var target = document.getElementById(link.getAttribute('href').slice(1));
  if (!target) return;
  event.preventDefault();
  var opening = !(target.open && target.classList.contains('shown'));
  document.querySelectorAll('.passage.shown').forEach(function (p) {
    p.classList.remove('shown'); });
  target.open = opening;
  if (opening) { target.classList.add('shown'); target.scrollIntoView({block: 'nearest'}); }
});
(function () {  // a link to a passage (report.html#passage-2) opens it
  var target = location.hash && document.getElementById(location.hash.slice(1));
  if (target && target.tagName === 'DETAILS') { target.open = true;
    target.classList.add('shown'); }
})();
"""
