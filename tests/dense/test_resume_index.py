"""Never start over: a store writes embedded chunks part by part, so an interrupted index
keeps what it embedded and the next one embeds only the rest, ending with the collection a
clean build makes."""

from __future__ import annotations

import numpy as np
import pytest

from modrag_nodes.vectorstore import chroma_store, sync
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.hooks import RunHook
from tests.dense.helpers import dense_graph, registry

THINGS = ("pump", "valve", "press", "drill", "lathe", "belt", "fan", "seal", "gear", "motor",
          "filter", "boiler")
DOCS = {f"doc{n:02d}": f"The {THINGS[n % 12]} number {n} is serviced every {10 * n + 5} hours."
        for n in range(24)}
QUESTION = "How often is the pump serviced?"


@pytest.fixture
def executor(tmp_path, monkeypatch):
    monkeypatch.setattr(sync, "FLUSH_CHUNKS", 6)
    chroma_store.forget_clients()
    yield Executor(registry(), NodeCache(), work_dir=tmp_path / "work")
    chroma_store.forget_clients()


class CancelAfter(RunHook):
    """Cancels the run once the store reports ``count`` chunks embedded."""

    def __init__(self, cancel: CancelToken, count: int) -> None:
        self.cancel, self.count, self.messages = cancel, count, []

    def on_node_progress(self, *, run_id, node_id, fraction, message):
        if node_id == "store":
            self.messages.append(message)
            if message.startswith(f"embedded {self.count}/"):
                self.cancel.cancel()


def _records(result, collection: str) -> dict[str, tuple]:
    index = result.outputs["index"]
    found = chroma_store.get_collection(chroma_store.client_for(index), collection).get(
        include=["embeddings", "documents", "metadatas"])
    return {i: (d, m, np.asarray(e)) for i, d, m, e in zip(
        found["ids"], found["documents"], found["metadatas"], found["embeddings"],
        strict=True)}


def test_an_interrupted_index_resumes_from_what_is_stored(executor):
    doc = dense_graph(DOCS, store={"collection": "resumed"})
    cancel = CancelToken()
    hook = CancelAfter(cancel, 12)
    stopped = executor.run(doc, {"question": QUESTION}, hooks=[hook], cancel=cancel,
                           target="store")
    assert stopped.status == "cancelled"
    assert any("/s" in m and "left" in m for m in hook.messages)  # the rate and time left
    again = executor.run(doc, {"question": QUESTION})
    details = again.trace.last_visit("store").details
    assert details["resumed_with"] == 12  # the two parts embedded before the cancel
    assert details["embedded"] == 24 - details["resumed_with"]
    assert again.outputs["index"].count == 24
    clean = executor.run(dense_graph(DOCS, store={"collection": "clean"}),
                         {"question": QUESTION})
    assert clean.trace.last_visit("store").details["embedded"] == 24
    resumed, built = _records(again, "resumed"), _records(clean, "clean")
    assert sorted(resumed) == sorted(built)
    for chunk_id, (text, meta, vector) in built.items():
        assert resumed[chunk_id][:2] == (text, meta)
        assert np.allclose(resumed[chunk_id][2], vector, atol=1e-5)
