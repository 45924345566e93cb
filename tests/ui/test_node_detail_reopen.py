"""The node detail view opens every time it is asked for, not only once per session."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt

pytestmark = pytest.mark.ui


def _title_point(window, node_id: str):
    item = window.canvas.node_item(node_id)
    return window.canvas.view.mapFromScene(item.mapToScene(QPointF(12, 8)))


def test_the_detail_view_reopens_after_it_was_closed(main_window, qtbot):
    node = main_window.editor.add_node("retrieve.vector", (0, 0))
    main_window.canvas.fit_all()
    view, details = main_window.canvas.view, main_window.features.node_details
    for attempt in range(3):  # double-click, close with Escape, again
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton,
                          pos=_title_point(main_window, node))
        qtbot.waitUntil(lambda: details.dialog is not None and details.dialog.isVisible())
        dialog = details.dialog
        assert dialog.node_id == node, attempt
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: details.dialog is None)
    main_window.canvas.select_nodes([node])  # Enter on the canvas opens it too
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: details.dialog is not None and details.dialog.isVisible())
