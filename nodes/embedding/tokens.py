"""An embedder's own tokens: how long a text is for the model, and its window.

all-MiniLM-L6-v2 reads at most 256 word pieces (``max_seq_length``); the rest of a longer
chunk is never embedded. Only the ``tokenizers`` library is loaded (no torch), from a local
model folder (packaged or given); nothing is downloaded.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from modrag_nodes.embedding.spec import DEFAULT_MODEL
from modrag_studio.engine.core.errors import ModragError

DEFAULT_WINDOW = 512
_LOCK = threading.Lock()


@lru_cache(maxsize=8)
def _model_folder(model: str) -> Path:
    from modrag_nodes.embedding.models import resolve_sentence_transformer

    target, local = resolve_sentence_transformer(model)
    if not local:
        raise FileNotFoundError(f"embedding model '{model}' is not a local folder")
    return Path(target)


@lru_cache(maxsize=8)
def embedder_tokenizer(model: str = DEFAULT_MODEL) -> Any:
    """The model's fast tokenizer (``tokenizers.Tokenizer``), without truncation."""
    from tokenizers import Tokenizer

    with _LOCK:
        tokenizer = Tokenizer.from_file(str(_model_folder(model) / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
    return tokenizer


@lru_cache(maxsize=8)
def embedder_window(model: str = DEFAULT_MODEL) -> int:
    """How many tokens the model reads (``max_seq_length``; special tokens included)."""
    config = _model_folder(model) / "sentence_bert_config.json"
    try:
        return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return DEFAULT_WINDOW


def token_counts(texts: list[str], model: str = DEFAULT_MODEL) -> list[int]:
    """Tokens per text as the model sees it (special tokens included)."""
    if not texts:
        return []
    return [len(e.ids) for e in embedder_tokenizer(model).encode_batch(list(texts))]


def token_offsets(text: str, model: str = DEFAULT_MODEL) -> list[tuple[int, int]]:
    """Character spans of the text's word pieces (special tokens left out)."""
    encoding = embedder_tokenizer(model).encode(text, add_special_tokens=False)
    return [(a, b) for a, b in encoding.offsets if b > a]


def over_window(texts: list[str], model: str = DEFAULT_MODEL) -> tuple[list[int], int]:
    """(indexes of texts longer than the model's window, the window)."""
    window = embedder_window(model)
    return [i for i, n in enumerate(token_counts(texts, model)) if n > window], window


def warn_over_window(ctx: Any, spec: Any, texts: list[str]) -> int:
    """Warn in the trace (``ctx.warn``) when texts are longer than a local
    sentence-transformers model reads; returns how many (0 when it cannot tell)."""
    if getattr(spec, "kind", "") != "sentence-transformers" or not texts:
        return 0
    try:
        over, window = over_window(texts, spec.model)
    except (OSError, ImportError, ModragError):  # not a local model: nothing to count with
        return 0
    if over:
        share = 100 * len(over) / len(texts)
        ctx.warn(f"{len(over):,} of {len(texts):,} chunks ({share:.1f}%) are longer than "
                 f"{spec.model}'s window of {window} tokens: their tails are not embedded "
                 f"(split by the embedder's tokens: split.fixed unit 'embedder')")
    return len(over)
