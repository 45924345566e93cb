"""Moving around the canvas: fit, zoom, pan, a minimap and on-canvas zoom buttons.

NodeGraphQt's viewer keeps the shown scene rectangle itself (``scene_rect`` /
``set_scene_rect``); these helpers work through it so its own wheel zoom and panning stay
consistent.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRect, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QCursor, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsRectItem,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QHBoxLayout,
    QToolButton,
    QWidget,
)

ZOOM_STEP = 1.25
MINIMAP_SIZE = (230, 150)
MINIMAP_SHARE = 0.2       # of the canvas's width
MINIMAP_MIN_WIDTH = 120
DRAG_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop)


def fit_rect(view: Any, rect: QRectF, max_scale: float = 1.0) -> None:
    """Show ``rect`` (plus a margin) whole, never zooming in beyond ``max_scale``."""
    if rect.isNull():
        return
    rect = rect.adjusted(-60, -60, 60, 60)
    vw, vh = max(view.width(), 1), max(view.height(), 1)
    w, h = max(rect.width(), vw / max_scale), max(rect.height(), vh / max_scale)
    if w / h < vw / vh:
        w = h * vw / vh
    else:
        h = w * vh / vw
    center = rect.center()
    view.set_scene_rect([center.x() - w / 2, center.y() - h / 2, w, h])


def zoom_by(view: Any, factor: float, anchor: QPoint | None = None) -> None:
    """Zoom in (factor > 1) or out, keeping the scene point under ``anchor`` (a viewport
    point) where it is: by default the mouse pointer when it is over the canvas (zoom keys),
    else the centre of the view (the on-canvas buttons, a pointer elsewhere)."""
    if anchor is None:
        pointer = view.viewport().mapFromGlobal(QCursor.pos())
        anchor = pointer if view.viewport().rect().contains(pointer) else None
    before = view.mapToScene(anchor) if anchor is not None else None
    view.scale(factor, factor)
    if before is None:
        return
    shown = QRectF(*view.scene_rect())
    shown.translate(before - view.mapToScene(anchor))
    view.set_scene_rect([shown.x(), shown.y(), shown.width(), shown.height()])


def _centre(view: Any) -> QPoint:
    return view.viewport().rect().center()


def pan_to(view: Any, scene_point: QPointF) -> None:
    """Centre the view on ``scene_point`` at the same zoom."""
    shown = QRectF(*view.scene_rect())
    shown.moveCenter(scene_point)
    view.set_scene_rect([shown.x(), shown.y(), shown.width(), shown.height()])


def visible_rect(view: Any) -> QRectF:
    return view.mapToScene(view.viewport().rect()).boundingRect()


class HintBubble:
    """A transient message near a port (a refused connection), gone after six seconds."""

    def __init__(self, scene: Any, owner: QObject) -> None:
        self.scene = scene
        self.item: QGraphicsSimpleTextItem | None = None
        self.timer = QTimer(owner)  # dies with the view, unlike a bare singleShot
        self.timer.setSingleShot(True)
        self.timer.setInterval(6000)
        self.timer.timeout.connect(self.clear)

    def show(self, message: str, pos: QPointF) -> None:
        self.clear()
        hint = QGraphicsSimpleTextItem(message)
        hint.setBrush(QColor(255, 150, 130))
        hint.setZValue(1000)
        back = QGraphicsRectItem(hint.boundingRect().adjusted(-6, -4, 6, 4), hint)
        back.setBrush(QColor(30, 20, 20, 230))
        back.setPen(QColor(200, 80, 70))
        back.setFlag(back.GraphicsItemFlag.ItemStacksBehindParent)
        hint.setPos(pos + QPointF(-20, -44))
        self.scene.addItem(hint)
        self.item = hint
        self.timer.start()

    def clear(self) -> None:
        if self.item is not None and self.item.scene() is not None:
            self.scene.removeItem(self.item)
        self.item = None

    def text(self) -> str:
        item = self.item
        return item.text() if item is not None and item.scene() is not None else ""


class Minimap(QGraphicsView):
    """The whole graph in a corner of the canvas; the frame is what the canvas shows.

    Click or drag in it to move the canvas there. It hides itself while the canvas shows the
    whole graph (at "fit" it would only cover nodes) and when the user turns it off; it sits
    in the first corner of the canvas where it covers no node, and a node dragged from the
    palette onto it lands on the canvas under it.
    """

    sets_detail = False  # nodes keep the level of detail of the canvas, not of the minimap

    def __init__(self, canvas: Any) -> None:
        super().__init__(canvas.scene, canvas.view)
        self.canvas = canvas
        self.setObjectName("minimap")
        self.setInteractive(False)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setFixedSize(*MINIMAP_SIZE)
        self.setStyleSheet("border: 1px solid #5a6070; background: #1b1d22;")
        self.setToolTip("Minimap: click or drag to move the canvas")
        self.wanted = True  # View → Minimap
        self._refit = QTimer(self)
        self._refit.setSingleShot(True)
        self._refit.setInterval(300)
        self._refit.timeout.connect(self.refit)
        canvas.scene.changed.connect(lambda *_: self._refit.start())
        canvas.view.viewport().installEventFilter(self)
        canvas.view.installEventFilter(self)
        self.viewport().installEventFilter(self)  # drops go to the canvas (``_drag``)
        self._replace = QTimer(self)
        self._replace.setSingleShot(True)
        self._replace.setInterval(150)
        self._replace.timeout.connect(self.place)
        self.place()

    def refit(self) -> None:
        rect = self.canvas.items_rect()
        if not rect.isNull():
            self.setSceneRect(rect.adjusted(-200, -200, 200, 200))
            self.fitInView(self.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self.viewport().update()

    def place(self) -> None:
        """Bottom-right corner; at most ``MINIMAP_SHARE`` of the canvas's width, so a small
        window's canvas is not hidden under it (never below ``MINIMAP_MIN_WIDTH``)."""
        parent = self.canvas.view
        width = max(MINIMAP_MIN_WIDTH, min(MINIMAP_SIZE[0], parent.width() * MINIMAP_SHARE))
        size = (round(width), round(width * MINIMAP_SIZE[1] / MINIMAP_SIZE[0]))
        if (self.width(), self.height()) != size:
            self.setFixedSize(*size)
            self.refit()
        self.move(self.free_corner())

    def free_corner(self) -> QPoint:
        """Bottom-right, else the first other corner where the minimap covers no node (the
        bottom-left one above the zoom buttons)."""
        view, (w, h), gap = self.canvas.view, (self.width(), self.height()), 12
        right, bottom = view.width() - w - gap, view.height() - h - gap
        controls = view.findChild(QWidget, "zoomControls")
        above_controls = bottom - (controls.height() + gap if controls is not None else 0)
        corners = [QPoint(right, bottom), QPoint(gap, above_controls), QPoint(right, gap),
                   QPoint(gap, gap)]
        nodes = [item.sceneBoundingRect() for node_id in self.canvas.node_ids()
                 if (item := self.canvas.node_item(node_id)) is not None]
        for corner in corners:
            covered = view.mapToScene(QRect(corner, QSize(w, h))).boundingRect()
            if not any(covered.intersects(node) for node in nodes):
                return corner
        return corners[0]

    # a drop on the minimap is a drop on the canvas under it --------------------------------
    def _drag(self, event: Any) -> bool:
        """Drag and drop over the minimap (its viewport's events, filtered): accepted, and a
        drop handed to the canvas at the point under the minimap."""
        if event.type() == QEvent.Type.Drop:
            view = self.canvas.view
            under = self.viewport().mapTo(view, event.position().toPoint())
            scene = view.mapToScene(under)
            view.data_dropped.emit(event.mimeData(), QPoint(int(scene.x()), int(scene.y())))
        event.acceptProposedAction()
        return True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.viewport():
            return event.type() in DRAG_EVENTS and self._drag(event)
        if event.type() == QEvent.Type.Resize:
            self.place()
        elif event.type() == QEvent.Type.Paint:
            self.viewport().update()  # the frame follows the canvas's pan and zoom
            if not self._replace.isActive():
                self._replace.start()  # after a pan or zoom: move off the nodes it covers
            if self.isVisibleTo(self.canvas.view) != self.needed():
                QTimer.singleShot(0, self.sync_visibility)  # not while the canvas paints
        return False

    def needed(self) -> bool:
        """Wanted, and part of the graph is outside the canvas's view."""
        rect = self.canvas.items_rect()
        return self.wanted and not rect.isNull() and not visible_rect(
            self.canvas.view).contains(rect)

    def set_wanted(self, wanted: bool) -> None:
        self.wanted = wanted
        self.sync_visibility()

    def sync_visibility(self) -> None:
        self.setVisible(self.needed())

    def drawForeground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802
        painter.setPen(QPen(QColor("#ffd166"), 0))
        painter.setBrush(QColor(255, 209, 102, 30))
        painter.drawRect(visible_rect(self.canvas.view))

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        pan_to(self.canvas.view, self.mapToScene(event.position().toPoint()))

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.buttons() & Qt.MouseButton.LeftButton:
            pan_to(self.canvas.view, self.mapToScene(event.position().toPoint()))


