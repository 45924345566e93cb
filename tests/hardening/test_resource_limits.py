"""A node output of 100,000 chunks: the canvas card and the inspector table build only what
is on screen (one page of card rows, the visible table cells), never the whole list.

The memory bound of indexing 100,000 chunks is measured by ``bench/bench_memory.py``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from modrag_studio.engine.core.datatypes import Chunk

pytestmark = pytest.mark.ui
TOTAL = 100_000


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i % 97}", text=f"chunk text number {i} " * 3,
                  index=i) for i in range(TOTAL)]


def test_overlay_card_materialises_one_page_of_100k_chunks(qtbot, chunks):
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QGraphicsScene, QGraphicsView

    from modrag_studio.ui.inspection.card_content import content_for
    from modrag_studio.ui.inspection.overlays import OverlayCard

    content = content_for(chunks, "chunks")
    built: list[int] = []
    real_rows = content.rows

    def counting_rows(start: int, count: int):
        rows = real_rows(start, count)
        built.append(len(rows))
        return rows

    content.rows = counting_rows
    card = OverlayCard("split", content)
    scene = QGraphicsScene()
    scene.addItem(card)
    view = QGraphicsView(scene)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    qtbot.waitExposed(view)
    image = QImage(800, 600, QImage.Format.Format_ARGB32)

    def draw() -> None:
        painter = QPainter(image)
        scene.render(painter)
        painter.end()

    draw()
    card.set_page(card.pages() - 1)
    draw()
    qtbot.waitUntil(lambda: bool(built))
    assert card.pages() == -(-TOTAL // card.page_size)
    assert built and max(built) <= card.page_size
    assert sum(built) <= 40 * card.page_size  # a few pages drawn, never the 100,000 rows


def test_inspector_table_reads_only_visible_rows_of_100k_chunks(qtbot, chunks):
    from modrag_studio.ui.inspection.views import Column, RecordTable, view_for

    table = view_for(chunks)
    assert isinstance(table, RecordTable)
    touched: Counter[int] = Counter()
    row_of = {id(c): i for i, c in enumerate(chunks)}

    def counting(column: Column) -> Column:
        def get(row):
            touched[row_of.get(id(row), -1)] += 1
            return column.get(row)

        return Column(column.title, get, column.width)

    table.model.columns = [counting(c) for c in table.model.columns]
    qtbot.addWidget(table)
    table.resize(900, 600)
    table.show()
    qtbot.waitExposed(table)
    table.grab()
    table.table.scrollToBottom()
    table.grab()
    qtbot.waitUntil(lambda: max(touched, default=-1) >= TOTAL - 50)
    assert table.proxy.rowCount() == TOTAL
    assert 0 < len(touched) < 500, len(touched)  # the visible rows at the top and bottom
    assert max(touched) >= TOTAL - 50
