"""Evidence attribution over a recorded run: every declared kind, first loss, verdict."""

from __future__ import annotations

from typing import Any

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import (
    Answer,
    ChatMessage,
    Chunk,
    Citation,
    Document,
    Prompt,
    ScoredChunk,
    SourceRank,
)
from modrag_studio.engine.core.document import from_json_dict
from modrag_studio.engine.evidence.attribution import attribute
from modrag_studio.engine.evidence.expected import ExpectedEvidence
from modrag_studio.engine.evidence.lineage import EvidenceRole, UncutRanking, chunk_lineage, role_of
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import Trace

DOCS = [Document(doc_id=f"d{i}", text=f"text of document {i}" + (
    " the pump runs 500 operating hours" if i == 7 else "")) for i in range(1, 31)]
CHUNKS = [Chunk(chunk_id=f"d{i}#0", doc_id=f"d{i}", text=d.text, end=len(d.text))
          for i, d in enumerate(DOCS, start=1)]


def _ranking(order: list[int], retriever: str, sources: dict[int, dict[str, int]] | None = None
             ) -> list[ScoredChunk]:
    out = []
    for rank, i in enumerate(order, start=1):
        src = {name: SourceRank(retriever=name, rank=r, score=1.0 / r)
               for name, r in (sources or {}).get(i, {}).items()}
        out.append(ScoredChunk(chunk=CHUNKS[i - 1], score=1.0 / rank, rank=rank,
                               retriever=retriever, sources=src))
    return out


GRAPH = {
    "schema_version": 1, "metadata": {"name": "attribution_test"},
    "nodes": [
        {"id": "q", "type": "graph.input", "params": {"name": "question"}},
        {"id": "load", "type": "load.files", "params": {}},
        {"id": "split", "type": "split.recursive", "params": {}},
        {"id": "index", "type": "bm25.index", "params": {}},
        {"id": "bm25", "type": "retrieve.bm25", "params": {"top_k": 10}},
        {"id": "vector", "type": "retrieve.bm25", "params": {"top_k": 10}},
        {"id": "fusion", "type": "fuse.rrf", "params": {"top_k": 10}},
        {"id": "rerank", "type": "rerank.embedding", "params": {"top_n": 3}},
        {"id": "guard", "type": "guard.evidence", "params": {}},
        {"id": "prompt", "type": "prompt.build", "params": {}},
        {"id": "parse", "type": "parse.answer", "params": {}},
        {"id": "out", "type": "graph.output", "params": {"name": "answer"}},
    ],
    "edges": [
        {"from": "q.value", "to": "load.path"},
        {"from": "load.documents", "to": "split.documents"},
        {"from": "split.chunks", "to": "index.chunks"},
        {"from": "index.index", "to": "bm25.index"},
        {"from": "index.index", "to": "vector.index"},
        {"from": "q.value", "to": "bm25.query"},
        {"from": "q.value", "to": "vector.query"},
        {"from": "bm25.results", "to": "fusion.rankings"},
        {"from": "vector.results", "to": "fusion.rankings"},
        {"from": "q.value", "to": "rerank.query"},
        {"from": "fusion.results", "to": "rerank.candidates"},
        {"from": "rerank.results", "to": "guard.evidence"},
        {"from": "q.value", "to": "guard.query"},
        {"from": "guard.query", "to": "prompt.query"},
        {"from": "guard.evidence", "to": "prompt.evidence"},
        {"from": "prompt.prompt", "to": "parse.prompt"},
        {"from": "q.value", "to": "parse.answer"},
        {"from": "parse.answer", "to": "out.value"},
    ],
}


