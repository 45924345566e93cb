"""Nothing secret or local reaches a remote client: keys an upstream server echoes are scrubbed
from /run, /health, MCP tool errors and logs; paths are relative to the graph's folder."""

from __future__ import annotations

import json
import logging

import anyio
import pytest
from fastapi.testclient import TestClient

from modrag_studio.engine.core.document import GraphDocument, load, to_json_dict
from modrag_studio.engine.core.redact import hide_paths, scrub
from modrag_studio.server import ServerSettings, create_app
from modrag_studio.server.mcp_tools import call_tool, plan_tools
from tests.llm.openai_fixture_server import OpenAIFixtureServer
from tests.server.conftest import make_registry

KEY_ENV = "MODRAG_UPSTREAM_AUTH"  # a name no secret-name rule catches: the backend's own key
KEY = "upstream-secret-4242"


def chat_graph(tmp_path, host: str) -> GraphDocument:
    doc = GraphDocument.model_validate({
        "metadata": {"name": "chat_service"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "model", "type": "llm.model",
             "params": {"backend": "openai", "model": "fixture-chat", "host": host,
                        "api_key_env": KEY_ENV, "retries": 0}},
            {"id": "chat", "type": "llm.chat"},
            {"id": "answer", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [
            {"from": "q.value", "to": "chat.text"},
            {"from": "model.llm", "to": "chat.llm"},
            {"from": "chat.text", "to": "answer.value"},
        ],
    })
    (tmp_path / "chat.json").write_text(json.dumps(to_json_dict(doc)))
    return load(tmp_path / "chat.json")


def client_for(doc: GraphDocument, tmp_path, **settings) -> TestClient:
    app = create_app(doc, ServerSettings(cache_dir=tmp_path / "cache", allowed_hosts=["testserver"],
                                         index_at_startup=False, **settings),
                     registry=make_registry())
    return TestClient(app)


def test_an_upstream_401_echoing_the_key_never_reaches_a_client_or_the_log(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, KEY)
    caplog.set_level(logging.DEBUG)
    with OpenAIFixtureServer(api_key="the-right-one", echo_refused_key=True) as upstream:
        doc = chat_graph(tmp_path, upstream.base_url)
        with client_for(doc, tmp_path) as http:
            run = http.post("/run", json={"question": "hi"})
            health = http.get("/health")
        [tool] = plan_tools([doc], ServerSettings(cache_dir=tmp_path / "cache2",
                                                  index_at_startup=False),
                            registry=make_registry())

        async def no_progress(*args) -> None:
            pass

        text, structured, failed = anyio.run(call_tool, tool, {"question": "hi"}, no_progress)
    assert run.status_code == 200 and run.json()["status"] == "failed"
    assert "refused the API key" in run.text  # the error is still told ...
    assert health.status_code == 503 and "refused the API key" in health.text
    assert failed and "refused the API key" in text
    for told in (run.text, health.text, text, json.dumps(structured), caplog.text):
        assert KEY not in told  # ... without the key the server echoed


def test_credential_patterns_are_scrubbed_whoever_sent_them(monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", "ollama-cred-77")  # a variable named like a secret
    text = scrub('401: Authorization: Bearer abcDEF123456 rejected; key sk-proj-0123456789ab; '
                 '{"api_key": "p4ssw0rd-xyz"}; Ollama at host failed: bad key ollama-cred-77')
    for secret in ("abcDEF123456", "0123456789ab", "p4ssw0rd-xyz", "ollama-cred-77"):
        assert secret not in text
    assert "Bearer ***" in text and "sk-***" in text
    plain = "the prompt exceeds the token limit of the model; a secret ingredient"
    assert scrub(plain) == plain


def test_health_graph_and_errors_show_paths_relative_to_the_graph_folder(tmp_path):
    missing = tmp_path / "docs"
    doc = GraphDocument.model_validate({
        "metadata": {"name": "loader"},
        "nodes": [
            {"id": "corpus", "type": "graph.input",
             "params": {"name": "corpus", "default": str(missing)}},
            {"id": "load", "type": "load.files"},
            {"id": "docs", "type": "graph.output", "params": {"name": "documents"}},
        ],
        "edges": [{"from": "corpus.value", "to": "load.path"},
                  {"from": "load.documents", "to": "docs.value"}],
    })
    path = tmp_path / "loader.json"
    path.write_text(json.dumps(to_json_dict(doc)))
    doc = load(path)
    with client_for(doc, tmp_path) as http:
        run = http.post("/run", json={})
        graph = http.get("/graph")
    assert run.json()["status"] == "failed"
    assert "'docs' does not exist" in run.json()["errors"][0]["message"]
    for told in (run.text, graph.text):
        assert str(tmp_path) not in told
    assert "/work/models/x.gguf" not in hide_paths("model /work/models/x.gguf missing")


@pytest.mark.parametrize("text", ["see http://127.0.0.1:8080/v1/models", "a/b and ./c ../d",
                                  "answer and/or"])
def test_urls_and_relative_paths_are_left_as_they_are(text):
    assert hide_paths(text, ["/srv"]) == text


def test_paths_and_numbers_in_secret_named_variables_are_not_masked(monkeypatch, tmp_path):
    monkeypatch.setenv("MODRAG_CACHE_KEY_FILE", str(tmp_path / "cache.key"))
    monkeypatch.setenv("MY_TOKEN_LIMIT", "4096000")
    text = f"cannot read {tmp_path / 'cache.key'}: 4096000 bytes"
    assert scrub(text) == text


def test_log_lines_of_any_logger_are_scrubbed(caplog, monkeypatch):
    from modrag_studio.engine.core import redact

    monkeypatch.setattr(logging, "_logRecordFactory", logging.getLogRecordFactory())
    monkeypatch.setattr(redact, "_factory_installed", False)
    redact.remember_secret("logged-secret-99")
    redact.scrub_log_records()
    with caplog.at_level(logging.INFO):
        logging.getLogger("uvicorn.error").warning("upstream said: %s", "key logged-secret-99")
        logging.getLogger("httpx").info("GET http://h/v1/models?key=abcdef123 200")
    assert "logged-secret-99" not in caplog.text and "abcdef123" not in caplog.text
    assert "upstream said: key ***" in caplog.text
