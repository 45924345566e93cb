"""Diff badges on the canvas and the side-by-side inspector of one node of two variants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsSceneMouseEvent,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from modrag_studio.evaluation.metric_registry import EVIDENCE_PRIMARY, METRICS

BADGE_COLORS = {
    "same": QColor(70, 140, 90),
    "changed": QColor(220, 130, 40),
    "variant": QColor(150, 90, 210),
    "missing": QColor(120, 120, 130),
}


class DiffBadge(QGraphicsRectItem):
    """A small label above a node (or under it); clicking it calls ``on_click``.

    It keeps its screen size at every zoom (a badge drawn in scene units was 5 pixels tall
    on a fitted graph): anchored at the node's top-right corner (``above``) or bottom-left.
    """

    def __init__(self, parent: QGraphicsItem, text: str, kind: str, *, above: bool = True,
                 on_click: Callable[[], None] | None = None) -> None:
        super().__init__(parent)
        self.kind, self.on_click = kind, on_click
        self.font = QFont()
        self.font.setPointSizeF(8.5)
        self.font.setBold(True)
        self._text = text
        box = QRectF(QFontMetricsF(self.font).boundingRect(text)).adjusted(-5, -2, 5, 2)
        w, h = box.width(), box.height()
        left, top = (-w, -h - 2) if above else (0.0, 2.0)
        self.setRect(QRectF(left, top, w, h))
        self.setBrush(QBrush(BADGE_COLORS.get(kind, BADGE_COLORS["changed"])))
        self.setPen(QPen(Qt.PenStyle.NoPen))
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        node_rect = parent.boundingRect()
        self.setPos(node_rect.topRight() if above else node_rect.bottomLeft())
        self.setZValue(10)
        if on_click is not None:
            self.setCursor(Qt.CursorShape.PointingHandCursor)
            self.setToolTip("open the side-by-side inspector")

    @property
    def text(self) -> str:
        return self._text

    def paint(self, painter: QPainter, option: Any, widget: QWidget | None = None) -> None:
        view = widget.parent() if widget is not None else None
        if getattr(view, "sets_detail", True) is False:
            return  # the minimap: a screen-sized badge would cover its little graph
        super().paint(painter, option, widget)
        painter.setFont(self.font)
        painter.setPen(QColor(255, 255, 255))
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self._text)

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


# --- two variants on an evaluation set ---------------------------------------------------

METRIC_COLUMNS = ("metric", "A", "B", "delta", "CI95", "p", "n")
FLIP_COLUMNS = ("id", "outcome", "what flipped", "question")


def _number(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if sign else f"{value:.3f}"


def _answer_text(side: dict[str, Any]) -> str:
    """One variant's answer to a question with its citations, missed facts and metrics."""
    lines = [side.get("answer") or f"(no answer: {side.get('error') or 'none produced'})", ""]
    lines.append("citations: " + (", ".join(side.get("citations", [])) or "none"))
    if side.get("invalid_citations"):
        lines.append("invalid citations: " + ", ".join(side["invalid_citations"]))
    if side.get("missed_facts"):
        lines.append("missed facts: " + "; ".join(side["missed_facts"]))
    metrics = side.get("metrics", {})
    lines.append("")
    lines.extend(f"{name}: {_number(value)}" for name, value in metrics.items())
    return "\n".join(lines)


def open_side_by_side(comparison: dict[str, Any] | None, node_id: str,
                      shown: SideBySideDialog | None, parent: QWidget
                      ) -> SideBySideDialog | None:
    """The side-by-side view of ``node_id`` in a run comparison (``shown``, the one open
    before, is closed); None when the comparison does not cover that node."""
    if comparison is None or node_id not in comparison["nodes"]:
        return None
    if shown is not None:
        shown.close()
    dialog = SideBySideDialog(node_id, comparison["nodes"][node_id], comparison["labels"],
                              parent)
    dialog.show()
    return dialog


