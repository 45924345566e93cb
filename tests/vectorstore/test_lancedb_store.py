"""store.lancedb through the engine, on a real LanceDB folder: the synchronisation, its guards,
the lock, read-only mode, reopening from disk, and the same search results as store.chroma."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import handles
from modrag_nodes.vectorstore import lance_store as ls
from modrag_nodes.vectorstore import records as rec
from modrag_nodes.vectorstore.lance_db import LanceParams, open_for_write
from modrag_studio.engine import Executor, GraphDocument, NodeCache
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.trust.store_mode import StoreReadOnly, read_only_stores
from tests.dense.helpers import DOCS, dense_graph
from tests.dense.helpers import registry as dense_registry
from tests.hardening.helpers import PYTHON, ROOT, lock_held, registry, snapshot

QUESTION = "How do plants make oxygen from sunlight?"


@pytest.fixture(autouse=True)
def _fresh_handles():
    handles.forget()
    yield
    handles.forget()


def lance_graph(folder, count: int, **params) -> GraphDocument:
    """Fixture vectors (no model) -> store.lancedb in ``folder``, table 'faults'."""
    return GraphDocument.model_validate({
        "metadata": {"name": "lance"},
        "nodes": [
            {"id": "emb", "type": "testdata.embedded", "params": {"count": count}},
            {"id": "store", "type": "store.lancedb",
             "params": {"path": str(folder), "collection": "faults", **params}},
            {"id": "out", "type": "graph.output", "params": {"name": "index"}},
        ],
        "edges": [{"from": "emb.embedded", "to": "store.embedded"},
                  {"from": "store.index", "to": "out.value"}],
    })


def run_ok(executor: Executor, doc: GraphDocument, inputs: dict | None = None):
    result = executor.run(doc, inputs or {})
    failed = [v for v in result.trace.visits if v.error]
    assert not failed, failed[0].error.message
    return result


def error_of(result) -> str:
    return next(v.error.message for v in result.trace.visits if v.error)


def table_rows(folder) -> dict[str, dict]:
    ls.forget()
    table = ls.open_table(folder, "faults")
    return {r["id"]: r for r in ls.select(table, ["id", "text", "record_hash", "vector"])}


@pytest.fixture
def dense(tmp_path):
    return Executor(dense_registry(), NodeCache(), work_dir=tmp_path / "work")


def test_the_same_results_as_chroma_on_a_small_corpus(dense, tmp_path):
    answers = {}
    for store in ("store.chroma", "store.lancedb"):
        for question in (QUESTION, "How is bread baked?", "volcano lava"):
            result = run_ok(dense, dense_graph(DOCS, store_type=store, top_k=5),
                            {"question": question})
            answers[store, question] = [(r.chunk.chunk_id, r.chunk.text, r.chunk.start,
                                         r.chunk.source, round(r.score, 4), r.rank)
                                        for r in result.outputs["results"]]
        index = result.outputs["index"]
        assert index.count == 7 and index.dim == 384
    assert index.backend == "lancedb" and index.path == str(tmp_path / "work" / "lancedb")
    for question in (QUESTION, "How is bread baked?", "volcano lava"):
        assert answers["store.lancedb", question] == answers["store.chroma", question]
    assert answers["store.lancedb", QUESTION][0][0] == "plants#0"


def test_incremental_sync_embeds_only_what_changed(dense):
    details = run_ok(dense, dense_graph(DOCS, store_type="store.lancedb"),
                     {"question": QUESTION}).trace.last_visit("store").details
    assert (details["added"], details["embedded"]) == (7, 7)
    changed = dict(DOCS, volcano="Volcanoes on Iceland erupt under glaciers and melt the ice.")
    details = run_ok(dense, dense_graph(changed, store_type="store.lancedb"),
                     {"question": QUESTION}).trace.last_visit("store").details
    assert (details["updated"], details["embedded"], details["unchanged"]) == (1, 1, 6)
    removed = {k: v for k, v in changed.items() if k != "bread"}
    result = run_ok(dense, dense_graph(removed, store_type="store.lancedb", top_k=5),
                    {"question": "How is bread baked?"})
    details = result.trace.last_visit("store").details
    assert (details["deleted"], details["embedded"]) == (2, 0)
    assert result.outputs["index"].count == 5
    assert all(r.chunk.doc_id != "bread" for r in result.outputs["results"])
    result = run_ok(dense, dense_graph(removed, store_type="store.lancedb", tag="v2"),
                    {"question": QUESTION})
    details = result.trace.last_visit("store").details
    assert (details["relabelled"], details["embedded"]) == (5, 0)
    assert result.outputs["results"][0].chunk.metadata == {"tag": "v2"}
    volcano = next(r for r in run_ok(dense, dense_graph(removed, store_type="store.lancedb",
                                                        tag="v2", top_k=5),
                                     {"question": "glaciers in Iceland"}).outputs["results"])
    assert volcano.chunk.text.startswith("Volcanoes on Iceland")  # the updated text is stored


def test_an_unchanged_rerun_is_cached_until_the_table_changes(dense):
    doc = dense_graph(DOCS, store_type="store.lancedb")
    first = run_ok(dense, doc, {"question": QUESTION})
    second = run_ok(dense, doc, {"question": QUESTION})
    assert "store" in second.trace.from_cache() and second.trace.ran() == []
    index = first.outputs["index"]
    ls.open_table(index.path, index.collection).delete("id = 'plants#0'")  # behind our back
    third = run_ok(dense, doc, {"question": QUESTION})
    assert "store" in third.trace.ran()
    assert third.trace.last_visit("store").details["added"] == 1
    assert third.outputs["results"][0].chunk.chunk_id == "plants#0"


def test_reopened_from_disk_in_a_new_process_nothing_is_embedded_again(tmp_path):
    folder = tmp_path / "lance"
    first = run_ok(Executor(registry(), NodeCache()), lance_graph(folder, 6))
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from modrag_studio.engine import Executor, NodeCache
        from tests.hardening.helpers import registry
        from tests.vectorstore.test_lancedb_store import lance_graph
        result = Executor(registry(), NodeCache()).run(lance_graph({str(folder)!r}, 6))
        visit = result.trace.last_visit("store")
        print(json.dumps({{"ok": result.ok, "details": visit.details,
                          "stamp": result.outputs["index"].stamp}}))
    """)
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=300,
                          env=os.environ.copy(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    again = json.loads(done.stdout.strip().splitlines()[-1])
    assert again["ok"] and again["stamp"] == first.outputs["index"].stamp
    assert (again["details"]["unchanged"], again["details"]["embedded"]) == (6, 0)
    meta = ls.metadata_of(ls.open_table(folder, "faults"))
    assert meta[rec.META_MODEL_ID] == "ollama:fixture" and meta[rec.META_COUNT] == 6
    assert meta[rec.META_DIM] == 8


def test_vectors_are_the_embedders_own(tmp_path):
    """The stored vectors are the input's, bit for bit (LanceDB embeds nothing itself)."""
    folder = tmp_path / "lance"
    result = run_ok(Executor(registry(), NodeCache()), lance_graph(folder, 4))
    expected = np.random.default_rng(7).normal(size=(4, 8)).astype(np.float32)
    rows = table_rows(folder)
    for i in range(4):
        assert np.array_equal(np.asarray(rows[f"c{i}"]["vector"], dtype=np.float32),
                              expected[i])
    assert not ls.open_table(folder, "faults").embedding_functions
    assert result.outputs["index"].model_id == "ollama:fixture"


def test_deleting_most_of_the_table_stops_and_keeps_every_row(tmp_path):
    folder = tmp_path / "lance"
    executor = Executor(registry(), NodeCache())
    run_ok(executor, lance_graph(folder, 20))
    slip = executor.run(lance_graph(folder, 3))
    assert not slip.ok
    message = error_of(slip)
    assert "store.lancedb: this would delete 17 of the 20" in message
    assert "'faults'" in message and "--allow-delete" in message
    assert len(table_rows(folder)) == 20
    assert executor.run(lance_graph(folder, 3, max_delete_share=1.0)).ok
    assert set(table_rows(folder)) == {"c0", "c1", "c2"}


def test_another_writer_holding_the_lock_is_named_after_a_bounded_wait(tmp_path, monkeypatch):
    folder = tmp_path / "lance"
    run_ok(Executor(registry(), NodeCache()), lance_graph(folder, 5))
    before = snapshot(folder)
    monkeypatch.setenv("MODRAG_STORE_LOCK_WAIT", "0.5")
    with lock_held("lancedb", folder, "faults") as holder:
        store = dense_registry().instance("store.lancedb")
        with pytest.raises(Exception, match=f"locked by PID {holder.pid}"):
            store.health(LanceParams(path=str(folder), collection="faults"))
        blocked = Executor(registry(), NodeCache()).run(lance_graph(folder, 6))
    assert not blocked.ok
    message = error_of(blocked)
    assert f"locked by PID {holder.pid}" in message and str(folder) in message
    after = snapshot(folder)
    assert {k: v for k, v in after.items() if not k.endswith(".lock")} == \
        {k: v for k, v in before.items() if not k.endswith(".lock")}
    assert len(table_rows(folder)) == 5
    assert Executor(registry(), NodeCache()).run(lance_graph(folder, 6)).ok  # released
    assert len(table_rows(folder)) == 6


def test_two_writers_in_threads_take_turns(tmp_path):
    """Two synchronisations of one table at once: the lock makes them take turns, and the
    table ends as exactly one of the two inputs."""
    from concurrent.futures import ThreadPoolExecutor

    folder = tmp_path / "lance"
    docs = {"a": lance_graph(folder, 9, max_delete_share=1.0),
            "b": lance_graph(folder, 4, max_delete_share=1.0)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda d: Executor(registry(), NodeCache()).run(d),
                                [docs["a"], docs["b"]]))
    assert all(r.ok for r in results), [error_of(r) for r in results if not r.ok]
    assert {r.outputs["index"].count for r in results} == {9, 4}
    assert len(table_rows(folder)) in (9, 4)


