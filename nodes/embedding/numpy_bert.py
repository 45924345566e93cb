"""A sentence-transformers BERT model run on numpy: the same vectors without importing torch.

Importing ``sentence_transformers`` (torch, transformers and their backends) costs most of an
evaluation's start-up (7-11 s of a ``modrag eval`` on two cores) while a small encoder such
as the packaged all-MiniLM-L6-v2 embeds a batch of queries in milliseconds. This module
reads such a model folder (``modules.json`` of Transformer -> Pooling [-> Normalize], a
``BertModel`` config, ``model.safetensors`` and ``tokenizer.json``) and runs the forward
pass in float32 numpy: token, position and type embeddings, post-norm self-attention layers
with exact (erf) GELU, mean or CLS pooling over the attention mask, optional L2 normalisation.
The vectors match sentence-transformers' to about 1e-6 (tested on the packaged model).

:func:`supported` says whether a folder has exactly that shape; anything else (another
architecture, pooling mode, an extra Dense layer, a GPU device) stays on sentence-transformers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where it runs: registering the node types needs none
    import numpy as np

_MODULE = "sentence_transformers.models."
_SIMPLE_MODULES = ([f"{_MODULE}Transformer", f"{_MODULE}Pooling"],
                   [f"{_MODULE}Transformer", f"{_MODULE}Pooling", f"{_MODULE}Normalize"])


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _pooling_mode(folder: Path, modules: list[dict[str, Any]]) -> str | None:
    pooling = _read_json(folder / modules[1].get("path", "1_Pooling") / "config.json")
    modes = [m for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                         "weightedmean_tokens", "lasttoken")
             if pooling.get(f"pooling_mode_{m}")]
    return modes[0] if modes in (["mean_tokens"], ["cls_token"]) else None


def supported(folder: str | Path) -> bool:
    """Whether ``folder`` is a sentence-transformers BERT model this module runs exactly."""
    folder = Path(folder)
    try:
        modules = _read_json(folder / "modules.json")
        if [m.get("type") for m in modules] not in _SIMPLE_MODULES:
            return False
        if any(m.get("path") for m in modules[:1]):
            return False  # the transformer in a sub-folder: not the layout read here
        config = _read_json(folder / "config.json")
        return (config.get("model_type") == "bert"
                and config.get("hidden_act") == "gelu"
                and config.get("position_embedding_type", "absolute") == "absolute"
                and _pooling_mode(folder, modules) is not None
                and (folder / "model.safetensors").is_file()
                and (folder / "tokenizer.json").is_file())
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False


@lru_cache(maxsize=32)
def supported_folder(folder: str) -> bool:
    """``supported``, read once per folder and process: every embedding call asks (a model
    folder does not change under a running process)."""
    return supported(folder)


def model_head(folder: Path) -> tuple[str, bool, int]:
    """(pooling mode, whether vectors are normalised, tokens read) of a supported folder."""
    modules = _read_json(folder / "modules.json")
    config = _read_json(folder / "config.json")
    st_file = folder / "sentence_bert_config.json"
    st_config = _read_json(st_file) if st_file.is_file() else {}
    max_length = min(int(st_config.get("max_seq_length") or 512),
                     int(config.get("max_position_embeddings", 512)))
    return str(_pooling_mode(folder, modules)), len(modules) == 3, max_length


def window_tokenizer(folder: Path, max_length: int) -> Any:
    """The folder's fast tokenizer, truncating at ``max_length`` tokens, unpadded."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()
    return tokenizer


def padded_batch(tokenizer: Any, texts: list[str]) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """(token ids, token type ids, attention mask), int64 (n, longest), zero-padded."""
    import numpy as np

    encodings = tokenizer.encode_batch(list(texts))
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), length), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        ids[row, :len(enc.ids)] = enc.ids
        types[row, :len(enc.ids)] = enc.type_ids
        mask[row, :len(enc.ids)] = 1
    return ids, types, mask


