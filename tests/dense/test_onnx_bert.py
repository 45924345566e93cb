"""The ONNX Runtime path of sentence-transformers BERT models: exported here, the same vectors,
picked by 'auto' for bulk embedding (and for queries once the export exists)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from modrag_nodes.embedding import models, onnx_bert
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_studio.engine.core.errors import NodeConfigError

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "How often is the lubrication pump LP-07 serviced?",
    "",
    "Ünïcödé Straße, 東京の工場 and an emoji 🚀",
    "word " * 400,  # longer than the model's 256 tokens: truncated alike
    "Visitors wear safety glasses in the machining hall; contractors sign in at gate 3.",
    "The canteen opens at 06:00.",
]


def _model_folder() -> str:
    return models.resolve_sentence_transformer(models.DEFAULT_MODEL)[0]


def _runtime(texts: int, **extra: str) -> str:
    return models.sentence_transformer_runtime(EmbedderSpec(extra=extra), _model_folder(),
                                               True, texts)


def test_auto_picks_numpy_for_queries_and_onnx_for_bulk_until_exported(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_MODEL_DIR", str(tmp_path))
    assert onnx_bert.exported(_model_folder()) is None
    assert _runtime(1) == "numpy"
    assert _runtime(models.BULK_TEXTS - 1) == "numpy"
    assert _runtime(models.BULK_TEXTS) == "onnx"
    assert _runtime(1, runtime="torch") == "torch"
    assert _runtime(5000, runtime="numpy") == "numpy"
    assert _runtime(5000, runtime="onnx-int8") == "onnx-int8"  # never picked by auto
    # once exported, ONNX Runtime starts quicker than numpy: queries take it too
    path = onnx_bert.export_path(_model_folder())
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    assert _runtime(1) == "onnx"
    # without ONNX Runtime: numpy for queries, torch (the faster of the two) for bulk
    monkeypatch.setattr(onnx_bert, "runtime_installed", lambda: False)
    assert (_runtime(1), _runtime(models.BULK_TEXTS)) == ("numpy", "torch")
    with pytest.raises(NodeConfigError, match="'onnx' needs the packages onnxruntime"):
        _runtime(1, runtime="onnx")


def test_the_export_is_keyed_on_the_weights_and_config(tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_MODEL_DIR", str(tmp_path / "models"))
    source = Path(_model_folder())
    copy = tmp_path / "copy"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").symlink_to(source / "model.safetensors")
    assert onnx_bert.model_digest(copy) == onnx_bert.model_digest(source)
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}),
                                      encoding="utf-8")
    assert onnx_bert.model_digest(copy) != onnx_bert.model_digest(source)
    assert onnx_bert.export_path(copy).parent != onnx_bert.export_path(source).parent
    assert onnx_bert.export_path(source).is_relative_to(tmp_path / "models" / "onnx")


@pytest.mark.slow  # exports the model (imports torch) and loads sentence-transformers
def test_onnx_export_gives_torch_vectors_and_is_written_whole(tmp_path, monkeypatch):
    from onnxruntime.transformers import optimizer
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("MODRAG_MODEL_DIR", str(tmp_path))
    folder = _model_folder()
    fuse = optimizer.optimize_model

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(optimizer, "optimize_model", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        onnx_bert.ensure_export(folder)
    target = onnx_bert.export_path(folder)
    assert not target.exists() and list(target.parent.iterdir()) == []  # nothing half-made
    monkeypatch.setattr(optimizer, "optimize_model", fuse)

    models.clear_models()
    spec = EmbedderSpec(extra={"runtime": "onnx"})
    assert type(models._sentence_transformer(spec)).__name__ == "OnnxBert"
    got = embed_texts(spec, TEXTS)
    reference = SentenceTransformer(folder, device="cpu").encode(
        TEXTS, batch_size=4, convert_to_numpy=True, show_progress_bar=False)
    assert got.shape == reference.shape == (len(TEXTS), 384)
    assert (got * reference).sum(axis=1).min() >= 0.9999
    assert np.abs(got - reference).max() < 1e-5

    # an unreadable export (another version's, a damaged disk) is made again
    target.write_bytes(b"not a model")
    models.clear_models()
    again = embed_texts(spec, TEXTS)
    assert np.abs(again - got).max() < 1e-6 and target.stat().st_size > 1_000_000


@pytest.mark.slow  # exports the model once (imports torch) unless the test cache holds it
def test_a_query_on_the_onnx_runtime_in_a_fresh_process_imports_no_torch():
    onnx_bert.ensure_export(_model_folder())  # the tests' MODRAG_MODEL_DIR, kept between runs
    probe = ("import sys\n"
             "from modrag_nodes.embedding import models\n"
             "from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts\n"
             "v = embed_texts(EmbedderSpec(), ['how often is LP-07 serviced?'], role='query')\n"
             "print(v.shape, type(models._sentence_transformer(EmbedderSpec())).__name__, "
             "'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split("\n")[-2] == "(1, 384) OnnxBert False", out.stderr


def test_a_ray_actor_s_thread_share_limits_onnx_sessions(monkeypatch):
    monkeypatch.setattr(onnx_bert, "_thread_limit", [])
    assert onnx_bert.cores() >= 1
    onnx_bert.limit_threads(1)
    assert onnx_bert.cores() == 1
    path = onnx_bert.exported(_model_folder())
    if path is not None:  # the tests' model dir holds the export once a slow test made it
        session = onnx_bert.OnnxBert(_model_folder(), path).session
        assert session.get_session_options().intra_op_num_threads == 1


@pytest.mark.slow  # quantises the export (and exports it unless the test cache holds it)
def test_the_int8_runtime_is_asked_for_and_stays_near_float32():
    models.clear_models()
    fp32 = embed_texts(EmbedderSpec(extra={"runtime": "onnx"}), TEXTS)
    spec = EmbedderSpec(extra={"runtime": "onnx-int8"})
    int8 = embed_texts(spec, TEXTS)
    model = models._sentence_transformer(spec)
    assert model.path.name == onnx_bert.INT8_FILE and model.parameter_bytes() < 40_000_000
    cosine = (fp32 * int8).sum(axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98  # near float32 ...
    assert np.abs(fp32 - int8).max() > 1e-4  # ... and not float32 itself


@pytest.mark.slow  # quantises the export once unless the test cache holds it
def test_an_int8_query_in_a_fresh_process_imports_neither_torch_nor_onnx():
    onnx_bert.ensure_quantized(_model_folder())
    probe = ("import sys\n"
             "from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts\n"
             "spec = EmbedderSpec(extra={'runtime': 'onnx-int8'})\n"
             "v = embed_texts(spec, ['how often is LP-07 serviced?'], role='query')\n"
             "print(v.shape, 'torch' in sys.modules, 'onnx' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split("\n")[-2] == "(1, 384) False False", out.stderr
