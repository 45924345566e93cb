"""Shared fixtures for the studio's Qt tests (offscreen; see tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from modrag_studio.composition import default_registry
from modrag_studio.ui.shell.main_window import MainWindow
from tests.ui.test_run_features import make_window  # noqa: F401 (windows on the toy nodes)


@pytest.fixture(autouse=True)
def _no_blocking_close_prompt(monkeypatch):
    """Closing a window with unsaved changes would open a modal question: answer "discard"."""
    monkeypatch.setattr(MainWindow, "ask_unsaved", lambda self: True)


@pytest.fixture(autouse=True)
def _user_settings_in_the_test_folder(tmp_path):
    """A window made without ``settings`` (recent files, layout, run inputs) keeps them in
    the test's own folder: the user's studio never lists a test's graphs as recent."""
    for kind in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(kind, QSettings.Scope.UserScope, str(tmp_path / "user-settings"))


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where a test saves its screenshots: ``$MODRAG_SCREENSHOT_DIR`` when set (to refresh
    the pictures of the docs on purpose), else the test's own folder; never the tracked
    ``docs/screenshots/`` by just running the tests."""
    folder = Path(os.environ.get("MODRAG_SCREENSHOT_DIR") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def studio_settings(tmp_path) -> QSettings:
    """Settings (recent files, run inputs) in the test's own folder, never the user's."""
    return QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def main_window(qtbot, studio_settings) -> MainWindow:
    """An empty studio window with the built-in registry, shown offscreen."""
    window = MainWindow(default_registry(), settings=studio_settings, offer_restore=False)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    qtbot.waitExposed(window)
    return window