def pooled(x: np.ndarray, mask: np.ndarray, pooling: str, normalize: bool) -> np.ndarray:
    """Sentence vectors from token states ``x`` (n, length, dim): mean over the mask or the
    CLS token, L2-normalised when ``normalize``; float32 (n, dim)."""
    import numpy as np

    if pooling == "cls_token":
        out = x[:, 0]
    else:
        weights = mask.astype(x.dtype)[..., None]
        out = (x * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    if normalize:
        out = out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
    return out.astype(np.float32)


@dataclass
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden): query, key and value in one product
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


class NumpyBert:
    """One loaded model: ``encode(texts)`` gives float32 (n, dim) sentence vectors."""

    def __init__(self, folder: str | Path) -> None:
        import numpy as np
        from safetensors.numpy import load_file

        folder = Path(folder)
        config = _read_json(folder / "config.json")
        self.pooling, self.normalize, self.max_length = model_head(folder)
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        weights = load_file(str(folder / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        self.word = w("embeddings.word_embeddings.weight")
        self.position = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")
        self.embed_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = [self._layer(w, f"encoder.layer.{i}.")
                       for i in range(int(config["num_hidden_layers"]))]
        self.dim = self.word.shape[1]
        self.tokenizer = window_tokenizer(folder, self.max_length)

    @staticmethod
    def _layer(w: Any, p: str) -> _Layer:
        import numpy as np

        att = p + "attention."
        qkv_w = np.concatenate([w(f"{att}self.{n}.weight").T for n in ("query", "key", "value")],
                               axis=1)
        qkv_b = np.concatenate([w(f"{att}self.{n}.bias") for n in ("query", "key", "value")])
        return _Layer(
            qkv_w=np.ascontiguousarray(qkv_w), qkv_b=qkv_b,
            out_w=np.ascontiguousarray(w(f"{att}output.dense.weight").T),
            out_b=w(f"{att}output.dense.bias"),
            norm1=(w(f"{att}output.LayerNorm.weight"), w(f"{att}output.LayerNorm.bias")),
            up_w=np.ascontiguousarray(w(f"{p}intermediate.dense.weight").T),
            up_b=w(f"{p}intermediate.dense.bias"),
            down_w=np.ascontiguousarray(w(f"{p}output.dense.weight").T),
            down_b=w(f"{p}output.dense.bias"),
            norm2=(w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias")))

    def get_embedding_dimension(self) -> int:
        """The vectors' dimension (named as sentence-transformers names it)."""
        return self.dim

    def parameter_bytes(self) -> int:
        """The bytes the weights take in memory."""
        arrays = [self.word, self.position, self.token_type, *self.embed_norm]
        for layer in self.layers:
            arrays.extend(v for f in vars(layer).values()
                          for v in (f if isinstance(f, tuple) else (f,)))
        return sum(a.nbytes for a in arrays)

    def _norm(self, x: np.ndarray, scale_shift: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        import numpy as np

        mean = x.mean(axis=-1, keepdims=True)
        var = np.square(x - mean).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * scale_shift[0] + scale_shift[1]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Sentence vectors of ``texts`` (one padded batch), float32 (n, dim)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids, types, mask = padded_batch(self.tokenizer, texts)
        length = ids.shape[1]
        mask = mask.astype(np.float32)
        x = self.word[ids] + self.position[:length][None] + self.token_type[types]
        x = self._norm(x, self.embed_norm)
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            x = self._block(x, bias, layer)
        return pooled(x, mask, self.pooling, self.normalize)

    def _block(self, x: np.ndarray, bias: np.ndarray, layer: _Layer) -> np.ndarray:
        import numpy as np
        from scipy.special import erf

        batch, length, hidden = x.shape
        head = hidden // self.heads
        flat = x.reshape(batch * length, hidden)  # one large product instead of one a text
        qkv = (flat @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3 * hidden)
        q, k, v = (qkv[..., i * hidden:(i + 1) * hidden]
                   .reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)
                   for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = scores / scores.sum(axis=-1, keepdims=True)
        context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
        flat = self._norm(context @ layer.out_w + layer.out_b + flat, layer.norm1)
        up = flat @ layer.up_w + layer.up_b
        up = 0.5 * up * (1.0 + erf(up / np.float32(np.sqrt(2.0))))
        flat = self._norm(up @ layer.down_w + layer.down_b + flat, layer.norm2)
        return flat.reshape(batch, length, hidden)
