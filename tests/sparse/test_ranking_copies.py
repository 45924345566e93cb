"""Fusion's fast copies are the copies pydantic makes: equal, dumped and pickled alike."""

from __future__ import annotations

import pickle

from modrag_nodes.retrieval.ranking import clone, source_rank
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
