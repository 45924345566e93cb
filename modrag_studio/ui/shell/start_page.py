"""The start page over an empty canvas: new graph, recent graphs, the samples with a picture."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QMouseEvent, QPixmap
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

ROOT = Path(__file__).resolve().parents[3]
SAMPLES_DIR = ROOT / "sample_graphs"
SCREENSHOTS_DIR = ROOT / "docs" / "screenshots"
THUMB_WIDTH = 240
SUMMARY_CHARS = 230
CARD_HEIGHT = 340


@dataclass(frozen=True)
class Sample:
    """A sample graph as offered on the start page."""

    path: Path
    name: str
    description: str
    picture: Path | None

    @property
    def summary(self) -> str:
        """The description's first sentences, at most ``SUMMARY_CHARS`` characters."""
        text = " ".join(self.description.split())
        if len(text) <= SUMMARY_CHARS:
            return text
        cut = text.rfind(". ", 0, SUMMARY_CHARS)
        return text[:cut + 1] if cut > 60 else text[:SUMMARY_CHARS - 1].rstrip() + "…"


def find_samples(folder: Path = SAMPLES_DIR, pictures: Path = SCREENSHOTS_DIR) -> list[Sample]:
    """Sample graphs with their ``metadata`` and a screenshot when one exists."""
    samples = []
    for path in sorted(folder.glob("*.json")):
        try:
            meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, ValueError):
            continue
        picture = pictures / f"{path.stem}.png"
        samples.append(Sample(path, str(meta.get("name") or path.stem),
                              str(meta.get("description") or ""),
                              picture if picture.is_file() else None))
    # the main job first, then the rest alphabetically
    samples.sort(key=lambda s: (s.path.stem != "basic_rag", s.path.stem))
    return samples


