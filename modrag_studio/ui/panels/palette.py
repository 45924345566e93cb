"""The node palette (searchable, grouped by category, drag onto the canvas) and Tab search."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QMimeData, QPoint, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.core.ports import type_name
from modrag_studio.engine.core.registry import NodeRegistry

MIME_NODE_TYPE = "application/x-modrag-node-type"
TEXT_PREFIX = "modrag-node:"
TYPE_ROLE = Qt.ItemDataRole.UserRole


def node_type_from_mime(mime: QMimeData) -> str | None:
    """The node type id carried by a palette drag, or None."""
    if mime.hasFormat(MIME_NODE_TYPE):
        return bytes(mime.data(MIME_NODE_TYPE).data()).decode("utf-8")
    text = mime.text() if mime.hasText() else ""
    return text[len(TEXT_PREFIX):] if text.startswith(TEXT_PREFIX) else None


DEVELOPER = "Developer"
DEVELOPER_CATEGORIES = frozenset({"Debug", "Test"})  # test-only nodes: Fail, Sleep, Mutate…


def is_developer(node_type: type[NodeType]) -> bool:
    return node_type.category in DEVELOPER_CATEGORIES


def shown_category(node_type: type[NodeType]) -> str:
    """The palette category: debug and test nodes all go to "Developer"."""
    return DEVELOPER if is_developer(node_type) else node_type.category


def matches(node_type: type[NodeType], query: str) -> bool:
    """Every word of ``query`` appears in the type's id, title, category or description."""
    return rank(node_type, query) is not None


def rank(node_type: type[NodeType], query: str) -> int | None:
    """How well ``query`` names the type (lower is better; None: no match).

    0 the title starts with the query, 1 every word is in the title, 2 in the title or
    type id, 3 only with the category and description.
    """
    words = query.lower().split()
    title = node_type.display_title().lower()
    name = f"{title} {node_type.type_id.lower()}"
    if not words:
        return 0
    if title.startswith(query.strip().lower()):
        return 0
    if all(word in title for word in words):
        return 1
    if all(word in name for word in words):
        return 2
    haystack = " ".join([name, node_type.category, node_type.description]).lower()
    return 3 if all(word in haystack for word in words) else None


def ranked(types, query: str, developer: bool) -> list[type[NodeType]]:
    """Types matching ``query`` best first (then by title); developer nodes only if asked."""
    found = [(rank(t, query), t.display_title(), t) for t in types
             if developer or not is_developer(t)]
    return [t for score, _title, t in sorted((f for f in found if f[0] is not None),
                                             key=lambda f: (f[0], f[1]))]


def _tooltip(node_type: type[NodeType]) -> str:
    lines = [f"{node_type.display_title()}  ({node_type.type_id})"]
    if node_type.description:
        lines.append(node_type.description)
    if node_type.inputs:
        lines.append("in: " + ", ".join(f"{p.name}: {type_name(p.type)}"
                                        for p in node_type.inputs))
    if node_type.outputs:
        lines.append("out: " + ", ".join(f"{p.name}: {type_name(p.type)}"
                                         for p in node_type.outputs))
    return "\n".join(lines)


class _PaletteTree(QTreeWidget):
    def mimeData(self, items: list[QTreeWidgetItem]) -> QMimeData:
        mime = QMimeData()
        type_id = items[0].data(0, TYPE_ROLE) if items else None
        if type_id:
            mime.setData(MIME_NODE_TYPE, type_id.encode("utf-8"))
            mime.setText(TEXT_PREFIX + type_id)
        return mime

    def mimeTypes(self) -> list[str]:
        return [MIME_NODE_TYPE, "text/plain"]