def test_read_only_mode_reads_an_in_sync_table_and_refuses_every_write(tmp_path):
    folder = tmp_path / "lance"
    executor = Executor(registry(), NodeCache())
    run_ok(executor, lance_graph(folder, 5))
    before = snapshot(folder)
    with read_only_stores():
        same = Executor(registry(), NodeCache()).run(lance_graph(folder, 5))
        assert same.ok and same.outputs["index"].count == 5
        changed = Executor(registry(), NodeCache()).run(lance_graph(folder, 6))
        missing = Executor(registry(), NodeCache()).run(lance_graph(tmp_path / "new", 2))
    assert not changed.ok and "would change (1 added" in error_of(changed)
    assert "read-only" in error_of(changed)
    assert not missing.ok and "read-only" in error_of(missing)
    assert not (tmp_path / "new").exists()
    assert snapshot(folder) == before
    with read_only_stores(), pytest.raises(StoreReadOnly, match="rebuilt"):
        open_for_write(str(folder), LanceParams(collection="faults",
                                                on_embedder_change="rebuild"),
                       EmbedderSpec(kind="ollama", model="other"), lambda _text: None)


def test_another_embedder_is_refused_or_rebuilds(tmp_path):
    folder = tmp_path / "lance"
    executor = Executor(registry(), NodeCache())
    run_ok(executor, lance_graph(folder, 3))
    table = ls.open_table(folder, "faults")
    ls.set_metadata(table, {**ls.metadata_of(table), rec.META_MODEL_ID: "ollama:other"})
    refused = Executor(registry(), NodeCache()).run(lance_graph(folder, 3))
    assert not refused.ok
    assert "built with embedder ollama:other" in error_of(refused)
    rebuilt = Executor(registry(), NodeCache()).run(
        lance_graph(folder, 3, on_embedder_change="rebuild"))
    assert rebuilt.ok and rebuilt.trace.last_visit("store").details["added"] == 3
    assert ls.metadata_of(ls.open_table(folder, "faults"))[rec.META_MODEL_ID] == \
        "ollama:fixture"