def _run(**override: dict[str, Any]) -> RunResult:
    """A recorded run; by default d7 goes bm25 #2, vector #9, fusion #5, rerank #1, cited."""
    bm25 = _ranking([1, 7, 2, 3, 4, 5, 6, 8, 9, 10], "bm25")
    vector = _ranking([11, 12, 13, 14, 15, 16, 17, 18, 7, 19], "vector")
    fused = _ranking([1, 11, 2, 12, 7, 3, 13, 4, 14, 5], "fusion",
                     {7: {"bm25": 2, "vector": 9}})
    reranked = _ranking([7, 1, 2], "rerank")
    prompt = Prompt(messages=[ChatMessage(role="user", content="q")], evidence=reranked)
    answer = Answer(text="500 hours [d7]", evidence=reranked,
                    citations=[Citation(ref="d7", doc_id="d7")])
    values: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "q": ({}, {"value": "how long"}),
        "load": ({"path": "x"}, {"documents": DOCS}),
        "split": ({"documents": DOCS}, {"chunks": CHUNKS}),
        "index": ({"chunks": CHUNKS}, {"index": object()}),
        "bm25": ({"index": object(), "query": "q"}, {"results": bm25}),
        "vector": ({"index": object(), "query": "q"}, {"results": vector}),
        "fusion": ({"rankings": [bm25, vector]}, {"results": fused}),
        "rerank": ({"candidates": fused}, {"results": reranked, "reranked": True}),
        "guard": ({"evidence": reranked}, {"evidence": reranked, "query": "q"}),
        "prompt": ({"evidence": reranked}, {"prompt": prompt}),
        "parse": ({"answer": "500 hours [d7]", "prompt": prompt}, {"answer": answer}),
        "out": ({"value": answer}, {"value": answer}),
    }
    for node_id, (ins, outs) in override.items():
        values[node_id] = (ins, outs)
    result = RunResult(trace=Trace(run_id="t", graph_name="attribution_test", started_at=0.0),
                       registry=default_registry())
    for node_id, (ins, outs) in values.items():
        result.node_inputs[(node_id, 0)] = ins
        result.node_outputs[(node_id, 0)] = outs
    return result


DOC7 = ExpectedEvidence.parse(["doc:d7"])
GRAPH_DOC = from_json_dict(GRAPH)


def test_every_node_on_the_path_says_where_the_evidence_is() -> None:
    result = attribute(_run(), GRAPH_DOC, DOC7)
    texts = {n.node_id: n.text for n in result.nodes}
    assert texts["load"].startswith("loaded: d7")
    assert texts["split"] == "in chunk d7#0 of 30"
    assert texts["index"].startswith("indexed (1 relevant chunks of 30")
    assert texts["bm25"] == "#2 of 10" and texts["vector"] == "#9 of 10"
    assert texts["fusion"] == "#5 of 10 (bm25 #2, vector #9)"
    assert texts["rerank"] == "#1 of 3, was #5"
    assert texts["guard"] == "passed, #1 of 3"
    assert texts["prompt"] == "block [1] of 3"
    assert texts["parse"] == "cited [d7]"
    assert "q" not in texts  # graph inputs declare nothing and show nothing
    assert result.first_loss is None
    assert result.verdict == "The expected evidence reaches the answer: cited [d7] (parse)."
    assert "found by keyword search (bm25) at position 2" in result.narration
    assert "cites it" in result.narration


def test_rerank_cut_is_the_first_loss() -> None:
    fused = _run().node_outputs[("fusion", 0)]["results"]
    reranked = _ranking([1, 2, 3], "rerank")
    prompt = Prompt(messages=[ChatMessage(role="user", content="q")], evidence=reranked)
    answer = Answer(text="x", evidence=reranked)
    result = attribute(_run(
        rerank=({"candidates": fused}, {"results": reranked}),
        guard=({"evidence": reranked}, {"evidence": reranked}),
        prompt=({"evidence": reranked}, {"prompt": prompt}),
        parse=({"prompt": prompt}, {"answer": answer}),
        out=({"value": answer}, {"value": answer}),
    ), GRAPH_DOC, DOC7)
    rerank = result.node("rerank")
    assert rerank is not None and rerank.status == "lost"
    assert rerank.text == "dropped, was #5 (top_n 3)"  # no uncut ranking: no "now"
    assert result.node("guard").status == "never_reached"
    assert result.first_loss == "rerank"
    assert result.verdict == "Lost at rerank: #5 after fusion, dropped, was #5 (top_n 3)."
    assert "the reranker (rerank) moved it below the cut" in result.narration


