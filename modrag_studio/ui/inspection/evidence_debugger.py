"""The evidence debugger in the studio: "why is this answer wrong?".

A dock where the user declares the expected evidence (``doc:ID; text:500 operating hours``);
after each run (or on the last run, without running again) every declared node gets a badge
saying where the evidence is, the first node that lost it is outlined, and the status bar says
it in one sentence. Selecting a chunk highlights every node where it appears with its rank
(lineage); "Force into prompt" re-runs from the prompt builder with the expected chunks pinned
and shows both answers side by side. All the logic is in ``engine.attribution``,
``engine.lineage`` and ``engine.counterfactual``; this module draws.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QBrush, QColor, QPen
from PySide6.QtWidgets import (
    QDockWidget,
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsSimpleTextItem,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.datatypes import Answer, Chunk, ScoredChunk
from modrag_studio.engine.evidence.attribution import Attribution, attribute
from modrag_studio.engine.evidence.counterfactual import Counterfactual, force_into_prompt
from modrag_studio.engine.evidence.expected import EvidenceSpecError, ExpectedEvidence
from modrag_studio.engine.evidence.lineage import Appearance, chunk_lineage
from modrag_studio.engine.evidence.narration import narrate, narrate_node
from modrag_studio.ui.inspection.citation_nav import CitationNavigator
from modrag_studio.ui.jobs.background import BackgroundJob, JobControls

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.inspection.protocols import InspectedRun

STATUS_COLORS = {"reached": QColor(60, 170, 90), "lost": QColor(220, 70, 60),
                 "never_reached": QColor(120, 120, 130), "lineage": QColor(70, 140, 240)}
LOSS_OUTLINE = QColor(255, 150, 30)


def parse_specs(text: str) -> ExpectedEvidence:
    """``doc:a; text:500 operating hours`` (``;`` or new lines between specs)."""
    specs = [s.strip() for s in text.replace("\n", ";").split(";") if s.strip()]
    return ExpectedEvidence.parse(specs)


class NodeBadge(QGraphicsRectItem):
    """A rounded label above a node's top-left corner (evidence position or lineage rank)."""

    def __init__(self, parent: QGraphicsItem, text: str, color: QColor) -> None:
        super().__init__(parent)
        self.setZValue(12)
        self.label = QGraphicsSimpleTextItem(text, self)
        self.label.setBrush(QBrush(QColor("white")))
        rect = self.label.boundingRect().adjusted(-5, -2, 5, 2)
        self.setRect(rect)
        self.setBrush(QBrush(color))
        self.setPen(QPen(color.darker(130), 1))
        top = parent.boundingRect().topLeft()
        self.setPos(top.x() + 6, top.y() - rect.height() - 22)
        self.setToolTip(text)

    @property
    def text(self) -> str:
        return self.label.text()


