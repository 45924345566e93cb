"""The inspector dock: a node's inputs and outputs in full, params, history, error, sources."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.datatypes import Chunk, Citation, Document, ScoredChunk
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import NodeVisit, Trace
from modrag_studio.ui.inspection.views import AnswerView, RecordTable, view_for

HIGHLIGHT = QColor("#ffe08a")


def error_sentence(visit: NodeVisit) -> str:
    """The cause in one line for people: the node and the error's own message (which names
    the param or input to fix); the type and traceback stay behind "Details"."""
    message = (visit.error.message if visit.error else "").strip().splitlines()
    first = message[0] if message else "it stopped with an error"
    return f"Node '{visit.node_id}' failed: {first}"


def find_chunk(result: RunResult | None, chunk_id: str | None, doc_id: str = "",
               hint: list[ScoredChunk] | None = None) -> Chunk | None:
    """The chunk a citation points to, from the answer's evidence or any node output."""
    for item in hint or []:
        if item.chunk_id == chunk_id or (chunk_id is None and item.doc_id == doc_id):
            return item.chunk
    if result is None:
        return None
    for outputs in result.node_outputs.values():
        for value in outputs.values():
            if not isinstance(value, list) or not value:
                continue
            head = value[0]
            if not isinstance(head, Chunk | ScoredChunk):
                continue
            for item in value:
                chunk = item.chunk if isinstance(item, ScoredChunk) else item
                if chunk.chunk_id == chunk_id or (chunk_id is None and chunk.doc_id == doc_id):
                    return chunk
    return None


def find_document(result: RunResult | None, doc_id: str) -> Document | None:
    """The source document, from any node output of type list[Document]."""
    if result is None:
        return None
    for outputs in result.node_outputs.values():
        for value in outputs.values():
            if isinstance(value, list) and value and isinstance(value[0], Document):
                for doc in value:
                    if doc.doc_id == doc_id:
                        return doc
    return None


