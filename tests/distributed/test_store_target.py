"""The Ray job's driver-side writer of a Chroma folder, without Ray: blocks of a corpus slip
are held back and never written, the delete guard refuses before anything changes (the
collection keeps its in-sync stamp), a read-only context refuses the job, and an ordinary
re-index streams its blocks once the guard cannot fail any more."""

from __future__ import annotations

import numpy as np
import pytest

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import chroma_store as cs
from modrag_studio.distributed.plan import StepSpec
from modrag_studio.distributed.ray_index import _StoreTarget
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.errors import NodeConfigError
from modrag_studio.engine.trust.store_mode import StoreReadOnly, read_only_stores

SPEC = EmbedderSpec(kind="ollama", model="fixture")  # vectors come with the blocks


def chunks(n: int, tag: str = "") -> list[Chunk]:
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text=f"text {i}{tag}", start=0, end=6,
                  index=0, source="corpus.jsonl") for i in range(n)]


def block(part: list[Chunk]) -> dict:
    return {"chunk_id": np.array([c.chunk_id for c in part]),
            "chunk": np.array([c.model_dump_json() for c in part]),
            "embedded": np.ones(len(part), dtype=bool),
            "vector": np.ones((len(part), 4), dtype=np.float32)}


def index(folder, parts: list[list[Chunk]]) -> tuple[_StoreTarget, list[int]]:
    target = _StoreTarget(StepSpec("store", "store.chroma",
                                   {"path": str(folder), "collection": "c10"}), SPEC)
    written = []
    with target.locked(None):
        target.open()
        for part in parts:
            written.append(target.take(block(part)))
            target.note_dim(block(part))
        everything = [c for part in parts for c in part]
        written.append(target.settle(everything))
        target.finish(everything)
    return target, written


def collection(folder):
    cs.forget_clients()
    return cs.get_collection(cs.client_for(("chroma-persistent", str(folder))), "c10")


def test_a_slip_writes_nothing_and_keeps_the_stamp(tmp_path):
    folder = tmp_path / "chroma"
    all10 = chunks(10)
    _, written = index(folder, [all10[:5], all10[5:]])
    assert written == [5, 5, 0]  # a new collection: nothing to guard, blocks stream
    before = collection(folder).metadata
    slip = [all10[0].model_copy(update={"source": "elsewhere/corpus.jsonl"})]
    with pytest.raises(NodeConfigError, match="would delete 9 of the 10 chunks"):
        index(folder, [slip])
    stored = collection(folder)
    assert stored.count() == 10 and stored.metadata == before  # still in sync
    assert stored.get(ids=["c0"], include=["metadatas"])["metadatas"][0]["source"] == \
        "corpus.jsonl"  # the held-back block was never written


def test_an_ordinary_reindex_streams_once_the_guard_cannot_fail(tmp_path):
    folder = tmp_path / "chroma"
    index(folder, [chunks(10)])
    changed = chunks(10, tag=" (changed)")
    _, written = index(folder, [changed[:3], changed[3:6], changed[6:]])
    assert written == [0, 6, 4, 0]  # held until 5 of 10 seen, then written as they come
    assert collection(folder).count() == 10


def test_a_read_only_context_refuses_the_job(tmp_path):
    target = _StoreTarget(StepSpec("store", "store.chroma",
                                   {"path": str(tmp_path / "chroma"), "collection": "c10"}), SPEC)
    with read_only_stores(), target.locked(None), pytest.raises(StoreReadOnly):
        target.open()
    assert not (tmp_path / "chroma" / cs.SQLITE_FILE).exists()
