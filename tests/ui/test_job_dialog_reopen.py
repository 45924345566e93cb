"""A job dialog closed while its job runs hides; the job goes on and the status bar says so,
and opening the same action again shows that dialog and its job instead of a second one."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.ui

FEATURES = ("generation", "tuning", "scorecards")


@pytest.mark.parametrize("feature", FEATURES)
def test_reopening_while_the_job_runs_shows_the_same_dialog(main_window, qtbot, feature):
    actions = getattr(main_window.features, feature)
    dialog = actions.open()
    release = threading.Event()
    dialog.job.start(lambda task: release.wait(30), lambda result, error: None)
    try:
        dialog.close()
        qtbot.waitUntil(lambda: not dialog.isVisible())
        assert "goes on in the background" in main_window.statusBar().currentMessage()
        assert actions.open() is dialog
        qtbot.waitUntil(dialog.isVisible)
    finally:
        release.set()
        qtbot.waitUntil(lambda: not dialog.job.busy)
    dialog.close()
    assert actions.open() is not dialog  # the job ended: a fresh dialog
    actions.dialog.close()
