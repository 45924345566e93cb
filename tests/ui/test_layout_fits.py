"""Panels and dialogs fit: the evaluation-set panel never grows the window past the screen
(the status bar stays in sight), the Trace Export dialog shows its fields at full height."""

from __future__ import annotations

import pytest

from modrag_studio.ui.run.trace_export import TraceExportDialog

pytestmark = pytest.mark.ui


def test_the_evaluation_set_panel_keeps_the_window_on_the_screen(main_window, qtbot):
    main_window.resize(1400, 900)  # a window filling a 1000-pixel-high screen
    qtbot.waitUntil(lambda: main_window.height() == 900)
    sets = main_window.features.evaluation_sets
    action = next(a for a in sets.menu.actions() if a.text() == "Evaluation set panel")
    action.trigger()
    qtbot.waitUntil(sets.dock.isVisible)
    main_window.grab()  # lays the docks out
    assert main_window.height() == 900
    assert main_window.minimumSizeHint().height() <= 900
    bar = main_window.statusBar()
    assert bar.isVisible() and bar.geometry().bottom() <= main_window.rect().bottom()


def test_the_trace_export_dialog_shows_its_fields_at_full_height(main_window, qtbot):
    action = main_window.features.trace_export.action
    action.trigger()
    qtbot.waitUntil(lambda: main_window.findChild(TraceExportDialog, "traceExportDialog")
                    is not None)
    dialog = main_window.findChild(TraceExportDialog, "traceExportDialog")
    qtbot.waitUntil(dialog.isVisible)
    for field in (dialog.enabled, dialog.endpoint, dialog.headers, dialog.content):
        assert field.height() >= field.sizeHint().height(), type(field).__name__
    dialog.resize(dialog.width(), 50)  # a user cannot squeeze it either
    for field in (dialog.endpoint, dialog.headers):
        assert field.height() >= field.sizeHint().height()
    dialog.reject()
