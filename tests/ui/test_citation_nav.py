"""Citation lineage in the studio: citation -> chunk row, lineage, document, PDF page; back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices

from modrag_studio.engine.core.datatypes import ChatMessage
from modrag_studio.engine.evidence.lineage import Place
from modrag_studio.ui.inspection.citation_nav import pdf_page
from modrag_studio.ui.inspection.views import ROW_OBJECT_ROLE, AnswerView, RecordTable
from tests.generation.test_counterfactual import _graph
from tests.ingest.helpers import write_pdf
from tests.ui.evidence_helpers import evidence_window, run_and_wait

pytestmark = pytest.mark.ui
PAGES = ["Safety rules for the press line.\nWear gloves near the press.",
         "Maintenance.\nThe lubrication pump LP-07 is serviced every 500 operating hours."]


def _reply(messages: list[ChatMessage]) -> str:
    """Cites the block that holds the service interval, by its label."""
    match = re.search(r"\[([^\]]+)\][^\[]*500 operating hours", messages[-1].content)
    return f"The pump is serviced every 500 operating hours [{match.group(1)}]." if match \
        else "The documents do not say."


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_pdf(corpus / "manual.pdf", PAGES)
    (corpus / "canteen.md").write_text("The canteen serves lunch from noon; the pump room "
                                       "is closed on Sunday.")
    with evidence_window(qtbot, tmp_path, monkeypatch, _graph(top_k=2), _reply,
                         size=(1500, 950)) as win:
        run_and_wait(qtbot, win, {"question": "how often is the pump serviced",
                                  "corpus": str(corpus)})
        yield win, corpus / "manual.pdf"


def _answer_view(inspector) -> AnswerView:
    tabs = inspector.outputs_tabs
    views = [tabs.widget(i) for i in range(tabs.count())]
    return next(v for v in views if isinstance(v, AnswerView))


def test_citation_leads_to_the_chunk_row_the_document_and_the_pdf_page(qtbot, window, shots,
                                                                        monkeypatch) -> None:
    win, pdf = window
    inspector = win.features.run.inspector
    navigator = win.features.evidence_debugger.citations
    result = win.features.run.controller.last_result
    answer = result.output_of("parse", "answer")
    assert answer.citations and answer.citations[0].valid, answer.text
    cited = answer.citations[0].chunk_id
    assert cited.startswith("manual.pdf#page=2")
    row = [r.chunk_id for r in result.output_of("bm25", "results")].index(cited) + 1

    inspector.show_node("parse")
    _answer_view(inspector).browser.anchorClicked.emit(QUrl("cite:0"))
    assert navigator.place == Place("bm25", "results", row)
    # the chunk's row is selected in the node that fed the prompt block
    assert inspector.node_id == "bm25"
    table = inspector.outputs_tabs.currentWidget()
    assert isinstance(table, RecordTable) and inspector.outputs_tabs.tabText(
        inspector.outputs_tabs.currentIndex()) == "results"
    selected = table.table.selectionModel().selectedRows()
    assert [i.data(ROW_OBJECT_ROLE).chunk_id for i in selected] == [cited]
    # every node where the chunk appears is badged, as "Show where this chunk appears" does
    badges = win.features.evidence_debugger.badges
    assert {"bm25", "split", "prompt"} <= set(badges)
    assert all(b.text.startswith(cited) for b in badges.values())
    # the document view is open at the chunk, with its PDF page
    assert inspector.tabs.currentWidget() is inspector.source_tab
    start, end = inspector.highlighted
    assert "500 operating hours" in inspector.source_view.toPlainText()[start:end]
    assert navigator.page == (str(pdf), 2)
    ref = f"[{answer.citations[0].ref}]"
    assert "page 2" in navigator.where.text() and ref in navigator.where.text()
    button = navigator.open_pdf_button
    assert button.isVisible() and button.text() == "Open PDF at page 2"
    assert "page 2" in win.statusBar().currentMessage()
    win.resizeDocks([inspector], [620], Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: inspector.width() >= 560)
    win.canvas.center_on(["bm25"])
    win.grab().save(str(shots / "evidence-citation.png"))
    opened: list[QUrl] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(opened.append))
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert len(opened) == 1 and opened[0].fragment() == "page=2"
    assert Path(opened[0].toLocalFile()) == pdf.resolve()
    navigator.where.linkActivated.emit("row")
    assert inspector.tabs.currentWidget() is inspector.outputs_tabs

    # and back: from the chunk to the answer's citation of it
    qtbot.mouseClick(navigator.back_button, Qt.MouseButton.LeftButton)
    assert inspector.node_id == "parse"
    assert navigator.highlighted == [ref, ref]  # in the text and in the citation list
    assert badges["parse"].text.startswith(f"{cited} cited as [")
    assert win.statusBar().currentMessage().endswith(f"cited as {ref} by parse")


def test_chunk_menu_shows_citations_and_says_when_there_are_none(qtbot, window) -> None:
    win, _ = window
    debugger = win.features.evidence_debugger
    result = win.features.run.controller.last_result
    chunks = result.output_of("split", "chunks")
    uncited = next(c for c in chunks if c.doc_id == "canteen.md")
    menu = debugger.row_menu(uncited)
    actions = {a.text(): a for a in menu.actions()}
    assert "Show citations of this chunk" in actions
    actions["Show citations of this chunk"].trigger()
    assert win.statusBar().currentMessage() == \
        f"{uncited.chunk_id} is cited by no answer of this run"
    cited = next(c for c in chunks if "500" in c.text)
    assert [c.ref for c in debugger.citations.show_citations(cited)] == ["manual.pdf#page=2"]
    assert pdf_page(cited) == (cited.source, 2)
    assert pdf_page(uncited) is None  # not from a PDF: no page, no "Open PDF"
