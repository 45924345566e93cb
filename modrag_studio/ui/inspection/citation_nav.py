"""Citation lineage both ways: from an answer's citation to the chunk, its document and its PDF
page; from a chunk back to the answers' citations of it.

Clicking a citation (in the inspector's answer view or an answer card) selects the chunk's row
in the node that fed the prompt block, highlights every node where the chunk appears (the
evidence debugger's "Show where this chunk appears") and shows the document at the chunk in the
inspector's Source tab, with its PDF page and "Open PDF at page N". "Show citations of this
chunk" (a chunk row's menu, or the Source tab) selects the answer node and highlights the
citations. The lookups are ``engine.lineage.prompt_block_source`` and ``citations_of``: they
follow the node types' declared evidence roles.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QUrl
from PySide6.QtGui import QColor, QDesktopServices, QTextCharFormat
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.datatypes import Chunk, Citation, ScoredChunk
from modrag_studio.engine.evidence.lineage import CitedAt, Place, citations_of, prompt_block_source
from modrag_studio.ui.inspection.views import AnswerView, RecordTable

if TYPE_CHECKING:
    from modrag_studio.ui.inspection.protocols import InspectedRun, LineageMarks

CITED = QColor("#ffe08a")


def pdf_page(chunk: Chunk, document_source: str = "") -> tuple[str, int] | None:
    """(PDF file, page) of a chunk cut from a PDF whose loader kept the page, else None."""
    page = chunk.metadata.get("page")
    source = next((s for s in (chunk.source, document_source, chunk.metadata.get("path", ""))
                   if str(s).lower().endswith(".pdf")), "")
    return (str(source), int(page)) if source and isinstance(page, int) else None


def pdf_url(path: str, page: int) -> QUrl:
    """A file URL that PDF viewers open at ``page`` (``#page=N``)."""
    url = QUrl.fromLocalFile(str(Path(path).resolve()))
    url.setFragment(f"page={page}")
    return url


class CitationNavigator(QObject):
    """Follows citations to chunks, documents and pages, and chunks back to citations."""

    def __init__(self, window: Any, debugger: LineageMarks, run: InspectedRun) -> None:
        super().__init__(window)
        self.window = window
        self.debugger = debugger
        self.features = run
        self.inspector = self.features.inspector
        self.chunk: Chunk | None = None
        self.page: tuple[str, int] | None = None
        self.place: Place | None = None
        self.highlighted: list[str] = []  # the citation texts marked in the answer view
        bar = QWidget(self.inspector.source_tab)
        column = QVBoxLayout(bar)
        column.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.where = QLabel(bar)
        self.where.setObjectName("citationWhere")
        self.where.setWordWrap(True)
        self.where.linkActivated.connect(self._link)
        self.open_pdf_button = QPushButton("Open PDF", bar)
        self.open_pdf_button.setObjectName("openPdfButton")
        self.open_pdf_button.clicked.connect(lambda: self.open_pdf())
        self.back_button = QPushButton("Show citations of this chunk", bar)
        self.back_button.setObjectName("showCitationsButton")
        self.back_button.clicked.connect(
            lambda: self.show_citations(self.chunk) if self.chunk is not None else None)
        column.addWidget(self.where)
        row.addWidget(self.open_pdf_button)
        row.addWidget(self.back_button)
        row.addStretch(1)
        column.addLayout(row)
        self.open_pdf_button.setVisible(False)
        self.back_button.setVisible(False)
        self.inspector.source_tab.layout().insertWidget(1, bar)
        self.inspector.chunk_source_shown.connect(self._source_shown)
        self.inspector.citation_opened.connect(self.follow)

    def _context(self) -> tuple[Any, Any, Any]:
        controller = self.features.controller
        return controller.last_result, self.features.document(), controller.registry

    # citation -> chunk, document, page -------------------------------------------------------
    def follow(self, citation: Citation, chunk: Chunk) -> Place | None:
        """Select the chunk where it entered the prompt, show its lineage and its document."""
        result, doc, registry = self._context()
        if result is None:
            return None
        self.place = prompt_block_source(result, doc, chunk.chunk_id, registry)
        self.debugger.show_lineage(chunk.chunk_id)
        if self.place is not None:
            self.select_row(self.place, chunk.chunk_id)
        self.inspector.show_chunk_source(chunk)  # the document at the chunk (sets self.page)
        found = (f" from {self.place.node_id}.{self.place.port} #{self.place.row}"
                 if self.place is not None else "")
        page = f", page {self.page[1]}" if self.page is not None else ""
        message = f"[{citation.ref}] → chunk {chunk.chunk_id}{found}, document {chunk.doc_id}{page}"
        row_link = " · <a href='row'>show the row</a>" if self.place is not None else ""
        self.where.setText(f"Cited as <b>[{escape(citation.ref)}]</b>: chunk "
                           f"<b>{escape(chunk.chunk_id)}</b>{escape(found)}{escape(page)}"
                           f"{row_link}")
        self.window.statusBar().showMessage(message)
        return self.place

    def select_row(self, place: Place, chunk_id: str) -> bool:
        """Show ``place``'s node in the inspector with the chunk's row selected."""
        self.window.select_node(place.node_id)
        if self.inspector.node_id != place.node_id:
            self.inspector.show_node(place.node_id)
        view = self._output_view(place.port)
        if not isinstance(view, RecordTable):
            return False
        return view.select_where(lambda row: _chunk_id(row) == chunk_id)

    def _output_view(self, port: str) -> QWidget | None:
        tabs = self.inspector.outputs_tabs
        for index in range(tabs.count()):
            if tabs.tabText(index) == port:
                tabs.setCurrentIndex(index)
                return tabs.widget(index)
        return None

    def _link(self, target: str) -> None:
        if target == "row":
            self.inspector.tabs.setCurrentWidget(self.inspector.outputs_tabs)

    def _source_shown(self, chunk: Chunk) -> None:
        from modrag_studio.ui.inspection.inspector import find_document

        self.chunk = chunk
        document = find_document(self.inspector.result, chunk.doc_id)
        self.page = pdf_page(chunk, document.source if document is not None else "")
        self.where.setText(f"PDF page {self.page[1]} of {escape(Path(self.page[0]).name)}"
                           if self.page is not None else "")
        if self.page is not None:
            self.open_pdf_button.setText(f"Open PDF at page {self.page[1]}")
            exists = Path(self.page[0]).is_file()
            self.open_pdf_button.setEnabled(exists)
            self.open_pdf_button.setToolTip(self.page[0] if exists else
                                            f"{self.page[0]} is not on this machine")
        self.open_pdf_button.setVisible(self.page is not None)
        self.back_button.setVisible(True)

    def open_pdf(self) -> QUrl | None:
        """Open the shown chunk's PDF at its page in the system's viewer."""
        if self.page is None:
            return None
        url = pdf_url(*self.page)
        QDesktopServices.openUrl(url)
        return url

    # chunk -> citations ----------------------------------------------------------------------
    def show_citations(self, chunk: Chunk) -> list[CitedAt]:
        """Select the answer that cites ``chunk`` and highlight its citations of it."""
        result, doc, registry = self._context()
        cited = citations_of(result, doc, chunk, registry) if result is not None else []
        if not cited:
            self.window.statusBar().showMessage(
                f"{chunk.chunk_id} is cited by no answer of this run")
            return []
        first = cited[0]
        self.window.select_node(first.node_id)
        if self.inspector.node_id != first.node_id:
            self.inspector.show_node(first.node_id)
        self.inspector.tabs.setCurrentWidget(self.inspector.outputs_tabs)
        view = self._output_view(first.port)
        refs = list(dict.fromkeys(c.ref for c in cited if c.node_id == first.node_id))
        if isinstance(view, AnswerView):
            self.highlighted = highlight_refs(view, refs)
        shown = ", ".join(f"[{r}]" for r in refs)
        self.debugger.mark_node(first.node_id, f"{chunk.chunk_id} cited as {shown}")
        self.window.statusBar().showMessage(f"{chunk.chunk_id} is cited as {shown} by "
                                            f"{first.node_id}")
        return cited


def highlight_refs(view: AnswerView, refs: list[str]) -> list[str]:
    """Mark every ``[ref]`` in the answer view (text and citation list); the marked texts."""
    document = view.browser.document()
    fmt = QTextCharFormat()
    fmt.setBackground(CITED)
    fmt.setForeground(QColor("#1a1a1a"))
    selections: list[QTextEdit.ExtraSelection] = []
    for ref in refs:
        cursor = document.find(f"[{ref}]")
        while not cursor.isNull():
            selection = QTextEdit.ExtraSelection()
            selection.cursor = cursor
            selection.format = fmt
            selections.append(selection)
            cursor = document.find(f"[{ref}]", cursor)
    view.browser.setExtraSelections(selections)
    if selections:
        view.browser.setTextCursor(selections[0].cursor)
        view.browser.ensureCursorVisible()
    return [s.cursor.selectedText() for s in selections]


def _chunk_id(row: Any) -> str | None:
    chunk = row.chunk if isinstance(row, ScoredChunk) else row
    return chunk.chunk_id if isinstance(chunk, Chunk) else None
