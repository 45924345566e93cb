"""The Ollama backend with the real ``ollama`` client against the fixture server."""

from __future__ import annotations

import threading
import time

import pytest

from modrag_nodes.llm import ollama_backend
from modrag_nodes.llm.client import LLMSpec, chat
from modrag_nodes.llm.ollama_backend import OllamaError, OllamaUnreachable, resolve_host
from modrag_studio.engine.core.errors import NodeConfigError, RunCancelled
from tests.llm.helpers import Recorder, user
from tests.llm.ollama_fixture_server import (
    CANNED_PREFIX,
    OllamaFixtureServer,
    canned_answer,
    free_port,
    split_tokens,
)

QUESTION = "Which river flows through the old town of the sample city?"


def spec_for(server: OllamaFixtureServer, **kw) -> LLMSpec:
    return LLMSpec(backend="ollama", model="fixture-llm", host=server.host, **kw)


def test_streams_tokens_in_order_with_counts(ollama_server):
    rec = Recorder()
    result = chat(spec_for(ollama_server, temperature=0.3, max_tokens=100, seed=5,
                           context_length=4096), user(QUESTION), ctx=rec.context())
    expected = split_tokens(canned_answer({"messages": [{"role": "user", "content": QUESTION}]}))
    assert rec.tokens == expected
    assert "".join(rec.tokens) == result.text
    assert result.text.startswith(CANNED_PREFIX)
    assert result.completion_tokens == len(expected)
    assert result.prompt_tokens == len(QUESTION.split())
    assert result.stopped == "stop"
    assert result.model == "ollama:fixture-llm"
    assert result.time_to_first_token_s is not None
    path, body = ollama_server.requests[-1]
    assert path == "/api/chat"
    assert body["stream"] is True
    assert body["options"] == {"temperature": 0.3, "num_predict": 100, "num_ctx": 4096,
                               "seed": 5}


def test_system_prompt_from_spec_is_sent(ollama_server):
    chat(spec_for(ollama_server, system="Answer briefly."), user("hi"), stream=False)
    messages = ollama_server.requests[-1][1]["messages"]
    assert messages[0] == {"role": "system", "content": "Answer briefly."}


def test_max_tokens_cuts_the_answer(ollama_server):
    result = chat(spec_for(ollama_server, max_tokens=3), user(QUESTION))
    assert result.completion_tokens == 3
    assert result.stopped == "length"
    assert result.text == "".join(split_tokens(result.text)[:3])


def test_missing_model_lists_the_models_the_server_has(ollama_server):
    spec = LLMSpec(backend="ollama", model="llama3.2:1b", host=ollama_server.host)
    with pytest.raises(NodeConfigError) as info:
        chat(spec, user("hi"))
    message = str(info.value)
    assert "llama3.2:1b" in message
    assert "fixture-llm" in message and "fixture-embed" in message
    assert "/api/tags" in ollama_server.paths()


def test_empty_model_name_lists_models(ollama_server):
    with pytest.raises(NodeConfigError, match="fixture-llm"):
        chat(LLMSpec(backend="ollama", model="", host=ollama_server.host), user("hi"))


def test_server_down_retries_then_says_not_reachable(monkeypatch):
    port = free_port()  # nothing listens there
    attempts: list[float] = []
    real_make = ollama_backend.make_client

    def counting_client(host, timeout_s):
        client = real_make(host, timeout_s)
        real_chat = client.chat

        def chat_(*a, **kw):
            attempts.append(time.perf_counter())
            return real_chat(*a, **kw)

        client.chat = chat_
        return client

    monkeypatch.setattr(ollama_backend, "make_client", counting_client)
    spec = LLMSpec(backend="ollama", model="m", host=f"127.0.0.1:{port}", retries=2,
                   extra={"retry_backoff_s": 0.01})
    with pytest.raises(OllamaUnreachable) as info:
        chat(spec, user("hi"))
    assert f"Ollama is not reachable at http://127.0.0.1:{port}" in str(info.value)
    assert len(attempts) == 3  # the first try and two retries