class EvidenceDock(QDockWidget):
    """Expected-evidence field, verdict, per-node table, lineage and the forced answers."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Expected evidence", parent)
        self.setObjectName("evidenceDock")
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(6, 4, 6, 4)
        row = QHBoxLayout()
        self.specs = QLineEdit(body)
        self.specs.setObjectName("expectedEvidence")
        self.specs.setPlaceholderText("doc:ID; chunk:ID; text:phrase; re:pattern")
        self.specs.setToolTip("What the right answer must rest on; checked after every run")
        self.check_button = QPushButton("Check last run", body)
        self.force_button = QPushButton("Force into prompt", body)
        self.force_button.setToolTip("Re-run from the prompt builder with the expected chunks "
                                     "inserted (upstream from the cache)")
        row.addWidget(self.specs, 1)
        row.addWidget(self.check_button)
        row.addWidget(self.force_button)
        layout.addLayout(row)
        self.verdict = QLabel("Declare the expected evidence, then run or check the last run.")
        self.verdict.setObjectName("evidenceVerdict")
        self.verdict.setWordWrap(True)
        layout.addWidget(self.verdict)
        split = QSplitter(Qt.Orientation.Horizontal, body)
        self.table = QTableWidget(0, 3, split)
        self.table.setObjectName("evidenceTable")
        self.table.setHorizontalHeaderLabels(["Node", "Status", "Where"])
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        answers = QWidget(split)
        answers_layout = QHBoxLayout(answers)
        answers_layout.setContentsMargins(0, 0, 0, 0)
        self.first_answer = QTextBrowser(answers)
        self.first_answer.setObjectName("firstAnswer")
        self.forced_answer = QTextBrowser(answers)
        self.forced_answer.setObjectName("forcedAnswer")
        for view in (self.first_answer, self.forced_answer):
            answers_layout.addWidget(view)
        split.setSizes([520, 480])
        layout.addWidget(split, 1)
        self.setWidget(body)


class EvidenceDebugger(QObject):
    """Follows the expected evidence through the window's last run and draws the result."""

    def __init__(self, window: StudioShell, run: InspectedRun) -> None:
        qt_window: QMainWindow = window  # type: ignore[assignment]
        super().__init__(qt_window)
        self.window = window
        self.features = run
        self.canvas = window.canvas
        self.dock = EvidenceDock(qt_window)
        qt_window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.attribution: Attribution | None = None
        self.counterfactual: Counterfactual | None = None
        self.badges: dict[str, NodeBadge] = {}
        self.outline: QGraphicsRectItem | None = None
        self.lineage: list[Appearance] = []
        self.job = BackgroundJob("modrag-force", self,
                                 JobControls(idle=[self.dock.force_button]))
        self.dock.check_button.clicked.connect(lambda: self.check())
        self.dock.force_button.clicked.connect(lambda: self.force())
        self.dock.specs.returnPressed.connect(lambda: self.check())
        # the run inputs (the question) the expected evidence was checked against: a run of
        # another question is neither checked nor narrated with it
        self.spec_inputs: dict[str, Any] | None = None
        self.dock.specs.textChanged.connect(lambda _text: setattr(self, "spec_inputs", None))
        self.dock.table.cellDoubleClicked.connect(
            lambda row, _col: self.window.select_node(self.dock.table.item(row, 0).text()))
        self.features.controller.run_finished.connect(self._run_finished)
        self.features.controller.run_started.connect(lambda *_: self.clear())
        inspector = self.features.inspector
        inspector.table_shown.connect(self._add_row_actions)
        self.citations = CitationNavigator(window, self, run)
        self._menus(qt_window)
        # expected evidence belongs to its graph: kept per graph, restored when it reopens
        self._specs_by_graph: dict[str, str] = {}
        self._graph_key = self._key()
        window.editor.subscribe(self._on_change)

    def _menus(self, window: QMainWindow) -> None:
        """View: the dock; Run: the evidence funnel of a report."""
        self.window.menus["View"].addAction(self.dock.toggleViewAction())
        action = QAction("Show evidence funnel from a report…", window)
        action.triggered.connect(lambda _checked=False: self.show_funnel_dialog())
        self.window.menus["Run"].addAction(action)
        window.resizeDocks([self.dock], [260], Qt.Orientation.Vertical)

    # the open graph ------------------------------------------------------------------------
    def _key(self) -> str:
        return self.features.actions.graph_key(self.window.editor.document())

    def _on_change(self, change: Any) -> None:
        """Another graph opened (or a new one): its own expected evidence, no old badges."""
        if change.kind != "reset":
            return
        self._specs_by_graph[self._graph_key] = self.dock.specs.text()
        self._graph_key = self._key()
        self.clear()
        self.counterfactual = None
        self.dock.first_answer.clear()  # the answers were another graph's
        self.dock.forced_answer.clear()
        self.dock.specs.setText(self._specs_by_graph.get(self._graph_key, ""))
        self.dock.verdict.setText("")

    # expected evidence ---------------------------------------------------------------------
    def expected(self) -> ExpectedEvidence:
        return parse_specs(self.dock.specs.text())

    def set_expected(self, specs: list[str] | str) -> None:
        self.dock.specs.setText(specs if isinstance(specs, str) else "; ".join(specs))

    def mark_expected(self, chunk: Chunk) -> None:
        """Add a chunk (a row of the inspector) to the expected evidence and re-check."""
        specs = [s.strip() for s in self.dock.specs.text().split(";") if s.strip()]
        spec = f"chunk:{chunk.chunk_id}"
        if spec not in specs:
            self.set_expected([*specs, spec])
        self.check()

    # attribution ---------------------------------------------------------------------------
    def check(self, *, announce: bool = True) -> Attribution | None:
        """Follow the expected evidence through the last run (no re-run) and draw it;
        ``announce``: also put the verdict in the status bar."""
        result = self.features.controller.last_result
        try:
            expected = self.expected()
        except EvidenceSpecError as exc:
            self._say(str(exc))
            return None
        if not expected:
            self.clear()
            self._say("Declare the expected evidence first (e.g. text:500 operating hours).")
            return None
        if result is None:
            self._say("Run the graph first; the evidence is checked on the last run.")
            return None
        self.spec_inputs = dict(result.trace.inputs)
        self.attribution = attribute(result, self.features.document(), expected,
                                     registry=self.features.controller.registry)
        self._draw(self.attribution, announce=announce)
        return self.attribution

    def _run_finished(self, result: Any) -> None:
        """After a run: the run's own outcome stays first in the status bar, the evidence
        verdict comes second."""
        if not self.dock.specs.text().strip():
            return
        if not self.for_inputs(result.trace.inputs):
            self.clear()
            self.dock.verdict.setText("The expected evidence was declared for another question;"
                                      " Check follows it in this run.")
            return
        status = self.window.statusBar()
        outcome = status.currentMessage()
        found = self.check(announce=False)
        if found is not None:
            status.showMessage(f"{outcome} · Evidence: {found.verdict}" if outcome
                               else found.verdict)

    def _draw(self, found: Attribution, *, announce: bool = True) -> None:
        self._clear_items()
        table = self.dock.table
        table.setRowCount(len(found.nodes))
        for row, node in enumerate(found.nodes):
            color = STATUS_COLORS[node.status]
            first = node.node_id == found.first_loss
            cells = [node.node_id, "first loss" if first else node.status.replace("_", " "),
                     node.text]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 1:
                    item.setForeground(QBrush(LOSS_OUTLINE if first else color))
                table.setItem(row, col, item)
            shown = node.text if node.status == "lost" else node.short
            self._badge(node.node_id, _clip(f"{node.kind}: {shown}"), color)
        table.resizeColumnsToContents()
        if found.first_loss:
            self._outline(found.first_loss)
        lines = [found.verdict, *found.resolutions]
        self.dock.verdict.setText("\n".join(lines))
        if announce:
            self._say(found.verdict)

    def _badge(self, node_id: str, text: str, color: QColor) -> None:
        item = self.canvas.node_item(node_id) if self.canvas is not None else None
        if item is None:
            return
        old = self.badges.pop(node_id, None)
        if old is not None:
            _remove(old)
        self.badges[node_id] = NodeBadge(item, text, color)

    def _outline(self, node_id: str) -> None:
        item = self.canvas.node_item(node_id) if self.canvas is not None else None
        if item is None:
            return
        self.outline = QGraphicsRectItem(item.boundingRect().adjusted(-8, -8, 8, 8), item)
        pen = QPen(LOSS_OUTLINE, 4, Qt.PenStyle.DashLine)
        self.outline.setPen(pen)
        self.outline.setZValue(11)
        self.outline.setToolTip("first node that lost the expected evidence")

    def _clear_items(self) -> None:
        items: list[QGraphicsItem] = list(self.badges.values())
        if self.outline is not None:
            items.append(self.outline)
        for item in items:
            _remove(item)
        self.badges, self.outline = {}, None

    def clear(self) -> None:
        self._clear_items()
        self.attribution, self.lineage = None, []
        self.dock.table.setRowCount(0)

    def _say(self, text: str) -> None:
        self.dock.verdict.setText(text)
        self.window.statusBar().showMessage(text)

    # lineage -------------------------------------------------------------------------------
    def show_lineage(self, chunk_id: str) -> list[Appearance]:
        """Highlight every node whose output holds ``chunk_id``, with its rank there."""
        result = self.features.controller.last_result
        if result is None:
            return []
        self._clear_items()
        self.lineage = chunk_lineage(result, self.features.document(), chunk_id,
                                     self.features.controller.registry)
        for seen in self.lineage:
            self._badge(seen.node_id, f"{chunk_id} {seen.describe()}", STATUS_COLORS["lineage"])
        where = ", ".join(f"{a.node_id} #{a.position}" for a in self.lineage) or "no node"
        self._say(f"{chunk_id}: {where}")
        return self.lineage

    def _add_row_actions(self, view: Any) -> None:
        table = view.table
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(lambda pos: self._row_menu(view, pos))

    def _row_menu(self, view: Any, pos: Any) -> None:
        from modrag_studio.ui.inspection.views import ROW_OBJECT_ROLE

        row = view.table.indexAt(pos).data(ROW_OBJECT_ROLE)
        chunk = row.chunk if isinstance(row, ScoredChunk) else row
        if not isinstance(chunk, Chunk):
            return
        menu = self.row_menu(chunk)
        menu.exec(view.table.viewport().mapToGlobal(pos))

    def row_menu(self, chunk: Chunk) -> QMenu:
        menu = QMenu(self.window)
        mark = QAction("Mark as expected evidence", menu)
        mark.triggered.connect(lambda: self.mark_expected(chunk))
        trace = QAction("Show where this chunk appears", menu)
        trace.triggered.connect(lambda: self.show_lineage(chunk.chunk_id))
        menu.addAction(mark)
        menu.addAction(trace)
        cites = QAction("Show citations of this chunk", menu)
        cites.triggered.connect(lambda: self.citations.show_citations(chunk))
        menu.addAction(cites)
        return menu

    def mark_node(self, node_id: str, text: str) -> None:
        """A lineage badge on one node (citation navigation)."""
        self._badge(node_id, _clip(text), STATUS_COLORS["lineage"])

    # force into the prompt -----------------------------------------------------------------
    def force(self) -> bool:
        """Re-run with the expected chunks in the prompt (off the GUI thread)."""
        controller = self.features.controller
        result = controller.last_result
        if self.busy or controller.busy:
            self._say("A run is going; wait for it to finish.")
            return False
        if result is None or controller.last_request is None:
            self._say("Run the graph first.")
            return False
        try:
            expected = self.expected()
        except EvidenceSpecError as exc:
            self._say(str(exc))
            return False
        doc, inputs = self.features.document(), dict(controller.last_request.inputs)
        self._forced_for = self._graph_key  # an answer that comes back after another graph
        self._say("Running again with the expected evidence forced into the prompt…")
        self.job.start(lambda _task: force_into_prompt(controller.executor, doc, inputs,
                                                       result, expected), self._force_ended)
        return True

    @property
    def busy(self) -> bool:
        return self.job.busy

    def _force_ended(self, outcome: Counterfactual | None, error: Exception | None) -> None:
        if error is not None:  # shown in the dock; the window stays usable
            self._say(f"Force into prompt: {str(error) or type(error).__name__}")
        else:
            self._forced(outcome)

    def _forced(self, outcome: Counterfactual) -> None:
        if getattr(self, "_forced_for", self._graph_key) != self._graph_key:
            return  # the re-run of a graph no longer open is not shown on this one
        self.counterfactual = outcome
        self.dock.first_answer.setHtml(_answer_html("First answer", outcome.first))
        self.dock.forced_answer.setHtml(_answer_html(
            f"With {', '.join(outcome.inserted)} forced in", outcome.second))
        forced = (f"Forced {', '.join(outcome.inserted)} into {outcome.prompt_node}: "
                  f"{outcome.attribution.verdict}")
        before = self.attribution.verdict if self.attribution is not None else ""
        self.dock.verdict.setText("\n".join(t for t in (before, forced) if t))
        self.window.statusBar().showMessage(forced)

    # funnel over a dataset -----------------------------------------------------------------
    def show_funnel(self, path: str) -> dict[str, dict[str, int]]:
        """Badge each node with its ``attribution`` counts from an ``eval --attribute`` report."""
        import json

        data = json.loads(Path(path).read_text(encoding="utf-8"))
        funnel = data.get("attribution")
        if not isinstance(funnel, dict):
            self._say(f"{path}: no attribution in this report (run modrag eval --attribute)")
            return {}
        self._clear_items()
        for node_id, counts in funnel.items():
            lost = counts.get("lost_here", 0)
            text = (f"reached {counts.get('reached', 0)} · lost here {lost} · "
                    f"never {counts.get('never_reached', 0)}")
            self._badge(node_id, text, STATUS_COLORS["lost" if lost else "reached"])
        worst = max(funnel, key=lambda n: funnel[n].get("lost_here", 0), default=None)
        if worst is not None and funnel[worst].get("lost_here", 0):
            self._outline(worst)
            self._say(f"Most queries are lost at {worst}: {funnel[worst]['lost_here']} of "
                      f"{sum(funnel[worst].values())}")
        return funnel

    def show_funnel_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getOpenFileName(self.window, "Evaluation report with attribution",
                                              "", "Report JSON (*.json)")
        if path:
            self.show_funnel(path)

    # presentation --------------------------------------------------------------------------
    def narration(self, node_id: str | None = None) -> str:
        """The last check in plain words (for presentation mode); with ``node_id``, what that
        node did with the evidence."""
        if self.attribution is None:
            return ""
        return narrate(self.attribution) if node_id is None else \
            narrate_node(self.attribution, node_id)

    def narrator(self, run_id: str) -> Callable[[str | None], str] | None:
        """Node id -> its evidence sentence, for presentation mode's replay of ``run_id``
        (None unless it is the last run and expected evidence is declared)."""
        return self.narration if self.attribution_for(run_id) is not None else None

    def for_inputs(self, inputs: dict[str, Any]) -> bool:
        """Whether the expected evidence belongs to a run of ``inputs`` (the question it was
        checked against; not checked yet: any)."""
        return self.spec_inputs is None or self.spec_inputs == dict(inputs)

    def attribution_for(self, run_id: str) -> Attribution | None:
        """The check of the last run when it is run ``run_id``, evidence is declared and it
        was declared for that run's question (checked now when it was not yet)."""
        result = self.features.controller.last_result
        if result is None or result.trace.run_id != run_id or not self.dock.specs.text().strip():
            return None
        if not self.for_inputs(result.trace.inputs):
            return None
        return self.attribution if self.attribution is not None else self.check()


