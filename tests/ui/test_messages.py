"""Messages a user reads say what is true in the studio's words: no false "working directory"
note for a sample's copy, no command-line flags, empty required paths in Problems, the
question a run answered in History."""

from __future__ import annotations

import pytest

from modrag_studio.engine.core.document import save
from tests.engine.helpers import edge, graph, node

pytestmark = pytest.mark.ui


def _template(tmp_path):
    folder = tmp_path / "samples"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text("# Pumps\nThe pump is serviced every 500 hours.\n")
    path = folder / "files.json"
    save(graph([node("corpus", "graph.input", name="corpus", default="docs"),
                node("load", "load.files", glob="*.md"),
                node("out", "graph.output", name="documents")],
               [edge("corpus.value", "load.path"), edge("load.documents", "out.value")],
               name="files"), path)
    return path


def test_a_samples_copy_runs_without_a_working_directory_alarm(main_window, qtbot, tmp_path):
    assert main_window.features.studio_ux.open_sample(_template(tmp_path))
    run = main_window.features.run
    run.run_action.trigger()
    qtbot.waitUntil(lambda: run.controller.last_result is not None
                    and not run.controller.busy, timeout=20_000)
    assert run.controller.last_result.ok
    message = main_window.statusBar().currentMessage()
    assert message.startswith("Run ok") and "working directory" not in message, message
