"""Plain Qt graphics items drawn on the canvas: group backdrops, notes, node badges and states."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsSceneMouseEvent,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
    QStyleOptionGraphicsItem,
    QWidget,
)

#: A colour for every state of the one vocabulary (``engine.run.trace.NODE_STATES``).
STATE_COLORS: dict[str, tuple[int, int, int]] = {
    "idle": (80, 80, 90),
    "queued": (140, 140, 160),
    "running": (70, 160, 255),
    "done": (80, 200, 120),
    "cached": (60, 170, 170),
    "skipped": (110, 110, 110),
    "failed": (235, 70, 70),
    "cancelled": (230, 160, 60),
    "bypassed": (150, 150, 165),
    "pinned": (190, 120, 230),
}


class LayoutItem(QGraphicsRectItem):
    """A movable rectangle whose move (on mouse release) is reported once to ``on_moved``."""

    def __init__(self, item_id: str, rect: QRectF, z: float) -> None:
        super().__init__(QRectF(0, 0, rect.width(), rect.height()))
        self.item_id = item_id
        self.setPos(rect.topLeft())
        self.setZValue(z)
        self.setFlags(QGraphicsItem.GraphicsItemFlag.ItemIsMovable
                      | QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.on_moved: Callable[[LayoutItem, QPointF, QPointF], None] | None = None
        self.on_edit: Callable[[LayoutItem], None] | None = None
        self.on_resized: Callable[[LayoutItem, float, float], None] | None = None
        self._press_pos = QPointF()
        self.handle = ResizeHandle(self)

    def set_size(self, width: float, height: float) -> None:
        self.setRect(QRectF(0, 0, width, height))
        self.handle.place()

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self._press_pos = self.pos()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        if self.pos() != self._press_pos and self.on_moved is not None:
            self.on_moved(self, self._press_pos, self.pos())

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.on_edit is not None:
            self.on_edit(self)
        event.accept()


class ResizeHandle(QGraphicsRectItem):
    """The bottom-right grip of a group or note; the new size is reported on release."""

    SIZE = 12.0
    MIN = QPointF(80, 50)

    def __init__(self, parent: LayoutItem) -> None:
        super().__init__(QRectF(-self.SIZE, -self.SIZE, self.SIZE, self.SIZE), parent)
        self.owner = parent
        self.setBrush(QBrush(QColor(255, 255, 255, 60)))
        self.setPen(QPen(Qt.PenStyle.NoPen))
        self.setCursor(Qt.CursorShape.SizeFDiagCursor)
        self.setToolTip("drag to resize")
        self.place()

    def place(self) -> None:
        self.setPos(self.owner.rect().bottomRight())

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        corner = self.owner.mapFromScene(event.scenePos())
        self.owner.set_size(max(corner.x(), self.MIN.x()), max(corner.y(), self.MIN.y()))

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.owner.on_resized is not None:
            rect = self.owner.rect()
            self.owner.on_resized(self.owner, rect.width(), rect.height())


class GroupItem(LayoutItem):
    """A titled backdrop behind nodes; dragging it moves the nodes inside."""

    def __init__(self, item_id: str, title: str, rect: QRectF, color: str | None) -> None:
        super().__init__(item_id, rect, z=-100)
        base = QColor(color) if color else QColor(70, 90, 120)
        fill = QColor(base)
        fill.setAlpha(60)
        self.setBrush(QBrush(fill))
        self.setPen(QPen(base.lighter(130), 1.5))
        self.title = QGraphicsSimpleTextItem(title, self)
        font = QFont()
        font.setPointSize(13)
        font.setBold(True)
        self.title.setFont(font)
        self.title.setBrush(QBrush(QColor(230, 230, 240)))
        self.title.setPos(10, 6)
        self.setToolTip(f"group: {title} (double-click to rename)")


class NoteItem(LayoutItem):
    """A sticky note with free text."""

    def __init__(self, item_id: str, text: str, rect: QRectF) -> None:
        super().__init__(item_id, rect, z=-50)
        self.setBrush(QBrush(QColor(250, 235, 150, 230)))
        self.setPen(QPen(QColor(200, 180, 90), 1))
        self.text = QGraphicsTextItem(self)
        self.text.setPlainText(text)
        self.text.setDefaultTextColor(QColor(40, 40, 30))
        self.text.setTextWidth(rect.width() - 12)
        self.text.setPos(6, 6)
        self.setToolTip("note (double-click to edit)")

    def set_size(self, width: float, height: float) -> None:
        super().set_size(width, height)
        self.text.setTextWidth(width - 12)


class BadgeItem(QGraphicsRectItem):
    """A small red "!" badge at a node's top-left corner, with the problems as tooltip."""

    def __init__(self, parent: QGraphicsItem) -> None:
        super().__init__(QRectF(-9, -9, 18, 18), parent)
        self.setZValue(10)
        self.setBrush(QBrush(QColor(220, 60, 60)))
        self.setPen(QPen(QColor(255, 220, 220), 1.2))

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setBrush(self.brush())
        painter.setPen(self.pen())
        painter.drawEllipse(self.rect())
        painter.setPen(QPen(QColor("white")))
        font = painter.font()
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "!")


