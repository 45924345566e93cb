"""The studio's one background-job helper: work off the GUI thread, news and end on it."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QApplication, QPushButton, QWidget

from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.ui.jobs.background import BackgroundJob, JobControls, error_text

pytestmark = pytest.mark.ui


def test_news_and_the_end_arrive_on_the_gui_thread_in_order(qtbot):
    job = BackgroundJob("test-job")
    seen: list = []
    job.on("step", lambda n: seen.append(("step", n, threading.current_thread().name)))

    def compute(task):
        for n in range(3):
            task.report("step", n)
        return threading.current_thread().name

    job.start(compute, lambda result, error: seen.append(
        ("done", result, error, threading.current_thread().name)))
    assert job.busy
    qtbot.waitUntil(lambda: not job.busy, timeout=10_000)
    gui = threading.current_thread().name
    assert seen == [("step", 0, gui), ("step", 1, gui), ("step", 2, gui),
                    ("done", "test-job", None, gui)]  # computed in the worker, told here


def test_an_error_is_handed_to_done_not_raised_into_qt(qtbot):
    job = BackgroundJob("test-job")
    ended: list = []

    def compute(_task):
        raise ValueError("bad corpus")

    job.start(compute, lambda result, error: ended.append((result, error)))
    qtbot.waitUntil(lambda: bool(ended), timeout=10_000)
    result, error = ended[0]
    assert result is None and isinstance(error, ValueError)
    assert error_text(error) == "ValueError: bad corpus" and error_text(None) == ""


def test_controls_show_the_busy_state_and_cancel_reaches_the_worker(qtbot):
    owner = QWidget()
    qtbot.addWidget(owner)
    start, apply, cancel = (QPushButton(t, owner) for t in ("Start", "Apply", "Cancel"))
    ready = {"apply": True}
    job = BackgroundJob("test-job", owner, JobControls(
        idle=[start, (apply, lambda: ready["apply"])], cancel=cancel))
    cancel.setEnabled(False)
    gate = threading.Event()
    ended: list = []

    def compute(task):
        gate.wait(10)
        if task.cancel.cancelled:
            raise RunCancelled("stopped")
        return "finished"

    job.start(compute, lambda result, error: ended.append((result, error)))
    assert not start.isEnabled() and not apply.isEnabled() and cancel.isEnabled()
    job.cancel()
    gate.set()
    qtbot.waitUntil(lambda: bool(ended), timeout=10_000)
    assert ended[0][0] is None and isinstance(ended[0][1], RunCancelled)
    assert start.isEnabled() and apply.isEnabled() and not cancel.isEnabled()
    ready["apply"] = False
    job.start(lambda _task: 1, lambda *_: None)
    qtbot.waitUntil(lambda: not job.busy, timeout=10_000)
    assert start.isEnabled() and not apply.isEnabled()  # ready() said no


def test_one_job_at_a_time_unless_the_newest_wins(qtbot):
    gate = threading.Event()
    job = BackgroundJob("test-job")
    job.start(lambda _task: gate.wait(10), lambda *_: None)
    with pytest.raises(RuntimeError, match="already running"):
        job.start(lambda _task: 2, lambda *_: None)
    gate.set()
    qtbot.waitUntil(lambda: not job.busy, timeout=10_000)

    newest = BackgroundJob("test-list", newest_wins=True)
    slow, hold, items, ended = threading.Event(), threading.Event(), [], []
    newest.on("item", items.append)

    def old(task):
        slow.wait(10)
        task.report("item", "old")
        return "old"

    def new(_task):
        hold.wait(10)
        return "new"

    first = newest.start(old, lambda result, _error: ended.append(result))
    old_thread = newest.thread
    newest.start(new, lambda result, _error: ended.append(result))
    assert first.cancelled  # the replaced job was told to stop
    slow.set()
    old_thread.join(10)
    QApplication.processEvents()  # the old job's news and end, queued as it returned
    assert items == [] and ended == [] and newest.busy  # dropped: the new job goes on
    hold.set()
    qtbot.waitUntil(lambda: not newest.busy, timeout=10_000)
    assert ended == ["new"]


def test_a_job_whose_owner_is_gone_reports_into_nothing(qtbot):
    owner = QWidget()
    job = BackgroundJob("test-job", owner)
    handled: list = []
    job.on("step", handled.append)
    gate, reported = threading.Event(), threading.Event()

    def compute(task):
        gate.wait(10)
        task.report("step", 1)  # the bridge died with its owner: no error, no handler
        reported.set()
        return 1

    job.start(compute, lambda *_: handled.append("done"))
    owner.deleteLater()
    qtbot.waitUntil(lambda: not _alive(owner), timeout=10_000)
    gate.set()
    assert reported.wait(10) and job.shutdown(10)
    assert handled == []


def _alive(widget: QWidget) -> bool:
    from shiboken6 import isValid

    return isValid(widget)