def _with_params(**params: dict[str, Any]) -> Any:
    nodes = [{**n, "params": {**n["params"], **params.get(n["id"], {})}} for n in GRAPH["nodes"]]
    return from_json_dict({**GRAPH, "nodes": nodes})


def _lost_after(node_id: str, kept: list[ScoredChunk], **more: Any) -> RunResult:
    """A run where ``kept`` leaves ``node_id`` and everything after it lacks d7."""
    prompt = Prompt(messages=[ChatMessage(role="user", content="q")], evidence=kept)
    answer = Answer(text="x", evidence=kept)
    return _run(guard=({"evidence": kept}, {"evidence": kept}),
                prompt=({"evidence": kept}, {"prompt": prompt}),
                parse=({"prompt": prompt}, {"answer": answer}),
                out=({"value": answer}, {"value": answer}), **more)


def test_rerank_loss_says_where_the_whole_ranking_put_it() -> None:
    fused = _run().node_outputs[("fusion", 0)]["results"]
    order = [1, 11, 2, 12, 3, 13, 4, 14, 5, 15, 7, 16]  # d7 is #11 after re-scoring
    uncut = _ranking(order, "rerank")
    result = attribute(_lost_after("rerank", uncut[:8], rerank=(
        {"candidates": fused}, {"results": uncut[:8], "reranked": True,
                                "uncut": UncutRanking(items=uncut, cut=8)})),
        _with_params(rerank={"top_n": 8}), DOC7)
    rerank = result.node("rerank")
    assert rerank.text == "dropped, was #5, now #11 (top_n 8)"
    assert (rerank.was, rerank.now, rerank.limit) == (5, 11, "8")
    assert rerank.to_dict()["before_cut"] == 11
    assert result.verdict == "Lost at rerank: #5 after fusion, #11 after rerank, top_n is 8."
    assert result.narration == ("The right passage was found by keyword search (bm25) at "
                                "position 2, but the reranker (rerank) moved it from position "
                                "5 to 11, below the cut of 8.")
    # the uncut port is not an evidence output: the node still lost it, lineage skips it
    assert rerank.status == "lost"
    assert all(a.port != "uncut" for a in chunk_lineage(_run(rerank=(
        {"candidates": fused}, {"results": uncut[:8], "uncut": UncutRanking(items=uncut)})),
        GRAPH_DOC, "d7#0"))


def test_fusion_cut_says_the_position_before_the_cut() -> None:
    run = _run()
    bm25 = run.node_outputs[("bm25", 0)]["results"]
    vector = run.node_outputs[("vector", 0)]["results"]
    filler = [Chunk(chunk_id=f"x{i}", doc_id=f"x{i}", text="filler") for i in range(199)]
    whole = [ScoredChunk(chunk=c, score=1.0 / (i + 1), rank=i + 1, retriever="fusion")
             for i, c in enumerate(filler[:26] + [CHUNKS[6]] + filler[26:])]
    result = attribute(_lost_after("fusion", whole[:20], fusion=(
        {"rankings": [bm25, vector]}, {"results": whole[:20],
                                       "uncut": UncutRanking(items=whole, cut=20)}),
        rerank=({"candidates": whole[:20]}, {"results": whole[:3]})),
        _with_params(fusion={"top_k": 20}), DOC7)
    fusion = result.node("fusion")
    assert fusion.text == "#27 of 200, cut by top_k=20 (bm25 #2, vector #9)"
    assert result.first_loss == "fusion"
    assert result.verdict == ("Lost at fusion: bm25 #2, vector #9 before fusion, #27 after, "
                              "top_k is 20.")
    assert "merging the searches (fusion) put it at position 27, below the cut of 20" in \
        result.narration


