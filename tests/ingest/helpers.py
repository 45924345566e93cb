"""Builders for ingest tests: a tiny PDF writer and sample documents."""

from __future__ import annotations

from pathlib import Path


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A minimal valid PDF (Helvetica, ASCII text, one line per text line) with ``pages``."""
    objects: list[bytes] = []
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, text in enumerate(pages):
        lines = " T* ".join(f"({_escape(line)}) Tj" for line in text.split("\n"))
        stream = f"BT /F1 11 Tf 14 TL 72 740 Td {lines} ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
            ).encode()
    path.write_bytes(bytes(out))
    return path


HTML_PAGE = """<!DOCTYPE html>
<html><head><title>Garden guide</title><style>body { color: red }</style>
<script>var tracking = "SCRIPT_TEXT";</script></head>
<body>
<header><a href="/">HEADER_TEXT</a></header>
<nav><ul><li>NAV_TEXT</li></ul></nav>
<div class="content">
<h1>Growing tomatoes</h1>
<p>Tomatoes need   full sun and
regular watering.</p>
<h2>Soil</h2>
<p>Use rich soil with <b>compost</b>.</p>
<ul><li>Loamy soil</li><li>pH 6.5</li></ul>
<table><tr><th>Month</th><th>Task</th></tr><tr><td>May</td><td>Plant</td></tr></table>
<pre>water(plants)
  twice()</pre>
</div>
<aside>ASIDE_TEXT</aside>
<footer>FOOTER_TEXT</footer>
</body></html>
"""

MARKDOWN = """# Handbook

Welcome to the handbook. It explains the basics of the project in a few short sections.

## Install

Run the installer and follow the prompts. The installer copies every file it needs.

### On Linux

Use the package manager of your distribution to install the dependencies first.

## Use

Open the application and create a new project from the start page menu.
"""

SHORT_SECTIONS_MD = "\n\n".join(f"## Heading {i}\n\nShort body text number {i}." for i in range(12))


def write_corpus(folder: Path) -> Path:
    """A small mixed corpus: txt, md, html, pdf, BEIR jsonl, a sub-folder, a hidden file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text(
        "Plain notes about bees.\n\nBees make honey from nectar.\n", encoding="utf-8")
    (folder / "handbook.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "site").mkdir(exist_ok=True)
    (folder / "site" / "garden.html").write_text(HTML_PAGE, encoding="utf-8")
    write_pdf(folder / "report.pdf", ["First page about apples.\nApples are red.",
                                      "Second page about pears.\nPears are green."])
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "Alpha", "text": "Alpha text about cells."}\n'
        '{"_id": "d2", "title": "", "text": "Beta text about proteins."}\n', encoding="utf-8")
    (folder / ".hidden.txt").write_text("hidden", encoding="utf-8")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n")
    return folder
