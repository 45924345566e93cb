"""Node-by-node diff pieces: rank tables and answers side by side."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Answer, Chunk, Citation, ScoredChunk
from modrag_studio.engine.run.trace import NodeVisit
from modrag_studio.evaluation.run_diff import _port_diff, badge, rank_diff


def _ranking(ids: list[str]) -> list[ScoredChunk]:
    return [ScoredChunk(chunk=Chunk(chunk_id=c, doc_id=c.split("#")[0], text=c), score=1 / r,
                        rank=r) for r, c in enumerate(ids, 1)]


def test_rank_diff_lists_entered_left_and_moved_chunks():
    diff = rank_diff(_ranking(["a#0", "b#0", "c#0", "d#0"]), _ranking(["c#0", "a#0", "e#0"]),
                     top=3)
    assert diff["entered"] == [{"chunk_id": "e#0", "doc_id": "e", "rank_b": 3}]
    assert diff["left"] == [{"chunk_id": "b#0", "doc_id": "b", "rank_a": 2}]
    assert diff["moved"] == [
        {"chunk_id": "c#0", "doc_id": "c", "rank_a": 3, "rank_b": 1, "up_by": 2},
        {"chunk_id": "a#0", "doc_id": "a", "rank_a": 1, "rank_b": 2, "up_by": -1}]
    entry = {"status": "changed", "ports": {"results": {"kind": "ranking", "same": False,
                                                        **diff}}}
    assert badge(entry) == "+1 in -1 out 2 moved"


def test_answers_side_by_side_with_citations_time_and_tokens():
    visit_a = NodeVisit(node_id="gen", type_id="generate", duration_s=1.25,
                        details={"completion_tokens": 12, "model": "m"})
    visit_b = NodeVisit(node_id="gen", type_id="generate", duration_s=0.5,
                        details={"completion_tokens": 7})
    a = Answer(text="Aspirin helps [1].", citations=[Citation(ref="1", doc_id="d1")])
    b = Answer(text="No evidence.")
    diff = _port_diff(a, b, visit_a, visit_b)
    assert diff["kind"] == "answer" and not diff["same"]
    assert diff["a"] == {"text": "Aspirin helps [1].", "citations": ["1"],
                         "invalid_citations": [], "model": "", "seconds": 1.25,
                         "tokens": {"completion_tokens": 12}}
    assert diff["b"]["tokens"] == {"completion_tokens": 7} and diff["b"]["citations"] == []
    assert badge({"status": "changed", "ports": {"answer": diff}}) == "answer differs"
    assert _port_diff(a, a.model_copy(), visit_a, visit_a)["same"]
