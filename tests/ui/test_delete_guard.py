"""The studio asks before a store deletes most of its collection, and runs again if told to."""

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import ErrorInfo, NodeVisit, Trace
from modrag_studio.ui.run.controller import RunRequest

pytestmark = pytest.mark.ui


@pytest.mark.parametrize("store", ["store.chroma", "store.lancedb"])
def test_a_stopped_deletion_is_asked_about_and_rerun_with_permission(main_window, qtbot,
                                                                     monkeypatch, store):
    guard = main_window.features.delete_guard
    controller = main_window.features.run.controller
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "store", "type": store, "params": {"collection": "docs"}}]})
    controller.last_request = RunRequest(doc, {"corpus": "x"})
    runs, questions = [], []
    monkeypatch.setattr(controller, "run", lambda d, inputs, **kw: runs.append((d, inputs)))
    error = (f"{store}: this would delete 17 of the 20 chunks in collection 'docs' (more "
             "than 50%); check the corpus path, then allow it with --allow-delete (CLI) or "
             "raise param 'max_delete_share'")
    visit = NodeVisit(node_id="store", type_id=store, status="failed",
                      error=ErrorInfo(type="NodeConfigError", message=error))
    result = RunResult(trace=Trace(run_id="r", graph_name="g", status="failed", visits=[visit]),
                       registry=default_registry())
    def refuse(message):
        questions.append(message)
        box = guard.message_box(message)
        box.show()
        qtbot.waitExposed(box)
        box.grab().save("/tmp/i19_delete_guard.png")
        box.close()
        return False

    monkeypatch.setattr(guard, "ask", refuse)
    controller.run_finished.emit(result)
    assert questions and not runs
    monkeypatch.setattr(guard, "ask", lambda m: True)
    controller.run_finished.emit(result)
    qtbot.waitUntil(lambda: len(runs) == 1, timeout=3000)
    rerun_doc, inputs = runs[0]
    assert rerun_doc.node("store").params["max_delete_share"] == 1.0
    assert "max_delete_share" not in doc.node("store").params  # the graph is unchanged
    assert inputs == {"corpus": "x"}
