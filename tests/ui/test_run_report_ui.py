"""File > Export Run Report… writes the last run as one self-contained web page."""

from __future__ import annotations

import pytest

from modrag_studio.ui.present import trace_export
from tests.reporting.test_run_report import outside_references
from tests.ui.run_helpers import rag_graph
from tests.ui.test_run_features import run_and_wait

pytestmark = pytest.mark.ui


def file_action(window, text: str):
    return next(a for a in window.menus["File"].actions() if a.text() == text)


def test_the_file_menu_exports_the_last_run_as_a_page(qtbot, make_window, tmp_path,
                                                      monkeypatch):
    target = tmp_path / "toy-report.html"
    asked = []

    def save_as(parent, caption, name, filters):
        asked.append(name)
        return str(target), filters

    monkeypatch.setattr(trace_export.QFileDialog, "getSaveFileName", save_as)
    window = make_window(rag_graph())
    action = file_action(window, "Export Run Report…")
    action.trigger()  # no run yet: says so, writes nothing
    assert "Run the graph first" in window.statusBar().currentMessage() and not target.exists()
    run_and_wait(qtbot, window)
    action.trigger()
    qtbot.waitUntil(target.exists, timeout=10_000)
    page = target.read_text(encoding="utf-8")
    answer = window.features.run.controller.last_result.outputs["answer"]
    assert asked == ["toy-rag-report.html"]
    assert answer.text.split(" [1]")[0] in page
    assert '<a href="#passage-1" class="cite"' in page and 'id="passage-2"' in page
    assert "Input: question" in page  # the canvas's titles
    assert outside_references(page) == []
    assert f"Run report saved to {target}" in window.statusBar().currentMessage()
