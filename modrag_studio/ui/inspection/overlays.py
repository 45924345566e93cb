"""Canvas overlays next to nodes: chunk cards, score tables, answers, evaluation metrics.

The overlay is chosen by the output value's type (never by node type id). Long outputs are
paged: a card draws one page of rows, so a 100,000-chunk output costs one page. Cards are
compact (one layout column wide, a few lines of text) and placed where they cover no node
and no other card; under the mouse a card opens to its full width and text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen, QTextDocument
from PySide6.QtWidgets import QGraphicsItem, QGraphicsObject, QGraphicsSceneMouseEvent

from modrag_studio.engine.core.datatypes import Answer
from modrag_studio.ui.canvas.elide_id import elide_id
from modrag_studio.ui.inspection.card_content import (
    ACCENTS,
    DOWN,
    MIDDLE,
    MUTED,
    TEXT,
    CardContent,
    Cell,
    answer_content,
    content_for,
    metrics_content,
)
from modrag_studio.ui.inspection.grounding_marks import marked_html

PAGE = 4
COLLAPSED_FONT_PT = 15.0  # the one-line summary of a card on a zoomed-out canvas
PAD = 8.0
CARD_WIDTH = 214.0  # a compact card fits a layout column (auto layout: 230 apart)
GAP = 8.0           # between a card and anything else
STATUS_H, CAPTION_H = 20.0, 24.0  # a node's state word above it, its caption below
Z_OVERLAY = 0.5     # above wires, below nodes; raised to Z_HOVER under the mouse
Z_HOVER = 1000.0


class OverlayCard(QGraphicsObject):
    """A card drawn next to a node, with a pager when it holds more than one page."""

    FIT_IN_VIEW = True  # "fit graph" shows the cards too

    def __init__(self, node_id: str, content: CardContent, page_size: int = PAGE) -> None:
        super().__init__()
        self.node_id = node_id
        self.page_size = page_size
        self.page = 0
        self.setZValue(Z_OVERLAY)
        self.setAcceptedMouseButtons(Qt.MouseButton.LeftButton)
        self.setAcceptHoverEvents(True)
        self.font = QFont()
        self.font.setPointSizeF(8.5)
        self.bold = QFont(self.font)
        self.bold.setBold(True)
        self.fm = QFontMetricsF(self.font)
        self.fm_bold = QFontMetricsF(self.bold)  # bold cells are measured as drawn
        self.line_h = self.fm.height() + 2
        self.expanded = False
        self.collapsed = False
        self.big = QFont(self.bold)
        self.big.setPointSizeF(COLLAPSED_FONT_PT)
        self._cols, self._scale = 0, 1.0
        self._prev = self._next = QRectF()
        self.on_row_clicked: Callable[[str, str, int], None] | None = None
        self.set_content(content)

    # content -------------------------------------------------------------------
    def set_content(self, content: CardContent) -> None:
        self.prepareGeometryChange()
        self.content = content
        self.page = min(self.page, max(0, self.pages() - 1))
        self._layout()
        self.update()

    def pages(self) -> int:
        return max(1, -(-self.content.total // self.page_size))

    def visible_rows(self) -> list[list[Cell]]:
        return self.content.rows(self.page * self.page_size, self.page_size)

    def set_page(self, page: int) -> None:
        page = max(0, min(page, self.pages() - 1))
        if page != self.page:
            self.prepareGeometryChange()
            self.page = page
            self._layout()
            self.update()

    def set_expanded(self, expanded: bool) -> None:
        """Full width and text (under the mouse) or compact (the resting size)."""
        if expanded != self.expanded:
            self.prepareGeometryChange()
            self.expanded = expanded
            self._layout()
            self.update()

    def set_collapsed(self, collapsed: bool) -> None:
        """One line (a summary in large type, for a zoomed-out canvas) or the full card."""
        if collapsed != self.collapsed:
            self.prepareGeometryChange()
            self.collapsed = collapsed
            self._layout()
            self.update()

    def summary(self) -> str:
        """The card in one line: its title and the first row's id (else its first cell)."""
        rows = self.content.rows(0, 1)
        cells = rows[0] if rows else []
        first = next((c.text for c in cells if c.elide == MIDDLE),
                     cells[0].text if cells else "")
        return f"{self.content.title} · {first}" if first else self.content.title

    def summary_fitted(self, metrics: QFontMetricsF, room: float) -> str:
        """:meth:`summary` in ``room``: the title whole, the id shortened by :func:`elide_id`
        ("2 chunks · zh_mai…#0", not "2 chun…e.md#0")."""
        text = self.summary()
        title = self.content.title
        if metrics.horizontalAdvance(text) <= room or not text.startswith(f"{title} · "):
            return metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
        head = f"{title} · "
        left = room - metrics.horizontalAdvance(head)
        if left < metrics.horizontalAdvance("…#0"):
            return metrics.elidedText(title, Qt.TextElideMode.ElideRight, room)
        return head + elide_id(text[len(head):], lambda t: metrics.horizontalAdvance(t) <= left)

    def _fit_columns(self, rows: list[list[Cell]], inner: float) -> float:
        """Keep the columns that (nearly) fit ``inner`` and the scale that makes them fit."""
        cells = [self.content.header] if self.content.header else []
        widest = max(rows + cells, key=len, default=[])
        self._cols, self._scale, used = len(widest), 1.0, 0.0
        for index, cell in enumerate(widest):
            if index >= 2 and used + cell.width > inner * 1.15:
                self._cols = index
                break
            used += cell.width
        if not self.expanded and used > inner:
            self._scale = inner / used
        return used * self._scale

    def _layout(self) -> None:
        if self.collapsed and not self.expanded:
            self._row_h, self._pager, self._rows_top = [], False, 0.0
            self._size = (CARD_WIDTH, QFontMetricsF(self.big).height() + 2 * PAD)
            return
        rows = self.visible_rows()
        compact = not self.expanded
        inner = CARD_WIDTH - 2 * PAD
        if compact:
            width = max(self._fit_columns(rows, inner), inner)
        else:
            self._cols, self._scale = 10_000, 1.0
            widths = [sum(c.width for c in r) for r in rows + ([self.content.header]
                                                              if self.content.header else [])]
            width = max([inner, *widths])
        self._body_h = 0.0
        if self.content.body:
            if not compact:
                width = max(width, self.content.body_width)
            rect = self.fm.boundingRect(QRectF(0, 0, width, 10_000),
                                        int(Qt.TextFlag.TextWordWrap), self.content.body)
            self._body_h = min(rect.height(), self.line_h * (4 if compact else 12)) + 4
        self._row_h = [self.line_h * max(c.lines for c in r) for r in rows]
        height = PAD + self.line_h + 4 + self._body_h
        height += (self.line_h if self.content.header else 0)
        self._rows_top = height
        height += sum(self._row_h)
        self._pager = self.content.total > self.page_size
        height += (self.line_h + 2 if self._pager else 0) + PAD
        self._size = (width + 2 * PAD, height)

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return QRectF(0, 0, *self._size)

    # drawing ---------------------------------------------------------------------
    def paint(self, painter: QPainter, option: Any, widget: Any = None) -> None:
        accent = ACCENTS.get(self.content.kind, MUTED)
        rect = self.boundingRect()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(accent, 1.2))
        painter.setBrush(QBrush(QColor(24, 27, 33, 238)))
        painter.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)
        painter.fillRect(QRectF(0, 0, 4, rect.height()).adjusted(0, 6, 0, -6), accent)
        if self.collapsed and not self.expanded:
            painter.setFont(self.big)
            painter.setPen(accent)
            text = self.summary_fitted(QFontMetricsF(self.big), rect.width() - 2 * PAD)
            painter.drawText(rect.adjusted(PAD, 0, -PAD, 0),
                             int(Qt.AlignmentFlag.AlignVCenter), text)
            return
        y = PAD
        painter.setFont(self.bold)
        painter.setPen(accent)
        title = self.fm.elidedText(self.content.title, Qt.TextElideMode.ElideRight,
                                   rect.width() - 2 * PAD)
        painter.drawText(QRectF(PAD, y, rect.width() - 2 * PAD, self.line_h),
                         int(Qt.AlignmentFlag.AlignVCenter), title)
        y += self.line_h + 4
        inner = rect.width() - 2 * PAD
        if self.content.body:
            painter.setFont(self.font)
            painter.setPen(TEXT)
            painter.save()
            painter.setClipRect(QRectF(PAD, y, inner, self._body_h))
            if self.content.marks:
                self._draw_marked_body(painter, y, inner)
            else:
                painter.drawText(QRectF(PAD, y, inner, self._body_h),
                                 int(Qt.TextFlag.TextWordWrap), self.content.body)
            painter.restore()
            y += self._body_h
        if self.content.header:
            self._draw_row(painter, self.content.header, y, self.line_h)
            y += self.line_h
            painter.setPen(QPen(QColor(255, 255, 255, 30)))
            painter.drawLine(QPointF(PAD, y - 1), QPointF(rect.width() - PAD, y - 1))
        for row, height in zip(self.visible_rows(), self._row_h, strict=False):
            self._draw_row(painter, row, y, height)
            y += height
        if self._pager:
            self._draw_pager(painter, y + 2, rect.width())

    def _draw_marked_body(self, painter: QPainter, y: float, inner: float) -> None:
        document = QTextDocument()
        document.setDefaultFont(self.font)
        document.setDocumentMargin(0)
        document.setTextWidth(inner)
        document.setHtml(marked_html(self.content.body, self.content.marks, TEXT.name(),
                                     DOWN.name()))
        painter.translate(PAD, y)
        document.drawContents(painter, QRectF(0, 0, inner, self._body_h))

    def _draw_row(self, painter: QPainter, row: list[Cell], y: float, height: float) -> None:
        x = PAD
        for cell in row[:self._cols]:
            width = cell.width * self._scale
            painter.setFont(self.bold if cell.bold else self.font)
            painter.setPen(cell.color)
            flags = int(cell.align) | (int(Qt.TextFlag.TextWordWrap) if cell.lines > 1
                                       else int(Qt.AlignmentFlag.AlignVCenter))
            room = (width - 6) * (cell.lines * 0.85 if cell.lines > 1 else 1)
            metrics = self.fm_bold if cell.bold else self.fm
            if cell.elide == MIDDLE:  # an id: keep its stem's start and its "#n"
                text = elide_id(cell.text,
                                lambda t, r=room, m=metrics: m.horizontalAdvance(t) <= r)
            else:
                text = metrics.elidedText(cell.text, cell.elide, room)
            painter.save()
            painter.setClipRect(QRectF(x, y, width - 4, height))
            painter.drawText(QRectF(x, y, width - 6, height), flags, text)
            painter.restore()
            x += width

    def _draw_pager(self, painter: QPainter, y: float, width: float) -> None:
        start = self.page * self.page_size
        end = min(start + self.page_size, self.content.total)
        painter.setFont(self.font)
        painter.setPen(MUTED)
        painter.drawText(QRectF(PAD, y, width - 2 * PAD - 50, self.line_h),
                         int(Qt.AlignmentFlag.AlignVCenter),
                         f"{start + 1:,}–{end:,} of {self.content.total:,}")
        self._prev = QRectF(width - PAD - 44, y, 20, self.line_h)
        self._next = QRectF(width - PAD - 20, y, 20, self.line_h)
        for rect, label, enabled in ((self._prev, "◀", self.page > 0),
                                     (self._next, "▶", self.page < self.pages() - 1)):
            painter.setPen(TEXT if enabled else QColor(255, 255, 255, 50))
            painter.drawText(rect, int(Qt.AlignmentFlag.AlignCenter), label)

    def hoverEnterEvent(self, event: Any) -> None:  # noqa: N802
        self.setZValue(Z_HOVER)
        self.set_expanded(True)

    def hoverLeaveEvent(self, event: Any) -> None:  # noqa: N802
        self.setZValue(Z_OVERLAY)
        self.set_expanded(False)

    def row_at(self, y: float) -> int | None:
        """The absolute index of the row drawn at ``y`` (item coordinates), if any."""
        top = self._rows_top
        for offset, height in enumerate(self._row_h):
            if top <= y < top + height:
                return self.page * self.page_size + offset
            top += height
        return None

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        row = self.row_at(event.pos().y())
        if self._pager and self._prev.contains(event.pos()):
            self.set_page(self.page - 1)
        elif self._pager and self._next.contains(event.pos()):
            self.set_page(self.page + 1)
        elif row is not None and self.on_row_clicked is not None:
            self.on_row_clicked(self.node_id, self.content.kind, row)
        else:
            event.ignore()
            return
        event.accept()


