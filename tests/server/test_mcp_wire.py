"""``modrag mcp`` on the wire, spoken raw (an SDK client cannot send what is tested here): a
request it cannot read is answered with a JSON-RPC error, and the server goes on."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.server.mcp_helpers import write_graphs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class RawStdio:
    """``modrag mcp GRAPH`` as a subprocess, one JSON-RPC line at a time."""

    def __init__(self, folder: Path, graph: Path) -> None:
        self.errors = open(folder / "stderr.txt", "w", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "modrag_studio.cli", "mcp", str(graph), "--cache-dir",
             str(folder / "c")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errors, cwd=str(folder),
            env={**os.environ, "PYTHONPATH": str(ROOT)})

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 30.0) -> dict | None:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        return json.loads(self.process.stdout.readline()) if ready else None

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self.errors.close()


def test_a_call_with_a_lone_surrogate_is_answered_with_an_error(tmp_path):
    _faq, shout = write_graphs(tmp_path)
    wire = RawStdio(tmp_path, shout)
    try:
        wire.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}))
        assert wire.receive()["id"] == 1
        wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        # json.dumps writes the lone surrogate as the escape \ud800, valid JSON
        wire.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "shout", "arguments": {"text": "a\ud800b"}}}))
        answer = wire.receive(20)
        assert answer is not None, "the call was never answered"
        assert answer["id"] == 2 and answer["error"]["code"] in (-32700, -32602)
        assert "surrogate" in answer["error"]["message"]
        wire.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                              "params": {"name": "shout", "arguments": {"text": "still"}}}))
        assert wire.receive()["result"]["content"][0]["text"] == "STILL"
        wire.send("this is not json")  # unreadable, no id: answered with id null
        garbage = wire.receive(20)
        assert garbage is not None and garbage["id"] is None
        assert garbage["error"]["code"] == -32700
    finally:
        wire.close()


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}})
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_idle_http_sessions_never_lock_out_a_new_client(tmp_path):
    import threading
    import time

    import httpx
    import uvicorn

    from modrag_studio.engine.core.document import load
    from modrag_studio.server import ServerSettings
    from modrag_studio.server.mcp_tools import plan_tools
    from modrag_studio.server.mcp_transport import build_server, http_app
    from tests.server.conftest import free_port

    _faq, shout = write_graphs(tmp_path)
    settings = ServerSettings(cache_dir=tmp_path / "c")
    app = http_app(build_server(plan_tools([load(shout)], settings)), settings, max_sessions=5)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.time() + 20
        while not server.started:
            assert time.time() < deadline
            time.sleep(0.05)
        with httpx.Client(timeout=20) as http:
            opened = []
            for _ in range(5):  # clients that open a session and go away without closing it
                response = http.post(url, headers=HEADERS, content=INITIALIZE)
                assert response.status_code == 200
                opened.append(response.headers["mcp-session-id"])
                time.sleep(0.05)
            newcomer = http.post(url, headers=HEADERS, content=INITIALIZE)
            assert newcomer.status_code == 200, newcomer.text  # not 503 "too many sessions"
            oldest = http.post(url, headers={**HEADERS, "mcp-session-id": opened[0],
                                             "mcp-protocol-version": "2025-06-18"},
                               content=json.dumps({"jsonrpc": "2.0", "id": 2,
                                                   "method": "tools/list"}))
            assert oldest.status_code == 404  # the longest idle session made room
            newest = http.post(url, headers={**HEADERS, "mcp-session-id": opened[-1],
                                             "mcp-protocol-version": "2025-06-18"},
                               content=json.dumps({"jsonrpc": "2.0", "id": 2,
                                                   "method": "tools/list"}))
            assert newest.status_code == 200  # the others stay
    finally:
        server.should_exit = True
        thread.join(timeout=10)