def test_retry_succeeds_when_the_server_comes_up():
    port = free_port()
    server = OllamaFixtureServer(port=port)
    starter = threading.Timer(0.3, server.start)
    starter.start()
    try:
        spec = LLMSpec(backend="ollama", model="fixture-llm", host=f"127.0.0.1:{port}",
                       retries=6, extra={"retry_backoff_s": 0.1})
        result = chat(spec, user("hi"))
        assert result.text.startswith(CANNED_PREFIX)
    finally:
        starter.join()
        server.stop()


def test_cancel_during_generation(ollama_server):
    ollama_server.token_delay_s = 0.02
    rec = Recorder(cancel_after=3)
    with pytest.raises(RunCancelled, match="cancelled after 3 tokens"):
        chat(spec_for(ollama_server), user(QUESTION), ctx=rec.context())
    assert len(rec.tokens) == 3

    rec = Recorder(cancel_after=2)
    result = chat(spec_for(ollama_server), user(QUESTION), ctx=rec.context(),
                  raise_on_cancel=False)
    assert result.stopped == "cancelled"
    assert result.text == "".join(rec.tokens)
    assert len(result.text) < len(canned_answer({"messages": [{"role": "user",
                                                               "content": QUESTION}]}))


def test_connection_dropped_mid_stream_is_a_clear_error(ollama_server):
    ollama_server.drop_after_chunks = 4
    rec = Recorder()
    with pytest.raises(OllamaError, match="dropped the connection"):
        chat(spec_for(ollama_server), user(QUESTION), ctx=rec.context())
    assert len(rec.tokens) == 4


def test_timeout_is_honoured(ollama_server):
    ollama_server.token_delay_s = 1.0
    with pytest.raises(OllamaError, match="timeout_s=0.2"):
        chat(spec_for(ollama_server, timeout_s=0.2), user(QUESTION))


def test_host_comes_from_ollama_host_env(ollama_server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.host)
    assert resolve_host(None) == ollama_server.url
    result = chat(LLMSpec(backend="ollama", model="fixture-llm"), user("hi"))
    assert result.text.startswith(CANNED_PREFIX)
    monkeypatch.delenv("OLLAMA_HOST")
    assert resolve_host(None) == "http://127.0.0.1:11434"
    assert resolve_host("gpu-box:9999") == "http://gpu-box:9999"


def test_fixture_server_speaks_the_rest_of_the_api(ollama_server):
    import ollama

    client = ollama.Client(host=ollama_server.url)
    names = [m.model for m in client.list().models]
    assert names == ["fixture-llm", "fixture-embed"]
    pieces = [part.response for part in client.generate(model="fixture-llm", prompt="why",
                                                         stream=True)]
    assert "".join(pieces).startswith(CANNED_PREFIX)
    whole = client.generate(model="fixture-llm", prompt="why")
    assert whole.response == "".join(pieces) and whole.done
    first = client.embed(model="fixture-embed", input=["alpha", "beta"]).embeddings
    again = client.embed(model="fixture-embed", input="alpha").embeddings
    assert len(first) == 2 and len(first[0]) == 16
    assert first[0] == again[0] and first[0] != first[1]
    with pytest.raises(ollama.ResponseError) as info:
        client.embed(model="nope", input="x")
    assert info.value.status_code == 404 and "model 'nope' not found" in str(info.value)
    import httpx

    assert httpx.get(f"{ollama_server.url}/api/version").json()["version"]


@pytest.mark.real_ollama
def test_real_ollama_answers():
    import ollama

    client = ollama.Client(host="127.0.0.1:11434", timeout=30)
    models = [m.model for m in client.list().models]
    if not models:
        pytest.skip("the real Ollama has no models")
    rec = Recorder()
    spec = LLMSpec(backend="ollama", model=models[0], host="127.0.0.1:11434", max_tokens=16)
    result = chat(spec, user("Say hello."), ctx=rec.context())
    assert result.completion_tokens > 0
    assert "".join(rec.tokens) == result.text
