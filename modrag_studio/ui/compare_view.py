"""Diff badges on the canvas and the side-by-side inspector of one node of two variants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPen
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsSceneMouseEvent,
    QGraphicsSimpleTextItem,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

BADGE_COLORS = {
    "same": QColor(70, 140, 90),
    "changed": QColor(220, 130, 40),
    "variant": QColor(150, 90, 210),
    "missing": QColor(120, 120, 130),
}


class DiffBadge(QGraphicsRectItem):
    """A small rounded label above a node; clicking it calls ``on_click``."""

    def __init__(self, parent: QGraphicsItem, text: str, kind: str, *, above: bool = True,
                 on_click: Callable[[], None] | None = None) -> None:
        super().__init__(parent)
        self.kind, self.on_click = kind, on_click
        self.label = QGraphicsSimpleTextItem(text, self)
        font = QFont()
        font.setPointSizeF(8.5)
        font.setBold(True)
        self.label.setFont(font)
        self.label.setBrush(QBrush(QColor(255, 255, 255)))
        box = self.label.boundingRect().adjusted(-5, -2, 5, 2)
        self.setRect(QRectF(0, 0, box.width(), box.height()))
        self.label.setPos(5, 2)
        self.setBrush(QBrush(BADGE_COLORS.get(kind, BADGE_COLORS["changed"])))
        self.setPen(QPen(Qt.PenStyle.NoPen))
        node_rect = parent.boundingRect()
        y = node_rect.top() - box.height() - 2 if above else node_rect.bottom() + 2
        self.setPos(node_rect.right() - box.width() if above else node_rect.left(), y)
        self.setZValue(10)
        if on_click is not None:
            self.setCursor(Qt.CursorShape.PointingHandCursor)
            self.setToolTip("open the side-by-side inspector")

    @property
    def text(self) -> str:
        return self.label.text()

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self.on_click is not None:
            self.on_click()
        event.accept()


def _rank_table(diff: dict[str, Any]) -> QTableWidget:
    rows = ([("entered", e["chunk_id"], "", str(e["rank_b"])) for e in diff["entered"]]
            + [("left", e["chunk_id"], str(e["rank_a"]), "") for e in diff["left"]]
            + [("up" if m["up_by"] > 0 else "down", m["chunk_id"], str(m["rank_a"]),
                str(m["rank_b"])) for m in diff["moved"]])
    table = QTableWidget(len(rows), 4)
    table.setHorizontalHeaderLabels(["change", "chunk", "rank A", "rank B"])
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(value))
    table.resizeColumnsToContents()
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    return table


def _side(title: str, text: str) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(f"<b>{title}</b>")
    layout.addWidget(label)
    view = QPlainTextEdit(text)
    view.setReadOnly(True)
    layout.addWidget(view)
    return box


class SideBySideDialog(QDialog):
    """One node of variants A and B: times, cache use, and each output port's difference."""

    def __init__(self, node_id: str, entry: dict[str, Any], labels: tuple[str, str],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{node_id}: {labels[0]} vs {labels[1]}")
        self.resize(820, 520)
        layout = QVBoxLayout(self)
        secs = [f"{s:.3f} s" if s is not None else "not run" for s in entry["seconds"]]
        cached = [" (cache)" if c else "" for c in entry["cached"]]
        layout.addWidget(QLabel(
            f"<b>{node_id}</b> — {entry['badge']}<br>A {labels[0]}: {entry['type_a']}, "
            f"{secs[0]}{cached[0]}<br>B {labels[1]}: {entry['type_b']}, {secs[1]}{cached[1]}"))
        self.sections: list[str] = []
        for port, diff in entry["ports"].items():
            self.sections.append(port)
            layout.addWidget(QLabel(f"<b>{port}</b>: {'same' if diff['same'] else 'differs'}"))
            if diff["kind"] == "ranking" and not diff["same"]:
                layout.addWidget(_rank_table(diff))
            elif diff["kind"] == "answer":
                row = QHBoxLayout()
                for side, label in zip(("a", "b"), labels, strict=True):
                    s = diff[side]
                    row.addWidget(_side(
                        f"{side.upper()} {label} · {s['seconds']} s · {s['tokens'] or ''}",
                        f"{s['text']}\n\ncitations: {', '.join(s['citations']) or 'none'}"))
                layout.addLayout(row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
