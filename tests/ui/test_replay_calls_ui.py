"""Run > Replay Recorded Calls…: the studio runs a graph with its model calls answered from a
recorded-calls file (a demo plays Qwen's recorded answer at once, no model loaded)."""

from __future__ import annotations

import pytest

from modrag_nodes.llm import client
from modrag_studio.composition import default_registry
from modrag_studio.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui

LP07_ANSWER = "The lubrication pump LP-07 is serviced every 500 operating hours. [2]"


@pytest.fixture
def thread_window(qtbot, studio_settings, monkeypatch):
    """A studio running in a thread of this process, where building a chat backend (and so
    loading a model) fails the test."""
    monkeypatch.setenv("MODRAG_RUN_MODE", "thread")

    def refuse(name: str):
        raise AssertionError(f"chat backend '{name}' was built during a replay")

    monkeypatch.setattr(client, "get_backend", refuse)
    window = MainWindow(default_registry(), settings=studio_settings, offer_restore=False)
    qtbot.addWidget(window)
    yield window
    window.features.run.controller.shutdown()


def test_run_menu_replays_the_recorded_qwen_answer(thread_window, qtbot, root, monkeypatch):
    main_window = thread_window
    assert main_window.features.studio_ux.open_sample(root / "sample_graphs" / "basic_rag.json")
    run = main_window.features.run
    assert run.controller.mode == "thread"
    action = run.actions.replay_calls_action
    assert action in main_window.menus["Run"].actions()
    cassette = root / "tests" / "cassettes" / "basic_rag_lp07.json"
    monkeypatch.setattr(run.actions, "choose_calls_file", lambda: str(cassette))
    action.trigger()
    qtbot.waitUntil(lambda: run.controller.last_result is not None and not run.controller.busy,
                    timeout=300_000)
    result = run.controller.last_result
    assert result.ok, result.trace.failure_summary()
    assert result.outputs["answer"].text == LP07_ANSWER
    generate = result.trace.last_visit("generate").details
    # Qwen's identity as recorded, and no model load: the backend was never built
    assert generate["model"] == "embedded:qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert generate["model_load_s"] is None
    assert result.trace.last_visit("ground").details["route"] == "grounded"


def test_cancelling_the_file_dialog_runs_nothing(main_window, monkeypatch):
    run = main_window.features.run
    monkeypatch.setattr(run.actions, "choose_calls_file", lambda: "")
    assert run.actions.replay_calls() is False
    assert not run.controller.busy and run.controller.last_result is None
