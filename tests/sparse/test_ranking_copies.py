"""Fusion's fast copies are the copies pydantic makes: equal, dumped and pickled alike."""

from __future__ import annotations

import pickle

from modrag_nodes.retrieval.ranking import clone, scored, source_rank
from modrag_studio.engine.core.datatypes import Chunk, ScoredChunk, SourceRank


def test_clone_and_source_rank_equal_what_pydantic_builds():
    item = ScoredChunk(chunk=Chunk(chunk_id="pump.md#1", doc_id="pump.md", text="LP-07"),
                       score=0.5, retriever="bm25",
                       sources={"bm25": SourceRank(retriever="bm25", rank=1, score=0.5)})
    updates = {"score": 0.0, "rank": 0, "retriever": "", "sources": dict(item.sources)}
    fast, reference = clone(item, **updates), item.model_copy(update=updates)
    assert fast == reference and fast is not item
    assert fast.model_dump() == reference.model_dump()
    assert fast.model_fields_set == reference.model_fields_set
    assert pickle.loads(pickle.dumps(fast)) == reference
    fast.sources["dense"] = source_rank("dense", 3, 0.25)
    assert "dense" not in item.sources  # the copy's sources are its own
    built = SourceRank(retriever="dense", rank=3, score=0.25)
    assert fast.sources["dense"] == built
    assert fast.sources["dense"].model_dump_json() == built.model_dump_json()
    assert pickle.loads(pickle.dumps(fast.sources["dense"])) == built


def test_scored_equals_the_keyword_call_of_a_retriever():
    chunk = Chunk(chunk_id="pump.md#1", doc_id="pump.md", text="LP-07")
    cases = [
        ({"score_kind": "bm25"}, {"score_kind": "bm25", "higher_is_better": True}),
        ({"score_kind": "similarity", "rank": 2, "retriever": "dense",
          "sources": {"dense": source_rank("dense", 2, 0.75)}},
         {"score_kind": "similarity", "higher_is_better": True, "rank": 2, "retriever": "dense",
          "sources": {"dense": SourceRank(retriever="dense", rank=2, score=0.75)}}),
    ]
    for fast_args, keywords in cases:
        fast = scored(chunk, 0.75, **fast_args)
        reference = ScoredChunk(chunk=chunk, score=0.75, **keywords)
        assert fast == reference
        assert fast.model_dump() == reference.model_dump()
        assert fast.model_fields_set == reference.model_fields_set
        assert pickle.loads(pickle.dumps(fast)) == reference
        assert fast.chunk is chunk  # shared, as the keyword call shares it
    assert scored(chunk, 0.5, score_kind="bm25").sources is not scored(
        chunk, 0.5, score_kind="bm25").sources  # every item has its own sources
