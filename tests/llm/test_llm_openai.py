"""The OpenAI-compatible backend against the loopback fixture server."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from modrag_nodes.llm import openai_backend
from modrag_nodes.llm.client import LLMSpec, chat
from modrag_nodes.llm.nodes import ChatModel, ChatModelParams
from modrag_nodes.llm.pickers import chat_models
from modrag_studio.engine.core.errors import NodeConfigError, RunCancelled
from tests.llm.helpers import Recorder, user
from tests.llm.openai_fixture_server import PIECES, OpenAIFixtureServer, vector_for

KEY_ENV = "MODRAG_TEST_OPENAI_KEY"


def spec_for(server: OpenAIFixtureServer, **changes) -> LLMSpec:
    values = {"backend": "openai", "model": "fixture-chat", "host": server.base_url,
              "retries": 0, "extra": {"api_key_env": KEY_ENV}}
    values.update(changes)
    return LLMSpec(**values)


def test_streams_with_usage_and_sends_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "secret-1")
    rec = Recorder()
    with OpenAIFixtureServer(api_key="secret-1") as server:
        result = chat(spec_for(server, max_tokens=50), user("How often?"), ctx=rec.context())
        sent = server.requests[-1][1]
    assert rec.tokens == PIECES and result.text == "".join(PIECES)
    assert (result.prompt_tokens, result.completion_tokens) == (11, len(PIECES))
    assert result.stopped == "stop" and result.model == "openai:fixture-chat"
    assert result.time_to_first_token_s is not None
    assert sent["stream"] is True and sent["max_tokens"] == 50
    assert sent["messages"][-1] == {"role": "user", "content": "How often?"}


def test_max_tokens_cut_is_reported_as_length(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    with OpenAIFixtureServer() as server:
        result = chat(spec_for(server, max_tokens=2), user("q"))
    assert result.stopped == "length" and result.completion_tokens == 2


def test_key_from_a_file(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    key_file = tmp_path / "key.txt"
    key_file.write_text("from-file\n")
    with OpenAIFixtureServer(api_key="from-file") as server:
        spec = spec_for(server, extra={"api_key_file": str(key_file)})
        assert chat(spec, user("q")).text == "".join(PIECES)


def test_refused_key_names_the_variable(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong")
    with OpenAIFixtureServer(api_key="right") as server, \
            pytest.raises(NodeConfigError, match=f"refused the API key.*{KEY_ENV}"):
        chat(spec_for(server), user("q"))


def test_unknown_model_is_a_clear_error():
    with OpenAIFixtureServer() as server, \
            pytest.raises(NodeConfigError, match="has no model 'gpt-9'"):
        chat(spec_for(server, model="gpt-9"), user("q"))


def test_unreachable_server_is_retried_then_named():
    spec = LLMSpec(backend="openai", model="m", host="http://127.0.0.1:9/v1", retries=1,
                   extra={"retry_backoff_s": 0.01})
    with pytest.raises(openai_backend.ServerUnreachable, match=r"127\.0\.0\.1:9/v1.*2 times"):
        chat(spec, user("q"))


def test_dropped_stream_keeps_the_partial_text():
    rec = Recorder()
    with OpenAIFixtureServer(drop_after_chunks=2) as server, \
            pytest.raises(openai_backend.ServerError, match="closed the stream") as info:
        chat(spec_for(server), user("q"), ctx=rec.context())
    assert info.value.partial_text == "".join(PIECES[:2])


def test_cancel_stops_between_tokens():
    rec = Recorder(cancel_after=2)
    with OpenAIFixtureServer(token_delay_s=0.05) as server, pytest.raises(RunCancelled):
        chat(spec_for(server), user("q"), ctx=rec.context())
    assert rec.tokens == PIECES[:2]


def test_timeout_is_a_clear_error():
    with OpenAIFixtureServer(token_delay_s=0.6) as server, \
            pytest.raises(openai_backend.ServerError, match="timeout_s=0.2"):
        chat(spec_for(server, timeout_s=0.2), user("q"))


def test_embeddings_in_input_order():
    with OpenAIFixtureServer() as server:
        vectors = openai_backend.embed_texts(server.base_url, "fixture-embed", ["a", "b"])
    assert vectors == [vector_for("a", 8), vector_for("b", 8)]


def test_model_picker_lists_the_server_models(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    with OpenAIFixtureServer(models=["m-b", "m-a"], api_key="k") as server:
        assert chat_models("openai", server.base_url, key_env=KEY_ENV) == ["m-a", "m-b"]
        params = ChatModelParams(backend="openai", host=server.base_url, api_key_env=KEY_ENV)
        assert ChatModel().param_choices(params, "model") == ["m-a", "m-b"]
        params = params.model_copy(update={"model": "m-a"})
        assert "has model 'm-a'" in ChatModel().health(params)
    assert chat_models("openai", "http://127.0.0.1:9/v1") == []


def test_backend_typo_is_refused_naming_the_field():
    with pytest.raises(ValidationError) as info:
        ChatModelParams(backend="olama")
    error = info.value.errors()[0]
    assert error["loc"] == ("backend",) and "'olama'" in error["msg"]
    schema = ChatModelParams.model_json_schema()["properties"]["backend"]
    assert {"embedded", "ollama", "openai"} <= set(schema["enum"])


def test_key_is_never_in_the_graph_params(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "top-secret")
    with OpenAIFixtureServer(api_key="top-secret") as server:
        params = ChatModelParams(backend="openai", model="fixture-chat", host=server.base_url,
                                 api_key_env=KEY_ENV, retries=0)
        spec = ChatModel().run(Recorder().context("llm", "llm.model"), params)["llm"]
        assert chat(spec, user("q")).text
    assert "top-secret" not in json.dumps(params.model_dump())
    assert "top-secret" not in spec.model_dump_json()


def test_embedding_model_node_embeds_through_the_server():
    from modrag_nodes.embedding.models import embed
    from modrag_nodes.embedding.spec import EmbedderSpec

    with OpenAIFixtureServer(models=["fixture-embed"]) as server:
        spec = EmbedderSpec(kind="openai", model="fixture-embed", host=server.base_url,
                            normalize=False)
        vectors = embed(spec, ["alpha", "beta"])
    assert vectors.shape == (2, 8)
    assert vectors[1].tolist() == pytest.approx(vector_for("beta", 8))
