"""Force into the prompt: the expected chunk pinned before the prompt builder, upstream cached."""

from __future__ import annotations

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import ChatMessage, ScoredChunk
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.core.validation import errors_only, validate
from modrag_studio.engine.evidence.counterfactual import (
    PIN_NODE,
    CounterfactualError,
    force_into_prompt,
    with_pinned_evidence,
)
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.run.executor import Executor

DOCS = {"pump.md": "The lubrication pump LP-07 is serviced every 500 operating hours.",
        "press.md": "The press line PR-300 pump is checked every week by the press team.",
        "canteen.md": "The canteen serves lunch from noon; the pump room is closed on Sunday."}


def _graph(top_k: int = 1, reranker: str | None = None, top_n: int = 2) -> dict:
    """BM25 (``top_k``) into a prompt, a scripted model and the parser; with ``reranker``, a
    node of that type (``top_n``) between BM25 and the prompt."""
    def n(node_id: str, type_id: str, **params) -> dict:
        return {"id": node_id, "type": type_id, "params": params}

    evidence = "bm25.results"
    nodes = [n("q", "graph.input", name="question"), n("corpus", "graph.input", name="corpus"),
             n("load", "load.files"), n("split", "split.recursive", chunk_size=200),
             n("index", "bm25.index"), n("bm25", "retrieve.bm25", top_k=top_k),
             n("llm", "llm.model", backend="test-fake"),
             n("prompt", "prompt.build"), n("gen", "llm.generate"),
             n("parse", "parse.answer"), n("out", "graph.output", name="answer")]
    edges = [("corpus.value", "load.path"), ("load.documents", "split.documents"),
             ("split.chunks", "index.chunks"), ("index.index", "bm25.index"),
             ("q.value", "bm25.query"), ("q.value", "prompt.query"),
             ("prompt.prompt", "gen.prompt"), ("llm.llm", "gen.llm"),
             ("gen.answer", "parse.answer"), ("prompt.prompt", "parse.prompt"),
             ("parse.answer", "out.value")]
    if reranker is not None:
        nodes.insert(6, n("rerank", reranker, top_n=top_n))
        edges += [("q.value", "rerank.query"), ("bm25.results", "rerank.candidates")]
        evidence = "rerank.results"
    edges.append((evidence, "prompt.evidence"))
    return {"schema_version": 1, "metadata": {"name": "force_test"}, "nodes": nodes,
            "edges": [{"from": a, "to": b} for a, b in edges]}


def _reply(messages: list[ChatMessage]) -> str:
    text = messages[-1].content
    if "500 operating hours" in text:
        doc = "pump.md" if "[pump.md]" in text else "pump"
        return f"Every 500 operating hours [{doc}]."
    return "The documents do not say."


def test_forced_prompt_turns_a_retrieval_loss_into_a_cited_answer(fake_llm, tmp_path) -> None:
    backend, _ = fake_llm
    backend.respond_with(_reply)
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text)
    doc = from_json_dict(_graph())
    executor = Executor(default_registry(),
                        cache=NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path)
    inputs = {"question": "press pump checked", "corpus": str(tmp_path)}
    first = executor.run(doc, inputs)
    assert first.ok
    expected = ExpectedEvidence.parse(["text:500 operating hours"])
    outcome = force_into_prompt(executor, doc, inputs, first, expected)
    assert outcome.prompt_node == "prompt" and len(outcome.inserted) == 1
    assert outcome.inserted[0].startswith("pump.md")
    assert outcome.first.text == "The documents do not say."
    assert outcome.second.text == "Every 500 operating hours [pump.md]."
    cached = {v.node_id for v in outcome.result.trace.visits if v.cached}
    assert {"load", "split", "index", "bm25"} <= cached  # upstream from the cache
    assert outcome.attribution.node("parse").text == "cited [pump.md]"
    assert outcome.attribution.node(PIN_NODE).status == "reached"
    assert "forced into prompt" in outcome.summary()
    assert outcome.to_dict()["second"] == outcome.second.text


def test_pinned_graph_is_valid_and_rewires_only_the_evidence_input(fake_llm) -> None:
    doc = from_json_dict(_graph())
    chunk = ScoredChunk.model_validate({"chunk": {"chunk_id": "c", "doc_id": "d", "text": "t"},
                                        "score": 1.0})
    forced = with_pinned_evidence(doc, "prompt", [chunk], default_registry())

    assert not errors_only(validate(forced, default_registry()))
    into_prompt = {e.source for e in forced.edges if e.target == "prompt.evidence"}
    assert into_prompt == {f"{PIN_NODE}.results"}
    assert {e.source for e in forced.edges if e.target == f"{PIN_NODE}.evidence"} == {
        "bm25.results"}
    assert len(doc.nodes) + 1 == len(forced.nodes)  # the original is left as it was


def test_no_matching_chunk_is_a_clear_error(fake_llm, tmp_path) -> None:
    backend, _ = fake_llm
    backend.respond_with(_reply)
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text)
    doc = from_json_dict(_graph())
    executor = Executor(default_registry(),
                        cache=NodeCache(disk_dir=tmp_path / "cache"), work_dir=tmp_path)
    inputs = {"question": "pump", "corpus": str(tmp_path)}
    first = executor.run(doc, inputs)
    with pytest.raises(CounterfactualError, match="no chunk of the last run"):
        force_into_prompt(executor, doc, inputs, first, ExpectedEvidence.parse(["doc:nope"]))
