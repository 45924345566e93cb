"""An exception escaping a slot is shown to the user, not only printed on the terminal."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

from modrag_studio.ui.shell.app import show_unexpected_errors

pytestmark = pytest.mark.ui


@pytest.mark.qt_no_exception_capture
def test_an_error_in_a_slot_opens_a_dialog_and_the_studio_goes_on(main_window, qtbot,
                                                                 monkeypatch):
    monkeypatch.setattr(sys, "excepthook", lambda *exc: None)  # restored after the test
    show_unexpected_errors(main_window)
    button = QPushButton("boom", main_window)

    def fail() -> None:
        raise ImportError("cannot import name 'detect_language'")

    button.clicked.connect(fail)
    button.show()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)

    def box() -> QMessageBox | None:
        return next((w for w in QApplication.topLevelWidgets()
                     if isinstance(w, QMessageBox) and w.isVisible()), None)

    qtbot.waitUntil(lambda: box() is not None)
    shown = box()
    assert shown.windowTitle() == "Unexpected error"
    assert "ImportError: cannot import name 'detect_language'" in shown.text()
    assert "Traceback" in shown.detailedText() and "in fail" in shown.detailedText()
    assert "Unexpected error: ImportError" in main_window.statusBar().currentMessage()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)  # a second error: still one dialog
    assert sum(isinstance(w, QMessageBox) and w.isVisible()
               for w in QApplication.topLevelWidgets()) == 1
    shown.close()
    assert main_window.isVisible()