def test_health_names_a_missing_folder_a_file_and_a_damaged_table(tmp_path):
    store = dense_registry().instance("store.lancedb")
    missing = tmp_path / "not-yet"
    assert "created on the first run" in store.health(LanceParams(path=str(missing)))
    assert not missing.exists()
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(Exception, match="is a file, not a folder"):
        store.health(LanceParams(path=str(afile)))
    folder = tmp_path / "lance"
    run_ok(Executor(registry(), NodeCache()), lance_graph(folder, 5))
    assert "table 'faults': 5 rows" in store.health(LanceParams(path=str(folder),
                                                                 collection="faults"))
    for manifest in (folder / "faults.lance" / "_versions").iterdir():
        manifest.rename(tmp_path / manifest.name)
    (folder / "faults.lance" / "_versions").rmdir()
    with pytest.raises(Exception, match="corrupted"):
        store.health(LanceParams(path=str(folder), collection="faults"))


def test_a_damaged_table_is_named_and_left_alone(tmp_path):
    folder = tmp_path / "lance"
    run_ok(Executor(registry(), NodeCache()), lance_graph(folder, 5))
    for data in (folder / "faults.lance" / "data").iterdir():
        data.write_bytes(b"\x00not lance data" * 10)
    for manifest in (folder / "faults.lance" / "_versions").iterdir():
        manifest.write_bytes(b"\x00garbage" * 10)
    handles.forget()
    before = snapshot(folder)
    outcome = Executor(registry(), NodeCache()).run(lance_graph(folder, 6))
    assert not outcome.ok
    message = error_of(outcome)
    assert str(folder) in message and "corrupted" in message
    assert snapshot(folder) == before