class Inspector(QDockWidget):
    """Click a node to see everything about its last (or any) visit in the current run."""

    table_shown = Signal(object)  # a chunk or score RecordTable was just filled
    citation_opened = Signal(object, object)  # Citation, the Chunk it points to
    chunk_source_shown = Signal(object)  # the Chunk whose document the Source tab now shows

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Inspector", parent)
        self.setObjectName("inspectorDock")
        self.result: RunResult | None = None
        self.history: list[Trace] = []
        self.params: dict[str, dict[str, Any]] = {}
        self.node_id: str | None = None
        self.iteration: int | None = None
        self.streams: dict[str, str] = {}
        # the run in progress (see begin_live): nothing from an earlier run is shown meanwhile
        self.live_run = False
        self.live_started: dict[str, float] = {}          # node id -> monotonic start
        self.live_visits: dict[str, NodeVisit] = {}
        self.live_outputs: dict[str, dict[str, Any]] = {}
        self.live_queued: set[str] = set()
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(6, 4, 6, 4)
        top = QHBoxLayout()
        self.title = QLabel("Click a node to inspect it.", body)
        self.title.setObjectName("inspectorTitle")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.iterations = QComboBox(body)
        self.iterations.setObjectName("iterationPicker")
        self.iterations.setToolTip("Loop iteration to show")
        self.iterations.currentIndexChanged.connect(self._iteration_picked)
        top.addWidget(self.title, 1)
        top.addWidget(self.iterations)
        layout.addLayout(top)
        self.tabs = QTabWidget(body)
        self.tabs.setObjectName("inspectorTabs")
        layout.addWidget(self.tabs, 1)
        self.outputs_tabs = QTabWidget()
        self.inputs_tabs = QTabWidget()
        self.params_view = _mono()
        self.history_view = _mono()
        self.error_view = _mono()  # the whole error, traceback included: behind "Details"
        self.error_cause = QLabel("No error.")
        self.error_cause.setObjectName("errorCause")
        self.error_cause.setWordWrap(True)
        self.error_cause.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_details = QToolButton()
        self.error_details.setText("Details")
        self.error_details.setCheckable(True)
        self.error_details.setToolTip("The error's type, message and traceback")
        self.error_details.toggled.connect(self.error_view.setVisible)
        self.error_tab = QWidget()
        error_layout = QVBoxLayout(self.error_tab)
        error_layout.setContentsMargins(4, 4, 4, 4)
        error_layout.addWidget(self.error_cause)
        error_layout.addWidget(self.error_details, 0, Qt.AlignmentFlag.AlignLeft)
        error_layout.addWidget(self.error_view, 1)
        self.error_view.hide()
        self.source_view = QTextEdit()
        self.source_view.setObjectName("sourceView")
        self.source_view.setReadOnly(True)
        self.source_label = QLabel("Click a citation in an answer to open its source here.")
        self.source_label.setWordWrap(True)
        source = QWidget()
        source_layout = QVBoxLayout(source)
        source_layout.setContentsMargins(0, 0, 0, 0)
        source_layout.addWidget(self.source_label)
        source_layout.addWidget(self.source_view, 1)
        self.source_tab = source
        for widget, name in ((self.outputs_tabs, "Outputs"), (self.inputs_tabs, "Inputs"),
                             (self.params_view, "Params"), (self.history_view, "Timing && cache"),
                             (self.error_tab, "Error"), (source, "Source")):
            self.tabs.addTab(widget, name)
        self.setWidget(body)
        self.setMinimumWidth(360)

    # data --------------------------------------------------------------------------
    def begin_live(self, node_ids: list[str]) -> None:
        """A run started: show its queued, running and finished nodes only."""
        self.live_run = True
        self.live_started, self.live_visits, self.live_outputs = {}, {}, {}
        self.live_queued = set(node_ids)
        self.result = None
        if self.node_id:
            self.show_node(self.node_id)

    def live_started_node(self, node_id: str, started: float) -> None:
        self.live_started[node_id] = started
        self.live_visits.pop(node_id, None)
        if node_id == self.node_id:
            self.show_node(node_id)

    def live_finished_node(self, visit: NodeVisit, outputs: dict[str, Any]) -> None:
        self.live_started.pop(visit.node_id, None)
        self.live_visits[visit.node_id] = visit
        self.live_outputs[visit.node_id] = dict(outputs or {})
        if visit.node_id == self.node_id:
            self.show_node(visit.node_id)

    def end_live(self) -> None:
        """The run ended without a result (cancelled or broken off): keep what it recorded."""
        for node_id in self.live_queued - set(self.live_visits):
            self.live_started.pop(node_id, None)
        self.live_queued = set(self.live_visits)
        if self.node_id:
            self.show_node(self.node_id)

    def live_title(self, node_id: str) -> str:
        import time

        started = self.live_started.get(node_id)
        if started is not None:
            return f"<b>{node_id}</b> · running · {time.monotonic() - started:.1f} s"
        if node_id in self.live_queued:
            return f"<b>{node_id}</b> · queued in this run"
        return f"<b>{node_id}</b> · not in this run"

    def _show_live(self, node_id: str) -> None:
        visit = self.live_visits.get(node_id)
        self.iterations.setVisible(False)
        self.title.setText(self.title_html(node_id, visit) if visit else
                           self.live_title(node_id))
        outputs = self.live_outputs.get(node_id, {}) if visit else {}
        if not outputs and self.streams.get(node_id):
            outputs = {"(streaming)": self.streams[node_id]}
        self._fill_ports(self.outputs_tabs, outputs)
        self._fill_ports(self.inputs_tabs, {})
        self._add_chunk_map(outputs, {})
        self.params_view.setPlainText(json.dumps(self.params.get(node_id, {}), indent=2,
                                                 ensure_ascii=False, default=repr))
        self.history_view.setPlainText(self._history_text(node_id))
        self._show_error(visit)

    def set_run(self, result: RunResult | None, history: list[Trace] | None = None) -> None:
        self.live_run = False
        self.live_started, self.live_visits, self.live_outputs = {}, {}, {}
        self.live_queued = set()
        self.result = result
        if history is not None:
            self.history = history
        self.clear_source()  # a citation of the last run is not one of this run
        if self.node_id:
            self.show_node(self.node_id)

    def set_params(self, params: dict[str, dict[str, Any]]) -> None:
        self.params = params

    def visits(self, node_id: str) -> list[NodeVisit]:
        return self.result.trace.visits_of(node_id) if self.result else []

    # showing a node ----------------------------------------------------------------
    def show_node(self, node_id: str | None, iteration: int | None = None) -> None:
        self.node_id = node_id
        if node_id is None:  # nothing selected (or another graph): no tab keeps old content
            self.title.setText("Click a node to inspect it.")
            self._fill_ports(self.outputs_tabs, {})
            self._fill_ports(self.inputs_tabs, {})
            self.params_view.setPlainText("")
            self.history_view.setPlainText("")
            self._show_error(None)
            self.clear_source()
            return
        if self.live_run:
            self._show_live(node_id)
            return
        visits = [v for v in self.visits(node_id) if v.status != "cancelled" or v.started_at]
        iterations = sorted({v.iteration for v in visits})
        if iteration is None:
            iteration = iterations[-1] if iterations else 0
        self.iteration = iteration
        self.iterations.blockSignals(True)
        self.iterations.clear()
        for i in iterations:
            self.iterations.addItem(f"iteration {i + 1} of {len(iterations)}", i)
        if iteration in iterations:
            self.iterations.setCurrentIndex(iterations.index(iteration))
        self.iterations.setVisible(len(iterations) > 1)
        self.iterations.blockSignals(False)
        visit = next((v for v in visits if v.iteration == iteration), None)
        self.title.setText(self.title_html(node_id, visit))
        key = (node_id, iteration)
        outputs = self.result.node_outputs.get(key, {}) if self.result else {}
        inputs = self.result.node_inputs.get(key, {}) if self.result else {}
        if not outputs and self.streams.get(node_id) and visit is None:
            outputs = {"(streaming)": self.streams[node_id]}
        self._fill_ports(self.outputs_tabs, outputs)
        self._fill_ports(self.inputs_tabs, inputs)
        self._add_chunk_map(outputs, inputs)
        self.params_view.setPlainText(json.dumps(self.params.get(node_id, {}), indent=2,
                                                 ensure_ascii=False, default=repr))
        self.history_view.setPlainText(self._history_text(node_id))
        self._show_error(visit)

    def _add_chunk_map(self, outputs: dict[str, Any], inputs: dict[str, Any]) -> None:
        """A splitter's or store's chunks drawn over their documents (see chunk_map)."""
        from modrag_studio.ui.inspection.chunk_map import ChunkMapView, chunks_in, embedder_model

        chunks = chunks_in(outputs) or chunks_in(inputs)
        if not chunks:
            return
        result = self.result

        def find_text(doc_id: str) -> str | None:
            doc = find_document(result, doc_id)
            return doc.text if doc is not None else None

        view = ChunkMapView(chunks, embedder_model(inputs), find_text)
        self.outputs_tabs.addTab(view, "Chunk map")
        self.chunk_map = view

    def title_html(self, node_id: str, visit: NodeVisit | None) -> str:
        if visit is None:
            return f"<b>{node_id}</b> · not run yet"
        parts = [f"<b>{node_id}</b>", visit.type_id, visit.status]
        if visit.status in ("done", "cancelled", "failed") and visit.started_at:
            parts.append(f"{visit.duration_s:.3f} s")
        reason = visit.cache_reason or visit.skip_reason
        line = " · ".join(parts)
        return line + (f"<br><span style='color:gray'>{reason}</span>" if reason else "")

    def _fill_ports(self, tabs: QTabWidget, values: dict[str, Any]) -> None:
        while tabs.count():
            widget = tabs.widget(0)
            tabs.removeTab(0)
            widget.deleteLater()
        if not values:
            tabs.addTab(QLabel("  (nothing recorded for this visit)"), "—")
            return
        for port, value in values.items():
            view = view_for(value)
            if isinstance(view, AnswerView):
                view.citation_clicked.connect(
                    lambda cite, answer=value: self.open_citation(cite, answer.evidence))
            elif isinstance(view, RecordTable) and view.kind in ("chunks", "scores"):
                view.row_activated.connect(self._open_row)
                self.table_shown.emit(view)  # lets the evidence debugger add row actions
            tabs.addTab(view, port)

    def _open_row(self, row: Any) -> None:
        chunk = row.chunk if isinstance(row, ScoredChunk) else row
        if isinstance(chunk, Chunk):
            self.show_chunk_source(chunk)

    def _iteration_picked(self, index: int) -> None:
        if index >= 0 and self.node_id:
            self.show_node(self.node_id, self.iterations.itemData(index))

    def _history_text(self, node_id: str) -> str:
        lines = []
        for trace in self.history:
            for v in trace.visits_of(node_id):
                when = f"{v.duration_s:8.3f} s" if v.started_at else "       — "
                why = v.cache_reason or v.skip_reason or (v.error.message if v.error else "")
                lines.append(f"run {trace.run_id}  iter {v.iteration + 1}  {v.status:<9}"
                             f" {when}  {why}")
        if self.live_run:  # the run going now comes first
            visit = self.live_visits.get(node_id)
            now = ("running…" if node_id in self.live_started else "waiting to run"
                   if node_id in self.live_queued else "not in this run")
            if visit is not None:
                now = f"{visit.status} in {visit.duration_s:.3f} s  " + (
                    visit.cache_reason or visit.skip_reason)
            lines.insert(0, f"this run (going now): {now}".rstrip())
        return "\n".join(lines) or "No runs in this session yet."

    def clear_source(self) -> None:
        self.source_view.clear()
        self.source_label.setText("Click a citation in an answer to open its source here.")

    def _show_error(self, visit: NodeVisit | None) -> None:
        index = self.tabs.indexOf(self.error_tab)
        self.error_details.setChecked(False)
        if visit is not None and visit.error is not None:
            err = visit.error
            self.error_cause.setText(error_sentence(visit))
            self.error_details.show()
            self.error_view.setPlainText(f"{err.type}: {err.message}\n\n{err.traceback}")
            self.tabs.setTabText(index, "Error ⚠")
            self.tabs.setCurrentIndex(index)
        else:
            self.error_cause.setText("No error.")
            self.error_details.hide()
            self.error_view.setPlainText("No error.")
            self.tabs.setTabText(index, "Error")
            if self.tabs.currentIndex() == index:
                self.tabs.setCurrentIndex(0)
        if visit is not None and visit.warnings:
            self.error_view.appendPlainText("\nWarnings:\n" + "\n".join(visit.warnings))

    # streaming ------------------------------------------------------------------------
    def show_stream(self, node_id: str, text: str) -> None:
        """Live text from an LLM node (all of it so far), shown while it generates."""
        self.streams[node_id] = text
        if node_id != self.node_id:
            return
        view = self.outputs_tabs.widget(0)
        if isinstance(view, QPlainTextEdit) and self.outputs_tabs.tabText(0) == "(streaming)":
            view.setPlainText(text)
            view.moveCursor(QTextCursor.MoveOperation.End)
        else:
            self._fill_ports(self.outputs_tabs, {"(streaming)": text})

    # citations and sources ---------------------------------------------------------------
    def open_citation(self, citation: Citation,
                      evidence: list[ScoredChunk] | None = None) -> Chunk | None:
        chunk = find_chunk(self.result, citation.chunk_id, citation.doc_id, evidence)
        if chunk is None:
            self.source_label.setText(f"Citation [{citation.ref}] points to "
                                      f"{citation.doc_id or citation.chunk_id}, which no node "
                                      "output of this run holds.")
            self.source_view.clear()
            self.tabs.setCurrentWidget(self.source_tab)
            return None
        self.show_chunk_source(chunk)
        self.citation_opened.emit(citation, chunk)  # citation navigation follows it
        return chunk

    def show_chunk_source(self, chunk: Chunk) -> None:
        """Show the chunk's source document with the chunk highlighted (or the chunk alone)."""
        doc = find_document(self.result, chunk.doc_id)
        if doc is not None and 0 <= chunk.start < chunk.end <= len(doc.text):
            text, start, end = doc.text, chunk.start, chunk.end
            where = f"document <b>{doc.doc_id}</b> {doc.title or ''} (chars {start}–{end})"
        else:
            text, start, end = chunk.text, 0, len(chunk.text)
            where = (f"chunk text only: the document <b>{chunk.doc_id}</b> is not in this "
                     "run's outputs")
        self.source_label.setText(f"Chunk <b>{chunk.chunk_id}</b> in {where}")
        self.source_view.setPlainText(text)
        cursor = QTextCursor(self.source_view.document())
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        fmt = QTextCharFormat()
        fmt.setBackground(HIGHLIGHT)
        fmt.setForeground(QColor("#1a1a1a"))
        selection = QTextEdit.ExtraSelection()
        selection.cursor = cursor
        selection.format = fmt
        self.source_view.setExtraSelections([selection])
        view_cursor = QTextCursor(self.source_view.document())
        view_cursor.setPosition(end)
        self.source_view.setTextCursor(view_cursor)
        self.source_view.ensureCursorVisible()
        view_cursor.setPosition(start)
        self.source_view.setTextCursor(view_cursor)
        self.source_view.ensureCursorVisible()
        self.highlighted = (start, end)
        self.tabs.setCurrentWidget(self.source_tab)
        self.chunk_source_shown.emit(chunk)


def _mono() -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setReadOnly(True)
    font = view.font()
    font.setFamily("monospace")
    view.setFont(font)
    return view