def test_retrieval_loss_counts_only_when_no_other_path_keeps_it() -> None:
    bm25 = _ranking([1, 2, 3], "bm25")
    vector = _ranking([4, 5, 6], "vector")
    fused = _ranking([1, 4, 2], "fusion")
    empty_prompt = Prompt(messages=[], evidence=fused)
    result = attribute(_run(
        bm25=({"index": 1}, {"results": bm25}), vector=({"index": 1}, {"results": vector}),
        fusion=({"rankings": [bm25, vector]}, {"results": fused}),
        rerank=({"candidates": fused}, {"results": fused}),
        guard=({"evidence": fused}, {"evidence": fused}),
        prompt=({"evidence": fused}, {"prompt": empty_prompt}),
        parse=({"prompt": empty_prompt}, {"answer": Answer(text="x")}),
        out=({"value": Answer(text="x")}, {"value": Answer(text="x")}),
    ), GRAPH_DOC, DOC7)
    assert result.node("bm25").text == "not in the top 3 (top_k=10)"
    assert result.node("fusion").status == "never_reached"
    assert result.first_loss == "bm25"
    assert result.verdict.startswith("Lost at bm25: ")
    # a loss on one branch that the other branch makes up for is not the first loss
    kept = attribute(_run(bm25=({"index": 1}, {"results": bm25})), GRAPH_DOC, DOC7)
    assert kept.node("bm25").status == "lost" and kept.first_loss is None
    # a retriever that found nothing (a graph search with no linked entity) says so
    nothing = attribute(_run(bm25=({"index": 1}, {"results": []})), GRAPH_DOC, DOC7)
    assert nothing.node("bm25").text == "retrieved nothing"


def test_fusion_cut_names_the_input_ranks() -> None:
    run = _run()
    bm25 = run.node_outputs[("bm25", 0)]["results"]
    vector = run.node_outputs[("vector", 0)]["results"]
    fused = _ranking([1, 11, 2], "fusion")
    result = attribute(_run(fusion=({"rankings": [bm25, vector]}, {"results": fused})),
                       GRAPH_DOC, DOC7, targets=["fusion"])
    assert result.node("fusion").text == "cut by top_k=10: was bm25 #2, vector #9"
    assert result.first_loss == "fusion"
    assert [n.node_id for n in result.nodes][-1] == "fusion"  # targets limit the nodes


def test_guard_stop_grader_and_budget() -> None:
    reranked = _run().node_outputs[("rerank", 0)]["results"]
    stopped = attribute(_run(guard=({"evidence": reranked}, {"fallback": Answer(text="no")}),
                             prompt=({}, {}), parse=({}, {}), out=({}, {})), GRAPH_DOC, DOC7)
    assert stopped.node("guard").text == "stopped the run"
    assert stopped.first_loss == "guard"
    budget = Prompt(messages=[], evidence=reranked[1:], dropped=["d7#0"])
    squeezed = attribute(_run(prompt=({"evidence": reranked}, {"prompt": budget}),
                              parse=({"prompt": budget}, {"answer": Answer(text="x")}),
                              out=({}, {})), GRAPH_DOC, DOC7)
    assert squeezed.node("prompt").text == \
        "dropped by the token budget (context_budget_tokens=1700)"
    assert squeezed.first_loss == "prompt"


