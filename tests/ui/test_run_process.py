"""Runs in the worker process (the default for the built-in registry): states, cancel, errors."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from modrag_studio.composition import default_registry
from modrag_studio.ui.shell.main_window import MainWindow
from tests.ui.run_helpers import slow_graph

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    win = MainWindow(default_registry(), settings=settings, offer_restore=False)
    qtbot.addWidget(win)
    yield win
    win.features.run.controller.shutdown()


def test_process_run_cancel_and_rerun(qtbot, window):
    features = window.features.run
    assert features.controller.mode == "process"
    window.editor.reset(slow_graph(seconds=60))
    features.run()
    qtbot.waitUntil(lambda: window.canvas.node_state("slow") == "running", timeout=60_000)
    qtbot.waitUntil(lambda: "step" in features.captions.get("slow", ""), timeout=10_000)
    features.cancel()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=5_000)
    result = features.controller.last_result
    assert result.status == "cancelled"
    assert window.canvas.node_state("start") == "done"
    assert window.canvas.node_state("after") == "cancelled"
    # the same worker serves the next run; the value made in the worker comes back
    window.editor.reset(slow_graph(seconds=0.05))
    features.run()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=20_000)
    result = features.controller.last_result
    assert result.ok and result.outputs == {"result": "X"}
    assert window.canvas.node_state("start") == "cached"
    features.select_node("after")
    assert "X" in features.inspector.outputs_tabs.widget(0).toPlainText()


def test_worker_that_dies_is_reported_and_replaced(qtbot, window):
    features = window.features.run
    window.editor.reset(slow_graph(seconds=60))
    features.run()
    qtbot.waitUntil(lambda: window.canvas.node_state("slow") == "running", timeout=60_000)
    features.controller.process._proc.kill()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=10_000)
    assert "stopped unexpectedly" in features.last_error
    assert window.canvas.node_state("start") == "done"  # what completed stays shown
    assert window.canvas.node_state("slow") == "cancelled"
    assert window.statusBar().currentMessage().startswith("Run stopped:")
    window.editor.reset(slow_graph(seconds=0.05))
    features.run()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=60_000)
    assert features.controller.last_result.ok
