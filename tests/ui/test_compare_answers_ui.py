"""Studio: base and a variant on an evaluation set in a worker (progress, Cancel), the
answer-metric table, the flipped questions and both answers side by side."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QPainter, QPixmap

from tests.ui.run_helpers import rag_graph

pytestmark = pytest.mark.ui

QUESTIONS = [
    {"id": "q1", "question": "what lowers blood pressure", "expected_facts": ["exercise"],
     "expected_evidence": {"phrases": ["lowers blood pressure"]}},
    {"id": "q2", "question": "what causes scurvy", "expected_facts": ["lack of vitamin C"],
     "expected_evidence": {"phrases": ["Scurvy is caused"]}},
    {"id": "u1", "question": "who founded the company", "answerable": False},
]


def _write_set(folder: Path) -> Path:
    path = folder / "set.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return path


def _side_by_side(*widgets) -> QPixmap:
    """One picture of several windows next to each other."""
    shots = [w.grab() for w in widgets]
    canvas = QPixmap(sum(s.width() for s in shots) + 12 * (len(shots) - 1),
                     max(s.height() for s in shots))
    canvas.fill(QColor(235, 235, 238))
    painter = QPainter(canvas)
    x = 0
    for shot in shots:
        painter.drawPixmap(x, 0, shot)
        x += shot.width() + 12
    painter.end()
    return canvas


def test_compare_on_an_evalset_shows_metrics_flips_and_answers(qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    variants = window.features.variants
    # the word search ranks worst first: the answers lose the chunks holding the facts
    variants.new_variant("worst", ["words.reverse=true"])
    assert variants.compare_on_evalset(_write_set(tmp_path))
    dialog = variants.answers_dialog
    assert dialog is not None and dialog.isVisible() and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=30_000)
    assert dialog.progress.value() == dialog.progress.maximum() == 6
    assert not dialog.cancel_button.isEnabled()
    rows = {dialog.metrics.item(r, 0).text(): [dialog.metrics.item(r, c).text()
                                                for c in range(7)]
            for r in range(dialog.metrics.rowCount())}
    assert rows["fact_recall"][1:4] == ["1.000", "0.000", "-1.000"]
    assert rows["fact_recall"][6] == "2"  # u1 has no facts: left out of the pairs
    assert rows["refusal_accuracy"][1:4] == ["0.667", "0.667", "+0.000"]
    assert rows["fact_recall"][5] == "0.500"  # exact sign-flip test over two deltas
    flips = [(dialog.flips.item(r, 0).text(), dialog.flips.item(r, 1).text())
             for r in range(dialog.flips.rowCount())]
    assert flips == [("q1", "lost"), ("q2", "lost")]
    assert "B lost 'lack of vitamin C'" in dialog.flips.item(1, 2).text()
    assert "B wins 0, loses 2, ties 1" in dialog.queries.text()

    answers = dialog.open_flip(1)
    assert answers is not None and answers.isVisible()
    assert answers.windowTitle() == "q2: base vs worst"
    assert "Scurvy is caused by a lack of vitamin C." in answers.texts["a"]
    assert "citations: 1, 2" in answers.texts["a"]
    assert "missed facts: lack of vitamin C" in answers.texts["b"]
    assert "Scurvy" not in answers.texts["b"].split("\n\n")[0]
    shot = Path(os.environ.get("MODRAG_SCREENSHOT_DIR", tmp_path)) / "compare-answers.png"
    answers.resize(760, dialog.height())
    assert _side_by_side(dialog, answers).save(str(shot))


def test_cancel_stops_the_evalset_comparison(qtbot, make_window, tmp_path):
    window = make_window(rag_graph())
    variants = window.features.variants
    variants.new_variant("slow", ["answer.delay=0.05"])  # about a second per answer
    assert variants.compare_on_evalset(_write_set(tmp_path))
    dialog = variants.answers_dialog
    qtbot.waitUntil(lambda: dialog.progress.value() >= 4, timeout=30_000)  # the variant runs
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: dialog.status.text().startswith("Cancelled"), timeout=30_000)
    assert dialog.result is None and dialog.progress.value() < 6
    assert not dialog.cancel_button.isEnabled()
    assert variants.job.wait(10)


def test_evalset_comparison_needs_a_variant_and_a_readable_set(qtbot, make_window, tmp_path,
                                                               monkeypatch):
    window = make_window(rag_graph())
    assert not window.features.variants.compare_on_evalset(_write_set(tmp_path))
    assert "variant first" in window.statusBar().currentMessage()
    window.features.variants.new_variant("worst", ["words.reverse=true"])
    warnings = []
    monkeypatch.setattr("modrag_studio.ui.evaluate.variants.QMessageBox.warning",
                        lambda _parent, _title, text: warnings.append(text))
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    assert not window.features.variants.compare_on_evalset(tmp_path / "bad.jsonl")
    assert "line 1: field 'question'" in warnings[0]
