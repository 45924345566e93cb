"""Views of port values for the inspector: lazy tables for chunks/scores, text, answer, JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QUrl,
    Signal,
)
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.datatypes import Answer, Chunk, Document, ScoredChunk
from modrag_studio.engine.core.formatting import short
from modrag_studio.engine.evidence.lineage import UncutRanking

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
FILTER_ROLE = Qt.ItemDataRole.UserRole + 2
ROW_OBJECT_ROLE = Qt.ItemDataRole.UserRole + 3
JSON_LIMIT = 400_000
_Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Column:
    title: str
    get: Callable[[Any], Any]
    width: int = 90


_short = partial(short, limit=140)


def _sources(item: ScoredChunk) -> str:
    return ", ".join(f"{name} #{src.rank}" for name, src in item.sources.items())


CHUNK_COLUMNS = [
    Column("#", lambda c: c.index, 44), Column("chunk id", lambda c: c.chunk_id, 120),
    Column("doc id", lambda c: c.doc_id, 100), Column("start", lambda c: c.start, 56),
    Column("end", lambda c: c.end, 56), Column("chars", lambda c: len(c.text), 56),
    Column("text", lambda c: c.text, 420),
]
SCORE_COLUMNS = [
    Column("rank", lambda s: s.rank, 48), Column("doc id", lambda s: s.doc_id, 100),
    Column("chunk id", lambda s: s.chunk_id, 120), Column("score", lambda s: s.score, 80),
    Column("kind", lambda s: s.score_kind, 70), Column("retriever", lambda s: s.retriever, 90),
    Column("input ranks", _sources, 160), Column("text", lambda s: s.chunk.text, 380),
]
DOCUMENT_COLUMNS = [
    Column("doc id", lambda d: d.doc_id, 110), Column("title", lambda d: d.title, 180),
    Column("source", lambda d: d.source, 140), Column("chars", lambda d: len(d.text), 60),
    Column("text", lambda d: d.text, 380),
]
GENERIC_COLUMNS = [Column("#", lambda pair: pair[0], 50),
                   Column("value", lambda pair: _value_text(pair[1]), 600)]


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return dump()
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


class RecordTableModel(QAbstractTableModel):
    """A read-only table over a Python list; cells are computed only when Qt asks (lazy)."""

    def __init__(self, rows: list[Any], columns: list[Column], parent: Any = None) -> None:
        super().__init__(parent)
        self.rows_ = rows
        self.columns = columns

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows_)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows_[index.row()]
        if role == ROW_OBJECT_ROLE:
            return row
        value = self.columns[index.column()].get(row)
        if role == Qt.ItemDataRole.DisplayRole:
            if isinstance(value, float):
                return f"{value:.4f}"
            return _short(value) if isinstance(value, str) else str(value)
        if role == SORT_ROLE:
            return value
        if role == FILTER_ROLE:
            return str(value)
        if role == Qt.ItemDataRole.ToolTipRole and isinstance(value, str) and len(value) > 140:
            return _short(value, 1200)
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, int | float):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section].title
        return None


class RecordFilter(QSortFilterProxyModel):
    """Sorts by raw values; filters on one lower-cased text per row (one call per row)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.needle = ""
        self._texts: dict[int, str] = {}

    def set_needle(self, text: str) -> None:
        self.needle = text.strip().lower()
        self.invalidateFilter()

    def setSourceModel(self, model: Any) -> None:  # noqa: N802
        self._texts = {}
        super().setSourceModel(model)

    def filterAcceptsRow(self, row: int, parent: _Index) -> bool:  # noqa: N802
        if not self.needle:
            return True
        text = self._texts.get(row)
        if text is None:
            model = self.sourceModel()
            obj = model.rows_[row]
            text = "\t".join(str(c.get(obj)) for c in model.columns).lower()
            self._texts[row] = text
        return self.needle in text


