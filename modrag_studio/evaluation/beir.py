"""Reading a dataset in the BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from modrag_studio.engine.core.errors import ModragError


class DatasetError(ModragError):
    """The dataset folder is missing a file or a file is malformed (the message names it)."""


@dataclass
class BeirDataset:
    root: Path
    split: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    qrels_sha256: str
    corpus_path: Path
    metadata: dict[str, dict] = field(default_factory=dict)

    def evaluated_query_ids(self) -> list[str]:
        """Queries that have at least one relevant document in this split, in file order."""
        return [q for q in self.queries if any(s > 0 for s in self.qrels.get(q, {}).values())]

    def corpus_ids(self) -> set[str]:
        """The ``_id`` of every document in corpus.jsonl (read on each call)."""
        return read_corpus_ids(self.corpus_path)

    def missing_relevant_docs(self, query_ids: Iterable[str]) -> dict[str, list[str]]:
        """Query id -> the relevant documents its qrels name that corpus.jsonl lacks (each
        can never be retrieved, so it lowers the query's recall and nDCG)."""
        have = self.corpus_ids()
        missing: dict[str, list[str]] = {}
        for query_id in query_ids:
            lacking = sorted(d for d, s in self.qrels.get(query_id, {}).items()
                             if s > 0 and d not in have)
            if lacking:
                missing[query_id] = lacking
        return missing


_ID = re.compile(r'"_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def read_corpus_ids(path: Path) -> set[str]:
    """Document ids of a BEIR corpus.jsonl; a line the quick match misses is parsed as JSON."""
    ids: set[str] = set()
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            match = _ID.search(line)
            if match and "\\" not in match.group(1):
                ids.add(match.group(1))
                continue
            if not line.strip():
                continue
            try:
                ids.add(str(json.loads(line)["_id"]))
            except (ValueError, KeyError, TypeError):
                continue  # not a document record: the corpus loader reports it
    return ids


def load_beir(root: str | Path, split: str = "test") -> BeirDataset:
    root = Path(root).absolute()  # the graph resolves relative paths against its own folder
    corpus = root / "corpus.jsonl"
    queries_path = root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    for path in (corpus, queries_path, qrels_path):
        if not path.is_file():
            available = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
            hint = f" (splits here: {', '.join(available)})" if path == qrels_path else ""
            raise DatasetError(f"{path}: not found{hint}")
    queries: dict[str, str] = {}
    metadata: dict[str, dict] = {}
    with queries_path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                queries[str(record["_id"])] = str(record["text"])
            except (ValueError, KeyError, TypeError) as exc:
                raise DatasetError(f"{queries_path}:{number}: bad query record ({exc})") from None
            metadata[str(record["_id"])] = record.get("metadata") or {}
    raw = qrels_path.read_bytes()
    qrels: dict[str, dict[str, int]] = {}
    reader = csv.reader(raw.decode("utf-8").splitlines(), delimiter="\t")
    for number, row in enumerate(reader, 1):
        if not row or (number == 1 and not row[-1].strip().lstrip("-").isdigit()):
            continue  # header line
        if len(row) < 3:
            raise DatasetError(f"{qrels_path}:{number}: expected query-id, corpus-id, score")
        try:
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
        except ValueError:
            raise DatasetError(f"{qrels_path}:{number}: score '{row[2]}' is not a number") from None
    return BeirDataset(
        root=root, split=split, queries=queries, qrels=qrels,
        qrels_sha256=hashlib.sha256(raw).hexdigest(), corpus_path=corpus, metadata=metadata,
    )
