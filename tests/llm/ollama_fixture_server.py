"""TEST FIXTURE: a small Ollama-API-compatible HTTP server for tests (not a product feature).

It answers ``/api/version``, ``/api/tags``, ``/api/chat``, ``/api/generate`` (NDJSON streaming
with chunked transfer, or one JSON object when ``"stream": false``), ``/api/embed`` and
``/api/embeddings`` (deterministic vectors), and 404 ``{"error": "model 'x' not found"}`` for
unknown models. Answers are canned text (or come from ``responder``, e.g. the embedded model).
It can slow its stream (``token_delay_s``) and drop the connection mid-stream
(``drop_after_chunks``). Start it on a free 127.0.0.1 port::

    with OllamaFixtureServer(models=["fixture-llm"]) as server:
        ollama.Client(host=server.url).chat(...)

Other test folders import it as ``tests.llm.ollama_fixture_server`` (the project root is on
``sys.path`` in pytest).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], "str | Iterable[str]"]
CANNED_PREFIX = "Fixture answer:"


def canned_answer(request: dict[str, Any]) -> str:
    """Deterministic text built from the request's last user message or prompt."""
    if "messages" in request:
        users = [m.get("content", "") for m in request["messages"] if m.get("role") == "user"]
        asked = users[-1] if users else ""
    else:
        asked = request.get("prompt", "")
    words = asked.split()[:12]
    return f"{CANNED_PREFIX} you asked about {' '.join(words)}. This is canned text."


def embedded_responder(max_tokens: int = 32) -> Responder:
    """Answer with the in-process embedded model (greedy) instead of canned text."""

    def respond(request: dict[str, Any]) -> list[str]:
        from modrag_nodes.llm.client import LLMSpec, chat
        from modrag_studio.engine.core.node import ChatMessage, node_context
        from modrag_studio.engine.core.resources import process_resources

        if "messages" in request:
            messages = [ChatMessage(role=m["role"], content=m.get("content", ""))
                        for m in request["messages"]]
        else:
            messages = [ChatMessage(role="user", content=request.get("prompt", ""))]
        limit = (request.get("options") or {}).get("num_predict") or max_tokens
        pieces: list[str] = []
        chat(LLMSpec(max_tokens=min(limit, max_tokens)), messages, raise_on_cancel=False,
             ctx=node_context("fixture", "llm.generate", resources=process_resources(),
                              on_stream=pieces.append))
        return pieces

    return respond


def split_tokens(text: str) -> list[str]:
    """Word-sized pieces that concatenate back to ``text``."""
    return re.findall(r"\s*\S+", text) or ([text] if text else [])


def fixture_vector(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for ``text`` (same text, same vector)."""
    raw = hashlib.sha256(text.encode("utf-8")).digest()
    while len(raw) < dim:
        raw += hashlib.sha256(raw).digest()
    values = [b / 255.0 - 0.5 for b in raw[:dim]]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OllamaFixtureServer:
    """The fixture server; a context manager that runs it in a daemon thread."""

    def __init__(
        self,
        models: Iterable[str] = ("fixture-llm", "fixture-embed"),
        *,
        responder: Responder | None = None,
        token_delay_s: float = 0.0,
        drop_after_chunks: int | None = None,
        embed_dim: int = 16,
        port: int = 0,
    ) -> None:
        self.models = list(models)
        self.responder = responder or canned_answer
        self.token_delay_s = token_delay_s
        self.drop_after_chunks = drop_after_chunks
        self.embed_dim = embed_dim
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.disconnects = 0  # streams whose client went away before the end
        self._httpd = _QuietServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def start(self) -> OllamaFixtureServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="ollama-fixture", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OllamaFixtureServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def tag(self, name: str) -> dict[str, Any]:
        return {
            "name": name, "model": name, "modified_at": _now(), "size": 1000,
            "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": {"format": "gguf", "family": "fixture", "parameter_size": "1M",
                        "quantization_level": "F32"},
        }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients hanging up are normal
            super().handle_error(request, client_address)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class _Dropped(Exception):
    """The fixture was told to cut the connection."""


def _handler_for(server: OllamaFixtureServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
            return

        # plumbing -------------------------------------------------------------
        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            return json.loads(raw or b"{}")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _stream(self, lines: Iterable[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for index, line in enumerate(lines):
                    if server.drop_after_chunks is not None and index >= server.drop_after_chunks:
                        raise _Dropped
                    self._chunk(json.dumps(line).encode() + b"\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except _Dropped:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            except (BrokenPipeError, ConnectionResetError):
                server.disconnects += 1
                self.close_connection = True

        # routes ---------------------------------------------------------------
        def do_GET(self) -> None:
            server.requests.append((self.path, {}))
            if self.path == "/api/version":
                self._json(200, {"version": "0.0.0-fixture"})
            elif self.path == "/api/tags":
                self._json(200, {"models": [server.tag(m) for m in server.models]})
            elif self.path in ("/", ""):
                self._json(200, {"status": "Ollama is running (test fixture)"})
            else:
                self._json(404, {"error": f"unknown path {self.path}"})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = self._body()
            server.requests.append((self.path, body))
            routes = {"/api/chat": self._generate, "/api/generate": self._generate,
                      "/api/embed": self._embed, "/api/embeddings": self._embed}
            handler = routes.get(self.path)
            if handler is None:
                self._json(404, {"error": f"unknown path {self.path}"})
                return
            model = body.get("model", "")
            if model not in server.models:
                self._json(404, {"error": f"model '{model}' not found"})
                return
            handler(body)

        def _embed(self, body: dict[str, Any]) -> None:
            if self.path == "/api/embeddings":
                vector = fixture_vector(body.get("prompt", ""), server.embed_dim)
                self._json(200, {"embedding": vector})
                return
            texts = body.get("input", "")
            texts = [texts] if isinstance(texts, str) else list(texts)
            self._json(200, {
                "model": body["model"],
                "embeddings": [fixture_vector(t, server.embed_dim) for t in texts],
                "prompt_eval_count": sum(len(t.split()) for t in texts),
            })

        def _generate(self, body: dict[str, Any]) -> None:
            chat = self.path == "/api/chat"
            produced = server.responder(body)
            pieces = split_tokens(produced) if isinstance(produced, str) else list(produced)
            limit = (body.get("options") or {}).get("num_predict")
            reason = "stop"
            if isinstance(limit, int) and 0 <= limit < len(pieces):
                pieces, reason = pieces[:limit], "length"
            if chat:
                prompt_text = " ".join(m.get("content", "") for m in body.get("messages", []))
            else:
                prompt_text = f"{body.get('system', '')} {body.get('prompt', '')}"
            stats = {"done_reason": reason, "prompt_eval_count": len(prompt_text.split()),
                     "eval_count": len(pieces), "total_duration": 1000, "load_duration": 10,
                     "prompt_eval_duration": 100, "eval_duration": 800}

            def line(piece: str, done: bool) -> dict[str, Any]:
                base: dict[str, Any] = {"model": body["model"], "created_at": _now(),
                                        "done": done}
                if chat:
                    base["message"] = {"role": "assistant", "content": piece}
                else:
                    base["response"] = piece
                return base | (stats if done else {})

            if body.get("stream", True) is False:
                self._json(200, line("".join(pieces), True))
                return

            def lines() -> Iterable[dict[str, Any]]:
                for piece in pieces:
                    if server.token_delay_s:
                        time.sleep(server.token_delay_s)
                    yield line(piece, False)
                yield line("", True)

            self._stream(lines())

    return Handler