class RecordTable(QWidget):
    """A filter box over a sortable table. ``row_activated`` gives the row's object."""

    row_activated = Signal(object)

    def __init__(self, rows: list[Any], columns: list[Column], kind: str,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind = kind
        self.setObjectName(f"{kind}Table")
        self.model = RecordTableModel(rows, columns, self)
        self.proxy = RecordFilter(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText(f"Filter {len(rows):,} rows (any column)…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.proxy.set_needle)
        self.table = QTableView(self)
        self.table.setModel(self.proxy)
        # no initial sort: keep the node's order until the user clicks a header
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for i, column in enumerate(columns):
            self.table.setColumnWidth(i, column.width)
        self.table.doubleClicked.connect(
            lambda index: self.row_activated.emit(index.data(ROW_OBJECT_ROLE)))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter)
        layout.addWidget(self.table)

    def select_where(self, predicate: Callable[[Any], bool]) -> bool:
        """Select and scroll to the first visible row whose object matches."""
        for row in range(self.proxy.rowCount()):
            index = self.proxy.index(row, 0)
            if predicate(index.data(ROW_OBJECT_ROLE)):
                self.table.selectRow(row)
                self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
                return True
        return False


class AnswerView(QSplitter):
    """The answer text with clickable citations, above its evidence table."""

    citation_clicked = Signal(object)  # Citation

    def __init__(self, answer: Answer, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.setObjectName("answerView")
        self.answer = answer
        self.browser = QTextBrowser(self)
        self.browser.setOpenLinks(False)
        self.browser.setHtml(answer_html(answer))
        self.browser.anchorClicked.connect(self._clicked)
        self.addWidget(self.browser)
        self.evidence: RecordTable | None = None
        if answer.evidence:
            self.evidence = RecordTable(answer.evidence, SCORE_COLUMNS, "evidence", self)
            self.addWidget(self.evidence)

    def _clicked(self, url: QUrl) -> None:
        if url.scheme() == "cite":
            index = int(url.path() or url.host() or 0)
            if 0 <= index < len(self.answer.citations):
                self.citation_clicked.emit(self.answer.citations[index])


def answer_html(answer: Answer) -> str:
    from html import escape

    parts = [f"<p style='font-size:11pt'>{escape(answer.text).replace(chr(10), '<br>')}</p>"]
    if answer.citations:
        parts.append("<p><b>Citations</b> (click to open the source)</p><ul>")
        for i, cite in enumerate(answer.citations):
            where = escape(cite.doc_id + (f" · {cite.chunk_id}" if cite.chunk_id else ""))
            mark = "" if cite.valid else " <span style='color:#c0392b'>(invalid)</span>"
            parts.append(f"<li><a href='cite:{i}'>[{escape(cite.ref)}]</a> {where}{mark}</li>")
        parts.append("</ul>")
    if answer.invalid_citations:
        bad = escape(", ".join(answer.invalid_citations))
        parts.append(f"<p style='color:#c0392b'>Citations not in the evidence: {bad}</p>")
    meta = [f"model {escape(answer.model)}"] if answer.model else []
    if answer.fallback:
        meta.append("fallback answer")
    if meta:
        parts.append(f"<p style='color:gray'>{' · '.join(meta)}</p>")
    return "".join(parts)


def to_jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    shape = getattr(value, "shape", None)
    if shape is not None:
        return {"type": type(value).__name__, "shape": list(shape)}
    return repr(value)


def json_text(value: Any, limit: int = JSON_LIMIT) -> str:
    if isinstance(value, list) and len(value) > 2000:
        head = to_jsonable(value[:2000])
        text = json.dumps(head, indent=2, ensure_ascii=False, default=repr)
        return text + f"\n… {len(value) - 2000:,} more items (use the table view)"
    text = json.dumps(to_jsonable(value), indent=2, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[:limit] + "\n… (truncated)"


def text_view(text: str, name: str = "textView", mono: bool = False) -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setObjectName(name)
    view.setReadOnly(True)
    if mono:
        font = QFont("monospace")
        font.setStyleHint(QFont.StyleHint.Monospace)
        view.setFont(font)
    view.setPlainText(text)
    return view


def table_kind(value: Any) -> str | None:
    """'scores', 'chunks', 'documents' or 'items' for lists; None for anything else."""
    if not isinstance(value, list):
        return None
    head = value[0] if value else None
    if isinstance(head, ScoredChunk):
        return "scores"
    if isinstance(head, Chunk):
        return "chunks"
    if isinstance(head, Document):
        return "documents"
    return "items"


def view_for(value: Any) -> QWidget:
    """The best widget for a port value: table, answer, text, or JSON."""
    if isinstance(value, UncutRanking):  # a ranking before its cut reads as a score table
        value = value.items
    kind = table_kind(value)
    if kind == "scores":
        return RecordTable(value, SCORE_COLUMNS, kind)
    if kind == "chunks":
        return RecordTable(value, CHUNK_COLUMNS, kind)
    if kind == "documents":
        return RecordTable(value, DOCUMENT_COLUMNS, kind)
    if kind == "items" and value:
        return RecordTable(list(enumerate(value)), GENERIC_COLUMNS, kind)
    if isinstance(value, Answer):
        return AnswerView(value)
    if isinstance(value, str):
        return text_view(value)
    if value is None:
        label = QLabel("(no value)")
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        return label
    return text_view(json_text(value), "jsonView", mono=True)
