"""The generator's specificity check: a question whose source chunk no search finds in its
top 20 is rejected as ambiguous; found by one search of two, it is kept as hard."""

from __future__ import annotations

import numpy as np

from modrag_nodes.retrieval.bm25 import BM25Index
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.checks.verify import Verdict, check_specific
from modrag_studio.evaluation.generation.reading.search import SPECIFIC_WITHIN, CorpusSearch
from modrag_studio.evaluation.generation.report import REASONS

SOURCE = Chunk(chunk_id="pumps.md#0", doc_id="pumps.md",
               text="The Kestrel pump seals are replaced every 800 operating hours.")
# more chunks than the top 20 that all speak of what the vague question asks
OTHERS = [Chunk(chunk_id=f"valves{i}.md#0", doc_id=f"valves{i}.md",
                text=f"Valve {i}: the seals are checked and the parts are replaced often.")
          for i in range(SPECIFIC_WITHIN + 5)]


class _Search(CorpusSearch):
    """BM25 over the chunks, and a dense side whose query vector is given."""

    query_vector: np.ndarray | None = None

    def embed_query(self, text: str) -> np.ndarray:
        return self.query_vector


def _search(dense: np.ndarray | None = None) -> CorpusSearch:
    chunks = [*OTHERS, SOURCE]
    search = _Search(chunks, BM25Index.build(chunks), None)
    if dense is not None:  # the source is the last row: a query along it finds it first
        search.vectors = np.eye(len(chunks), dtype=np.float32)
        search.query_vector = dense
    return search


def _checked(question: str, search: CorpusSearch) -> Verdict:
    return check_specific(Verdict(None, sources=[SOURCE], facts=["800"]), question, search)


def test_a_question_whose_source_no_search_finds_is_rejected_as_ambiguous():
    verdict = _checked("How often are the seals replaced?", _search())
    assert verdict.reason == "ambiguous" and verdict.bm25_rank is None
    assert verdict.detail == "no source chunk in the top 20"
    assert "ambiguous" in REASONS


def test_a_question_naming_its_subject_is_kept_and_one_search_of_two_is_hard():
    kept = _checked("How often are the Kestrel pump seals replaced?", _search())
    assert kept.reason is None and kept.bm25_rank == 1 and not kept.hard
    away = np.zeros(len(OTHERS) + 1, dtype=np.float32)
    away[: SPECIFIC_WITHIN + 1] = 1.0  # the dense side ranks 21 other chunks first
    hard = _checked("How often are the Kestrel pump seals replaced?", _search(away))
    assert hard.reason is None and hard.bm25_rank == 1 and hard.dense_rank is None
    assert hard.hard
    toward = np.zeros(len(OTHERS) + 1, dtype=np.float32)
    toward[-1] = 1.0
    dense_only = _checked("How often are the seals replaced?", _search(toward))
    assert dense_only.reason is None and dense_only.dense_rank == 1 and dense_only.hard
