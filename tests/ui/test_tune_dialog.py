"""Evaluation > Tune…: the space offered from the selected nodes, trials filling the table
off the GUI thread, the held-out verdict, "Apply as variant" (undoable), and Cancel."""

from __future__ import annotations

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.tuning.suggest import suggest
from modrag_studio.ui.evaluate.tune_dialog import TuneDialog, start_nodes
from tests.evaluation.tune_helpers import (
    bm25_graph,
    write_stemming_corpus,
    write_stemming_evalset,
)

pytestmark = pytest.mark.ui


def test_suggestions_cover_numbers_choices_types_and_bypass():
    doc = bm25_graph()
    names = {s.name: s for s in suggest(doc, ["index", "bm25", "rerank"], default_registry())}
    assert names["bm25.top_k"].values == "5,10,20" and names["bm25.top_k"].current == "10"
    assert "english" in names["index.stemmer"].values.split(",")
    assert names["rerank"].values.split(",")[:2] == ["fuse.rrf", "fuse.convex"]
    assert "rerank.bypass" not in names  # fusion of several inputs cannot pass one on
    assert "bm25.label" not in names
    assert start_nodes(doc, [], "rerank.results") == ["load", "split", "index", "bm25",
                                                      "rerank"]


def _dialog(qtbot, tmp_path, applied: list) -> TuneDialog:
    corpus = write_stemming_corpus(tmp_path / "docs")
    evalset = write_stemming_evalset(tmp_path / "set.jsonl")
    registry = default_registry()
    dialog = TuneDialog(bm25_graph(), registry, selected=["index", "bm25"],
                        evalset_path=str(evalset), inputs={"corpus": str(corpus)},
                        executor=Executor(registry, NodeCache(disk_dir=tmp_path / "c")),
                        on_apply=applied.append)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_tune_dialog_runs_trials_shows_the_verdict_and_applies_the_winner(qtbot, tmp_path,
                                                                         shots):
    applied: list = []
    dialog = _dialog(qtbot, tmp_path, applied)
    rows = [dialog.space.item(r, 0).text() for r in range(dialog.space.rowCount())]
    assert "index.stemmer" in rows and "bm25.top_k" in rows and "rerank" not in rows
    dialog.check("index.stemmer", "none,english")
    dialog.check("bm25.top_k", "5,10")
    dialog.held_out.setValue(0.4)
    assert dialog.space_specs() == ["index.stemmer=none,english", "bm25.top_k=5,10"]
    assert dialog.start()
    assert not dialog.start_button.isEnabled() and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=60_000)
    assert dialog.trials.rowCount() == 5  # the base and four trials, as they finished
    assert dialog.trials.item(0, 3).text() == "base"
    assert "significantly better" in dialog.status.text()
    assert "index.stemmer=english" in dialog.status.text()
    assert dialog.apply_button.isEnabled()
    dialog.grab().save(str(shots / "tune-dialog.png"))
    variant = dialog.apply()
    assert applied == [variant] and variant.name == "tuned"
    assert variant.params["index"] == {"stemmer": "english"}
    assert "p=" in variant.description and not dialog.apply_button.isEnabled()


def test_a_bad_space_is_said_in_the_dialog_and_cancel_stops_the_tune(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path, [])
    assert not dialog.start()
    assert "tick at least one row of the search space" in dialog.status.text()
    dialog.check("bm25.top_k", "5,0")
    assert not dialog.start()
    assert "bm25.top_k=0" in dialog.status.text()
    dialog.check("bm25.top_k", "3,4,5,6,7,8,9,10")
    dialog.method.setCurrentIndex(dialog.method.findData("held-out"))
    assert not dialog.start()  # 30 % of 60 questions is too few to test on
    assert "held-out part would have 18 question(s)" in dialog.status.text()
    dialog.held_out.setValue(0.4)
    assert dialog.start()
    dialog.cancel()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled(), timeout=60_000)
    assert dialog.result is None and "cancelled" in dialog.status.text().lower()
    assert dialog.start_button.isEnabled() and not dialog.apply_button.isEnabled()


def test_the_evaluation_menu_opens_the_tuner_and_applying_is_undoable(qtbot, tmp_path,
                                                                      main_window):
    main_window.editor.reset(bm25_graph())
    menu = main_window.features.evaluation_sets.menu
    action = next(a for a in menu.actions() if a.text() == "Tune…")
    action.trigger()
    dialog = main_window.features.tuning.dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.output.currentText() == "bm25.results"
    asked = []  # the tune goes through Run's pre-run chain (the trust prompt)
    main_window.features.run.controller.guards_allow = lambda request: asked.append(
        request.label) or False
    corpus = write_stemming_corpus(tmp_path / "docs")
    dialog.evalset.setText(str(write_stemming_evalset(tmp_path / "set.jsonl")))
    dialog.inputs = {"corpus": str(corpus)}
    dialog.held_out.setValue(0.4)
    dialog.check("bm25.top_k", "5,10")
    assert not dialog.start()
    assert asked == ["Tune"] and "not allowed" in dialog.status.text()
    variant = dialog.on_apply  # the window's store: through the editor, one undo step
    from modrag_studio.engine.core.document import VariantSpec

    variant(VariantSpec(name="tuned", params={"bm25": {"top_k": 5}}))
    assert main_window.features.variants.active == "tuned"
    assert [v.name for v in main_window.editor.document().variants] == ["tuned"]
    main_window.editor.undo()
    assert not main_window.editor.document().variants
    dialog.close()


@pytest.mark.parametrize("scorer_name, word", [("OVERFITS", "significantly worse"),
                                               ("TIES", "not significantly different")])
def test_apply_is_offered_only_for_a_significant_gain(qtbot, tmp_path, monkeypatch,
                                                      scorer_name, word):
    import functools

    from modrag_studio.evaluation.tuning import tune
    from tests.evaluation import tune_helpers

    monkeypatch.setattr("modrag_studio.evaluation.tuning.tune",
                        functools.partial(tune, scorer=getattr(tune_helpers, scorer_name)))
    applied: list = []
    dialog = _dialog(qtbot, tmp_path, applied)
    assert "60 question(s): cross-validation (5 folds x 3 repeats)" in dialog.plan_label.text()
    dialog.check("index.stemmer", "none,english")
    assert dialog.start()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=60_000)
    assert dialog.result.best.settings == {"index.stemmer": "english"}
    assert word in dialog.status.text() and "Method: cross-validation" in dialog.status.text()
    assert not dialog.apply_button.isEnabled()
    assert dialog.apply() is None or not applied  # nothing stored by a stray call either


def test_the_plan_is_said_before_start_and_follows_the_fields(qtbot, tmp_path):
    dialog = _dialog(qtbot, tmp_path, [])
    text = dialog.plan_label.text()
    assert text.startswith("60 question(s): cross-validation") and "Generate or write" in text
    dialog.method.setCurrentIndex(dialog.method.findData("held-out"))
    dialog.held_out.setValue(0.4)
    assert "a held-out test on 24 question(s)" in dialog.plan_label.text()
    dialog.effect.setValue(0.3)
    assert "Generate or write" not in dialog.plan_label.text()
    dialog.evalset.setText(str(tmp_path / "missing.jsonl"))
    assert "Choose an evaluation set" in dialog.plan_label.text()
    assert "needs" in dialog.plan_label.text()
