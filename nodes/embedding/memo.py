"""Query vectors embedded ahead of time (an evaluation embeds its queries in batches).

While a memo is open, ``embed(..., role="query")`` takes the vectors of texts it holds instead
of encoding them again; texts it does not hold are encoded as usual. The vectors are the
model's own, so results only change by float rounding between batch sizes.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from modrag_studio.engine.core.node import MemoStack, Resources, given_or_process


def _stack(resources: Resources | None) -> MemoStack:
    return given_or_process(resources).memos("query-vectors")


def query_vector_memo(resources: Resources | None = None
                      ) -> AbstractContextManager[dict[tuple[str, str], Any]]:
    """Open a memo {(embedder key, text): vector} in ``resources`` (the runs' that read it;
    the process's when None); it is dropped when the block ends."""
    return _stack(resources).open()


def spec_key(spec: Any) -> str:
    """What makes two embedders' query vectors the same: model, prefix, normalisation."""
    return f"{spec.model_id}|{spec.query_prefix}|{spec.normalize}"


def remember(memo: dict[tuple[str, str], Any], spec: Any, texts: list[str],
             vectors: Any) -> None:
    key = spec_key(spec)
    for text, vector in zip(texts, vectors, strict=True):
        memo[(key, text)] = vector


def remembered(spec: Any, texts: list[str], resources: Resources | None = None
               ) -> list[Any] | None:
    """The memo's vectors of every text, or None when one of them is not held."""
    memos = _stack(resources).open_memos()
    key = spec_key(spec)
    for memo in reversed(memos):
        found = [memo.get((key, t)) for t in texts]
        if all(v is not None for v in found):
            return found
    return None
