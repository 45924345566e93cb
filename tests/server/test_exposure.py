"""A served graph cannot read the server's files or rewrite its index (real uvicorn)."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import httpx
import pytest

from modrag_nodes.embedding.contracts import EmbeddedChunks
from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.vectorstore import chroma_store as cs
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.node import NodeContext, NodeType
from modrag_studio.engine.core.ports import InputPort, OutputPort
from modrag_studio.server import ServerSettings, create_app
from modrag_studio.server.exposure import Exposure, ExposureError, path_like_inputs
from tests.server.conftest import make_registry, serve


class HashEmbed(NodeType):
    """Test fixture: deterministic 8-dimensional vectors from the chunk text (no model)."""

    type_id = "test.hash_embed"
    inputs = (InputPort("chunks", list[Chunk]),)
    outputs = (OutputPort("embedded", EmbeddedChunks),)

    def run(self, ctx: NodeContext, params: Any, chunks: list[Chunk]) -> dict[str, Any]:
        import numpy as np

        rows = [np.frombuffer(hashlib.sha256(c.text.encode()).digest()[:32], dtype=np.uint8)[:8]
                for c in chunks]
        vectors = np.stack(rows).astype(np.float32) + 1.0
        return {"embedded": EmbeddedChunks(
            chunks=chunks, vectors=vectors, model_id="ollama:hash", dim=8,
            embedder=EmbedderSpec(kind="ollama", model="hash"))}


def registry():
    reg = make_registry()
    reg.register(HashEmbed)
    return reg


def rag_graph(corpus: str, store: str) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "exposure_test"},
        "nodes": [
            {"id": "question", "type": "graph.input", "params": {"name": "question"}},
            {"id": "corpus", "type": "graph.input",
             "params": {"name": "corpus", "default": corpus}},
            {"id": "load", "type": "load.files"},
            {"id": "split", "type": "split.recursive", "params": {"chunk_size": 200,
                                                                  "overlap": 0}},
            {"id": "emb", "type": "test.hash_embed"},
            {"id": "store", "type": "store.chroma",
             "params": {"path": store, "collection": "served"}},
            {"id": "docs", "type": "graph.output", "params": {"name": "docs"}},
            {"id": "index", "type": "graph.output", "params": {"name": "index"}},
            {"id": "echo", "type": "graph.output", "params": {"name": "question"}},
        ],
        "edges": [
            {"from": "corpus.value", "to": "load.path"},
            {"from": "load.documents", "to": "split.documents"},
            {"from": "split.chunks", "to": "emb.chunks"},
            {"from": "emb.embedded", "to": "store.embedded"},
            {"from": "load.documents", "to": "docs.value"},
            {"from": "store.index", "to": "index.value"},
            {"from": "question.value", "to": "echo.value"},
        ],
    })


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "data"
    (root / "corpus").mkdir(parents=True)
    for i in range(6):
        (root / "corpus" / f"doc{i}.md").write_text(f"# Doc {i}\n\nPump {i} is serviced "
                                                    f"every {i + 2} weeks.\n")
    (root / "one").mkdir()
    (root / "one" / "only.md").write_text("# Only\n\nA single document.\n")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nTOP-SECRET-TOKEN\n")
    return root, secret


def count(store: str) -> int:
    cs.forget_clients()
    return cs.get_collection(cs.client_for(("chroma-persistent", store)), "served").count()


def test_path_inputs_are_recognised_and_fixed_by_default(corpus, tmp_path):
    root, _ = corpus
    doc = rag_graph(str(root / "corpus"), str(tmp_path / "chroma"))
    assert path_like_inputs(doc, default_registry()) == {"corpus"}
    exposure = Exposure.plan(doc)
    assert exposure.exposed == ["question"]
    with pytest.raises(ExposureError, match="--data-root"):
        Exposure.plan(doc, expose=["corpus"])
    with pytest.raises(ExposureError, match="no input 'nope'"):
        Exposure.plan(doc, expose=["nope"])


def test_a_client_cannot_choose_a_path_or_shrink_the_index(corpus, tmp_path):
    root, secret = corpus
    store = str(tmp_path / "chroma")
    doc = rag_graph(str(root / "corpus"), store)
    settings = ServerSettings(cache_dir=tmp_path / "cache")
    with serve(doc, settings, registry()) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert count(store) == 6  # indexed at start-up
        ok = http.post("/run", json={"question": "pump?"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["outputs"]["index"]["count"] == 6
        attack = http.post("/run", json={"question": "x", "corpus": str(secret)})
        assert attack.status_code == 422
        assert "corpus" in attack.text and "TOP-SECRET" not in attack.text
        schema = http.get("/openapi.json").text
        assert '"corpus"' not in schema
    assert count(store) == 6


def test_an_exposed_path_stays_in_the_data_root_and_never_rewrites_the_store(corpus, tmp_path):
    root, secret = corpus
    store = str(tmp_path / "chroma")
    (root / "escape").symlink_to(secret.parent)
    os.makedirs(root / "~", exist_ok=True)
    doc = rag_graph(str(root / "corpus"), store)
    settings = ServerSettings(cache_dir=tmp_path / "cache", expose_inputs=["corpus"],
                              data_root=root)
    with serve(doc, settings, registry()) as url, httpx.Client(base_url=url, timeout=60) as http:
        for path in (str(secret), "../secret.md", "escape/secret.md", "corpus/../../secret.md"):
            response = http.post("/run", json={"question": "x", "corpus": path})
            assert response.status_code == 422, (path, response.text)
            assert "outside the server's data root" in response.text
            assert "TOP-SECRET" not in response.text
        tilde = http.post("/run", params={"trace": "true"},
                          json={"question": "x", "corpus": "~/secret.md"})
        assert "TOP-SECRET" not in tilde.text  # '~' is a folder name inside the root
        assert tilde.json()["status"] == "failed"
        shrink = http.post("/run", json={"question": "x", "corpus": "one"})
        assert shrink.status_code == 200
        body = shrink.json()
        assert body["status"] == "failed"
        assert any("read-only" in e["message"] for e in body["errors"]), body["errors"]
        same = http.post("/run", json={"question": "x"})
        assert same.json()["status"] == "ok"
    assert count(store) == 6


def test_host_header_must_name_the_bound_host(corpus, tmp_path):
    from tests.server.conftest import echo_graph

    with serve(echo_graph(), ServerSettings(cache_dir=tmp_path)) as url, \
            httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/run", json={"question": "a"}).status_code == 200
        rebinding = http.post("/run", json={"question": "a"},
                              headers={"Host": "attacker.example:8000"})
        assert rebinding.status_code == 421
        assert http.get("/health", headers={"Host": "localhost"}).status_code in (200, 503)
    allowed = ServerSettings(cache_dir=tmp_path, allowed_hosts=["rag.internal"])
    with serve(echo_graph(), allowed) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/run", json={"question": "a"},
                         headers={"Host": "rag.internal"}).status_code == 200
        assert http.post("/run", json={"question": "a"}).status_code == 421


def test_serve_refuses_an_empty_host_and_an_unexposable_input(corpus, tmp_path, capsys):
    from modrag_studio.cli import main
    from modrag_studio.engine.core.document import save

    root, _ = corpus
    path = tmp_path / "g.json"
    save(GraphDocument.model_validate({
        "nodes": [{"id": "q", "type": "graph.input", "params": {"name": "question"}},
                  {"id": "c", "type": "graph.input",
                   "params": {"name": "corpus", "default": str(root / "corpus")}},
                  {"id": "load", "type": "load.files"},
                  {"id": "out", "type": "graph.output", "params": {"name": "docs"}}],
        "edges": [{"from": "c.value", "to": "load.path"},
                  {"from": "load.documents", "to": "out.value"}]}), path)
    assert main(["serve", str(path), "--host", ""]) == 2
    assert "--host is empty" in capsys.readouterr().err
    assert main(["serve", str(path), "--expose-input", "corpus"]) == 2
    assert "--data-root" in capsys.readouterr().err


def test_app_refuses_a_path_input_without_any_value(tmp_path):
    doc = rag_graph("", str(tmp_path / "chroma"))
    doc.nodes[1].params.pop("default")
    with pytest.raises(ExposureError, match="--input corpus=VALUE"):
        create_app(doc, ServerSettings(cache_dir=None), registry=registry())


def neutral_graph(corpus: str, store: str) -> GraphDocument:
    """``rag_graph`` with the corpus input named 'material' (no path word) and reaching
    ``load.path`` through a reroute point."""
    data = rag_graph(corpus, store).model_dump(mode="json", by_alias=True, exclude_none=True)
    for node in data["nodes"]:
        if node["id"] == "corpus":
            node["id"], node["params"]["name"] = "material", "material"
    data["nodes"].append({"id": "via", "type": "flow.reroute"})
    data["edges"] = [e for e in data["edges"] if e["to"] != "load.path"]
    data["edges"] += [{"from": "material.value", "to": "via.value"},
                      {"from": "via.value", "to": "load.path"}]
    return GraphDocument.model_validate(data)


def test_a_path_input_with_a_neutral_name_wired_through_edges_is_fixed(corpus, tmp_path):
    root, secret = corpus
    store = str(tmp_path / "chroma")
    doc = neutral_graph(str(root / "corpus"), store)
    assert path_like_inputs(doc, default_registry()) == {"material"}
    assert Exposure.plan(doc).exposed == ["question"]
    with pytest.raises(ExposureError, match="--data-root"):
        Exposure.plan(doc, expose=["material"])
    settings = ServerSettings(cache_dir=tmp_path / "cache")
    with serve(doc, settings, registry()) as url, httpx.Client(base_url=url, timeout=60) as http:
        attack = http.post("/run", json={"question": "x", "material": str(secret)})
        assert attack.status_code == 422
        assert "material" in attack.text and "TOP-SECRET" not in attack.text
        ok = http.post("/run", json={"question": "pump?"})
        assert ok.status_code == 200, ok.text
        assert "TOP-SECRET" not in ok.text and ok.json()["outputs"]["index"]["count"] == 6
