"""The questions a tuner scores: a BEIR split or an evaluation set, and the seeded split of
them into a tuning part and a held-out part."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path

from modrag_studio.engine.core.errors import ModragError
from modrag_studio.evaluation.beir import BeirDataset
from modrag_studio.evaluation.evalset import EvalSet

#: The fewest held-out questions the paired test is run on: with fewer, even a large gain
#: rarely reaches p < 0.05 and a small set says little about the next questions.
MIN_HELD_OUT = 20


class QuestionsError(ModragError):
    """An evaluation set without retrievable evidence, or too few questions to split."""


@dataclass
class EvalsetDataset(BeirDataset):
    """An evaluation set seen as a BEIR split: each answerable question's expected documents
    (its ``doc_ids``, or the documents of its ``chunk_ids``) are its relevant documents, so
    document-level nDCG compares graphs whose chunking differs."""

    def missing_relevant_docs(self, query_ids) -> dict[str, list[str]]:
        return {}  # the corpus is the graph's own input, read by its loader


def dataset_from_evalset(evalset: EvalSet, corpus: str | Path) -> EvalsetDataset:
    """Questions with expected documents; unanswerable ones (no evidence) are left out."""
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for question in evalset.questions:
        docs = [item.value for item in question.expected_evidence.items if item.kind == "doc"]
        docs += [item.value.rpartition("#")[0] or item.value
                 for item in question.expected_evidence.items if item.kind == "chunk"]
        if not question.answerable or not docs:
            continue
        queries[question.id] = question.question
        qrels[question.id] = dict.fromkeys(docs, 1)
    if not queries:
        raise QuestionsError(f"{evalset.path}: no answerable question names its expected "
                             "documents or chunks (expected_evidence doc_ids / chunk_ids), "
                             "so there is no ranking to score")
    digest = hashlib.sha256(repr(sorted((q, sorted(r)) for q, r in qrels.items())).encode())
    return EvalsetDataset(root=Path(evalset.path).absolute().parent, split=Path(evalset.path).name,
                          queries=queries, qrels=qrels, qrels_sha256=digest.hexdigest(),
                          corpus_path=Path(corpus))


def subset(dataset: BeirDataset, query_ids: list[str]) -> BeirDataset:
    """The same dataset with only ``query_ids`` evaluated (in that order)."""
    keep = set(query_ids)
    return replace(dataset, queries={q: dataset.queries[q] for q in query_ids},
                   qrels={q: r for q, r in dataset.qrels.items() if q in keep})


@dataclass(frozen=True)
class QuestionSplit:
    tuning: list[str]
    held_out: list[str]
    seed: int


def split_questions(query_ids: list[str], held_out_fraction: float, seed: int,
                    min_held_out: int = MIN_HELD_OUT) -> QuestionSplit:
    """A seeded shuffle cut into tuning and held-out parts (each kept in file order)."""
    if not 0 < held_out_fraction < 1:
        raise QuestionsError(f"--held-out {held_out_fraction}: a fraction between 0 and 1")
    shuffled = list(query_ids)
    random.Random(seed).shuffle(shuffled)
    count = round(len(shuffled) * held_out_fraction)
    if count < min_held_out:
        raise QuestionsError(
            f"the held-out part would have {count} question(s) ({held_out_fraction:.0%} of "
            f"{len(query_ids)}); the paired test needs at least {min_held_out}: use more "
            f"questions (at least {-(-min_held_out // held_out_fraction):.0f}) or a larger "
            "--held-out")
    if len(shuffled) - count < 1:
        raise QuestionsError("no question is left for tuning: use a smaller --held-out")
    held = set(shuffled[:count])
    return QuestionSplit([q for q in query_ids if q not in held],
                         [q for q in query_ids if q in held], seed)