class NodePalette(QWidget):
    """Node types by category; type to filter; drag an entry (or double-click it) to add."""

    def __init__(self, registry: NodeRegistry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.registry = registry
        self.on_activate: list[Callable[[str], None]] = []
        #: entries that are not node types, by group (components): (title, entry id, tooltip)
        self.extra: dict[str, list[tuple[str, str, str]]] = {}
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search nodes…")
        self.search.setClearButtonEnabled(True)
        self.tree = _PaletteTree()
        self.tree.setHeaderHidden(True)
        self.tree.setDragEnabled(True)
        self.tree.setDragDropMode(QTreeWidget.DragDropMode.DragOnly)
        self.show_developer = False
        self.developer_box = QCheckBox("Developer nodes (debug, test)")
        self.developer_box.setToolTip("Show nodes meant for testing graphs: Fail, Sleep, "
                                      "Mutate input, Counter…")
        self.developer_box.toggled.connect(self.set_show_developer)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search)
        layout.addWidget(self.tree)
        layout.addWidget(self.developer_box)
        self.search.textChanged.connect(self.refresh)
        self.search.returnPressed.connect(self._activate_first)
        self.tree.itemActivated.connect(self._activate_item)
        self.refresh()

    def refresh(self, *_args: object) -> None:
        """Rebuild the tree from the registry (it may have grown) with the current filter."""
        query = self.search.text().strip()
        self.tree.clear()
        groups: dict[str, QTreeWidgetItem] = {}
        types = ranked(self.registry, query, self.show_developer) if query else [
            t for t in self.registry if self.show_developer or not is_developer(t)]
        for node_type in types:
            category = shown_category(node_type)
            group = groups.get(category)
            if group is None:
                group = QTreeWidgetItem([category])
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                groups[category] = group
                self.tree.addTopLevelItem(group)
            item = QTreeWidgetItem([node_type.display_title()])
            item.setData(0, TYPE_ROLE, node_type.type_id)
            item.setToolTip(0, _tooltip(node_type))
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                          | Qt.ItemFlag.ItemIsDragEnabled)
            group.addChild(item)
        for title, entries in self.extra.items():
            shown = [e for e in entries if not query or query.lower() in e[0].lower()]
            if not shown:
                continue
            group = QTreeWidgetItem([title])
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.tree.addTopLevelItem(group)
            for text, entry_id, tip in shown:
                item = QTreeWidgetItem([text])
                item.setData(0, TYPE_ROLE, entry_id)
                item.setToolTip(0, tip)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                              | Qt.ItemFlag.ItemIsDragEnabled)
                group.addChild(item)
        self.tree.expandAll()

    def set_extra(self, group: str, entries: list[tuple[str, str, str]]) -> None:
        """Show ``entries`` (title, entry id, tooltip) under ``group`` after the node types."""
        self.extra[group] = entries
        self.refresh()

    def set_show_developer(self, shown: bool) -> None:
        """Offer (or hide) the "Developer" category of debug and test nodes."""
        self.show_developer = bool(shown)
        if self.developer_box.isChecked() != self.show_developer:
            self.developer_box.setChecked(self.show_developer)
        self.refresh()

    def visible_type_ids(self) -> list[str]:
        found = []
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            found += [group.child(j).data(0, TYPE_ROLE) for j in range(group.childCount())]
        return found

    def categories(self) -> list[str]:
        return [self.tree.topLevelItem(i).text(0) for i in range(self.tree.topLevelItemCount())]

    def item_for(self, type_id: str) -> QTreeWidgetItem | None:
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            for j in range(group.childCount()):
                if group.child(j).data(0, TYPE_ROLE) == type_id:
                    return group.child(j)
        return None

    def _activate_item(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        type_id = item.data(0, TYPE_ROLE)
        if type_id:
            for callback in list(self.on_activate):
                callback(type_id)

    def _activate_first(self) -> None:
        ids = self.visible_type_ids()
        if ids:
            for callback in list(self.on_activate):
                callback(ids[0])


class _SearchLine(QLineEdit):
    def __init__(self, popup: NodeSearchPopup) -> None:
        super().__init__(popup)
        self.popup = popup

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
            lst = self.popup.results
            row = lst.currentRow() + (1 if key == Qt.Key.Key_Down else -1)
            lst.setCurrentRow(max(0, min(lst.count() - 1, row)))
            return
        if key == Qt.Key.Key_Escape:
            self.popup.hide()
            self.popup.allowed = None
            return
        super().keyPressEvent(event)


class NodeSearchPopup(QFrame):
    """The Tab search on the canvas: a non-blocking popup (no nested event loop)."""

    def __init__(self, registry: NodeRegistry, parent: QWidget) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.registry = registry
        self.show_developer = False
        self.allowed: dict[str, str] | None = None  # type id -> port, when a wire is dropped
        self.on_chosen: Callable[[str], None] | None = None
        self.line = _SearchLine(self)
        self.line.setPlaceholderText("Add node…")
        self.results = QListWidget(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.line)
        layout.addWidget(self.results)
        self.resize(280, 300)
        self.line.textChanged.connect(self._filter)
        self.line.returnPressed.connect(self.choose_current)
        self.results.itemActivated.connect(lambda _item: self.choose_current())
        self.hide()

    def open_at(self, pos: QPoint) -> None:
        """Show at ``pos`` (parent coordinates), empty query, focus in the search line."""
        parent = self.parentWidget()
        x = max(0, min(pos.x(), parent.width() - self.width()))
        y = max(0, min(pos.y(), parent.height() - self.height()))
        self.move(x, y)
        self.line.clear()
        self._filter("")
        self.show()
        self.raise_()
        self.line.setFocus()

    def _filter(self, text: str) -> None:
        self.results.clear()
        allowed = self.allowed
        shown = ranked(self.registry, text, self.show_developer or bool(allowed))
        if allowed is not None:  # a dropped wire's choices, in the order they were ranked
            order = {type_id: i for i, type_id in enumerate(allowed)}
            shown = sorted((t for t in shown if t.type_id in order),
                           key=lambda t: (rank(t, text), order[t.type_id]))
        for node_type in shown:
            item = QListWidgetItem(f"{node_type.display_title()}   · {shown_category(node_type)}")
            item.setData(TYPE_ROLE, node_type.type_id)
            item.setToolTip(_tooltip(node_type))
            self.results.addItem(item)
        self.results.setCurrentRow(0)

    def choose_current(self) -> None:
        item = self.results.currentItem()
        self.hide()
        if item is not None and self.on_chosen is not None:
            self.on_chosen(item.data(TYPE_ROLE))