def test_grader_judged_not_relevant() -> None:
    doc = from_json_dict({**GRAPH, "nodes": [*GRAPH["nodes"], {
        "id": "grade", "type": "grade.documents", "params": {}}], "edges": [
        *GRAPH["edges"], {"from": "rerank.results", "to": "grade.chunks"}]})
    reranked = _run().node_outputs[("rerank", 0)]["results"]
    result = attribute(_run(grade=({"chunks": reranked}, {
        "kept": reranked[1:], "dropped": reranked[:1]})), doc, DOC7, targets=["grade"])
    grade = result.node("grade")
    assert grade.text == "judged not relevant (was #1 of 3; judged relevant: d1#0, d2#0)"
    assert grade.short == "judged not relevant"
    assert result.first_loss == "grade"
    assert result.verdict == ("Lost at grade: #1 after rerank, judged not relevant, judged "
                              "relevant: d1#0, d2#0.")
    assert "the grader (grade) judged it not relevant" in result.narration
    kept = attribute(_run(grade=({"chunks": reranked}, {
        "kept": reranked[:2], "dropped": reranked[2:]})), doc, DOC7, targets=["grade"])
    assert kept.node("grade").text == "kept, #1 of 2 (2 of 3 judged relevant)"
    nothing = attribute(_run(grade=({"chunks": reranked}, {"dropped": reranked})), doc, DOC7,
                        targets=["grade"])
    assert nothing.node("grade").text == ("judged not relevant (was #1 of 3; none judged "
                                          "relevant)")


def test_not_cited_is_a_generation_loss() -> None:
    reranked = _run().node_outputs[("rerank", 0)]["results"]
    answer = Answer(text="x [d1]", evidence=reranked, citations=[Citation(ref="d1",
                                                                          doc_id="d1")])
    result = attribute(_run(parse=({"answer": "x"}, {"answer": answer}),
                            out=({"value": answer}, {"value": answer})), GRAPH_DOC, DOC7)
    assert result.node("parse").text == "not cited (given as block [1])"
    assert result.first_loss == "parse"
    assert "did not cite it" in result.narration


def test_focus_that_cuts_the_phrase_out_of_a_kept_chunk_is_the_loss() -> None:
    doc = from_json_dict({**GRAPH, "nodes": [*GRAPH["nodes"], {
        "id": "focus", "type": "evidence.focus", "params": {}}], "edges": [
        *GRAPH["edges"], {"from": "rerank.results", "to": "focus.evidence"}]})
    reranked = _run().node_outputs[("rerank", 0)]["results"]
    cut = reranked[0].model_copy(update={"chunk": reranked[0].chunk.model_copy(
        update={"text": "text of document 7"})})
    phrase = ExpectedEvidence.parse(["text:500 operating hours"])
    lost = attribute(_run(focus=({"evidence": reranked}, {
        "evidence": [cut, *reranked[1:]], "dropped": []})), doc, phrase, targets=["focus"])
    focus = lost.node("focus")
    assert focus.text == "cut out (was #1 of 3; kept: d7#0, d1#0, d2#0)"
    assert lost.first_loss == "focus"
    assert lost.narration.endswith("but the evidence focus cut it out.")
    kept = attribute(_run(focus=({"evidence": reranked}, {
        "evidence": reranked[:1], "dropped": reranked[1:]})), doc, phrase, targets=["focus"])
    assert kept.node("focus").text == "kept, #1 of 1 (1 of 3 kept)"
    assert kept.first_loss is None


def test_phrase_resolution_on_the_splitter_output() -> None:
    doc = DOCS[6]
    start = doc.text.index("500")
    halves = [Chunk(chunk_id="a", doc_id="d7", text=doc.text[:start + 5], end=start + 5),
              Chunk(chunk_id="b", doc_id="d7", text=doc.text[start + 5:], start=start + 5,
                    end=len(doc.text))]
    phrase = ExpectedEvidence.parse(["text:500 operating hours"])
    result = attribute(_run(split=({"documents": DOCS}, {"chunks": halves}),
                            index=({"chunks": halves}, {"index": 1})), GRAPH_DOC, phrase,
                       targets=["index"])
    assert result.node("split").text == "not in any chunk: the loader or splitter dropped it"
    assert result.resolutions == ["text:500 operating hours: split across chunks a and b"]
    assert result.first_loss == "split"
    whole = attribute(_run(), GRAPH_DOC, phrase, targets=["split"])
    assert whole.resolutions == ["text:500 operating hours: in d7#0"]


