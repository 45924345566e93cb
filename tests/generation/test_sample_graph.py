"""The self-check sample graph validates and runs end to end with the scripted backend."""

from __future__ import annotations

import re

from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor
from modrag_studio.engine.core.document import loads
from modrag_studio.engine.core.validation import validate


def _doc(root):
    return loads((root / "sample_graphs" / "self_check_rag.json").read_text(encoding="utf-8"))


def test_sample_graph_is_valid(root) -> None:
    assert validate(_doc(root), default_registry()) == []


def test_sample_graph_runs_with_scripted_model(root, fake_llm) -> None:
    backend, _ = fake_llm
    # attempt 1: no on the cited block, no on all the evidence; attempt 2: yes on the cited
    verdicts = ["no", "no", "yes"]

    def responder(messages) -> str:
        system, user = messages[0].content, messages[-1].content
        if "check answers against evidence" in system:
            return verdicts.pop(0)
        if user.startswith("Rewrite the question"):
            return "LP-07 pump service interval"
        assert re.search(r"^\[1\] \S", user, re.MULTILINE), user  # small-model preset
        assert "doc_id:" not in user  # no header lines for the model to copy
        return "According to the schedule, it is serviced regularly [1]."

    backend.respond_with(responder)
    doc = _doc(root)
    doc.node("llm").params["backend"] = "test-fake"
    doc.node("rewrite").params["drift_guard"] = False  # keeps the embedder model unloaded
    doc.node("corpus").params["default"] = str(root / "resources" / "sample_corpus")
    executor = Executor(default_registry())
    result = executor.run(doc, {"question": "How often is pump LP-07 serviced?"})
    assert result.ok, result.trace.to_json()
    answer = result.outputs["answer"]
    assert not answer.fallback and answer.citations and answer.invalid_citations == []
    assert answer.citations[0].valid
    assert "LP-07" in answer.evidence[0].chunk.text
    assert len(result.trace.visits_of("check")) == 2
    assert len(result.trace.visits_of("retrieve")) == 2
    assert result.trace.visits_of("rewrite")[1].details["feedback"] is True
