"""Pre-flight in the studio: a graph whose model or server is not usable here is flagged in the
problems panel and on the canvas before any run, and the flag goes when it is fixed."""

from __future__ import annotations

import socket

import pytest

pytestmark = pytest.mark.ui


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rows(window) -> list[tuple[str, str, str]]:
    tree = window.problems.tree
    return [(tree.topLevelItem(i).text(0), tree.topLevelItem(i).text(1),
             tree.topLevelItem(i).text(3)) for i in range(tree.topLevelItemCount())]


def test_unusable_models_are_flagged_before_a_run_and_cleared_when_fixed(main_window, qtbot):
    editor = main_window.editor
    host = f"http://127.0.0.1:{_free_port()}"
    llm = editor.add_node("llm.model")
    editor.set_param(llm, "backend", "ollama")
    editor.set_param(llm, "model", "llama3.2")
    editor.set_param(llm, "host", host)
    embedder = editor.add_node("embed.model")

    qtbot.waitUntil(lambda: llm in main_window.problems.environment, timeout=30000)
    assert embedder not in main_window.problems.environment  # the packaged model is here
    not_ready = [row for row in _rows(main_window) if row[0] == "not ready"]
    assert len(not_ready) == 1 and not_ready[0][1] == llm
    assert f"Ollama is not reachable at {host}" in not_ready[0][2]
    assert llm in main_window.canvas.badged_node_ids()

    editor.set_param(llm, "backend", "embedded")
    editor.set_param(llm, "model", "")
    qtbot.waitUntil(lambda: not main_window.problems.environment, timeout=30000)
    assert llm not in main_window.canvas.badged_node_ids()

    main_window.actions["preflight"].trigger()
    qtbot.waitUntil(lambda: not main_window.features.preflight.running, timeout=30000)
    assert "Models and servers ready" in main_window.statusBar().currentMessage()
