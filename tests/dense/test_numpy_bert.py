"""The numpy runtime of sentence-transformers BERT models: the same vectors, no torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from modrag_nodes.embedding import models, numpy_bert
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_studio.engine.core.errors import NodeConfigError

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "How often is the lubrication pump LP-07 serviced?",
    "The canteen opens at 06:00 and closes at 22:00.",
    "",
    "a",
    "Ünïcödé Straße, 東京の工場 and an emoji 🚀",
    "word " * 400,  # longer than the model's 256 tokens: truncated alike
    "Visitors wear safety glasses in the machining hall; contractors sign in at gate 3.",
]


def _model_folder() -> Path:
    target, _local = models.resolve_sentence_transformer(models.DEFAULT_MODEL)
    return Path(target)


@pytest.mark.slow  # loads sentence-transformers (torch) for the reference vectors
def test_numpy_vectors_match_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    folder = _model_folder()
    assert numpy_bert.supported(folder)
    reference = SentenceTransformer(str(folder), device="cpu").encode(
        TEXTS, batch_size=4, convert_to_numpy=True, show_progress_bar=False)
    mine = numpy_bert.NumpyBert(folder)
    got = np.concatenate([mine.encode(TEXTS[:4]), mine.encode(TEXTS[4:])])
    assert got.shape == reference.shape == (len(TEXTS), 384)
    assert np.abs(got - reference).max() < 1e-5
    # through embed(): the torch runtime asked for explicitly gives the same vectors
    numpy_spec = EmbedderSpec(extra={"runtime": "numpy"})
    torch_spec = EmbedderSpec(extra={"runtime": "torch"})
    assert type(models._sentence_transformer(numpy_spec)).__name__ == "NumpyBert"
    assert type(models._sentence_transformer(torch_spec)).__name__ == "SentenceTransformer"
    assert np.abs(embed_texts(numpy_spec, TEXTS) - embed_texts(torch_spec, TEXTS)).max() < 1e-5


def _copy_with(tmp_path: Path, change) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(_model_folder(), folder,
                    ignore=shutil.ignore_patterns("model.safetensors"))
    (folder / "model.safetensors").symlink_to(_model_folder() / "model.safetensors")
    change(folder)
    return folder


def _edit_json(file: Path, updates: dict) -> None:
    data = json.loads(file.read_text(encoding="utf-8"))
    if isinstance(data, list):
        data.append(updates)
    else:
        data.update(updates)
    file.write_text(json.dumps(data), encoding="utf-8")


def test_only_the_shape_it_runs_exactly_is_supported(tmp_path):
    assert numpy_bert.supported(_copy_with(tmp_path / "same", lambda f: None))
    dense = _copy_with(tmp_path / "dense", lambda f: _edit_json(
        f / "modules.json", {"idx": 3, "name": "3", "path": "3_Dense",
                             "type": "sentence_transformers.models.Dense"}))
    max_pool = _copy_with(tmp_path / "max", lambda f: _edit_json(
        f / "1_Pooling" / "config.json",
        {"pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True}))
    roberta = _copy_with(tmp_path / "roberta", lambda f: _edit_json(
        f / "config.json", {"model_type": "roberta"}))
    assert not any(numpy_bert.supported(f) for f in (dense, max_pool, roberta))
    assert not numpy_bert.supported(tmp_path / "missing")
    spec = EmbedderSpec(model=str(dense), extra={"runtime": "numpy"})
    with pytest.raises(NodeConfigError, match="runtime.*'numpy'.*is not one"):
        models._sentence_transformer(spec)
    with pytest.raises(NodeConfigError, match="runtime.*'tensorrt' is not one of auto, numpy"):
        models._sentence_transformer(EmbedderSpec(extra={"runtime": "tensorrt"}))


def test_embedding_a_query_in_a_fresh_process_imports_no_torch():
    probe = ("import sys\n"
             "from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts\n"
             "v = embed_texts(EmbedderSpec(), ['how often is LP-07 serviced?'], role='query')\n"
             "print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split("\n")[-2] == "(1, 384) False False", out.stderr
