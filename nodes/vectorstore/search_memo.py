"""Vector searches done ahead of time (an evaluation searches all its queries in one call).

While a memo is open, ``retrieve.vector`` takes the rows of query vectors it holds instead of
querying the collection again. A row is kept under the collection's location, name and store
version, the number of results and the exact vector bytes, so a changed store, another
``top_k`` or another vector never reads it. Chunks are built once per record id.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from modrag_nodes.vectorstore import exact_search
from modrag_nodes.vectorstore.records import chunk_from_record
from modrag_studio.engine.core.node import MemoStack, Resources, given_or_process

if TYPE_CHECKING:  # imported where it runs: registering the node types needs no numpy
    import numpy as np


BATCH = 256  # query vectors per collection.query call, at most ...
MAX_RESULTS_PER_CALL = 20_000  # ... results: Chroma fetches them in one SQL statement, and
# SQLite refuses more than 32,766 variables ("too many SQL variables" at 256 x 200)


def _stack(resources: Resources | None) -> MemoStack:
    return given_or_process(resources).memos("vector-search")


def search_memo(resources: Resources | None = None
                ) -> AbstractContextManager[dict[tuple[Any, ...], Any]]:
    """Open a memo {(collection, version, n, vector bytes): result row} in ``resources``
    (the runs' that read it; the process's when None); dropped at the end."""
    return _stack(resources).open()


def chunk_maker(resources: Resources | None = None
                ) -> Callable[[str, str | None, dict[str, Any] | None], Any]:
    """A function giving a record's chunk, built once per open memo (an evaluation sees the
    same chunks in many queries' results; chunks are shared read-only, like an index's).
    The memo open now is looked up once, for all the chunks of a search result. Without an
    open memo, a new chunk each time."""
    memos = _stack(resources).open_memos()
    if not memos:
        return chunk_from_record
    memo = memos[-1]

    def remembered_chunk(record_id: str, text: str | None, meta: dict[str, Any] | None
                         ) -> Any:
        key = ("chunk", record_id)
        chunk = memo.get(key)
        if chunk is None:
            chunk = memo[key] = chunk_from_record(record_id, text, meta)
        return chunk

    return remembered_chunk


def is_open(resources: Resources | None = None) -> bool:
    return bool(_stack(resources).open_memos())


def _key(where: tuple[Any, ...], n: int, vector: np.ndarray) -> tuple[Any, ...]:
    import numpy as np

    return (*where, n, np.ascontiguousarray(vector, dtype=np.float32).tobytes())


def remembered(where: tuple[Any, ...], n: int, vectors: np.ndarray,
               resources: Resources | None = None) -> dict[str, list] | None:
    """The search result of every vector (Chroma's layout), or None when one is not held."""
    for memo in reversed(_stack(resources).open_memos()):
        rows = [memo.get(_key(where, n, v)) for v in vectors]
        if all(r is not None for r in rows):
            return {field: [r[i] for r in rows]
                    for i, field in enumerate(("ids", "documents", "metadatas", "distances"))}
    return None


def search_ahead(collection: Any, where: tuple[Any, ...], n: int, vectors: np.ndarray, *,
                 exact: bool = False, resources: Resources | None = None) -> int:
    """Search every vector now into the open memos (``exact``: by ``exact_search``, as the
    per-query search of a small collection does); returns the rows kept.

    The searches ask for ids and distances only; the texts and metadata of the distinct ids
    are then read once each (many queries share chunks: reading them per result was most of
    the time of the batched searches).
    """
    memos = _stack(resources).open_memos()
    if not memos or len(vectors) == 0:
        return 0
    rows: list[tuple[np.ndarray, list[str], list[float]]] = []
    batch = max(1, min(BATCH, MAX_RESULTS_PER_CALL // max(1, n)))
    for start in range(0, len(vectors), batch):
        part = vectors[start:start + batch]
        found = (exact_search.query(collection, where, part, n, [], resources) if exact else
                 collection.query(query_embeddings=part, n_results=n, include=["distances"]))
        rows.extend(zip(part, found["ids"], found["distances"], strict=True))
    records: dict[str, tuple[str | None, dict[str, Any] | None]] = {}
    distinct = list(dict.fromkeys(i for _, ids, _ in rows for i in ids))
    for start in range(0, len(distinct), MAX_RESULTS_PER_CALL):
        got = collection.get(ids=distinct[start:start + MAX_RESULTS_PER_CALL],
                             include=["documents", "metadatas"])
        records.update(zip(got["ids"], zip(got["documents"], got["metadatas"], strict=True),
                           strict=True))
    kept = 0
    for vector, ids, distances in rows:
        if any(i not in records for i in ids):  # changed meanwhile: that query searches itself
            continue
        entry = (ids, [records[i][0] for i in ids], [records[i][1] for i in ids], distances)
        for memo in memos:
            memo[_key(where, n, vector)] = entry
        kept += 1
    return kept
