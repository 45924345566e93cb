"""The run timeline: one row per node visit, bars on a time axis from the trace."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QDockWidget, QScrollArea, QWidget

from modrag_studio.engine.core.formatting import duration as _fmt_time
from modrag_studio.engine.run.trace import Trace

STATUS_COLORS = {
    "done": QColor("#3fa66b"), "cached": QColor("#5b8def"), "failed": QColor("#d64545"),
    "cancelled": QColor("#9a7b4f"), "skipped": QColor("#777777"), "running": QColor("#e0a030"),
    "queued": QColor("#555555"), "bypassed": QColor("#8a8a99"), "pinned": QColor("#b070e0"),
}
ROW_H, LABEL_W, AXIS_H, RIGHT = 22.0, 170.0, 24.0, 70.0


@dataclass
class Bar:
    node_id: str
    iteration: int
    status: str
    start: float
    duration: float
    label: str


def bars_of(trace: Trace) -> list[Bar]:
    """Bars in start order; a visit without a start (skipped, cached, cancelled) is a tick."""
    origin = trace.started_at
    out, last = [], 0.0
    for visit in trace.visits:
        start = (visit.started_at - origin) if visit.started_at else last
        label = visit.node_id + (f" ×{visit.iteration + 1}" if visit.iteration else "")
        out.append(Bar(visit.node_id, visit.iteration, visit.status, max(0.0, start),
                       visit.duration_s, label))
        last = max(last, start + visit.duration_s)
    return out


TICK_W = 90.0  # the least room for one time label on the axis


def nice_step(span: float, ticks: int = 6) -> float:
    raw = max(span, 1e-6) / ticks
    magnitude = 10 ** int(f"{raw:e}".split("e")[1])
    for mult in (1, 2, 5, 10):
        if raw <= mult * magnitude:
            return mult * magnitude
    return 10 * magnitude


def axis_step(span: float, plot_width: float) -> float:
    """Seconds between axis labels: about six, fewer when they would come closer than
    ``TICK_W`` px ("500 ms1.00 s" ran together in a narrow dock)."""
    return nice_step(span, max(2, min(6, int(plot_width // TICK_W))))


class TimelineCanvas(QWidget):
    bar_clicked = Signal(str, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.trace: Trace | None = None
        self.bars: list[Bar] = []
        self.selected: str | None = None
        self.setMinimumHeight(80)

    def set_trace(self, trace: Trace | None) -> None:
        self.trace = trace
        self.bars = bars_of(trace) if trace else []
        self.updateGeometry()
        self.adjustSize()
        self.update()

    def total(self) -> float:
        ends = [b.start + b.duration for b in self.bars]
        span = max(ends, default=0.0)
        if self.trace:
            span = max(span, self.trace.duration_s)
        return max(span, 1e-3)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(640, int(AXIS_H + ROW_H * max(1, len(self.bars)) + 8))

    def _x(self, t: float) -> float:
        width = max(60.0, self.width() - LABEL_W - RIGHT)
        return LABEL_W + width * t / self.total()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        p.fillRect(self.rect(), pal.base())
        fm = QFontMetricsF(self.font())
        if not self.bars:
            p.setPen(pal.text().color())
            p.drawText(self.rect(), int(Qt.AlignmentFlag.AlignCenter),
                       "Run the graph to see its timeline.")
            return
        total = self.total()
        step = axis_step(total, self.width() - LABEL_W)
        grid = QColor(pal.text().color())
        grid.setAlpha(40)
        t = 0.0
        while t <= total + 1e-9:
            x = self._x(t)
            p.setPen(QPen(grid))
            p.drawLine(QPointF(x, AXIS_H - 4), QPointF(x, self.height()))
            p.setPen(pal.text().color())
            p.drawText(QRectF(x - 40, 2, 80, AXIS_H - 6), int(Qt.AlignmentFlag.AlignCenter),
                       _fmt_time(t))
            t += step
        for row, bar in enumerate(self.bars):
            y = AXIS_H + row * ROW_H
            if bar.node_id == self.selected:
                p.fillRect(QRectF(0, y, self.width(), ROW_H), pal.highlight().color().lighter(170))
            p.setPen(pal.text().color())
            p.drawText(QRectF(6, y, LABEL_W - 12, ROW_H), int(Qt.AlignmentFlag.AlignVCenter),
                       fm.elidedText(bar.label, Qt.TextElideMode.ElideRight, LABEL_W - 12))
            color = STATUS_COLORS.get(bar.status, QColor("#888"))
            x0 = self._x(bar.start)
            width = max(3.0, self._x(bar.start + bar.duration) - x0)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(color)
            p.drawRoundedRect(QRectF(x0, y + 4, width, ROW_H - 8), 3, 3)
            p.setPen(pal.text().color())
            note = bar.status if bar.status != "done" else _fmt_time(bar.duration)
            if bar.status in ("failed", "cancelled") and bar.duration:
                note = f"{bar.status} {_fmt_time(bar.duration)}"
            p.drawText(QRectF(x0 + width + 4, y, RIGHT + 200, ROW_H),
                       int(Qt.AlignmentFlag.AlignVCenter), note)

    def bar_at(self, y: float) -> Bar | None:
        row = int((y - AXIS_H) // ROW_H)
        return self.bars[row] if 0 <= row < len(self.bars) and y >= AXIS_H else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        bar = self.bar_at(event.position().y())
        if bar is not None:
            self.selected = bar.node_id
            self.update()
            self.bar_clicked.emit(bar.node_id, bar.iteration)


class TimelineDock(QDockWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Run timeline", parent)
        self.setObjectName("timelineDock")
        self.canvas = TimelineCanvas()
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.canvas)
        self.setWidget(scroll)

    def set_trace(self, trace: Trace | None) -> None:
        self.canvas.set_trace(trace)
        self.canvas.setMinimumHeight(self.canvas.sizeHint().height())