def _remove(item: QGraphicsItem) -> None:
    """Take a badge or outline off the canvas; one whose node item the canvas already
    deleted (another graph opened) is gone with it."""
    try:
        scene = item.scene()
    except RuntimeError:  # the C++ item went with its node
        return
    if scene is not None:
        scene.removeItem(item)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _answer_html(title: str, value: Any) -> str:
    from html import escape

    text = value.text if isinstance(value, Answer) else "" if value is None else str(value)
    cites = ""
    if isinstance(value, Answer) and value.citations:
        cites = "<p style='color:#8a8'>cites " + ", ".join(
            escape(c.ref) for c in value.citations) + "</p>"
    return f"<h3>{escape(title)}</h3><p>{escape(text)}</p>{cites}"


def narration_for(window: Any, node_id: str | None = None) -> str:
    """Presentation mode's sentence about the expected evidence ("" when none is declared);
    with ``node_id``, the sentence for that node's step."""
    return window.features.evidence_debugger.narration(node_id)


def evidence_narrator(window: Any, run_id: str) -> Callable[[str | None], str] | None:
    """For presentation mode: node id -> its evidence sentence (None -> the overall one), when
    the replayed run is the last run and expected evidence is declared; else None."""
    return window.features.evidence_debugger.narrator(run_id)
