"""The History dock's widget: a graph's recorded runs, filtered by question, outcome and
variant, with the actions on the selected runs (the feature, ``ui/history/feature.py``,
connects them).

Listing reads the history's index only (never a run file), so a thousand runs open at once.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.history.changes import deltas
from modrag_studio.engine.history.store import RunHistory, RunRecord

COLUMNS = ("when", "question", "outcome", "variant", "time", "vs baseline", "from")
OUTCOMES = ("any outcome", "ok", "failed", "cancelled", "invalid")
ANY_VARIANT, BASE = "any variant", "(base)"
OUTCOME_COLOURS = {"ok": "#5fb878", "failed": "#e06c75", "cancelled": "#c8a040",
                   "invalid": "#e06c75"}


def when(started_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at))


class HistoryPanel(QWidget):
    """Recorded runs of one graph, newest first; the baseline run is marked with a star."""

    show_requested = Signal(str)                 # run id
    compare_current_requested = Signal(str)      # run id
    compare_requested = Signal(str, str)         # older run id (A), newer run id (B)
    baseline_requested = Signal(str)             # run id ("" clears)
    evaluation_requested = Signal(str)           # run id

    def __init__(self, store: RunHistory, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.graph: str | None = None
        self.records: list[RunRecord] = []
        self.baseline: RunRecord | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        filters = QHBoxLayout()
        self.text = QLineEdit()
        self.text.setPlaceholderText("filter by question…")
        self.text.setClearButtonEnabled(True)
        self.outcome = QComboBox()
        self.outcome.addItems(OUTCOMES)
        self.variant = QComboBox()
        self.variant.addItem(ANY_VARIANT)
        for widget in (self.text, self.outcome, self.variant):
            filters.addWidget(widget, 2 if widget is self.text else 0)
        layout.addLayout(filters)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("historyTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.table, 1)
        buttons = QGridLayout()
        self.show_button = QPushButton("Show on canvas")
        self.compare_current_button = QPushButton("Compare with current")
        self.compare_button = QPushButton("Compare selected")
        self.baseline_button = QPushButton("Set as baseline")
        self.evaluation_button = QPushButton("Add to evaluation set…")
        for index, button in enumerate((self.show_button, self.compare_current_button,
                                        self.compare_button, self.baseline_button,
                                        self.evaluation_button)):
            buttons.addWidget(button, 0, index)
        left_layout.addLayout(buttons)
        self.details = QPlainTextEdit()
        self.details.setObjectName("historyDetails")
        self.details.setReadOnly(True)
        font = self.details.font()
        font.setFamily("monospace")
        self.details.setFont(font)
        self.details.setPlaceholderText("Select a run to read its answer; compare two runs to "
                                        "read their node-by-node diff.")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(left)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        self.text.textChanged.connect(lambda _t: self.refresh())
        self.outcome.currentIndexChanged.connect(lambda _i: self.refresh())
        self.variant.currentIndexChanged.connect(lambda _i: self.refresh())
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.doubleClicked.connect(lambda _i: self._emit_one(self.show_requested))
        self.show_button.clicked.connect(lambda: self._emit_one(self.show_requested))
        self.compare_current_button.clicked.connect(
            lambda: self._emit_one(self.compare_current_requested))
        self.compare_button.clicked.connect(self._emit_compare)
        self.baseline_button.clicked.connect(self._emit_baseline)
        self.evaluation_button.clicked.connect(
            lambda: self._emit_one(self.evaluation_requested))
        self._selection_changed()

    # listing --------------------------------------------------------------------------------
    def set_graph(self, graph: str | None) -> None:
        self.graph = graph
        self.refresh()

    def refresh(self) -> None:
        """Re-read the index with the filters (the selection is kept where it can be)."""
        if self.graph is None:
            self.records = []
        else:
            status = self.outcome.currentText()
            variant = self.variant.currentText()
            self.records = self.store.runs(
                self.graph, text=self.text.text().strip(),
                status=None if status == OUTCOMES[0] else status,
                variant=None if variant == ANY_VARIANT else "" if variant == BASE else variant)
            self.baseline = self.store.baseline(self.graph)
            self._fill_variants()
        selected = set(self.selected_ids())
        self.table.blockSignals(True)
        self.table.setUpdatesEnabled(False)
        self.table.clearSelection()
        self.table.setRowCount(len(self.records))
        for row, record in enumerate(self.records):
            self._fill_row(row, record)
        for row, record in enumerate(self.records):
            if record.run_id in selected:
                self.table.selectRow(row)
        self.table.setUpdatesEnabled(True)
        self.table.blockSignals(False)
        self._selection_changed()

    def _fill_variants(self) -> None:
        names = sorted({r.variant for r in self.records if r.variant})
        wanted = [ANY_VARIANT, BASE, *names]
        current = self.variant.currentText()
        have = [self.variant.itemText(i) for i in range(self.variant.count())]
        if set(wanted) <= set(have):
            return
        self.variant.blockSignals(True)
        self.variant.clear()
        self.variant.addItems(list(dict.fromkeys([*wanted, *have[1:]])))
        self.variant.setCurrentText(current)
        self.variant.blockSignals(False)

    def _fill_row(self, row: int, record: RunRecord) -> None:
        base = self.baseline
        is_base = base is not None and base.run_id == record.run_id
        vs = "baseline" if is_base else deltas(base, record)["label"] if base else ""
        cells = (("★ " if is_base else "") + when(record.started_at),
                 record.question.replace("\n", " ")[:200], record.status,
                 record.variant or "base", f"{record.duration_s:.2f} s", vs,
                 record.origin + (f" #{record.turn + 1}" if record.conversation else ""))
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            if column == 0:
                item.setData(Qt.ItemDataRole.UserRole, record.run_id)
            if column == 2 and record.status in OUTCOME_COLOURS:
                item.setForeground(_brush(OUTCOME_COLOURS[record.status]))
            if column == 1:
                item.setToolTip(record.answer[:600])
            self.table.setItem(row, column, item)

    # selection ------------------------------------------------------------------------------
    def selected_ids(self) -> list[str]:
        """Selected run ids, in list order (newest first)."""
        rows = sorted({index.row() for index in self.table.selectedIndexes()})
        return [self.records[r].run_id for r in rows if r < len(self.records)]

    def select(self, *run_ids: str) -> None:
        self.table.clearSelection()
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row, record in enumerate(self.records):
            if record.run_id in run_ids:
                self.table.selectRow(row)
        self.table.setSelectionMode(mode)

    def record(self, run_id: str) -> RunRecord | None:
        return next((r for r in self.records if r.run_id == run_id), None)

    def _selection_changed(self) -> None:
        ids = self.selected_ids()
        one = len(ids) == 1
        for button in (self.show_button, self.compare_current_button, self.baseline_button,
                       self.evaluation_button):
            button.setEnabled(one)
        self.compare_button.setEnabled(len(ids) == 2)
        if one and (record := self.record(ids[0])) is not None:
            self.baseline_button.setText(
                "Clear baseline" if self.baseline and self.baseline.run_id == ids[0]
                else "Set as baseline")
            self.details.setPlainText(f"Q: {record.question}\n\nA: {record.answer}")

    def _emit_one(self, signal) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:
            signal.emit(ids[0])

    def _emit_compare(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 2:
            self.compare_requested.emit(ids[1], ids[0])  # A the older, B the newer

    def _emit_baseline(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:
            clear = self.baseline is not None and self.baseline.run_id == ids[0]
            self.baseline_requested.emit("" if clear else ids[0])


def _brush(colour: str):
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(colour))
