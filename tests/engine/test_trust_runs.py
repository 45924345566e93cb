"""Trust is decided on the document that runs: a stored variant, a command-line variant, a
component link and a knowledge-graph file are in the list of what a graph reaches, and every
entry point asks (or refuses without ``--trust``) on what it is about to execute."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.compose import components
from modrag_studio.engine.compose.inline import collapse
from modrag_studio.engine.core.document import ComponentLink, GraphDocument, load, save
from modrag_studio.engine.trust.gate import disclosure
from modrag_studio.engine.trust.reach import is_trusted, reach
from tests.engine.helpers import chain_graph


def variant_graph() -> GraphDocument:
    """A graph whose base reads only its own template and talks to this machine; its stored
    variant 'v' reads ../secret/key.txt and sends the prompt to remote.example."""
    return GraphDocument.model_validate({
        "metadata": {"name": "harmless"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "prompt", "type": "prompt.build", "params": {"template_file": "t.txt"}},
            {"id": "llm", "type": "llm.model",
             "params": {"backend": "ollama", "model": "m", "host": "http://127.0.0.1:9"}},
            {"id": "gen", "type": "llm.generate"},
            {"id": "out", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [{"from": "q.value", "to": "prompt.query"},
                  {"from": "prompt.prompt", "to": "gen.prompt"},
                  {"from": "llm.llm", "to": "gen.llm"},
                  {"from": "gen.answer", "to": "out.value"}],
        "variants": [{"name": "v", "params": {
            "prompt": {"template_file": "../secret/key.txt"},
            "llm": {"host": "http://remote.example:11434"}}}],
    })


@pytest.fixture
def received(tmp_path, monkeypatch):
    """The variant graph in downloads/, a secret beside that folder, no host reachable."""
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("MODRAG_APPROVED_HOSTS", raising=False)
    real = socket.getaddrinfo

    def no_dns(host, *args, **kwargs):
        if host not in ("localhost", "127.0.0.1", "::1"):
            raise OSError("blocked by the test")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    secret = tmp_path / "secret" / "key.txt"
    secret.parent.mkdir()
    secret.write_text("PRIVATE {question}")
    path = tmp_path / "downloads" / "g.json"
    path.parent.mkdir()
    (path.parent / "t.txt").write_text("Answer {question}")
    save(variant_graph(), path)
    return path, secret


def test_a_stored_variant_is_listed_and_compare_asks_before_running_it(received, capsys):
    path, secret = received
    base_only = variant_graph().model_copy(update={"variants": None})
    assert reach(base_only, default_registry(), path).empty  # the base reaches nothing
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nothing outside its folder" not in out
    assert f"reads {secret}  (variant 'v': prompt.template_file)" in out
    assert "contacts remote.example  (variant 'v': llm.host)" in out
    assert main(["compare", str(path), "--variant", "v", "--input", "question=hi"]) == 2
    err = capsys.readouterr().err
    assert "was not made or run here" in err and str(secret) in err
    assert not is_trusted(path)


def test_a_command_line_change_is_decided_on_the_graph_it_makes(received, capsys):
    stored, secret = received
    path = stored.with_name("plain.json")
    save(variant_graph().model_copy(update={"variants": None}), path)
    for command in (["run", str(path), "--set", "prompt.template_file=../secret/key.txt",
                     "--no-cache"],
                    ["compare", str(path), "--variant",
                     "x:prompt.template_file=../secret/key.txt"]):
        assert main([*command, "--input", "question=hi"]) == 2, command
        err = capsys.readouterr().err
        assert "was not made or run here" in err and str(secret) in err, command
    assert main(["tune", str(path), "--dataset", str(path.parent), "--output", "out.value",
                 "--space", "llm.host=http://127.0.0.1:9,http://tuned.example:1"]) == 2
    assert "contacts tuned.example" in capsys.readouterr().err
    assert main(["eval", str(path), "--dataset", str(path.parent), "--output", "out.value",
                 "--grid", "llm.host=http://127.0.0.1:9,http://grid.example:1"]) == 2
    assert "contacts grid.example" in capsys.readouterr().err


def test_a_component_link_naming_any_file_is_listed(tmp_path):
    """A link to /etc/shadow or ../secret is read (its hash is checked before each run)."""
    collapsed = collapse(chain_graph(), ["up", "suffix", "join"], "shout")
    inner = collapsed.node("shout").subgraph.graph
    for target in ("/etc/shadow", "../secret/x.subgraph.json"):
        link = ComponentLink(path=target, sha256=components.content_hash(inner))
        spec = collapsed.node("shout")
        linked = spec.model_copy(update={"subgraph": spec.subgraph.model_copy(
            update={"link": link})})
        doc = collapsed.model_copy(update={"nodes": [
            linked if n.id == "shout" else n for n in collapsed.nodes]})
        found = reach(doc, default_registry(), tmp_path / "inbox" / "g.json")
        expected = str((tmp_path / "inbox" / target).resolve())
        assert ("shout.subgraph.link", expected) in found.files, found.files


def kg_graph(folder: str) -> GraphDocument:
    return GraphDocument.model_validate({"nodes": [
        {"id": "code", "type": "kg.code_graph", "params": {"path": "src", "folder": folder,
                                                           "name": "notes"}},
        {"id": "kg", "type": "kg.build", "params": {"folder": folder, "name": "notes"}}]})


def test_a_knowledge_graph_file_in_the_data_folder_is_a_listed_write(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.setenv("MODRAG_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MODRAG_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "downloads" / "kg.json"
    save(kg_graph(""), path)
    shared = tmp_path / "data" / "kg" / "notes.kg.json"
    lines = disclosure(load(path), default_registry(), path).lines()
    assert f"writes knowledge graph file {shared}  (kg.folder)" in lines
    assert f"writes knowledge graph file {shared}  (code.folder)" in lines
    assert main(["run", str(path), "--no-cache"]) == 2
    assert str(shared) in capsys.readouterr().err
    save(kg_graph("graphs"), path)  # its own folder: nothing to ask
    assert disclosure(load(path), default_registry(), path).empty


def test_an_empty_key_variable_lists_the_default_key_it_sends(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    doc = GraphDocument.model_validate({"nodes": [
        {"id": "llm", "type": "llm.model",
         "params": {"backend": "openai", "model": "m", "api_key_env": "",
                    "host": "https://api.example.com/v1"}}]})
    found = reach(doc, default_registry(), tmp_path / "g.json")
    assert found.env_vars == [("llm.api_key_env", "OPENAI_API_KEY")]
    assert "sends $OPENAI_API_KEY to api.example.com  (llm.api_key_env)" in found.lines()


def test_the_executed_documents_are_all_decided_on(received):
    """The gate takes every document an entry point runs (compare's two sides)."""
    path, secret = received
    plain = load(path).model_copy(update={"variants": None})
    changed = plain.model_copy(deep=True)
    changed.node("prompt").params["template_file"] = str(secret)
    assert disclosure([plain], default_registry(), path).empty
    found = disclosure([plain, changed], default_registry(), path)
    assert [file for _, file in found.files] == [str(secret)]
    assert Path(path).is_file()


def test_compare_decides_on_its_second_graph_too(received, capsys):
    stored, secret = received
    plain, other = stored.with_name("plain.json"), stored.with_name("other.json")
    doc = variant_graph().model_copy(update={"variants": None})
    save(doc, plain)
    changed = doc.model_copy(deep=True)
    changed.node("prompt").params["template_file"] = "../secret/key.txt"
    save(changed, other)
    assert main(["compare", str(plain), str(other), "--input", "question=hi"]) == 2
    err = capsys.readouterr().err
    assert "other.json was not made or run here" in err and str(secret) in err
    assert "plain.json" not in err
