"""A node's detail view: what it received, its params and what it produced, side by side.

Opened by a double-click on a node or Enter with one node selected. The three panes show the
last run's visit of the node (the inspector's run): its inputs by port, the params form of the
Properties panel (editable, one undo step per change) and its outputs by port. A node that has
not run yet shows its params and says so in the other two panes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.edit.editor import GraphEditor
from modrag_studio.ui.inspection.views import view_for
from modrag_studio.ui.panels.properties import PropertiesPanel
from modrag_studio.ui.panels.variant_overlay import VariantOverlay

if TYPE_CHECKING:
    from modrag_studio.ui.canvas.protocols import StudioShell
    from modrag_studio.ui.inspection.inspector import Inspector


def _pane(title: str, body: QWidget) -> QWidget:
    pane = QWidget()
    layout = QVBoxLayout(pane)
    layout.setContentsMargins(4, 4, 4, 4)
    heading = QLabel(f"<b>{title}</b>")
    layout.addWidget(heading)
    layout.addWidget(body, 1)
    return pane


def _ports(values: dict[str, Any], empty: str) -> QTabWidget:
    tabs = QTabWidget()
    if not values:
        tabs.addTab(QLabel(f"  {empty}"), "—")
    for port, value in values.items():
        tabs.addTab(view_for(value), port)
    return tabs


class NodeDetailDialog(QDialog):
    """Inputs | params | outputs of one node, for the last run."""

    def __init__(self, node_id: str, editor: GraphEditor, inspector: Inspector,
                 parent: QWidget | None = None, variant: VariantOverlay | None = None
                 ) -> None:
        super().__init__(parent)
        self.node_id = node_id
        spec = editor.document().node(node_id)
        self.setWindowTitle(f"{spec.title or node_id} — node details")
        self.resize(1200, 620)
        visits = [v for v in inspector.visits(node_id) if v.status != "cancelled"]
        visit = visits[-1] if visits else None
        key = (node_id, visit.iteration if visit is not None else 0)
        result = inspector.result
        inputs = result.node_inputs.get(key, {}) if result is not None else {}
        outputs = result.node_outputs.get(key, {}) if result is not None else {}
        not_run = "not run yet: run the graph (F5) to see what it receives"
        self.summary = QLabel(inspector.title_html(node_id, visit))
        self.inputs = _ports(inputs, not_run if visit is None else "(no inputs recorded)")
        self.params = PropertiesPanel(editor, variant=variant)
        self.params.show_node(node_id)
        self.outputs = _ports(outputs, "not run yet" if visit is None
                              else "(no outputs recorded)")
        split = QSplitter(Qt.Orientation.Horizontal)
        for title, body in (("Inputs", self.inputs), ("Params", self.params),
                            ("Outputs", self.outputs)):
            split.addWidget(_pane(title, body))
        split.setSizes([400, 360, 440])
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.finished.connect(lambda *_: self.params.detach())

    def input_ports(self) -> list[str]:
        return [self.inputs.tabText(i) for i in range(self.inputs.count())]

    def output_ports(self) -> list[str]:
        return [self.outputs.tabText(i) for i in range(self.outputs.count())]


class _EnterOpens(QObject):
    """Enter pressed on the canvas with one node selected opens its details."""

    def __init__(self, details: NodeDetails) -> None:
        super().__init__()
        self.details = details

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if (event.type() == QEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and len(self.details.selected()) == 1):
            self.details.open_selected()
            return True
        return False


class NodeDetails:
    """Opens :class:`NodeDetailDialog` from the canvas (double-click, or Enter on a node)."""

    def __init__(self, window: StudioShell, editor: GraphEditor, inspector: Inspector,
                 opened: list[Callable[[str], None]], selected: Callable[[], list[str]],
                 variant: Any = None) -> None:
        self.window = window
        self.variant = variant  # the active variant's values (the canvas's overlay)
        self.editor = editor
        self.inspector = inspector
        self.selected = selected
        self.dialog: NodeDetailDialog | None = None
        opened.append(self.open)
        self._keys = _EnterOpens(self)
        canvas: QWidget = window.canvas.view  # type: ignore[attr-defined]
        canvas.installEventFilter(self._keys)  # Enter on the canvas itself, nowhere else

    def open_selected(self) -> None:
        chosen = self.selected()
        if len(chosen) == 1:
            self.open(chosen[0])

    def open(self, node_id: str) -> NodeDetailDialog:
        """Show ``node_id``'s details, replacing an open detail view (a closed one is gone:
        it deletes itself, so it is forgotten when it is destroyed)."""
        if self.dialog is not None:
            self.dialog.close()
        dialog = NodeDetailDialog(node_id, self.editor, self.inspector,
                                  self.window,  # type: ignore[arg-type]
                                  self.variant)
        dialog.destroyed.connect(lambda *_: self._forget(dialog))
        self.dialog = dialog
        dialog.show()
        return dialog

    def _forget(self, dialog: NodeDetailDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
