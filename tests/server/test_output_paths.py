"""What ``/run``, ``/run/stream`` and an MCP tool answer holds no absolute server path: the
``source`` of a cited chunk is relative to the data root, or to the corpus folder the
operator fixed, else to the graph's folder."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from fastapi.testclient import TestClient

from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import load
from modrag_studio.server import ServerSettings, create_app
from modrag_studio.server.mcp_tools import call_tool, plan_tools
from tests.server.mcp_helpers import BACKEND, DOCS, install
from tests.tiny_rag import tiny_rag_graph

QUESTION = {"question": "When is LP-07 serviced?"}


def _graph_apart_from_its_corpus(tmp_path: Path) -> tuple[Path, Path]:
    """The graph in ``graphs/``, its corpus in ``srv/corpus`` (outside the graph's folder)."""
    install()
    (tmp_path / "srv").mkdir()
    graph = tmp_path / "graphs" / "faq.json"
    graph.parent.mkdir()
    graph.write_text(json.dumps(tiny_rag_graph(tmp_path / "srv", DOCS, backend=BACKEND)))
    return graph, tmp_path / "srv" / "corpus"


def _sources(body: dict) -> list[str]:
    return [e["chunk"]["source"] for e in body["outputs"]["answer"]["evidence"]]


def test_run_outputs_name_sources_relative_to_the_corpus_not_the_server(tmp_path):
    graph, corpus = _graph_apart_from_its_corpus(tmp_path)
    settings = ServerSettings(cache_dir=tmp_path / "cache", allowed_hosts=["testserver"],
                              fixed_inputs={"corpus": str(corpus)})
    with TestClient(create_app(load(graph), settings, registry=default_registry())) as http:
        answer = http.post("/run", json=QUESTION)
        streamed = http.post("/run/stream", json=QUESTION)
    assert answer.status_code == 200, answer.text
    assert _sources(answer.json()) == ["maint.md"]
    for told in (answer.text, streamed.text):
        assert str(tmp_path) not in told


def test_an_exposed_corpus_is_named_relative_to_the_data_root(tmp_path):
    graph, corpus = _graph_apart_from_its_corpus(tmp_path)
    settings = ServerSettings(cache_dir=tmp_path / "cache", allowed_hosts=["testserver"],
                              expose_inputs=["corpus"], data_root=tmp_path / "srv")
    with TestClient(create_app(load(graph), settings, registry=default_registry())) as http:
        answer = http.post("/run", json={**QUESTION, "corpus": "corpus"})
    assert _sources(answer.json()) == ["corpus/maint.md"]
    assert str(tmp_path) not in answer.text


def test_an_mcp_tool_answer_names_sources_relative_to_the_corpus(tmp_path):
    graph, corpus = _graph_apart_from_its_corpus(tmp_path)
    settings = ServerSettings(cache_dir=tmp_path / "cache", fixed_inputs={"corpus": str(corpus)})
    [tool] = plan_tools([load(graph)], settings)

    async def noop(*_args) -> None:
        return None

    text, structured, failed = anyio.run(call_tool, tool, QUESTION, noop)
    assert not failed
    assert _sources(structured) == ["maint.md"]
    assert str(tmp_path) not in text + json.dumps(structured)
