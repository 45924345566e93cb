"""The problems panel: ``validate(doc, registry)`` after each edit (debounced), the params
that must be filled in before a run (the ones the Properties panel marks, e.g. an empty
path), answers that reach an output with no check (Edit > Make Answers Safe), plus the
pre-flight result (nodes whose model, store or server is not usable on this machine)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from modrag_studio.engine.compose.check import validate_graph as validate
from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.core.validation import Problem
from modrag_studio.engine.edit.editor import Change, GraphEditor
from modrag_studio.engine.evidence.safety import unchecked_answers
from modrag_studio.ui.panels.properties import missing_values

DEBOUNCE_MS = 250


class ProblemsPanel(QWidget):
    """Lists validation problems; clicking one selects its node. Badges go through callbacks."""

    def __init__(self, editor: GraphEditor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editor = editor
        self.problems: list[Problem] = []
        self.environment: dict[str, str] = {}  # node id -> why it is not usable here
        self.run_problems: list[Problem] = []  # warnings of the last run(s), on their nodes
        self.on_select_node: list[Callable[[str], None]] = []
        self.on_problems: list[Callable[[list[Problem]], None]] = []
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["", "Node", "Where", "Problem"])
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 70)
        self.tree.setColumnWidth(1, 140)
        self.tree.setColumnWidth(2, 140)
        self.tree.itemClicked.connect(self._clicked)
        self.tree.itemActivated.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.refresh)
        editor.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.old is not change.new:
            self._timer.start()

    def refresh(self) -> None:
        """Validate now and show the result."""
        self._timer.stop()
        doc = self.editor.document()
        self.problems = validate(doc, self.editor.registry)
        self.problems += empty_required(doc, self.editor.registry, self.problems)
        self.problems += unchecked_answers(doc, self.editor.registry)
        self.tree.clear()
        for problem in self.problems:
            item = QTreeWidgetItem([
                problem.severity, problem.node_id or "(graph)", problem.field or "",
                problem.message,
            ])
            color = QColor(255, 120, 100) if problem.severity == "error" else QColor(240, 190, 90)
            item.setForeground(0, QBrush(color))
            item.setToolTip(3, problem.message)
            item.setData(0, Qt.ItemDataRole.UserRole, _shown(problem.node_id))
            self.tree.addTopLevelItem(item)
        for node_id, detail in self.environment.items():
            item = QTreeWidgetItem(["not ready", node_id, "this machine", detail])
            item.setForeground(0, QBrush(QColor(255, 120, 100)))
            item.setToolTip(3, detail)
            item.setData(0, Qt.ItemDataRole.UserRole, _shown(node_id))
            self.tree.addTopLevelItem(item)
        for problem in self.run_problems:
            item = QTreeWidgetItem(["warning", problem.node_id or "(graph)",
                                    problem.field or "last run", problem.message])
            item.setForeground(0, QBrush(QColor(240, 190, 90)))
            item.setToolTip(3, problem.message)
            item.setData(0, Qt.ItemDataRole.UserRole, _shown(problem.node_id))
            self.tree.addTopLevelItem(item)
        for callback in list(self.on_problems):
            callback(self.problems)

    def set_environment(self, not_ready: dict[str, str]) -> None:
        """Show the pre-flight result: nodes whose model, store or server is not usable."""
        self.environment = dict(not_ready)
        self.refresh()

    def set_run_problems(self, problems: list[Problem]) -> None:
        """Show what the last runs warned about (a glob that left files out, chunks longer
        than the embedder reads, params written for another corpus)."""
        self.run_problems = list(problems)
        self.refresh()

    def by_node(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for problem in self.problems:
            if problem.node_id:
                where = f"{problem.field}: " if problem.field else ""
                if "/" in problem.node_id:  # inside a subgraph: shown on the subgraph node
                    where = f"{problem.node_id}{'.' if where else ': '}{where}"
                grouped.setdefault(_shown(problem.node_id), []).append(where + problem.message)
        for node_id, detail in self.environment.items():
            grouped.setdefault(_shown(node_id), []).append(f"not ready here: {detail}")
        for problem in self.run_problems:
            if problem.node_id:
                where = f"{problem.field}: " if problem.field else ""
                grouped.setdefault(_shown(problem.node_id), []).append(
                    f"last run: {where}{problem.message}")
        return grouped

    def _clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        node_id = item.data(0, Qt.ItemDataRole.UserRole)
        if node_id:
            for callback in list(self.on_select_node):
                callback(node_id)


def empty_required(doc: GraphDocument, registry: NodeRegistry,
                   known: list[Problem]) -> list[Problem]:
    """The params a run needs that are empty (as the Properties panel marks them), for those
    ``known`` does not name already."""
    named = {(p.node_id, p.field) for p in known}
    found = []
    for spec in doc.nodes:
        try:
            node_type = type_of(spec, registry)
        except ModragError:
            continue
        for name, why in missing_values(node_type, spec, doc).items():
            if (spec.id, name) not in named:
                found.append(Problem("empty-param", why, spec.id, name, severity="warning"))
    return found


def _shown(node_id: str | None) -> str | None:
    """The canvas node a problem is shown on: a subgraph's for the nodes inside it."""
    return node_id.split("/", 1)[0] if node_id else node_id