class AnswersSideBySideDialog(QDialog):
    """One question of an evaluation set: the two variants' answers with their citations."""

    def __init__(self, row: dict[str, Any], labels: tuple[str, str],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{row['id']}: {labels[0]} vs {labels[1]}")
        self.resize(900, 520)
        layout = QVBoxLayout(self)
        kind = "answerable" if row.get("answerable", True) else "not answerable from the corpus"
        question = QLabel(f"<b>{row['id']}</b> ({kind}): {row.get('question', '')}")
        question.setWordWrap(True)
        layout.addWidget(question)
        sides = QHBoxLayout()
        self.texts: dict[str, str] = {}
        for key, label in zip(("a", "b"), labels, strict=True):
            side = row[key]
            self.texts[key] = _answer_text(side)
            refused = " · refused" if side.get("refused") else ""
            sides.addWidget(_side(f"{key.upper()} {label}{refused}", self.texts[key]))
        layout.addLayout(sides, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


def _table(columns: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    header = table.horizontalHeader()
    for column in range(len(columns) - 1):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(len(columns) - 1, QHeaderView.ResizeMode.Stretch)
    return table


class AnswerComparisonDialog(QDialog):
    """Base and a variant on an evaluation set: progress and Cancel while both run, then the
    answer-metric table (A, B, delta, CI95, p) and the flipped questions; clicking a flipped
    question opens both answers side by side."""

    def __init__(self, labels: tuple[str, str], evalset: str, on_cancel: Callable[[], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.labels, self.result = labels, None
        self.answers_dialog: AnswersSideBySideDialog | None = None
        self.setWindowTitle(f"Answers: {labels[0]} vs {labels[1]}")
        self.resize(980, 680)
        layout = QVBoxLayout(self)
        self.header = QLabel(f"<b>A</b> {labels[0]} vs <b>B</b> {labels[1]} on {evalset}")
        self.header.setWordWrap(True)
        layout.addWidget(self.header)
        row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m question runs")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(on_cancel)
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.metrics = _table(METRIC_COLUMNS)
        for column in range(len(METRIC_COLUMNS)):
            self.metrics.horizontalHeader().setSectionResizeMode(
                column, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.metrics, 3)
        self.nodes = QLabel("")
        self.nodes.setWordWrap(True)
        layout.addWidget(self.nodes)
        self.queries = QLabel("")
        self.queries.setWordWrap(True)
        layout.addWidget(self.queries)
        self.flips = _table(FLIP_COLUMNS)
        self.flips.setToolTip("Click a question to see both answers side by side")
        self.flips.cellClicked.connect(lambda r, _c: self.open_flip(r))
        layout.addWidget(self.flips, 2)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def set_progress(self, label: str, done: int, total: int) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.status.setText(f"running {label}…")

    def finish(self, message: str) -> None:
        """The run ended without a comparison (cancelled or failed)."""
        self.cancel_button.setEnabled(False)
        self.status.setText(message)

    def show_result(self, result: dict[str, Any]) -> None:
        from modrag_studio.evaluation.compare import describe_flip

        self.result = result
        self.cancel_button.setEnabled(False)
        self.progress.setValue(self.progress.maximum())
        test = result["test"]
        self.status.setText(f"{result['evalset']['questions']} questions; delta = B - A; "
                            f"{test['name']}, seed {test['seed']}; CI95: {test['ci']}")
        self.metrics.setRowCount(len(result["metrics"]))
        bold = QFont()
        bold.setBold(True)
        for r, (name, m) in enumerate(result["metrics"].items()):
            ci = "-" if m["ci95"] is None else f"[{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]"
            cells = (name, _number(m["a"]), _number(m["b"]), _number(m["delta"], True), ci,
                     _number(m["p_value"]), str(m["n"]))
            significant = m["p_value"] is not None and m["p_value"] < 0.05
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if significant:
                    item.setFont(bold)
                if significant and c == 3 and m["delta"]:
                    item.setForeground(QBrush(_OUTCOME_COLORS[change_word(name, m["delta"])]))
                self.metrics.setItem(r, c, item)
        self.nodes.setText("Ranked outputs both share (expected evidence as relevance): "
                           + ("; ".join(_node_line(spec, node)
                                        for spec, node in result["nodes"].items()) or "none"))
        q = result["queries"]
        self.queries.setText(
            f"Questions by {q['by']}: B wins {q['wins']}, loses {q['losses']}, ties "
            f"{q['ties']}. {len(result['flipped'])} flipped (click one to compare answers):")
        self.flips.setRowCount(len(result["flipped"]))
        for r, flip in enumerate(result["flipped"]):
            for c, text in enumerate((flip["id"], flip["outcome"], describe_flip(flip),
                                      flip["question"])):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, flip["id"])
                item.setForeground(QBrush(_OUTCOME_COLORS.get(flip["outcome"],
                                                              QColor(60, 60, 60))))
                self.flips.setItem(r, c, item)

    def open_flip(self, row: int) -> AnswersSideBySideDialog | None:
        item = self.flips.item(row, 0)
        return self.open_question(item.data(Qt.ItemDataRole.UserRole)) if item else None

    def open_question(self, question_id: str) -> AnswersSideBySideDialog | None:
        """Both answers to ``question_id`` side by side (None before a result)."""
        rows = {r["id"]: r for r in (self.result or {}).get("per_question", [])}
        if question_id not in rows:
            return None
        if self.answers_dialog is not None:
            self.answers_dialog.close()
        self.answers_dialog = AnswersSideBySideDialog(rows[question_id], self.labels, self)
        self.answers_dialog.show()
        return self.answers_dialog


def change_word(name: str, delta: float) -> str:
    """"gained" when B's change of the metric ``name`` is for the better (a fall where lower
    is better), else "lost"."""
    return "gained" if (delta > 0) == (METRICS.direction(name) == "higher") else "lost"


def _node_line(spec: str, node: dict[str, Any], metric: str = EVIDENCE_PRIMARY) -> str:
    m = node["metrics"].get(metric)
    if not m:
        return spec
    return (f"{spec} {metric} {_number(m['a'])} → {_number(m['b'])} "
            f"({_number(m['delta'], True)}, p {_number(m['p_value'])})")


_OUTCOME_COLORS = {"gained": QColor(40, 120, 60), "lost": QColor(180, 50, 40),
                   "mixed": QColor(170, 110, 20)}
