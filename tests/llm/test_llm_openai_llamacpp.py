"""The OpenAI-compatible backend against a real OpenAI-compatible server: llama.cpp's own
server (through xllamacpp, in a process the test starts on 127.0.0.1) serving SmolLM2."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from modrag_nodes.llm.client import LLMSpec, chat
from modrag_nodes.llm.embedded import packaged_gguf
from modrag_studio.composition import default_registry
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import Executor
from tests.llm.helpers import Recorder, user

pytest.importorskip("xllamacpp")
pytestmark = pytest.mark.slow

SERVER = r"""
import sys, threading, xllamacpp as xlc
params = xlc.CommonParams()
params.model.path = sys.argv[1]
params.n_ctx = 2048
params.n_parallel = 1
params.warmup = False
params.use_jinja = True
params.verbosity = -1
params.hostnames = ["127.0.0.1"]
params.port = int(sys.argv[2])
server = xlc.Server(params)
print(server.listening_address, flush=True)
threading.Event().wait()  # serve until the test ends this process
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-c", SERVER, str(packaged_gguf()), str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server did not start: {process.stderr.read()}")
            time.sleep(0.2)
        yield base
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_chat_call_streams_tokens_and_counts_them(llama_server):
    rec = Recorder()
    spec = LLMSpec(backend="openai", model="smollm2", host=llama_server, max_tokens=24,
                   temperature=0.0, retries=0)
    result = chat(spec, user("Name a colour."), ctx=rec.context())
    assert result.text.strip() and "".join(rec.tokens) == result.text
    assert result.prompt_tokens and result.prompt_tokens > 5
    assert 0 < result.completion_tokens <= 24
    assert result.stopped in ("stop", "length")
    assert result.time_to_first_token_s is not None
    again = chat(spec, user("Name a colour."))
    assert again.text == result.text  # greedy: the same reply


def test_a_graph_answers_through_the_server(llama_server):
    doc = GraphDocument.model_validate({
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "llm", "type": "llm.model",
             "params": {"backend": "openai", "model": "smollm2", "host": llama_server,
                        "max_tokens": 16}},
            {"id": "chat", "type": "llm.chat"},
            {"id": "out", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [{"from": "q.value", "to": "chat.text"},
                  {"from": "llm.llm", "to": "chat.llm"},
                  {"from": "chat.text", "to": "out.value"}],
    })
    result = Executor(default_registry(), cache=NodeCache()).run(doc, {"question": "Say yes."})
    assert result.ok, result.trace.failure_summary()
    assert str(result.outputs["answer"]).strip()
