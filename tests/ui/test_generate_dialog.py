"""Evaluation > Generate evaluation set…: progress off the GUI thread, the review table
(reject, edit, read the source chunk), Save writing only the ticked rows, Cancel."""

from __future__ import annotations

import json

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import load_evalset
from modrag_studio.ui.evaluate.generate_dialog import GenerateDialog
from tests.evaluation.test_evalset_generate import (  # noqa: F401
    BACK,
    BACKEND,
    DOCS,
    _translating,
    canned,
)
from tests.tiny_rag import tiny_rag_graph

pytestmark = pytest.mark.ui


def _dialog(qtbot, tmp_path, saved: list) -> GenerateDialog:
    doc = from_json_dict(tiny_rag_graph(tmp_path, DOCS, backend=BACKEND))
    registry = default_registry()
    dialog = GenerateDialog(doc, inputs={}, executor=Executor(
        registry, NodeCache(disk_dir=tmp_path / "c")), on_saved=saved.append)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.model.setText(f"{BACKEND}:canned-1")
    dialog.dense.setChecked(False)
    dialog.type_boxes["multi"].setChecked(False)
    dialog.type_boxes["paraphrase"].setChecked(False)
    return dialog


def test_generate_review_and_save_only_the_accepted_rows(qtbot, tmp_path, canned, shots):  # noqa: F811
    saved: list = []
    dialog = _dialog(qtbot, tmp_path, saved)
    assert dialog.corpus.text() == str(tmp_path / "corpus")  # the graph's own default
    dialog.count.setValue(5)
    assert dialog.config().unanswerable_share == 0.25  # the default cap, in per cent
    dialog.unanswerable_share.setValue(50)  # (five documents give three single questions)
    assert dialog.start()
    assert dialog.cancel_button.isEnabled() and not dialog.start_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled(), timeout=60_000)
    assert dialog.table.rowCount() == 5 and dialog.progress.value() == 5
    assert "5 questions kept" in dialog.status.text()
    assert "kept per model call" in dialog.status.text()
    assert dialog.round_trip.isChecked()  # each kept question was asked again of a search
    types = {dialog.table.item(r, 1).text() for r in range(5)}
    singles = sum(dialog.table.item(r, 1).text() == "single" for r in range(5))
    # (an unanswerable question asking for words no chunk uses needs no round trip)
    assert sum(c.startswith(("Passages:", "段落：")) for c in canned.calls) >= singles
    assert types == {"single", "unanswerable"}
    row = next(r for r in range(5) if dialog.table.item(r, 1).text() == "single")
    fact = dialog.table.item(row, 4).text()
    dialog.table.selectRow(row)
    assert fact and fact.lower() in dialog.source.toPlainText().lower()  # its source chunk
    reworded = dialog.table.item(row, 3).text().replace("?", ", according to the records?")
    alternative = fact.split()[-1]
    dialog.table.item(row, 3).setText(reworded)
    dialog.table.item(row, 4).setText(f"{fact} | {alternative}")
    other = (row + 1) % 5
    rejected = dialog.table.item(other, 3).text()
    dialog.reject_row(other)
    dialog.grab().save(str(shots / "generate-evalset-dialog.png"))
    dialog.path.setText(str(tmp_path / "set.jsonl"))
    assert dialog.save()
    rows = load_evalset(tmp_path / "set.jsonl").questions
    assert len(rows) == 4 and saved == [str(tmp_path / "set.jsonl")]
    assert rejected not in [r.question for r in rows]
    edited = next(r for r in rows if "according to the records" in r.question)
    assert edited.question == reworded
    assert edited.expected_facts == [[fact, alternative]]
    assert edited.expected_evidence.to_dict()["chunk_ids"]
    dialog.round_trip.setChecked(False)
    assert dialog.config().round_trip is False
    dialog.unanswerable_share.setValue(40)
    assert dialog.config().unanswerable_share == 0.4


def test_bad_input_and_cancel_write_nothing(qtbot, tmp_path, canned):  # noqa: F811
    dialog = _dialog(qtbot, tmp_path, [])
    for box in dialog.type_boxes.values():
        box.setChecked(False)
    assert not dialog.start()
    assert "Question types" in dialog.status.text() and "--" not in dialog.status.text()
    dialog.type_boxes["single"].setChecked(True)
    dialog.count.setValue(50)
    assert dialog.start()
    # the button comes back when the result arrives; the worker thread ends just after it
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled() and not dialog.busy, timeout=60_000)
    assert "corpus is too small for 50 questions" in dialog.status.text()
    canned.override = lambda user: (__import__("time").sleep(0.2) or None)
    dialog.count.setValue(3)
    assert dialog.start()
    dialog.cancel()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled(), timeout=60_000)
    assert "cancelled" in dialog.status.text() and dialog.table.rowCount() == 0
    assert not dialog.save_button.isEnabled()
    assert not list(tmp_path.glob("*.jsonl"))


def test_reword_a_set_puts_its_claims_in_other_words(qtbot, tmp_path, canned, shots):  # noqa: F811
    dialog = _dialog(qtbot, tmp_path, [])
    for name, box in dialog.type_boxes.items():
        box.setChecked(name == "claim")
    dialog.count.setValue(3)
    assert dialog.start()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled() and not dialog.busy,
                    timeout=60_000)
    claims = tmp_path / "claims.jsonl"
    dialog.path.setText(str(claims))
    assert dialog.save()
    originals = {r.id: r for r in load_evalset(claims).questions}
    assert len(originals) == 3

    dialog.reword.setText(str(tmp_path / "missing.jsonl"))
    assert not dialog.start()
    assert "missing.jsonl: no such file" in dialog.status.text()
    canned.override = _translating
    dialog.reword.setText(str(claims))
    assert dialog.start()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled() and not dialog.busy,
                    timeout=60_000)
    shown = {dialog.table.item(r, 3).text() for r in range(dialog.table.rowCount())}
    assert shown == {BACK["LP-07 is serviced"][1], BACK["PR-300"][1]}
    assert "not_translated 1" in dialog.status.text()  # the third came back in Chinese
    assert dialog.progress.maximum() == 3
    dialog.table.selectRow(0)
    source = dialog.source.toPlainText()  # the claim it came from, above its chunk
    original = next(q for q in originals.values() if f"Reworded from {q.id}:" in source)
    assert original.question in source
    dialog.grab().save(str(shots / "generate-evalset-reword.png"))
    dialog.path.setText(str(tmp_path / "reworded.jsonl"))
    assert dialog.save()
    for row in load_evalset(tmp_path / "reworded.jsonl").questions:
        original = originals[row.id.removesuffix("-p")]
        assert f"reworded:{original.id}" in row.tags
        assert row.expected_evidence.specs == original.expected_evidence.specs


def test_the_evaluation_menu_opens_generation_and_loads_the_saved_set(qtbot, main_window,
                                                                      tmp_path):
    menu = main_window.features.evaluation_sets.menu
    action = next(a for a in menu.actions() if a.text() == "Generate evaluation set…")
    action.trigger()
    dialog = main_window.features.generation.dialog
    assert dialog is not None and dialog.isVisible()
    asked = []  # the generation goes through Run's pre-run chain (the trust prompt)
    main_window.features.run.controller.guards_allow = lambda request: asked.append(
        request.label) or False
    assert not dialog.start()
    assert asked == ["Generate"] and "not allowed" in dialog.status.text()
    assert not dialog.busy
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "Who?", "answerable": False}) + "\n")
    main_window.features.generation.saved(str(path))
    panel = main_window.features.evaluation_sets.panel
    assert panel.path == str(path) and panel.table.rowCount() == 1
    dialog.close()