class SampleCard(QFrame):
    """One sample: picture, name and summary; a click opens it."""

    def __init__(self, sample: Sample, on_open: Callable[[Path], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sample = sample
        self._on_open = on_open
        self.setObjectName("sampleCard")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(f"Open {sample.path.name}\n\n{sample.description}")
        self.setFixedSize(THUMB_WIDTH + 20, CARD_HEIGHT)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        self.picture = QLabel(self)
        self.picture.setFixedSize(THUMB_WIDTH, int(THUMB_WIDTH * 0.6))
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setObjectName("samplePicture")
        layout.addWidget(self.picture)
        title = QLabel(sample.name, self)
        title.setObjectName("sampleName")
        layout.addWidget(title)
        summary = QLabel(sample.summary, self)
        summary.setWordWrap(True)
        summary.setFixedWidth(THUMB_WIDTH)
        summary.setObjectName("sampleSummary")
        layout.addWidget(summary)
        layout.addStretch(1)

    def load_picture(self) -> None:
        if self.sample.picture is None:
            self.picture.setText("(no picture)")
            return
        pixmap = QPixmap(str(self.sample.picture))
        self.picture.setPixmap(pixmap.scaled(
            self.picture.size(), Qt.AspectRatioMode.KeepAspectRatio,
            Qt.TransformationMode.SmoothTransformation))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            self._on_open(self.sample.path)
        super().mouseReleaseEvent(event)


class StartPage(QScrollArea):
    """Guided first steps, drawn over the canvas while the graph is empty."""

    new_requested = Signal()
    folder_requested = Signal()  # New graph from folder…: the recommended pipeline on it
    open_requested = Signal()
    path_chosen = Signal(Path)  # a recent graph: opened itself
    sample_chosen = Signal(Path)  # a sample: opened as an untitled copy

    def __init__(self, parent: QWidget, recent: Callable[[], list[str]]) -> None:
        super().__init__(parent)
        self.setObjectName("startPage")
        self._recent = recent
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setStyleSheet(
            "QScrollArea#startPage, QWidget#startContent { background: #1d2027; }"
            "QLabel { color: #e6e8ee; } QLabel#startTitle { font-size: 22pt; font-weight: bold; }"
            "QLabel#startSection { font-size: 14pt; font-weight: bold; margin-top: 14px; }"
            "QLabel#sampleName { font-size: 12pt; font-weight: bold; }"
            "QLabel#sampleSummary { color: #b8bcc8; }"
            "QFrame#sampleCard { background: #262a33; border: 1px solid #3a404c;"
            " border-radius: 8px; } QFrame#sampleCard:hover { border-color: #6aa0ff; }"
            "QPushButton { padding: 6px 16px; font-size: 11pt; }"
            "QPushButton#recentEntry { text-align: left; border: none; color: #8fb8ff;"
            " padding: 2px 4px; }")
        content = QWidget(self)
        content.setObjectName("startContent")
        self.setWidget(content)
        outer = QVBoxLayout(content)
        outer.setContentsMargins(36, 24, 36, 24)
        title = QLabel("ModRAG Studio", content)
        title.setObjectName("startTitle")
        outer.addWidget(title)
        intro = QLabel(
            "Design, run and debug retrieval-augmented generation pipelines as typed node "
            "graphs. Open a sample to see a working pipeline, or start a new graph: drag nodes "
            "from the Nodes panel (or press Tab on the canvas), wire outputs to inputs, then "
            "press Run.", content)
        intro.setWordWrap(True)
        outer.addWidget(intro)
        buttons = QHBoxLayout()
        self.new_button = QPushButton("New graph", content)
        self.folder_button = QPushButton("New graph from folder…", content)
        self.folder_button.setToolTip(
            "The recommended pipeline (hybrid retrieval, evidence focus, grounding check) on "
            "a folder of your documents, indexed right away")
        self.open_button = QPushButton("Open…", content)
        self.new_button.clicked.connect(self.new_requested)
        self.folder_button.clicked.connect(self.folder_requested)
        self.open_button.clicked.connect(self.open_requested)
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.folder_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        outer.addLayout(buttons)
        section = QLabel("Recent graphs", content)
        section.setObjectName("startSection")
        outer.addWidget(section)
        self.recent_box = QVBoxLayout()
        outer.addLayout(self.recent_box)
        section = QLabel("Samples", content)
        section.setObjectName("startSection")
        outer.addWidget(section)
        self.grid = QGridLayout()
        self.grid.setSpacing(14)
        self.grid.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.cards = [SampleCard(s, self.sample_chosen.emit, content) for s in find_samples()]
        self._columns = 0
        self._arrange(3)
        outer.addLayout(self.grid)
        outer.addStretch(1)
        self._pictures_loaded = False
        parent.installEventFilter(self)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the recent graphs; load the sample pictures once, after showing."""
        while self.recent_box.count():
            item = self.recent_box.takeAt(0)
            if item.widget() is not None:
                item.widget().hide()
                item.widget().deleteLater()
        entries = [e for e in self._recent() if Path(e).is_file()]
        if not entries:
            self.recent_box.addWidget(QLabel("No recent graphs yet.", self.widget()))
        for entry in entries[:8]:
            button = QPushButton(entry, self.widget())
            button.setObjectName("recentEntry")
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.clicked.connect(lambda _c=False, p=entry: self.path_chosen.emit(Path(p)))
            self.recent_box.addWidget(button)
        if not self._pictures_loaded:
            self._pictures_loaded = True
            QTimer.singleShot(0, self._load_pictures)

    def _arrange(self, columns: int) -> None:
        if columns == self._columns:
            return
        self._columns = columns
        for card in self.cards:
            self.grid.removeWidget(card)
        for index, card in enumerate(self.cards):
            self.grid.addWidget(card, index // columns, index % columns)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._arrange(max(1, (self.viewport().width() - 72) // (THUMB_WIDTH + 34)))

    def recent_entries(self) -> list[str]:
        return [w.text() for w in self.findChildren(QPushButton, "recentEntry")
                if not w.isHidden()]

    def _load_pictures(self) -> None:
        for card in self.cards:
            card.load_picture()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.parent() and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.parent().rect())
        elif (watched is self.parent() and event.type() == QEvent.Type.ChildAdded
              and self.isVisible()):
            # a widget laid over the canvas later (the zoom buttons) would stack above the page
            QTimer.singleShot(0, self.raise_)
        return False

    def show_over_canvas(self) -> None:
        self.setGeometry(self.parent().rect())
        self.refresh()
        self.show()
        self.raise_()
