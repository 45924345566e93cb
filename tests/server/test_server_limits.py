"""Abandoned and queued requests, traces, slow headers and API keys (real uvicorn)."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from modrag_studio.server import ServerSettings, create_app
from modrag_studio.server.protocol import HeaderTimeoutProtocol
from tests.server.conftest import echo_graph, make_registry, serve

LONG = " ".join(["word"] * 60)  # 60 x 0.2 s = 12 s when nobody stops it


def post_in_background(url: str, body: dict, timeout: float, results: list) -> threading.Thread:
    def go() -> None:
        try:
            with httpx.Client(base_url=url, timeout=timeout) as http:
                results.append(http.post("/run", json=body))
        except httpx.TimeoutException as exc:
            results.append(exc)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_a_client_that_hangs_up_stops_its_run(tmp_path):
    settings = ServerSettings(cache_dir=tmp_path, max_concurrent_runs=1, run_timeout_s=60)
    with serve(echo_graph(delay_s=0.2), settings) as url:
        gone: list = []
        for _ in range(3):  # three clients that give up after 0.3 s
            post_in_background(url, {"question": LONG}, 0.3, gone).join()
        started = time.perf_counter()
        with httpx.Client(base_url=url, timeout=60) as http:
            answer = http.post("/run", json={"question": "quick one"})
        waited = time.perf_counter() - started
    assert answer.json()["status"] == "ok"
    assert waited < 5, f"waited {waited:.1f} s behind abandoned runs"


def test_the_time_limit_covers_the_queue_and_a_full_queue_gets_503(tmp_path):
    settings = ServerSettings(cache_dir=tmp_path, max_concurrent_runs=1, max_queued_runs=1,
                              run_timeout_s=1.5)
    with serve(echo_graph(delay_s=0.2), settings) as url:
        results: list = []
        first = post_in_background(url, {"question": LONG}, 30, results)
        time.sleep(0.3)
        started = time.perf_counter()
        queued = post_in_background(url, {"question": LONG + " queued"}, 30, results)
        time.sleep(0.3)
        with httpx.Client(base_url=url, timeout=30) as http:
            busy = http.post("/run", json={"question": "one more"})
        assert busy.status_code == 503
        assert int(busy.headers["retry-after"]) >= 1
        queued.join(30)
        queued_s = time.perf_counter() - started
        first.join(30)
    bodies = [r.json() for r in results]
    assert all(b["status"] == "cancelled" for b in bodies)
    assert all(any("time limit" in e["message"] for e in b["errors"]) for b in bodies)
    assert queued_s < 4, f"a queued request took {queued_s:.1f} s with a 1.5 s limit"


def test_traces_go_to_loopback_clients_only_unless_allowed():
    from fastapi.testclient import TestClient

    for remote_trace, expected in ((False, 403), (True, 200)):
        app = create_app(echo_graph(), ServerSettings(allowed_hosts=["testserver"],
                                                      remote_trace=remote_trace),
                         registry=make_registry())
        with TestClient(app) as client:  # the test client is not a loopback address
            response = client.post("/run", params={"trace": "true"}, json={"question": "a"})
            assert response.status_code == expected, response.text
            assert client.post("/run", json={"question": "a"}).status_code == 200


def test_a_slow_header_connection_is_closed(tmp_path, monkeypatch):
    monkeypatch.setattr(HeaderTimeoutProtocol, "header_timeout_s", 0.5)
    with serve(echo_graph(), ServerSettings(cache_dir=tmp_path),
               http=HeaderTimeoutProtocol) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            started = time.perf_counter()
            for _ in range(3):  # keep dribbling: the clock is not reset by partial headers
                time.sleep(0.1)
                sock.sendall(b"X-Slow: 1\r\n")
            assert sock.recv(1024) == b""  # closed by the server
            assert time.perf_counter() - started < 5
        with httpx.Client(base_url=url, timeout=10) as http:  # normal requests still work
            assert http.post("/run", json={"question": "a"}).status_code == 200



def test_a_slow_body_connection_is_closed(tmp_path, monkeypatch):
    """Headers on time, then a body dribbled byte by byte: the body's own clock closes it."""
    monkeypatch.setattr(HeaderTimeoutProtocol, "body_timeout_s", 0.8, raising=False)
    with serve(echo_graph(), ServerSettings(cache_dir=tmp_path),
               http=HeaderTimeoutProtocol) as url:
        host, port = url.removeprefix("http://").split(":")
        body = b'{"question": "slow"}'
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            started = time.perf_counter()
            closed = False
            for byte in body:  # one byte every 0.1 s: 2 s for the whole body
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    closed = True
                    break
                time.sleep(0.1)
            if not closed:
                sock.settimeout(5)
                closed = sock.recv(1024) == b""
            assert closed, "the server waited for the whole slow body"
            assert time.perf_counter() - started < 1.9
        with httpx.Client(base_url=url, timeout=10) as http:  # a body on time still works
            assert http.post("/run", json={"question": "a"}).status_code == 200

@pytest.mark.parametrize("key", ["clé-secrète", "two words", "tab\tkey"])
def test_an_api_key_that_cannot_travel_in_a_header_is_refused_at_start(tmp_path, monkeypatch,
                                                                      capsys, key):
    from modrag_studio.cli import main
    from modrag_studio.engine.core.document import save

    monkeypatch.setenv("MODRAG_API_KEY", key)
    path = tmp_path / "g.json"
    save(echo_graph(), path)
    assert main(["serve", str(path)]) == 2
    assert "printable ASCII" in capsys.readouterr().err


@pytest.mark.parametrize("queued", [64, 8])
def test_a_burst_of_clients_gets_answers_or_503_never_a_dropped_connection(tmp_path, queued):
    """60 clients at once on the server's own protocol: below the queue limit every one gets
    its answer; over it the extra ones get 503 with Retry-After, and none a reset."""
    import asyncio

    settings = ServerSettings(cache_dir=tmp_path, max_concurrent_runs=4,
                              max_queued_runs=queued, run_timeout_s=60)
    clients = 60

    async def burst(url: str) -> list:
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
            async def ask(i: int):
                try:
                    return i, await http.post("/run", json={"question": f"burst {i}"})
                except httpx.TransportError as exc:
                    return i, exc
            return await asyncio.gather(*(ask(i) for i in range(clients)))

    with serve(echo_graph(delay_s=0.05), settings, http=HeaderTimeoutProtocol) as url:
        results = asyncio.run(burst(url))
    dropped = [(i, repr(r)) for i, r in results if not isinstance(r, httpx.Response)]
    assert not dropped
    answered = [(i, r) for i, r in results if r.status_code == 200]
    busy = [r for _, r in results if r.status_code == 503]
    assert len(answered) + len(busy) == clients
    assert all(r.json()["outputs"]["answer"].split(" / ")[0] == f"BURST {i}" for i, r in answered)
    assert all(int(r.headers["retry-after"]) >= 1 for r in busy)
    if queued + 4 >= clients:
        assert not busy
    else:
        assert busy and len(answered) >= queued + 4
