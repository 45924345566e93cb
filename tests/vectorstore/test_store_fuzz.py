"""Random sequences of corpora synchronised into both stores (hypothesis): after every step
each store holds exactly what the inputs say, its stamp and count match, and both stores hold
the same records and answer a search alike."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from modrag_nodes.embedding.contracts import EmbeddedChunks, record_hash
from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import handles, records
from modrag_studio.engine import Executor, GraphDocument, NodeCache
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import OutputPort
from tests.hardening.helpers import STORES, registry

DIM = 8
IDS = [f"doc{i % 4}.md#{i}" for i in range(8)] + ["it's #8", "ü/∂ #9"]


class ItemsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[tuple[str, str, str]] = []  # (chunk id, text, tag)


class FixtureItems(NodeType):
    """Test fixture: the given chunks with vectors derived from their text (no model)."""

    type_id = "testdata.items"
    category = "Test"
    Params = ItemsParams
    outputs = (OutputPort("embedded", EmbeddedChunks),)

    def run(self, ctx: NodeContext, params: ItemsParams) -> dict[str, Any]:
        chunks = [chunk(*item) for item in params.items]
        vectors = np.stack([vector(c.text) for c in chunks]) if chunks \
            else np.zeros((0, DIM), np.float32)
        return {"embedded": EmbeddedChunks(
            chunks=chunks, vectors=vectors, model_id="ollama:fixture", dim=DIM,
            embedder=EmbedderSpec(kind="ollama", model="fixture"))}


def chunk(chunk_id: str, text: str, tag: str) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], text=text, start=0,
                 end=len(text), index=0, source=chunk_id.split("#")[0],
                 metadata={"tag": tag} if tag else {})


def vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=DIM).astype(np.float32)


def graph(store: str, folder: Path, items: list, delete_missing: bool) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "store-fuzz"},
        "nodes": [
            {"id": "emb", "type": "testdata.items", "params": {"items": items}},
            {"id": "store", "type": store,
             "params": {"path": str(folder), "collection": "fuzz", "max_delete_share": 1.0,
                        "delete_missing": delete_missing}},
            {"id": "out", "type": "graph.output", "params": {"name": "index"}},
        ],
        "edges": [{"from": "emb.embedded", "to": "store.embedded"},
                  {"from": "store.index", "to": "out.value"}],
    })


def stored(index) -> dict[str, tuple[str, str]]:
    """``{id: (text, record hash)}`` of every record in the index's collection."""
    key = handles.location_key(index)
    collection, _ = handles.open_collection(key, index.collection)
    got = collection.get(ids=IDS, include=["documents", "metadatas"])
    return {i: (text, meta["record_hash"])
            for i, text, meta in zip(got["ids"], got["documents"], got["metadatas"],
                                     strict=True)}


texts = st.sampled_from(["alpha", "beta", "gamma pumps", "delta valves", "epsilon", "zeta"])
corpora = st.dictionaries(st.sampled_from(IDS), st.tuples(texts, st.sampled_from(["", "v2"])),
                          max_size=len(IDS))
steps = st.lists(st.tuples(corpora, st.booleans()), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def reg():
    reg = registry()
    reg.register(FixtureItems)
    return reg


@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=steps)
def test_random_sync_sequences_leave_both_stores_as_the_inputs_say(reg, tmp_path_factory,
                                                                   sequence):
    folder = tmp_path_factory.mktemp("fuzz")
    handles.forget()
    executor = Executor(reg, NodeCache())
    expected: dict[str, tuple[str, str]] = {}
    for corpus, delete_missing in sequence:
        items = [(cid, text, tag) for cid, (text, tag) in sorted(corpus.items())]
        now = {cid: (text, record_hash(chunk(cid, text, tag))) for cid, text, tag in items}
        expected = now if delete_missing else {**expected, **now}
        for store in STORES:
            result = executor.run(graph(store, folder / store, items, delete_missing))
            assert result.ok, [v.error.message for v in result.trace.visits if v.error]
            index = result.outputs["index"]
            assert stored(index) == expected, store
            assert index.count == len(expected)
            state = {i: ("", h) for i, (_t, h) in expected.items()}
            assert index.stamp == records.content_stamp(state, "ollama:fixture")
            if expected:  # a chunk's own vector finds a chunk of that text first
                text = expected[min(expected)][0]
                assert best(index, text)[0] == (1.0, text), store
    handles.forget()


def best(index, text: str) -> list[tuple[float, str]]:
    """(similarity, text) of the three records nearest to ``text``'s vector."""
    collection, _ = handles.open_collection(handles.location_key(index), index.collection)
    found = collection.query(query_embeddings=np.stack([vector(text)]), n_results=3,
                             include=["documents", "distances"])
    return [(round(1 - d, 4), t) for d, t in zip(found["distances"][0], found["documents"][0],
                                                 strict=True)]