def test_ids_with_quotes_are_selected_and_deleted(tmp_path):
    table = ls.create_table(tmp_path, "quotes", 2, {})
    chunks = [Chunk(chunk_id=f"it's {i}", doc_id="d", text=f"t{i}", start=0, end=2, index=i,
                    source="d.txt") for i in range(3)]
    table.add(ls.rows(chunks, {c.chunk_id: np.ones(2, np.float32) for c in chunks}))
    table.delete(ls.id_filter(["it's 0", "it's 1"]))
    assert [r["id"] for r in ls.select(table, ["id"])] == ["it's 2"]
    assert ls.select(table, ["id"], ["it's 2", "nope'); --"]) == [{"id": "it's 2"}]
    target = open_for_write(str(tmp_path), LanceParams(collection="quotes"), EmbedderSpec(),
                            lambda _t: None)
    assert set(target.stored_state()) == {"it's 2"}


def test_a_lancedb_index_is_refused_by_a_bm25_retriever_with_a_reason():
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.validation import validate

    doc = GraphDocument.model_validate({
        "nodes": [{"id": "store", "type": "store.lancedb"},
                  {"id": "bm25", "type": "retrieve.bm25"},
                  {"id": "vec", "type": "retrieve.vector"}],
        "edges": [{"from": "store.index", "to": "bm25.index"},
                  {"from": "store.index", "to": "vec.index"}]})
    problems = [p for p in validate(doc, default_registry()) if p.code == "bad-connection"]
    assert [p.node_id for p in problems] == ["bm25"]
    assert "VectorIndex" in str(problems[0]) and "BM25" in str(problems[0])