LOD_SCALE = 0.6         # below this zoom nodes show only a large title and their state
LOD_TITLE_PX = 27       # scene pixels: about 12 px on screen at the zoom of a large "fit"
LOD_STATE_PX = 22
LOD_PARAM_PX = 19
LOD_MIN_WIDTH = 190.0   # a node without outputs: the label may reach into the gap beside it
LOD_Z = 1.5             # over the node's own texts, under its ports (NodeGraphQt's Z_VAL_PORT)


class DetailLabel(QGraphicsTextItem):
    """The zoomed-out face of a node: its title in large type and its state underneath.

    It stays inside the node when the node has outputs (its output ports and their wires stay
    in sight) and under the ports. A click on one of its param lines edits that param, as a
    click on the param's row does at full detail; elsewhere the node is dragged as usual.
    """

    def __init__(self, node_item: QGraphicsItem) -> None:
        super().__init__(node_item)
        self.node_item = node_item
        self.setZValue(LOD_Z)
        self.setAcceptedMouseButtons(Qt.MouseButton.LeftButton)
        self.setVisible(False)
        option = self.document().defaultTextOption()
        option.setWrapMode(option.WrapMode.WordWrap)  # never break inside a word
        self.document().setDefaultTextOption(option)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        painter.fillRect(self.boundingRect(), QColor(20, 22, 28, 150))
        super().paint(painter, option, widget)

    def refresh(self, state: str, caption: str) -> None:
        rect = self.node_item.boundingRect()
        title = str(getattr(self.node_item, "name", ""))
        color = QColor(*STATE_COLORS.get(state, STATE_COLORS["idle"])).lighter(130).name()
        status = "" if state == "idle" else state
        if caption and state != "idle":  # "from cache", not "cached · from cache"
            status = caption if state[:5] in caption else f"{status} · {caption}"
        html = (f"<div style='font-size:{LOD_TITLE_PX}px; font-weight:bold; color:#f0f2f6'>"
                f"{_html(title)}</div>")
        if status:
            html += (f"<div style='font-size:{LOD_STATE_PX}px; color:{color}'>"
                     f"{_html(status)}</div>")
        rows = getattr(self.node_item, "param_rows", None)  # the node's key params
        shown = rows.rows.get(self.node_item.studio_id, []) if rows is not None else []
        for row in shown:  # one block each: a click finds its param by block
            colour = row.brush().color().name()  # a variant's value keeps its colour
            html += (f"<div style='font-size:{LOD_PARAM_PX}px; color:{colour}'>"
                     f"{_html(row.text()).replace('  ', '&nbsp;', 1)}</div>")
        outputs = getattr(self.node_item, "outputs", None) or []
        room = (max(min(p.pos().x() for p in outputs) - rect.left() - 6, 40.0) if outputs
                else max(rect.width() - 8, LOD_MIN_WIDTH))
        self.setScale(1.0)
        self.setTextWidth(room)
        self.setHtml(html)
        widest, tallest = self.document().idealWidth(), self.document().size().height()
        if outputs:  # inside the node: smaller type rather than over its ports or badges
            self.setScale(min(1.0, room / max(widest, 1.0),
                              (rect.height() - 4) / max(tallest, 1.0)))
        self.setPos(rect.left() + 4, rect.top() + 2)

    def param_at(self, pos: QPointF) -> str | None:
        """The key param whose line is at ``pos`` (item coordinates), if any."""
        rows = getattr(self.node_item, "param_rows", None)
        if rows is None:
            return None
        at = self.document().documentLayout().hitTest(pos, Qt.HitTestAccuracy.FuzzyHit)
        if at < 0:
            return None
        line = self.document().findBlock(at).text().split()  # no-break spaces too
        return next((r.name for r in rows.rows.get(self.node_item.studio_id, [])
                     if r.text().split() == line), None)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self.param_at(event.pos()) is None:
            event.ignore()  # the title and state: the node takes the press (select, drag)
            return
        event.accept()

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        name = self.param_at(event.pos())
        rows = getattr(self.node_item, "param_rows", None)
        if name is not None and rows is not None:
            rows.edit_named(self.node_item.studio_id, name, event.scenePos())
        event.accept()


