"""store.chroma with backend 'http' against a real Chroma server (``chroma run``, the server
that ships with chromadb) started on 127.0.0.1 for these tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from modrag_nodes.vectorstore import chroma_store
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.run.executor import Executor
from tests.dense.helpers import DOCS, dense_graph, registry

QUESTION = "How do plants make oxygen from sunlight?"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _chroma_cli() -> str:
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if beside.is_file() else shutil.which("chroma")
    assert found, "the 'chroma' command of the chromadb package is not installed"
    return found


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory) -> Iterator[int]:
    port = _free_port()
    folder = tmp_path_factory.mktemp("chroma-server")
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(
        [_chroma_cli(), "run", "--path", str(folder / "data"), "--host", "127.0.0.1",
         "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (folder / "server.log").read_text(errors="replace")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the Chroma server did not start in 60 s"
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def executor(tmp_path):
    chroma_store.forget_clients()
    yield Executor(registry(), NodeCache(), work_dir=tmp_path / "work")
    chroma_store.forget_clients()


def _store(port: int, collection: str) -> dict:
    return {"backend": "http", "host": "127.0.0.1", "port": port, "collection": collection}


def test_index_and_query_through_a_chroma_server(executor, chroma_server, tmp_path):
    doc = dense_graph(DOCS, store=_store(chroma_server, "server-test"))
    first = executor.run(doc, {"question": QUESTION})
    assert first.ok, [v.error.message for v in first.trace.visits if v.error]
    assert first.trace.last_visit("store").details["added"] == 7
    index = first.outputs["index"]
    assert (index.host, index.port, index.count) == ("127.0.0.1", chroma_server, 7)
    assert first.outputs["results"][0].chunk.chunk_id == "plants#0"
    assert not (tmp_path / "work" / "chroma").exists()  # nothing stored locally

    second = executor.run(doc, {"question": QUESTION})
    assert "store" in second.trace.from_cache()

    # A collection changed on the server behind the graph's back is synchronised again.
    client = chroma_store.client_for(index)
    chroma_store.get_collection(client, "server-test").delete(ids=["plants#0"])
    third = executor.run(doc, {"question": QUESTION})
    assert "store" in third.trace.ran()
    assert third.trace.last_visit("store").details["added"] == 1
    assert third.outputs["results"][0].chunk.chunk_id == "plants#0"


def test_unreachable_chroma_server_is_named(executor):
    port = _free_port()  # nothing listens there
    doc = dense_graph(DOCS, store=_store(port, "nowhere"))
    started = time.monotonic()
    result = executor.run(doc, {"question": QUESTION})
    assert not result.ok and time.monotonic() - started < 60
    message = result.trace.last_visit("store").error.message
    assert f"cannot reach the Chroma server at http://127.0.0.1:{port}" in message
    assert "'host'" in message and "'port'" in message


def test_health_checks_the_server_and_the_folder_without_opening_a_client(chroma_server,
                                                                           tmp_path):
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.run.health import check_health

    def report(store: dict):
        doc = dense_graph(DOCS, store=store)
        return check_health(doc, default_registry()).nodes["store"]

    up = report(_store(chroma_server, "health"))
    assert up.ok and up.detail == f"Chroma server at http://127.0.0.1:{chroma_server} answers"
    down = report(_store(_free_port(), "health"))
    assert not down.ok and "cannot reach the Chroma server" in down.detail

    fresh = report({"path": str(tmp_path / "new" / "chroma")})
    assert fresh.ok and "created on the first run" in fresh.detail
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "chroma.sqlite3").write_bytes(b"not a database at all")
    corrupted = report({"path": str(broken)})
    assert not corrupted.ok and "is not a SQLite database" in corrupted.detail
    assert (broken / "chroma.sqlite3").read_bytes() == b"not a database at all"
