"""Live progress on running nodes; the inspector and timeline follow the live run."""

from __future__ import annotations

import pytest

from tests.ui.run_helpers import rag_graph, slow_graph

pytestmark = pytest.mark.ui


def test_running_node_shows_elapsed_time_and_its_progress(qtbot, make_window):
    window = make_window(slow_graph(seconds=60))
    features, canvas = window.features.run, window.canvas
    deco = canvas.decor.states["slow"]
    window.canvas.select_nodes(["slow"])
    features.run()
    qtbot.waitUntil(lambda: canvas.node_state("slow") == "running", timeout=60_000)
    qtbot.waitUntil(lambda: (deco.elapsed or 0) > 0.3, timeout=5_000)
    assert "running · " in deco.status.text() and deco.status.text().endswith(" s")
    qtbot.waitUntil(lambda: (deco.progress_fraction or 0) > 0, timeout=5_000)
    assert deco.progress_back.isVisible() and deco.progress_bar.rect().width() > 0
    assert "running" in features.inspector.title.text()  # not "not run yet"
    timeline = features.timeline.canvas
    qtbot.waitUntil(lambda: any(b.node_id == "slow" and b.status == "running"
                                for b in timeline.bars), timeout=5_000)
    features.cancel_action.trigger()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=5_000)
    assert deco.elapsed is None and "·" not in deco.status.text()
    assert {b.node_id: b.status for b in timeline.bars}["slow"] == "cancelled"
    assert not window.features.live_run.timer.isActive()


def test_a_node_without_progress_gets_a_moving_bar(qtbot, make_window):
    window = make_window(rag_graph(delay=0.4))
    features, canvas = window.features.run, window.canvas
    deco = canvas.decor.states["answer"]
    features.run()
    qtbot.waitUntil(lambda: canvas.node_state("answer") == "running", timeout=60_000)
    qtbot.waitUntil(lambda: deco.busy, timeout=5_000)
    first = deco.progress_bar.rect().left()
    qtbot.waitUntil(lambda: deco.progress_bar.rect().left() != first, timeout=5_000)
    features.cancel_action.trigger()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=30_000)
    assert not deco.busy and not deco.progress_back.isVisible()


def test_inspector_never_shows_an_earlier_run_or_a_deleted_node(qtbot, make_window):
    window = make_window(rag_graph(delay=0.0))
    features = window.features.run
    features.run()
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=20_000)
    features.inspector.show_node("answer")
    assert "done" in features.inspector.title.text()
    window.editor.set_param("answer", "delay", 0.2)
    features.run()
    qtbot.waitUntil(lambda: window.canvas.node_state("answer") in ("queued", "running"),
                    timeout=60_000)
    assert "done" not in features.inspector.title.text()  # the earlier run's state is gone
    qtbot.waitUntil(lambda: "running" in features.inspector.title.text(), timeout=10_000)
    qtbot.waitUntil(lambda: not features.controller.busy, timeout=30_000)
    assert "done" in features.inspector.title.text()
    window.editor.remove_nodes(["answer"])
    assert features.inspector.node_id is None
    assert all(b.node_id != "answer" for b in features.timeline.canvas.bars)
