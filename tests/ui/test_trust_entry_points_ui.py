"""Run set, Compare, Compare on an evaluation set and Index Corpus pass the trust prompt that
Run passes: a graph from elsewhere that reaches outside its folder asks first, and nothing
runs when the user declines."""

from __future__ import annotations

import json

import pytest

from modrag_studio.engine.core.document import save
from modrag_studio.engine.trust.reach import is_trusted
from modrag_studio.evaluation.evalset import EvalQuestion
from tests.distributed.helpers import index_graph, write_corpus

pytestmark = pytest.mark.ui


def test_every_way_of_running_asks_before_a_received_graph_runs(main_window, qtbot, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    outside = tmp_path / "private"
    outside.mkdir()
    data = write_corpus(tmp_path / "beir")
    doc = index_graph(None)  # corpus -> load -> split -> bm25_index -> bm25 (+ a query)
    doc.node("load").params["path"] = str(outside)
    path = tmp_path / "downloads" / "received.json"
    save(doc, path)
    assert main_window.open_path(path, offer_restore=False)
    prompt = main_window.features.trust_prompt
    asked: list[str] = []
    answer = [False]

    def ask(graph_path, found):
        asked.append("\n".join(found.lines()))
        return answer[0]

    monkeypatch.setattr(prompt, "ask", ask)
    inputs = {"corpus": str(data / "corpus.jsonl"), "query": "coral"}
    main_window.features.run.run_bar.set_values(inputs)

    panel = main_window.features.evaluation_sets.panel
    panel.questions = [EvalQuestion(id="q1", question="what changed about the coral")]
    assert panel.run() is False and not panel.busy
    variants = main_window.features.variants
    variants.new_variant("few", ["bm25.top_k=2"])
    assert variants.compare_with_base(inputs) is False
    evalset = tmp_path / "set.jsonl"
    evalset.write_text(json.dumps({"id": "q1", "question": "coral"}) + "\n")
    assert variants.compare_on_evalset(evalset, inputs) is False
    assert not variants.job.started  # nothing started
    dialog = main_window.features.index.open()
    dialog.corpus.setText(str(data / "corpus.jsonl"))
    assert dialog.start() is False and not dialog.busy
    assert "not trusted" in dialog.status.text()
    assert len(asked) == 4 and all(str(outside) in shown for shown in asked)
    assert not is_trusted(path)

    answer[0] = True  # "Trust and run": the job runs, and the graph is trusted from then on
    assert dialog.start()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=60_000)
    assert dialog.error == "" and dialog.summary["documents"] == 20
    assert is_trusted(path)
    assert len(asked) == 5


def test_compare_asks_before_a_stored_variant_that_reaches_outside(main_window, tmp_path,
                                                                   monkeypatch):
    """The base reaches nothing; the stored variant reads ../secret and contacts a remote
    host: Compare and Compare on an evaluation set list both and run nothing when declined."""
    from tests.engine.test_trust_runs import variant_graph

    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    secret = tmp_path / "secret" / "key.txt"
    path = tmp_path / "downloads" / "g.json"
    path.parent.mkdir()
    (path.parent / "t.txt").write_text("Answer {question}")
    save(variant_graph(), path)
    assert main_window.open_path(path, offer_restore=False)
    asked: list[str] = []
    monkeypatch.setattr(main_window.features.trust_prompt, "ask",
                        lambda graph_path, found: asked.append("\n".join(found.lines())))
    variants = main_window.features.variants
    variants.set_active("v")
    assert variants.compare_with_base({"question": "hi"}) is False
    evalset = tmp_path / "set.jsonl"
    evalset.write_text(json.dumps({"id": "q1", "question": "hi"}) + "\n")
    assert variants.compare_on_evalset(evalset, {"question": "hi"}) is False
    assert not variants.job.started
    assert len(asked) == 2
    for shown in asked:
        assert f"reads {secret.resolve()}  (variant 'v': prompt.template_file)" in shown
        assert "contacts remote.example  (variant 'v': llm.host)" in shown
    assert not is_trusted(path)
