"""The chunk map: a document with its chunks' boundaries coloured, overlaps shown, each
chunk's size in the embedder's own tokens, and chunks longer than its window in red."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QComboBox, QLabel, QTextBrowser, QVBoxLayout, QWidget

from modrag_studio.engine.core.datatypes import Chunk

COLOURS = ("#1f4e79", "#2e6b3a")     # alternate chunks
OVERLAP = "#7a5a10"                   # text in two chunks
OVER = "#8b1e1e"                      # chunk longer than the embedder's window
GAP = "#888888"                       # text in no chunk
MAX_CHARS = 200_000


@dataclass(frozen=True)
class ChunkSize:
    chunk: Chunk
    tokens: int | None
    over: bool


def chunks_in(values: dict[str, Any]) -> list[Chunk]:
    """The first list of chunks among port values (a splitter's output, a store's input)."""
    for value in values.values():
        if isinstance(value, list) and value and isinstance(value[0], Chunk):
            return value
    return []


def embedder_model(values: dict[str, Any]) -> str | None:
    """The sentence-transformers model of an ``EmbedderSpec`` among port values."""
    for value in values.values():
        if getattr(value, "kind", None) == "sentence-transformers" and getattr(value, "model",
                                                                                None):
            return str(value.model)
    return None


def measure(chunks: list[Chunk], model: str | None) -> tuple[list[ChunkSize], int | None]:
    """Each chunk's size in the model's tokens and the model's window (None: unknown)."""
    try:
        from modrag_nodes.embedding.api import DEFAULT_MODEL, embedder_window, token_counts

        name = model or DEFAULT_MODEL
        counts = token_counts([c.text for c in chunks], name)
        window = embedder_window(name)
    except Exception:  # no local tokenizer: sizes in characters only
        return [ChunkSize(c, None, False) for c in chunks], None
    return [ChunkSize(c, n, n > window) for c, n in zip(chunks, counts, strict=True)], window


def document_text(chunks: list[Chunk], find_text: Callable[[str], str | None],
                  doc_id: str) -> str:
    """The document's text, or one rebuilt from its chunks' offsets (gaps as spaces)."""
    text = find_text(doc_id)
    if text:
        return text
    end = max((c.end or 0) for c in chunks) if chunks else 0
    rebuilt = [" "] * end
    for chunk in chunks:
        if chunk.start is not None and chunk.end is not None:
            rebuilt[chunk.start:chunk.end] = list(chunk.text[:chunk.end - chunk.start])
    return "".join(rebuilt)


def map_html(text: str, sizes: list[ChunkSize], window: int | None) -> str:
    """The document as HTML: chunk backgrounds alternate, overlaps and long chunks stand out,
    and a label at each chunk's start gives its number and size."""
    text = text[:MAX_CHARS]
    cover: list[list[int]] = [[] for _ in range(len(text) + 1)]
    starts: dict[int, list[int]] = {}
    for index, size in enumerate(sizes):
        start, end = size.chunk.start, size.chunk.end
        if start is None or end is None:
            continue
        starts.setdefault(start, []).append(index)
        for pos in range(max(0, start), min(end, len(text))):
            cover[pos].append(index)
    parts, run_start = [], 0
    for pos in range(1, len(text) + 1):
        if pos < len(text) and cover[pos] == cover[run_start] and pos not in starts:
            continue
        for index in starts.get(run_start, []):
            size = sizes[index]
            tokens = f"{size.tokens} tok" if size.tokens is not None \
                else f"{len(size.chunk.text)} chars"
            colour = "#ff8080" if size.over else "#ffd166"
            parts.append(f"<span style='color:{colour}; font-weight:bold'>"
                         f"⟨#{size.chunk.index if size.chunk.index is not None else index}"
                         f" · {tokens}⟩</span>")
        members = cover[run_start]
        if not members:
            background = None
        elif len(members) > 1:
            background = OVERLAP
        elif sizes[members[0]].over:
            background = OVER
        else:
            background = COLOURS[members[0] % 2]
        piece = html.escape(text[run_start:pos]).replace("\n", "<br>")
        if background is None:
            parts.append(f"<span style='color:{GAP}'>{piece}</span>")
        else:
            parts.append(f"<span style='background:{background}; color:#f4f4f4'>{piece}</span>")
        run_start = pos
    return "<div style='font-family:monospace; white-space:pre-wrap'>" + "".join(parts) + \
        "</div>"


def summary(sizes: list[ChunkSize], window: int | None, model: str | None) -> str:
    if window is None:
        return f"{len(sizes):,} chunks (sizes in characters: no local tokenizer)"
    over = sum(1 for s in sizes if s.over)
    share = 100 * over / len(sizes) if sizes else 0.0
    return (f"{len(sizes):,} chunks of this document · {over} longer than the window of "
            f"{window} tokens of {model or 'all-MiniLM-L6-v2'} ({share:.1f}%, in red: their "
            f"tails are never embedded) · overlaps in amber")


class ChunkMapView(QWidget):
    """Pick a document; see how it was cut."""

    def __init__(self, chunks: list[Chunk], model: str | None,
                 find_text: Callable[[str], str | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chunkMap")
        self.chunks, self.model, self.find_text = chunks, model, find_text
        self.by_doc: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            self.by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self.picker = QComboBox(self)
        self.picker.addItems(list(self.by_doc))
        self.info = QLabel(self)
        self.info.setWordWrap(True)
        self.browser = QTextBrowser(self)
        self.browser.setStyleSheet("background: #16181d; color: #e6e6e6;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.picker)
        layout.addWidget(self.info)
        layout.addWidget(self.browser, 1)
        self.sizes: list[ChunkSize] = []
        self.window: int | None = None
        self.picker.currentTextChanged.connect(self.show_document)
        if self.by_doc:
            self.show_document(self.picker.currentText())

    def show_document(self, doc_id: str) -> None:
        chunks = sorted(self.by_doc.get(doc_id, []), key=lambda c: (c.start or 0, c.index or 0))
        self.sizes, self.window = measure(chunks, self.model)
        text = document_text(chunks, self.find_text, doc_id)
        self.info.setText(summary(self.sizes, self.window, self.model))
        self.browser.setHtml(map_html(text, self.sizes, self.window))