class OverlayManager:
    """Keeps one stack of cards per node, positioned under the node and following moves."""

    def __init__(self, canvas: Any) -> None:
        self.canvas = canvas
        self.visible = True
        self.cards: dict[str, dict[str, OverlayCard]] = {}
        self.on_row_clicked: list[Callable[[str, str, int], None]] = []
        self.collapsed = False
        moved = getattr(canvas, "on_node_moved", None)
        if isinstance(moved, list):
            moved.append(lambda *args: self.reposition())
        zoom = getattr(canvas, "on_zoom_level", None)
        if isinstance(zoom, list):
            zoom.append(self.set_collapsed)

    def set_collapsed(self, collapsed: bool) -> None:
        """Every card as a one-line summary (zoomed out) or in full."""
        self.collapsed = collapsed
        for slots in self.cards.values():
            for card in slots.values():
                card.set_collapsed(collapsed)
        self.reposition()

    def _scene(self) -> Any:
        return self.canvas.scene

    def set_card(self, node_id: str, slot: str, content: CardContent | None) -> None:
        """Show (or, with None, remove) the card in ``slot`` for ``node_id``."""
        slots = self.cards.setdefault(node_id, {})
        card = slots.get(slot)
        if content is None:
            if card is not None:
                self._remove(card)
                del slots[slot]
            return
        if card is None:
            card = OverlayCard(node_id, content)
            card.set_collapsed(self.collapsed)
            card.on_row_clicked = self._row_clicked
            card.setVisible(self.visible)
            self._scene().addItem(card)
            slots[slot] = card
        else:
            card.set_content(content)
        self.reposition(node_id)

    def _row_clicked(self, node_id: str, kind: str, row: int) -> None:
        for callback in list(self.on_row_clicked):
            callback(node_id, kind, row)

    def show_outputs(self, node_id: str, outputs: dict[str, Any],
                     answers_only: bool = False) -> None:
        """Cards for a node's outputs (first port with an overlay-able value).

        ``answers_only`` (graph outputs) shows answers but not lists its upstream node shows.
        """
        content = None
        for port, value in outputs.items():
            if answers_only and not isinstance(value, Answer):
                continue
            content = content_for(value, port)
            if content is not None:
                break
        self.set_card(node_id, "output", content)

    def show_stream(self, node_id: str, text: str) -> None:
        self.set_card(node_id, "output", answer_content(text, streaming=True))

    def show_metrics(self, node_id: str, metrics: dict[str, float] | None,
                     title: str = "Evaluation") -> None:
        self.set_card(node_id, "metrics", metrics_content(metrics, title) if metrics else None)

    def card(self, node_id: str, slot: str = "output") -> OverlayCard | None:
        return self.cards.get(node_id, {}).get(slot)

    def clear(self, slot: str | None = None) -> None:
        for node_id, slots in list(self.cards.items()):
            for name in list(slots):
                if slot is None or name == slot:
                    self._remove(slots.pop(name))
            if not slots:
                del self.cards[node_id]

    def _remove(self, card: OverlayCard) -> None:
        scene = card.scene()
        if scene is not None:
            scene.removeItem(card)

    def set_visible(self, visible: bool) -> None:
        self.visible = visible
        for slots in self.cards.values():
            for card in slots.values():
                card.setVisible(visible)

    def reposition(self, node_id: str | None = None) -> None:
        """Put each node's cards under it (or above it), clear of every node and other card.

        Nodes are served left to right; a card that would cover something slides further
        down (or up) past it, whichever lands nearer its node.
        """
        del node_id  # one card can push others: every card is placed again
        rects = self._node_rects()
        taken = [r.adjusted(0, -STATUS_H, 0, CAPTION_H) for r in rects.values()]
        order = sorted(self.cards, key=lambda n: (rects[n].left(), rects[n].top())
                       if n in rects else (0.0, 0.0))
        for nid in order:
            slots = self.cards[nid]
            rect = rects.get(nid)
            if rect is None:
                for card in slots.values():
                    card.setVisible(False)
                continue
            stack = [slots[s] for s in ("output", "metrics") if s in slots]
            if not stack:
                continue
            height = sum(c.boundingRect().height() for c in stack) + 6 * (len(stack) - 1)
            width = max(c.boundingRect().width() for c in stack)
            below = _free_spot(QRectF(rect.left(), rect.bottom() + 22, width, height), taken, 1)
            above = _free_spot(QRectF(rect.left(), rect.top() - 26 - height, width, height),
                               taken, -1)
            spot = below if below.top() - rect.bottom() <= rect.top() - above.bottom() + 40 \
                else above
            taken.append(spot)
            y = spot.top()
            for card in stack:
                card.setPos(QPointF(rect.left(), y))
                card.setVisible(self.visible)
                y += card.boundingRect().height() + 6

    def _node_rects(self) -> dict[str, QRectF]:
        ids = getattr(self.canvas, "node_ids", None)
        if not callable(ids):
            return {}
        rects = {}
        for nid in ids():
            rect = self.canvas.node_scene_rect(nid)
            if rect is not None:
                rects[nid] = rect
        return rects


def _free_spot(rect: QRectF, taken: list[QRectF], step: int) -> QRectF:
    """``rect`` moved down (``step`` 1) or up (-1) until it is ``GAP`` clear of ``taken``."""
    rect = QRectF(rect)
    while True:
        hits = [r for r in taken if rect.intersects(r.adjusted(-GAP, -GAP, GAP, GAP))]
        if not hits:
            return rect
        if step > 0:
            rect.moveTop(max(r.bottom() for r in hits) + GAP + 0.5)
        else:
            rect.moveBottom(min(r.top() for r in hits) - GAP - 0.5)


def all_cards(manager: OverlayManager) -> list[QGraphicsItem]:
    return [card for slots in manager.cards.values() for card in slots.values()]
