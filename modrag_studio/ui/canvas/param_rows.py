"""Key params on the canvas: one row each under a node's ports, edited in place.

A node type names its one to three key params (``NodeType.key_params``); each is drawn as
``name  value`` inside the node (plain text items: a 100-node graph stays quick to open).
A click on a row opens the param's own editor over it (a spin box, a drop-down, a check
box or a line, the same fields as the Properties panel); Enter or leaving it commits
through :meth:`GraphEditor.set_param` (one undo step), Escape closes it unchanged. A value
the node's Params refuse is named in the status bar and nothing changes. While a variant is
active the rows show the values it runs with, its overrides in purple with a diamond, and an
edit of an overridden param changes the variant (:class:`VariantOverlay`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QPointF, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QGraphicsItem,
    QGraphicsProxyWidget,
    QGraphicsSceneMouseEvent,
    QGraphicsSimpleTextItem,
)

from modrag_studio.engine.compose.ports import type_of
from modrag_studio.engine.core.document import NodeSpec
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.node import NodeType
from modrag_studio.engine.edit.editor import GraphEditor, ParamRejected
from modrag_studio.ui.panels.properties import ParamField, resolve
from modrag_studio.ui.panels.variant_overlay import VARIANT_COLOUR, VariantOverlay

ROW_HEIGHT = 16.0
ROW_PAD = 8.0
INLINE_KINDS = ("enum", "bool", "int", "float", "str", "json-scalar")
VALUE_CHARS = 22  # a value longer than this is cut in the middle (the tooltip has it whole)
VARIANT_MARK = "◆"  # after a value the active variant sets
_PLAIN, _OVERRIDDEN = QColor(205, 212, 222), QColor(VARIANT_COLOUR)
_FONT = QFont()
_FONT.setPointSizeF(7.5)


def param_text(value: Any) -> str:
    """A param value as a row shows it: short, one line."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        text = ", ".join(param_text(v) for v in value) or "[]"
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value).replace("\n", " ")
    if len(text) > VALUE_CHARS:
        keep = VALUE_CHARS - 1
        text = text[:keep - keep // 2] + "…" + text[len(text) - keep // 2:]
    return text


def key_param_values(node_type: type[NodeType], spec: NodeSpec) -> list[tuple[str, Any]]:
    """(name, value) of the type's key params: the node's own value, else the default."""
    fields = node_type.Params.model_fields
    shown = []
    for name in node_type.key_params:
        if name in spec.params:
            shown.append((name, spec.params[name]))
        elif name in fields and not fields[name].is_required():
            shown.append((name, fields[name].get_default(call_default_factory=True)))
        else:
            shown.append((name, None))
    return shown


class ParamRow(QGraphicsSimpleTextItem):
    """``name  value`` of one key param, a child of its node item; a click edits it."""

    def __init__(self, name: str, parent: QGraphicsItem,
                 on_click: Callable[[ParamRow], None]) -> None:
        super().__init__(parent)
        self.name = name
        self.value: Any = None
        self.on_click = on_click
        self.setFont(_FONT)
        self.setBrush(QBrush(_PLAIN))
        self.overridden = ""
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setAcceptedMouseButtons(Qt.MouseButton.LeftButton)

    def show_value(self, value: Any, overridden: str = "") -> None:
        """Show ``value``; ``overridden`` (the variant's note) marks it as the variant's."""
        self.value, self.overridden = value, overridden
        mark = f"  {VARIANT_MARK}" if overridden else ""
        self.setText(f"{self.name}  {param_text(value)}{mark}")
        self.setBrush(QBrush(_OVERRIDDEN if overridden else _PLAIN))
        whole = json.dumps(value, ensure_ascii=False, default=str)
        note = f"\n{overridden}" if overridden else ""
        self.setToolTip(f"{self.name} = {whole}{note}\nclick to edit")

    def text_width(self) -> float:
        return float(QFontMetrics(_FONT).horizontalAdvance(self.text()))

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        event.accept()  # the row edits; the node is dragged by its title and ports

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            self.on_click(self)
        event.accept()


class RowsInNode:
    """Mixed into the canvas's node item: room for its key-param rows under the ports."""

    param_rows: NodeParamRows | None = None
    studio_id = ""
    _height: float

    def calc_size(self, add_w: float = 0.0, add_h: float = 0.0) -> tuple[float, float]:
        width, height = super().calc_size(add_w, add_h)  # type: ignore[misc]
        rows = self.param_rows
        if rows is None:
            return width, height
        return max(width, rows.width(self.studio_id)), height + rows.height(self.studio_id)

    def draw_node(self) -> None:
        super().draw_node()  # type: ignore[misc]
        if self.param_rows is not None:
            self.param_rows.place(self.studio_id, self._height)

    def set_proxy_mode(self, mode: bool) -> None:
        super().set_proxy_mode(mode)  # type: ignore[misc]
        if self.param_rows is not None:
            self.param_rows.set_visible(self.studio_id, not mode)


class _EditorKeys(QObject):
    """Escape closes the inline editor unchanged; leaving it commits and closes it."""

    def __init__(self, rows: NodeParamRows) -> None:
        super().__init__()
        self.rows = rows

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_Escape:
            self.rows.close_editor()
            return True
        if (event.type() == QEvent.Type.FocusOut
                and event.reason() != Qt.FocusReason.PopupFocusReason):
            # before the widget's own focus-out (which would commit after the editor went)
            self.rows.leave_editor()
        return False


class NodeParamRows:
    """The key-param rows of every node on the canvas, and the one inline editor."""

    def __init__(self, editor: GraphEditor, message: Callable[[str], None],
                 variant: VariantOverlay | None = None) -> None:
        self.editor = editor
        self.message = message
        self.variant = variant or VariantOverlay()
        self.variant.listeners.append(self._variant_changed)
        self.rows: dict[str, list[ParamRow]] = {}
        self.field: ParamField | None = None
        self._proxy: QGraphicsProxyWidget | None = None
        self._editing: tuple[str, str] | None = None
        self._keys = _EditorKeys(self)

    # --- rows ------------------------------------------------------------------------------

    def show(self, node_id: str, item: QGraphicsItem, node_type: type[NodeType] | None,
             spec: NodeSpec) -> bool:
        """Make or refresh ``node_id``'s rows on ``item``; True when the rows were made anew."""
        names = tuple(node_type.key_params) if node_type is not None else ()
        rows = self.rows.get(node_id, [])
        made = [r.name for r in rows] != list(names)
        if made:
            for row in rows:
                row.setParentItem(None)
                if row.scene() is not None:
                    row.scene().removeItem(row)
            rows = [ParamRow(name, item, lambda row, n=node_id: self.edit(n, row))
                    for name in names]
            self.rows[node_id] = rows
        values = dict(key_param_values(node_type, spec)) if node_type is not None else {}
        variant = self.variant
        for row in rows:
            base = values.get(row.name)
            row.show_value(variant.value(node_id, row.name, base),
                           variant.note(node_id, row.name, base))
        return made

    def _variant_changed(self) -> None:
        """Another variant (or the base) is shown: every row shows what it runs with."""
        doc = self.editor.document()
        ids = set(doc.node_ids())
        for node_id, rows in list(self.rows.items()):
            if not rows or node_id not in ids or rows[0].parentItem() is None:
                continue
            spec = doc.node(node_id)
            try:
                node_type = type_of(spec, self.editor.registry)
            except ModragError:
                continue
            item = rows[0].parentItem()
            self.show(node_id, item, node_type, spec)
            item.draw_node()  # type: ignore[attr-defined]

    def forget(self, node_id: str) -> None:
        self.rows.pop(node_id, None)
        if self._editing and self._editing[0] == node_id:
            self.close_editor()

    def height(self, node_id: str) -> float:
        rows = self.rows.get(node_id, [])
        return ROW_HEIGHT * len(rows) + (4.0 if rows else 0.0)

    def width(self, node_id: str) -> float:
        return max((r.text_width() + 2 * ROW_PAD for r in self.rows.get(node_id, [])),
                   default=0.0)

    def place(self, node_id: str, node_height: float) -> None:
        """Put the rows at the bottom of a node ``node_height`` tall."""
        rows = self.rows.get(node_id, [])
        top = node_height - self.height(node_id)
        for i, row in enumerate(rows):
            row.setPos(ROW_PAD, top + i * ROW_HEIGHT)

    def set_visible(self, node_id: str, visible: bool) -> None:
        for row in self.rows.get(node_id, []):
            row.setVisible(visible)

    def row_texts(self, node_id: str) -> list[str]:
        return [r.text() for r in self.rows.get(node_id, [])]

    # --- the inline editor ------------------------------------------------------------------

    def edit_named(self, node_id: str, name: str, at: QPointF) -> ParamField | None:
        """Edit ``node_id``'s key param ``name`` at the scene point ``at`` (a click on the
        zoomed-out face of a node, whose rows are hidden): the editor keeps its screen size."""
        row = next((r for r in self.rows.get(node_id, []) if r.name == name), None)
        return self.edit(node_id, row, at=at) if row is not None else None

    def edit(self, node_id: str, row: ParamRow, *, at: QPointF | None = None
             ) -> ParamField | None:
        """Open the editor of ``row``'s param over it; returns its field (None: not editable)."""
        self.close_editor()
        spec = self.editor.document().node(node_id)
        node_type = self.editor.registry.get(spec.type)
        schema = node_type.Params.model_json_schema()
        raw = schema.get("properties", {}).get(row.name)
        scene = row.scene()
        if raw is None or scene is None:
            return None
        prop, nullable = resolve(schema, raw)
        field = ParamField(row.name, prop, nullable, self._commit)
        if field.kind not in INLINE_KINDS:  # long texts, lists, JSON: the panel has room
            field.widget.deleteLater()
            self.message(f"{node_id}.{row.name}: edit it in the Properties panel")
            return None
        field.set_value(row.value)
        widget = field.widget
        widget.setFont(_FONT)
        width = row.parentItem().boundingRect().width() - 2 * ROW_PAD
        widget.setFixedWidth(max(int(width), 90 if at is None else 160))
        widget.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        widget.installEventFilter(self._keys)
        proxy = QGraphicsProxyWidget()
        proxy.setWidget(widget)
        proxy.setZValue(1e6)
        if at is not None:  # zoomed out: drawn at screen size where the click was
            proxy.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        scene.addItem(proxy)
        proxy.setPos(row.scenePos() if at is None else at)
        self.field, self._proxy, self._editing = field, proxy, (node_id, row.name)
        widget.setFocus(Qt.FocusReason.MouseFocusReason)
        if isinstance(widget, QComboBox):
            widget.showPopup()
        return field

    @property
    def editing(self) -> tuple[str, str] | None:
        """(node id, param) of the open inline editor."""
        return self._editing

    def _commit(self, field: ParamField) -> None:
        if self._editing is None or field is not self.field:
            return
        node_id, name = self._editing
        try:
            value = field.value()
        except ValueError as exc:
            self.message(f"{node_id}.{name}: {exc}")
            return
        spec = self.editor.document().node(node_id)
        row_value = next((r.value for r in self.rows.get(node_id, []) if r.name == name), None)
        variant = self.variant
        in_variant = variant.overrides(node_id, name) and variant.set_param is not None
        shown = row_value if in_variant else spec.params.get(name, row_value)
        if shown != value:
            try:
                if in_variant:
                    variant.set_param(node_id, name, value)  # type: ignore[misc]
                else:
                    self.editor.set_param(node_id, name, value)
            except ParamRejected as exc:
                self.message(str(exc))
                return
        QTimer.singleShot(0, self.close_editor)  # not inside the widget's own signal

    def leave_editor(self) -> None:
        """Commit what the open editor shows, then close it."""
        if self.field is not None:
            self._commit(self.field)
        self.close_editor()

    def close_editor(self) -> None:
        proxy, self._proxy = self._proxy, None
        self.field, self._editing = None, None
        if proxy is not None:
            widget = proxy.widget()
            if widget is not None:
                widget.removeEventFilter(self._keys)
            if proxy.scene() is not None:
                proxy.scene().removeItem(proxy)
            proxy.deleteLater()
