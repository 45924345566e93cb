"""Serving a graph from elsewhere: ``modrag mcp`` (started by an agent's config, whose stderr
nobody reads) refuses one that reaches outside its folder unless ``--trust``; ``modrag serve``
prints the list it promises; the graph's name never enters the HTML of /docs or /redoc."""

from __future__ import annotations

import pytest

from modrag_studio.cli import main
from modrag_studio.engine.core.document import GraphDocument, save
from modrag_studio.engine.trust.reach import is_trusted
from tests.engine.test_trust import evil_graph


@pytest.fixture
def received(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    secret = tmp_path / "private" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text("PRIVATE {question}")
    path = tmp_path / "downloads" / "g.json"
    save(evil_graph(str(secret)), path)
    return path, secret


def test_mcp_refuses_a_received_graph_until_trusted(received, capsys, monkeypatch):
    pytest.importorskip("mcp")
    from modrag_studio.server import mcp_transport

    path, secret = received
    served: list[object] = []

    async def serve_stdio(server):
        served.append(server)

    monkeypatch.setattr(mcp_transport, "serve_stdio", serve_stdio)
    assert main(["mcp", str(path)]) == 2
    err = capsys.readouterr().err
    assert "was not made or run here" in err and f"reads {secret}" in err
    assert "--trust" in err and not served and not is_trusted(path)
    assert main(["mcp", str(path), "--trust"]) == 0
    assert len(served) == 1 and is_trusted(path)


def test_serve_prints_what_the_graph_reaches(received, capsys, monkeypatch):
    import uvicorn

    path, secret = received
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    assert main(["serve", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"reads {secret}  (prompt.template_file)" in err
    assert "contacts attacker.example  (llm.host)" in err


def test_the_graph_name_is_escaped_in_the_docs_pages(tmp_path):
    from fastapi.testclient import TestClient

    from modrag_studio.server import ServerSettings, create_app

    name = "x</title><script>alert(1)</script>"
    doc = GraphDocument.model_validate({"metadata": {"name": name}, "nodes": [
        {"id": "q", "type": "graph.input", "params": {"name": "question"}},
        {"id": "out", "type": "graph.output", "params": {"name": "answer"}}],
        "edges": [{"from": "q.value", "to": "out.value"}]})
    app = create_app(doc, ServerSettings(allowed_hosts=["testserver"], index_at_startup=False,
                                         cache_dir=tmp_path / "cache"))
    with TestClient(app) as client:
        for page in ("/docs", "/redoc"):
            response = client.get(page)
            assert response.status_code == 200, page
            assert "<script>alert(1)</script>" not in response.text, page
            assert "x&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
        assert client.get("/openapi.json").json()["info"]["title"].endswith(name)