def test_chunk_lineage_lists_every_node_with_its_rank() -> None:
    seen = {(a.node_id, a.position) for a in chunk_lineage(_run(), GRAPH_DOC, "d7#0")}
    assert {("bm25", 2), ("vector", 9), ("fusion", 5), ("rerank", 1), ("prompt", 1)} <= seen
    assert not any(node == "index" for node, _ in seen)


EXPECTED_KINDS = {
    "load.files": "source", "split.recursive": "splits", "split.fixed": "splits",
    "split.sentence": "splits", "split.markdown": "splits", "split.semantic": "splits",
    "ingest.smart": "splits", "ingest.split": "splits", "bm25.index": "indexes",
    "store.chroma": "indexes", "embed.chunks": "indexes", "retrieve.bm25": "retrieves",
    "retrieve.vector": "retrieves", "kg.search": "retrieves", "fuse.rrf": "merges",
    "fuse.convex": "merges", "rerank.embedding": "reorders", "rerank.cross_encoder": "reorders",
    "rerank.flag": "reorders", "kg.centrality_rerank": "reorders", "grade.documents": "filters",
    "evidence.focus": "filters",
    "guard.evidence": "gate", "prompt.build": "prompt", "llm.generate": "passes",
    "answer.select": "passes", "graph.output": "passes", "check.support": "passes",
    "parse.answer": "cites", "debug.passthrough": "passes", "evidence.pin": "passes",
}


@pytest.mark.parametrize("type_id,kind", sorted(EXPECTED_KINDS.items()))
def test_node_types_declare_their_evidence_role(type_id: str, kind: str) -> None:
    node_type = default_registry().get(type_id)
    role = role_of(node_type)
    assert role is not None and role.kind == kind
    ports = {p.name for p in node_type.inputs} | {p.name for p in node_type.outputs}
    named = set(role.inputs) | set(role.outputs) | {role.dropped_port, role.stop_port,
                                                    role.uncut_port}
    assert named - {None} <= ports  # a declaration names only ports the type has
    if role.uncut_port is not None:  # the whole ranking is never an evidence output
        assert role.uncut_port not in role.out_ports(node_type)
        port = next(p for p in node_type.outputs if p.name == role.uncut_port)
        assert port.type is UncutRanking  # no list[ScoredChunk]: not scored as a ranking
        assert role.kind in ("retrieves", "merges", "reorders")
    if role.top_param is not None:
        assert role.top_param in node_type.Params.model_fields


def test_undeclared_types_show_nothing_and_bad_kinds_are_refused() -> None:
    assert role_of(default_registry().get("graph.input")) is None
    with pytest.raises(ValueError, match="evidence role kind"):
        EvidenceRole("shuffles")  # type: ignore[arg-type]


def test_citation_lineage_finds_the_prompt_source_and_the_citations() -> None:
    from modrag_studio.engine.evidence.lineage import Place, citations_of, prompt_block_source

    run = _run()
    # prompt.evidence is wired from guard.evidence, where d7#0 is the first row
    assert prompt_block_source(run, GRAPH_DOC, "d7#0") == Place("guard", "evidence", 1)
    assert prompt_block_source(run, GRAPH_DOC, "d2#0") == Place("guard", "evidence", 3)
    assert prompt_block_source(run, GRAPH_DOC, "d30#0") is None  # in no prompt
    cited = citations_of(run, GRAPH_DOC, CHUNKS[6])  # [d7] cites the document: its chunks
    assert [(c.node_id, c.port, c.index, c.ref) for c in cited] == [("parse", "answer", 0, "d7")]
    assert citations_of(run, GRAPH_DOC, CHUNKS[0]) == []
