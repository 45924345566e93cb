"""Run > Models in Memory…: the run process's models with their memory, and Unload All."""

from __future__ import annotations

import pytest

from modrag_studio.ui.run.model_memory import resident_models
from tests.engine.helpers import edge, graph, node
from tests.ui.test_run_process import window  # noqa: F401 (the studio with its run process)

pytestmark = pytest.mark.ui


def chat_graph():
    return graph([node("q", "graph.input", name="question"),
                  node("model", "llm.model", backend="embedded", temperature=0.7,
                       max_tokens=4),
                  node("chat", "llm.chat"), node("out", "graph.output", name="answer")],
                 [edge("q.value", "chat.text"), edge("model.llm", "chat.llm"),
                  edge("chat.text", "out.value")], name="memory-demo")


def test_the_dialog_lists_the_loaded_chat_model_and_unloads_it(qtbot, window):  # noqa: F811
    features = window.features
    controller = features.run.controller
    assert controller.mode == "process"
    window.editor.reset(chat_graph())
    features.run.run_bar.set_values({"question": "Say hi."})
    features.run.run()
    qtbot.waitUntil(lambda: not controller.busy, timeout=120_000)
    assert controller.last_result.ok, controller.last_result.trace.failure_summary()

    dialog = features.model_memory.show()
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 1, timeout=30_000)
    assert dialog.table.item(0, 0).text() == "chat model"
    assert "SmolLM2" in dialog.table.item(0, 1).text()
    assert int(dialog.table.item(0, 2).text().split()[0]) > 50  # MB
    assert "1 model(s) loaded" in dialog.summary.text()

    dialog.unload_button.click()
    qtbot.waitUntil(lambda: dialog.summary.text().startswith("Unloaded 1"), timeout=30_000)
    assert dialog.table.rowCount() == 0
    assert resident_models(controller) == []