class ZoomControls(QWidget):
    """"−", "+" and "Fit" buttons over the canvas's bottom-left corner."""

    def __init__(self, canvas: Any) -> None:
        super().__init__(canvas.view)
        self.canvas = canvas
        self.setObjectName("zoomControls")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.buttons: dict[str, QToolButton] = {}
        for key, text, tip, slot in (
                ("out", "−", "Zoom out (Ctrl+-)",
                 lambda: zoom_by(canvas.view, 1 / ZOOM_STEP, _centre(canvas.view))),
                ("in", "+", "Zoom in (Ctrl+=)",
                 lambda: zoom_by(canvas.view, ZOOM_STEP, _centre(canvas.view))),
                ("fit", "Fit", "Fit the graph (F)", lambda: canvas.fit_all())):
            button = QToolButton(self)
            button.setText(text)
            button.setToolTip(tip)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.setStyleSheet("QToolButton { min-width: 26px; min-height: 22px;"
                                 " font-weight: bold; }")
            button.clicked.connect(slot)  # ``clicked(checked)``: the slots take no argument
            layout.addWidget(button)
            self.buttons[key] = button
        self.adjustSize()
        canvas.view.installEventFilter(self)
        self.place()

    def place(self) -> None:
        self.move(12, self.canvas.view.height() - self.height() - 12)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Resize:
            self.place()
        return False
