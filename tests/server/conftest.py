"""A real uvicorn server on a free loopback port, serving a test graph."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from pydantic import BaseModel, ConfigDict

from modrag_nodes import register_builtin_nodes
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.server import ServerSettings, create_app


class EchoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delay_s: float = 0.0


class StreamingEcho(NodeType):
    """Test fixture node: streams the words of its input back, like an LLM would."""

    type_id = "test.stream_echo"
    description = "Streams the words of the text (test fixture)."
    Params = EchoParams
    cacheable = False
    inputs = (InputPort("text", str),)
    outputs = (OutputPort("text", str),)

    def run(self, ctx: NodeContext, params: EchoParams, text: str) -> dict[str, Any]:
        words = text.split()
        for word in words:
            if ctx.cancel.wait(params.delay_s):
                ctx.check_cancelled()
            ctx.stream(word + " ")
        return {"text": " ".join(words)}


def make_registry() -> NodeRegistry:
    registry = NodeRegistry()
    register_builtin_nodes(registry)
    registry.register(StreamingEcho)
    return registry


def echo_graph(delay_s: float = 0.0) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "echo_service", "description": "test graph"},
        "nodes": [
            {"id": "q", "type": "graph.input",
             "params": {"name": "question", "description": "what to ask"}},
            {"id": "tone", "type": "graph.input", "params": {"name": "tone", "default": "calm"}},
            {"id": "up", "type": "text.upper"},
            {"id": "llm", "type": "test.stream_echo", "params": {"delay_s": delay_s}},
            {"id": "join", "type": "text.concat", "params": {"separator": " / "}},
            {"id": "answer", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [
            {"from": "q.value", "to": "up.text"},
            {"from": "up.text", "to": "llm.text"},
            {"from": "llm.text", "to": "join.texts"},
            {"from": "tone.value", "to": "join.texts"},
            {"from": "join.text", "to": "answer.value"},
        ],
    })


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve(doc: GraphDocument, settings: ServerSettings,
          registry: NodeRegistry | None = None, **config: Any) -> Iterator[str]:
    app = create_app(doc, settings, registry=registry or make_registry())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           timeout_graceful_shutdown=2, **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 20
    while not server.started:
        if time.time() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> Iterator[str]:
    settings = ServerSettings(cache_dir=tmp_path_factory.mktemp("cache"), max_body_bytes=20_000)
    with serve(echo_graph(delay_s=0.01), settings) as url:
        yield url


@pytest.fixture
def client(server_url) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server_url, timeout=30) as http:
        yield http