def elapsed_text(seconds: float) -> str:
    """"4.2 s", "1:05", "1:02:03"."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class StateDecoration:
    """Status text, caption, progress bar and a coloured frame attached to one node item.

    Zoomed out (``set_zoomed_out``), the small status and caption hide and a
    :class:`DetailLabel` shows the title and state in large type instead.
    """

    def __init__(self, node_item: QGraphicsItem) -> None:
        self.node_item = node_item
        self.zoomed_out = False
        self.elapsed: float | None = None
        self.busy = False
        self.progress_fraction: float | None = None
        self.detail = DetailLabel(node_item)
        self.status = QGraphicsSimpleTextItem("", node_item)
        self.status.setBrush(QBrush(QColor(220, 220, 220)))
        self.caption = QGraphicsSimpleTextItem("", node_item)
        self.caption.setBrush(QBrush(QColor(200, 210, 220)))
        self.frame = QGraphicsRectItem(node_item)
        self.frame.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        self.frame.setZValue(-1)
        self.progress_back = QGraphicsRectItem(node_item)
        self.progress_back.setBrush(QBrush(QColor(40, 40, 50)))
        self.progress_back.setPen(QPen(Qt.PenStyle.NoPen))
        self.progress_bar = QGraphicsRectItem(self.progress_back)
        self.progress_bar.setBrush(QBrush(QColor(70, 160, 255)))
        self.progress_bar.setPen(QPen(Qt.PenStyle.NoPen))
        self.state = "idle"
        self.set_state("idle")
        self.set_progress(None)

    def _rect(self) -> QRectF:
        return self.node_item.boundingRect()

    def set_state(self, state: str, tooltip: str = "") -> None:
        self.state = state
        rect = self._rect()
        color = QColor(*STATE_COLORS.get(state, STATE_COLORS["idle"]))
        visible = state != "idle"
        self.frame.setRect(rect.adjusted(-3, -3, 3, 3))
        self.frame.setPen(QPen(color, 3))
        self.frame.setVisible(visible)
        self.status.setText(state if visible else "")
        self.status.setBrush(QBrush(color.lighter(120)))
        self.status.setPos(rect.right() - self.status.boundingRect().width(), rect.top() - 18)
        self.status.setToolTip(tooltip)
        self.frame.setToolTip(tooltip)
        self._refresh_detail()

    def set_elapsed(self, seconds: float | None) -> None:
        """Show how long the node has been running next to its state (None: hide)."""
        text = self.state if self.state != "idle" else ""
        if seconds is not None:
            text = f"{self.state} · {elapsed_text(seconds)}"
        self.elapsed = seconds
        self.status.setText(text)
        rect = self._rect()
        self.status.setPos(rect.right() - self.status.boundingRect().width(), rect.top() - 18)
        self._refresh_detail()

    def set_busy(self, busy: bool, phase: float = 0.0) -> None:
        """A moving segment in the progress bar: running, no progress reported yet."""
        self.busy = busy
        if not busy:
            if self.progress_fraction is None:
                self.progress_back.setVisible(False)
            return
        rect = self._rect()
        self.progress_back.setVisible(True)
        self.progress_back.setRect(QRectF(rect.left(), rect.bottom() + 3, rect.width(), 5))
        width = rect.width() * 0.25
        left = rect.left() + (rect.width() - width) * phase
        self.progress_bar.setRect(QRectF(left, rect.bottom() + 3, width, 5))

    def set_zoomed_out(self, zoomed_out: bool) -> None:
        """Large title and state only (zoomed out), or the full node (zoomed in)."""
        self.zoomed_out = zoomed_out
        self.status.setVisible(not zoomed_out)
        self.caption.setVisible(not zoomed_out)
        self._refresh_detail()

    def _refresh_detail(self) -> None:
        self.detail.setVisible(self.zoomed_out)
        if self.zoomed_out:
            caption = self.caption.text()
            if self.elapsed is not None:
                caption = " · ".join(p for p in (elapsed_text(self.elapsed), caption) if p)
            self.detail.refresh(self.state, caption)

    def set_caption(self, text: str) -> None:
        rect = self._rect()
        self.caption.setText(text)
        self.caption.setPos(rect.left() + 2, rect.bottom() + 10)
        self._refresh_detail()

    def set_progress(self, fraction: float | None) -> None:
        self.progress_fraction = fraction
        rect = self._rect()
        self.progress_back.setVisible(fraction is not None)
        self.progress_back.setRect(QRectF(rect.left(), rect.bottom() + 3, rect.width(), 5))
        if fraction is not None:
            width = rect.width() * max(0.0, min(1.0, fraction))
            self.progress_bar.setRect(QRectF(rect.left(), rect.bottom() + 3, width, 5))


BYPASS_OPACITY = 0.4
_FLAG_STYLE = {"bypassed": ((120, 120, 135), "bypassed"), "pinned": ((150, 80, 200), "pinned")}


class FlagBadge(QGraphicsRectItem):
    """A pill above a node's top-left corner: "bypassed", or a pin and "pinned".

    It ignores the node's opacity, so it stays readable on a dimmed (bypassed) node.
    """

    def __init__(self, parent: QGraphicsItem, flag: str) -> None:
        super().__init__(QRectF(0, 0, 74 if flag == "bypassed" else 66, 18), parent)
        self.flag = flag
        self.setZValue(11)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresParentOpacity)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setToolTip("Bypassed: the node does not run, its inputs pass on (Enable to run it)"
                        if flag == "bypassed" else
                        "Pinned: runs use this node's pinned output instead of running it")

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        colour, text = _FLAG_STYLE[self.flag]
        rect = self.rect()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setBrush(QBrush(QColor(*colour)))
        painter.setPen(QPen(QColor(235, 235, 245), 1.0))
        painter.drawRoundedRect(rect, 9, 9)
        left = rect.left() + 8
        if self.flag == "pinned":  # a drawing pin: round head, short needle
            painter.setBrush(QBrush(QColor(255, 220, 90)))
            painter.setPen(QPen(QColor(255, 240, 200), 1.2))
            painter.drawLine(QPointF(left + 4, rect.center().y() + 1),
                             QPointF(left + 4, rect.bottom() - 2))
            painter.drawEllipse(QPointF(left + 4, rect.center().y() - 2), 4, 4)
            left += 11
        painter.setPen(QPen(QColor("white")))
        font = QFont(painter.font())
        font.setPointSizeF(8.5)
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(QRectF(left, rect.top(), rect.right() - left - 4, rect.height()),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)


class NodeFlagsDecoration:
    """A node's bypassed / pinned look: dimmed with a "bypassed" pill, a pin pill."""

    def __init__(self, node_item: QGraphicsItem) -> None:
        self.node_item = node_item
        self.badges = {flag: FlagBadge(node_item, flag) for flag in _FLAG_STYLE}
        self.flags: set[str] = set()
        self.set_flags(bypassed=False, pinned=False)

    def set_flags(self, *, bypassed: bool, pinned: bool) -> None:
        self.flags = {f for f, on in (("bypassed", bypassed), ("pinned", pinned)) if on}
        self.node_item.setOpacity(BYPASS_OPACITY if bypassed else 1.0)
        rect = self.node_item.boundingRect()
        left = rect.left() + 14
        for flag, badge in self.badges.items():
            badge.setVisible(flag in self.flags)
            if flag in self.flags:
                badge.setPos(left, rect.top() - 22)
                left += badge.rect().width() + 4


def label_output_ports(node: Any, labels: dict[str, str]) -> bool:
    """Show a node's output ports under ``labels`` (router routes by name); True if changed."""
    changed = False
    for port in node.output_ports():
        text_item = node.view._output_items.get(port.view)
        label = labels.get(port.name(), port.name())
        if text_item is not None and text_item.toPlainText() != label:
            text_item.setPlainText(label)
            port.view.setToolTip(f"{label} (port {port.name()})\n{port.view.toolTip()}")
            changed = True
    return changed
