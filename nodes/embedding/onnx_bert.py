"""A sentence-transformers BERT model run by ONNX Runtime, from an export made on this machine.

The packaged all-MiniLM-L6-v2 embeds bulk text on ONNX Runtime within a few per cent of
torch's speed (fused attention, layer-norm and GELU kernels; bench/bench_embed_runtimes.py)
and starts in under a second without importing torch (which takes about 10 s). Nothing is
downloaded: the first use exports the local model folder with ``torch.onnx.export`` (eager
attention, so ONNX Runtime's BERT fusions apply), fuses it with
``onnxruntime.transformers.optimizer`` and keeps the file under
``model_dir()/onnx/<name>-<digest>/``; the digest covers the weights, the config and this
module's recipe, so another model or a changed one gets its own export. The file is written
to a temporary name and renamed into place, so a reader never sees half of one.

Tokenizing and pooling are ``numpy_bert``'s (the same folders are supported); the vectors
match sentence-transformers on torch to about 1e-6.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import threading
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modrag_nodes.embedding.numpy_bert import model_head, padded_batch, pooled, window_tokenizer

if TYPE_CHECKING:
    import numpy as np

RECIPE = "bert-eager-opset17-ortfused-1"  # change it when the export below changes
EXPORT_FILE = "model.onnx"
INT8_FILE = "model_int8.onnx"
_EXPORT_LOCK = threading.Lock()


def runtime_installed() -> bool:
    """Whether ONNX Runtime can be imported."""
    return importlib.util.find_spec("onnxruntime") is not None


def exporter_installed() -> bool:
    """Whether a model can be exported here (torch, transformers and onnx)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("torch", "transformers", "onnx", "onnxruntime"))


@lru_cache(maxsize=16)
def _digest(folder: str, stats: tuple[int, ...]) -> str:
    sha = hashlib.sha256(RECIPE.encode())
    with open(Path(folder) / "model.safetensors", "rb") as weights:
        sha.update(hashlib.file_digest(weights, "sha256").digest())
    sha.update((Path(folder) / "config.json").read_bytes())
    return sha.hexdigest()[:20]


def model_digest(folder: str | Path) -> str:
    """What identifies the export of ``folder``: its weights' and config's bytes and the
    recipe (read once per process while neither file changes)."""
    folder = Path(folder).resolve()
    stats = tuple(n for name in ("model.safetensors", "config.json")
                  for stat in [(folder / name).stat()]
                  for n in (stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return _digest(str(folder), stats)


def export_path(folder: str | Path) -> Path:
    """Where the export of ``folder`` is (or will be) kept."""
    from modrag_studio.engine.core.node import model_dir

    folder = Path(folder)
    return model_dir() / "onnx" / f"{folder.resolve().name}-{model_digest(folder)}" / EXPORT_FILE


def exported(folder: str | Path) -> Path | None:
    """The export of ``folder`` when it has been made already (None otherwise)."""
    path = export_path(folder)
    return path if path.is_file() else None


def ensure_export(folder: str | Path) -> Path:
    """The export of ``folder``, made now when missing (imports torch once; seconds)."""
    path = export_path(folder)
    if path.is_file():
        return path
    with _EXPORT_LOCK:
        if not path.is_file():
            _export(Path(folder), path)
    return path


def _export(folder: Path, dest: Path) -> None:
    """Export, fuse and write ``dest`` atomically (a temporary file renamed into place)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModel

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    model = AutoModel.from_pretrained(str(folder), local_files_only=True,
                                      attn_implementation="eager").eval()

    class Hidden(torch.nn.Module):
        """The encoder's last hidden states (pooling stays in numpy)."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    dest.parent.mkdir(parents=True, exist_ok=True)
    sample = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "hidden"]}
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".export-") as work:
        raw = Path(work) / "raw.onnx"
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(Hidden(), (sample, sample, torch.zeros_like(sample)), str(raw),
                              input_names=names, output_names=["hidden"], dynamic_axes=axes,
                              opset_version=17, dynamo=False)
        fused = optimize_model(str(raw), model_type="bert",
                               num_heads=int(config["num_attention_heads"]),
                               hidden_size=int(config["hidden_size"]), opt_level=0)
        ready = Path(work) / EXPORT_FILE
        fused.save_model_to_file(str(ready))
        os.replace(ready, dest)


def ensure_quantized(folder: str | Path) -> Path:
    """An int8 copy of the export (dynamic quantisation, weights per channel), made now when
    missing: about 1.7x as fast, but its vectors are only near the float32 ones (cosine
    about 0.99), so nothing picks it unless asked (bench/bench_embed_runtimes.py)."""
    source = ensure_export(folder)
    path = source.with_name(INT8_FILE)
    if path.is_file():  # made before: the quantiser (and onnx, 0.6 s to import) stays out
        return path
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _EXPORT_LOCK:
        if not path.is_file():
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=".quantize-") as work:
                ready = Path(work) / INT8_FILE
                quantize_dynamic(str(source), str(ready), per_channel=True,
                                 weight_type=QuantType.QInt8,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
                os.replace(ready, path)
    return path


_thread_limit: list[int] = []  # set by limit_threads (a Ray actor's share of the CPUs)


def limit_threads(threads: int) -> None:
    """Run sessions loaded from now on with ``threads`` threads (default: every core)."""
    _thread_limit[:] = [max(1, int(threads))]


def cores() -> int:
    """The CPUs this process may run on (or the limit ``limit_threads`` set)."""
    if _thread_limit:
        return _thread_limit[0]
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class OnnxBert:
    """One loaded export: ``encode(texts)`` gives float32 (n, dim) sentence vectors."""

    def __init__(self, folder: str | Path, model_file: str | Path | None = None,
                 threads: int | None = None) -> None:
        import onnxruntime as ort

        folder = Path(folder)
        self.path = Path(model_file) if model_file is not None else ensure_export(folder)
        self.pooling, self.normalize, self.max_length = model_head(folder)
        self.tokenizer = window_tokenizer(folder, self.max_length)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or cores()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.path), options,
                                            providers=["CPUExecutionProvider"])
        self.dim = int(json.loads((folder / "config.json").read_text(
            encoding="utf-8"))["hidden_size"])

    def get_embedding_dimension(self) -> int:
        """The vectors' dimension (named as sentence-transformers names it)."""
        return self.dim

    def parameter_bytes(self) -> int:
        """The bytes of the exported model (its weights, nearly all of it)."""
        return self.path.stat().st_size

    def encode(self, texts: list[str]) -> np.ndarray:
        """Sentence vectors of ``texts`` (one padded batch), float32 (n, dim)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids, types, mask = padded_batch(self.tokenizer, texts)
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                         "token_type_ids": types})[0]
        return pooled(hidden, mask, self.pooling, self.normalize)
