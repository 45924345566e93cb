"""HTML to plain text with light markdown structure.

Scripts, styles, navigation, headers, footers and asides are dropped (footnote asides are
kept: they are content). Headings become ``#`` lines, list items ``- `` lines, table rows
``| a | b |`` lines and ``<pre>`` blocks fenced code, so the heading-aware splitter and the
smart-ingest analysis see the page's structure. When the page marks its main content
(``<main>``, ``role="main"``, a single ``<article>``) only that part is kept.
"""

from __future__ import annotations

import re
from typing import Any

DROP_TAGS = {"script", "style", "nav", "header", "footer", "aside", "noscript", "template",
             "svg", "button", "form", "iframe", "object", "canvas", "select", "head"}
DROP_ROLES = {"navigation", "search", "banner", "contentinfo", "complementary"}
DROP_CLASSES = {"navheader", "navfooter", "sphinxsidebar", "sphinxsidebarwrapper", "related",
                "headerlink", "breadcrumb", "breadcrumbs", "navbar", "mobile-nav", "skip-link",
                "footer", "sidebar", "toc"}
BLOCK_TAGS = {"p", "div", "section", "article", "main", "blockquote", "dl", "dt", "dd", "ul",
              "ol", "table", "thead", "tbody", "tfoot", "figure", "figcaption", "body",
              "address", "details", "summary", "center", "caption", "hr", "aside"}
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SPACES = re.compile(r"[ \t\r\f\v\n\u00a0]+")


def html_to_text(raw: bytes | str) -> tuple[str, str]:
    """``(title, text)`` of an HTML page."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(raw, "html.parser")
    title_tag = soup.find("title")
    title = _flat(title_tag.get_text()) if title_tag else ""
    _drop_noise(soup)
    root = _main_part(soup)
    out = _Writer()
    _walk(root, out)
    text = out.text()
    if not title:
        first = re.search(r"^#{1,6} (.+)$", text, re.MULTILINE)
        title = first.group(1).strip() if first else ""
    return title, text


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _drop_noise(soup: Any) -> None:
    from bs4 import Comment, Tag

    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    doomed = []
    for tag in soup.find_all(True):
        if not isinstance(tag, Tag) or tag.attrs is None:
            continue
        classes = set(tag.get("class") or [])
        if tag.name == "aside" and any("footnote" in c for c in classes):
            continue
        if (tag.name in DROP_TAGS or (tag.get("role") or "") in DROP_ROLES
                or classes & DROP_CLASSES or tag.get("hidden") is not None):
            doomed.append(tag)
    for tag in doomed:
        tag.decompose()


def _main_part(soup: Any) -> Any:
    for finder in (lambda: soup.find_all("main"), lambda: soup.find_all(role="main"),
                   lambda: soup.find_all("article")):
        found = finder()
        if len(found) == 1:
            return found[0]
    return soup.body or soup


class _Writer:
    """Accumulates blocks of text; inline text is joined, blocks are separated by blank lines."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.prefix = ""  # put before the next non-empty line (a list item's "- ")

    def add_inline(self, text: str) -> None:
        self.inline.append(text)

    def flush(self) -> None:
        line = _flat("".join(self.inline))
        self.inline = []
        if line:
            self.blocks.append(self.prefix + line)
            self.prefix = ""

    def add_block(self, text: str) -> None:
        self.flush()
        if text.strip():
            self.blocks.append(text)
            self.prefix = ""

    def text(self) -> str:
        self.flush()
        merged: list[str] = []
        for block in self.blocks:
            # consecutive list items and table rows stay on adjacent lines
            if merged and _is_row(block) and _is_row(merged[-1]):
                merged[-1] += "\n" + block
            else:
                merged.append(block)
        return "\n\n".join(merged).strip() + ("\n" if merged else "")


def _is_row(block: str) -> bool:
    return block.startswith(("- ", "| ")) and "\n\n" not in block


def _walk(node: Any, out: _Writer) -> None:
    from bs4 import NavigableString, Tag

    for child in node.children:
        if isinstance(child, NavigableString):
            out.add_inline(str(child))
            continue
        if not isinstance(child, Tag):
            continue
        name = child.name
        if name in HEADINGS:
            out.flush()
            heading = _flat(child.get_text(" "))
            if heading:
                out.add_block("#" * HEADINGS[name] + " " + heading)
        elif name == "pre":
            code = child.get_text().strip("\n")
            out.add_block(f"```\n{code}\n```")
        elif name == "li":
            out.flush()
            out.prefix = "- "
            _walk(child, out)
            out.flush()
            out.prefix = ""
        elif name == "tr":
            out.flush()
            cells = [_flat(c.get_text(" ")) for c in child.find_all(["td", "th"], recursive=False)]
            if any(cells):
                out.add_block("| " + " | ".join(cells) + " |")
        elif name == "br":
            out.flush()
        elif name in BLOCK_TAGS:
            out.flush()
            _walk(child, out)
            out.flush()
        else:
            _walk(child, out)
