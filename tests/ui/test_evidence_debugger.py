"""The evidence debugger in the window: badges, first-loss outline, lineage, forced prompt."""

from __future__ import annotations

import pytest

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.ui.inspection.evidence_debugger import narration_for, parse_specs
from tests.generation.test_counterfactual import DOCS, _graph, _reply
from tests.ui.evidence_helpers import evidence_window, run_and_wait

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text)
    with evidence_window(qtbot, tmp_path, monkeypatch, _graph(), _reply) as win:
        yield win, tmp_path


def _run(qtbot, win, tmp_path) -> None:
    run_and_wait(qtbot, win, {"question": "press pump checked", "corpus": str(tmp_path)})


def test_badges_outline_and_status_after_a_run(qtbot, window) -> None:
    win, tmp_path = window
    debugger = win.features.evidence_debugger
    debugger.set_expected("text:500 operating hours")
    _run(qtbot, win, tmp_path)
    qtbot.waitUntil(lambda: debugger.attribution is not None, timeout=5000)
    found = debugger.attribution
    assert found.first_loss == "bm25"
    assert debugger.badges["bm25"].text == "retrieves: not in the top 1 (top_k=1)"
    assert debugger.badges["split"].text.startswith("splits: in chunk pump.md")
    assert debugger.outline is not None and debugger.outline.parentItem() is \
        win.canvas.node_item("bm25")
    message = win.statusBar().currentMessage()  # the run's outcome first, the verdict second
    assert message.startswith("Run ok") and " · Evidence: Lost at bm25: " in message
    table = debugger.dock.table
    rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    assert rows["bm25"] == "first loss" and rows["split"] == "reached"
    assert "prompt" not in debugger.badges or debugger.badges["prompt"].text.endswith(
        "not in the prompt")
    assert "search (bm25) did not find it" in debugger.narration()
    assert narration_for(win) == debugger.narration()


def test_check_works_on_the_last_run_and_marks_rows(qtbot, window) -> None:
    win, tmp_path = window
    debugger = win.features.evidence_debugger
    _run(qtbot, win, tmp_path)
    assert debugger.attribution is None  # nothing declared: nothing drawn
    retrieved = win.features.run.controller.last_result.output_of("bm25", "results")[0]
    menu = debugger.row_menu(retrieved.chunk)
    assert [a.text() for a in menu.actions()] == ["Mark as expected evidence",
                                                  "Show where this chunk appears",
                                                  "Show citations of this chunk"]
    menu.actions()[0].trigger()
    assert debugger.dock.specs.text() == f"chunk:{retrieved.chunk_id}"
    assert debugger.attribution is not None
    assert debugger.attribution.first_loss == "parse"  # in the prompt, never cited
    assert debugger.badges["parse"].text == "cites: not cited (given as block [1])"
    seen = debugger.show_lineage(retrieved.chunk_id)
    assert {(a.node_id, a.position) for a in seen} >= {("bm25", 1), ("split", 1)} or \
        {a.node_id for a in seen} >= {"bm25", "split", "prompt"}
    assert debugger.badges["bm25"].text == f"{retrieved.chunk_id} #1 of 1"
    assert win.statusBar().currentMessage().startswith(retrieved.chunk_id)


def test_force_into_prompt_shows_both_answers(qtbot, window) -> None:
    win, tmp_path = window
    debugger = win.features.evidence_debugger
    debugger.set_expected(["text:500 operating hours"])
    _run(qtbot, win, tmp_path)
    assert debugger.force()
    qtbot.waitUntil(lambda: debugger.counterfactual is not None, timeout=20_000)
    assert "The documents do not say." in debugger.dock.first_answer.toPlainText()
    assert "Every 500 operating hours [pump.md]" in debugger.dock.forced_answer.toPlainText()
    assert "pump.md" in win.statusBar().currentMessage()
    verdict = debugger.dock.verdict.text()
    assert verdict.startswith("Lost at bm25: ") and "\nForced pump.md" in verdict


def test_bad_spec_is_named_and_chunks_parse() -> None:
    assert parse_specs("doc:a; text:b\nre:c").specs == ["doc:a", "text:b", "re:c"]
    with pytest.raises(ValueError, match="page:1"):
        parse_specs("page:1")
    assert Chunk(chunk_id="c", doc_id="d", text="t").chunk_id == "c"


def test_funnel_from_a_report_badges_the_nodes(qtbot, window) -> None:
    import json

    win, tmp_path = window
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"attribution": {
        "load": {"reached": 3, "lost_here": 0, "never_reached": 0},
        "bm25": {"reached": 2, "lost_here": 1, "never_reached": 0}}}))
    debugger = win.features.evidence_debugger
    funnel = debugger.show_funnel(str(report))
    assert funnel["bm25"]["lost_here"] == 1
    assert debugger.badges["bm25"].text == "reached 2 · lost here 1 · never 0"
    assert debugger.outline is not None
    assert win.statusBar().currentMessage() == "Most queries are lost at bm25: 1 of 3"
    report.write_text("{}")
    assert debugger.show_funnel(str(report)) == {}
    assert "no attribution" in win.statusBar().currentMessage()


def test_expected_evidence_belongs_to_its_graph(qtbot, window, tmp_path) -> None:
    """Opening another graph clears the spec, badges and verdict (no stale badge raises),
    and reopening the first graph brings its spec back."""
    from modrag_studio.engine.core.document import save

    win, corpus = window
    debugger = win.features.evidence_debugger
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    save(win.editor.document(), first)
    save(win.editor.document(), second)
    assert win.open_path(first, offer_restore=False)
    debugger.set_expected("text:500 operating hours")
    _run(qtbot, win, corpus)
    qtbot.waitUntil(lambda: debugger.attribution is not None, timeout=5000)
    assert debugger.badges

    assert win.open_path(second, offer_restore=False)
    assert debugger.dock.specs.text() == "" and debugger.attribution is None
    assert debugger.badges == {} and debugger.outline is None
    _run(qtbot, win, corpus)  # no old spec re-checked, nothing raised by a deleted badge
    assert debugger.attribution is None and debugger.badges == {}
    assert "Evidence" not in win.statusBar().currentMessage()

    assert win.open_path(first, offer_restore=False)
    assert debugger.dock.specs.text() == "text:500 operating hours"
