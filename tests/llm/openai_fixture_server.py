"""TEST FIXTURE: a small OpenAI-API-compatible HTTP server for tests (not a product feature).

It answers ``GET /v1/models``, ``POST /v1/chat/completions`` (server-sent events when
``"stream": true``, with a final usage chunk when asked, else one JSON object) and
``POST /v1/embeddings`` (deterministic vectors). It can require an API key (401 otherwise),
answers 404 for unknown models, can slow its stream (``token_delay_s``) and drop the
connection mid-stream (``drop_after_chunks``). Runs on a free 127.0.0.1 port::

    with OpenAIFixtureServer(models=["fixture-chat"], api_key="k") as server:
        httpx.get(f"{server.base_url}/models", headers={"Authorization": "Bearer k"})
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PIECES = ["The pump ", "is serviced ", "every 500 ", "operating hours ", "[1]."]


class OpenAIFixtureServer:
    """Context manager running the fixture server in a thread."""

    def __init__(self, models: list[str] | None = None, *, api_key: str | None = None,
                 pieces: list[str] | None = None, token_delay_s: float = 0.0,
                 drop_after_chunks: int | None = None, dim: int = 8,
                 echo_refused_key: bool = False) -> None:
        self.models = models or ["fixture-chat", "fixture-embed"]
        self.api_key = api_key
        self.pieces = pieces or PIECES
        self.token_delay_s = token_delay_s
        self.drop_after_chunks = drop_after_chunks
        self.dim = dim
        self.echo_refused_key = echo_refused_key  # a 401 repeats the key, as some servers do
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.chunks_sent = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIFixtureServer:
        fixture = self

        class Handler(_Handler):
            server_fixture = fixture

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def vector_for(text: str, dim: int) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [digest[i] / 255.0 for i in range(dim)]


class _Handler(BaseHTTPRequestHandler):
    server_fixture: OpenAIFixtureServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        key = self.server_fixture.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        given = self.headers.get("Authorization", "")
        shown = f": {given.removeprefix('Bearer ')}" if self.server_fixture.echo_refused_key \
            else ""
        self._json(401, {"error": {"message": f"Incorrect API key provided{shown}",
                                   "type": "invalid_request_error"}})
        return False

    def do_GET(self) -> None:  # noqa: N802
        if not self._authorised():
            return
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": name, "object": "model", "owned_by": "fixture"}
                for name in self.server_fixture.models]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server_fixture.requests.append((self.path, body))
        if not self._authorised():
            return
        if body.get("model") not in self.server_fixture.models:
            self._json(404, {"error": {"message": f"The model `{body.get('model')}` does "
                                       "not exist", "type": "invalid_request_error"}})
            return
        if self.path == "/v1/embeddings":
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            self._json(200, {"object": "list", "model": body["model"], "data": [
                {"object": "embedding", "index": i,
                 "embedding": vector_for(t, self.server_fixture.dim)}
                for i, t in enumerate(texts)]})
        elif self.path == "/v1/chat/completions":
            self._chat(body)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def _chat(self, body: dict[str, Any]) -> None:
        fixture = self.server_fixture
        pieces = fixture.pieces[: int(body.get("max_tokens") or len(fixture.pieces))]
        finish = "length" if len(pieces) < len(fixture.pieces) else "stop"
        usage = {"prompt_tokens": 11, "completion_tokens": len(pieces),
                 "total_tokens": 11 + len(pieces)}
        if not body.get("stream"):
            self._json(200, {"object": "chat.completion", "model": body["model"], "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "".join(pieces)},
                 "finish_reason": finish}], "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        events = [{"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
                  for p in pieces]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({"choices": [], "usage": usage})
        try:
            for number, event in enumerate(events):
                if fixture.drop_after_chunks is not None and number >= fixture.drop_after_chunks:
                    self.wfile.flush()
                    self.close_connection = True
                    return
                event.update(object="chat.completion.chunk", model=body["model"])
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                fixture.chunks_sent += 1
                time.sleep(fixture.token_delay_s)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client closed the stream (cancelled)
        self.close_connection = True
