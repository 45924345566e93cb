"""Expected evidence: what the right answer must rest on, and where a run put it.

One vocabulary for the debugger ("where was the right chunk lost?"), the evaluation sets
(``expected_evidence``) and the variant comparison. An item names a document, a chunk, a
phrase or a regular expression; a chunk is *relevant* when it satisfies at least one item.
Specs read ``doc:ID``, ``chunk:ID``, ``text:PHRASE`` and ``re:PATTERN`` on the command line
and in the run bar; the evaluation-set form is a dict with ``doc_ids``, ``chunk_ids``,
``phrases`` and ``regex`` lists.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from modrag_studio.engine.core.datatypes import Answer, Chunk, Document, Prompt, ScoredChunk

EvidenceKind = Literal["doc", "chunk", "text", "regex"]
_SPEC_PREFIXES: dict[str, EvidenceKind] = {
    "doc": "doc", "chunk": "chunk", "text": "text", "phrase": "text", "re": "regex",
    "regex": "regex",
}
_DICT_KEYS: dict[str, EvidenceKind] = {
    "doc_ids": "doc", "chunk_ids": "chunk", "phrases": "text", "regex": "regex",
}


class EvidenceSpecError(ValueError):
    """An expected-evidence spec that cannot be read; the message names the spec."""


def normalise_text(text: str) -> str:
    """Case-folded, NFKC-normalised text with runs of white space folded to one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class EvidenceItem:
    """One thing the answer should rest on."""

    kind: EvidenceKind
    value: str

    def __post_init__(self) -> None:
        if not self.value.strip():
            raise EvidenceSpecError(f"expected evidence {self.kind}: the value is empty")
        if self.kind == "regex":
            try:
                re.compile(self.value)
            except re.error as exc:
                raise EvidenceSpecError(f"expected evidence re:{self.value}: {exc}") from exc

    @property
    def spec(self) -> str:
        return f"{'re' if self.kind == 'regex' else self.kind}:{self.value}"

    def matches(self, chunk: Chunk) -> bool:
        """Whether ``chunk`` satisfies this item."""
        if self.kind == "doc":
            return chunk.doc_id == self.value
        if self.kind == "chunk":
            return chunk.chunk_id == self.value
        if self.kind == "text":
            return normalise_text(self.value) in normalise_text(chunk.text)
        return re.search(self.value, chunk.text) is not None

    def find_in(self, text: str) -> list[tuple[int, int]]:
        """Character spans of a phrase or pattern in ``text`` (empty for ids)."""
        if self.kind == "regex":
            return [m.span() for m in re.finditer(self.value, text)]
        if self.kind != "text":
            return []
        pattern = r"\s+".join(re.escape(part) for part in self.value.split())
        return [m.span() for m in re.finditer(pattern, text, flags=re.IGNORECASE)]


@dataclass(frozen=True)
class ExpectedEvidence:
    """A set of evidence items; empty means "nothing declared"."""

    items: tuple[EvidenceItem, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.items)

    @classmethod
    def parse(cls, specs: Iterable[str]) -> ExpectedEvidence:
        """From ``doc:ID`` / ``chunk:ID`` / ``text:PHRASE`` / ``re:PATTERN`` strings."""
        items: list[EvidenceItem] = []
        for spec in specs:
            prefix, sep, value = spec.partition(":")
            kind = _SPEC_PREFIXES.get(prefix.strip().lower())
            if not sep or kind is None:
                raise EvidenceSpecError(
                    f"expected evidence {spec!r}: write doc:ID, chunk:ID, text:PHRASE or re:PATTERN"
                )
            items.append(EvidenceItem(kind, value.strip() if kind != "regex" else value))
        return cls(tuple(dict.fromkeys(items)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ExpectedEvidence:
        """From the evaluation-set form ``{"doc_ids": [...], "chunk_ids": [...], ...}``."""
        if not data:
            return cls()
        unknown = sorted(set(data) - set(_DICT_KEYS))
        if unknown:
            raise EvidenceSpecError(
                f"expected_evidence: unknown field(s) {', '.join(unknown)}; "
                f"use {', '.join(_DICT_KEYS)}"
            )
        items: list[EvidenceItem] = []
        for key, kind in _DICT_KEYS.items():
            values = data.get(key) or []
            if isinstance(values, str):
                values = [values]
            items.extend(EvidenceItem(kind, str(v)) for v in values)
        return cls(tuple(dict.fromkeys(items)))

    @classmethod
    def from_qrels(cls, relevant: Mapping[str, int] | Iterable[str]) -> ExpectedEvidence:
        """From BEIR qrels of one query (documents with a grade above 0)."""
        if isinstance(relevant, Mapping):
            ids = [doc for doc, grade in relevant.items() if grade > 0]
        else:
            ids = list(relevant)
        return cls(tuple(EvidenceItem("doc", str(d)) for d in dict.fromkeys(ids)))

    def to_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, kind in _DICT_KEYS.items():
            values = [i.value for i in self.items if i.kind == kind]
            if values:
                out[key] = values
        return out

    @property
    def specs(self) -> list[str]:
        return [item.spec for item in self.items]

    def matching_items(self, chunk: Chunk) -> list[EvidenceItem]:
        return [item for item in self.items if item.matches(chunk)]

    def is_relevant(self, chunk: Chunk) -> bool:
        return any(item.matches(chunk) for item in self.items)

    def positions(self, value: Any) -> list[EvidencePosition]:
        """Where the relevant chunks stand in a node's value (1-based positions)."""
        found: list[EvidencePosition] = []
        for position, (chunk, scored) in enumerate(iter_chunks(value), start=1):
            items = self.matching_items(chunk)
            if items:
                found.append(EvidencePosition(position, chunk, scored, tuple(items)))
        return found

    def resolve(
        self, chunks: Iterable[Chunk], documents: Iterable[Document] = ()
    ) -> list[Resolution]:
        """Say, for each item, which chunks hold it (or why none does)."""
        chunk_list = list(chunks)
        docs = {d.doc_id: d for d in documents}
        return [_resolve_item(item, chunk_list, docs) for item in self.items]


@dataclass(frozen=True)
class EvidencePosition:
    """A relevant chunk found in a value: its 1-based position and the items it satisfies."""

    position: int
    chunk: Chunk
    scored: ScoredChunk | None
    items: tuple[EvidenceItem, ...]

    @property
    def rank(self) -> int:
        return self.scored.rank if self.scored is not None and self.scored.rank else self.position


@dataclass
class Resolution:
    """Which chunks hold one evidence item, in words for the user."""

    item: EvidenceItem
    chunk_ids: list[str] = field(default_factory=list)
    split_across: list[str] = field(default_factory=list)
    in_documents: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.chunk_ids)

    def describe(self) -> str:
        if self.chunk_ids:
            return f"{self.item.spec}: in {', '.join(self.chunk_ids)}"
        if self.split_across:
            return f"{self.item.spec}: split across chunks {' and '.join(self.split_across)}"
        if self.in_documents:
            return (
                f"{self.item.spec}: not in any chunk (it is in {', '.join(self.in_documents)}): "
                "the splitter dropped or cut it"
            )
        return f"{self.item.spec}: not in any chunk: the loader or splitter dropped it"


def _resolve_item(item: EvidenceItem, chunks: list[Chunk], docs: dict[str, Document]) -> Resolution:
    resolution = Resolution(item, [c.chunk_id for c in chunks if item.matches(c)])
    if resolution.found or item.kind in ("doc", "chunk"):
        return resolution
    for doc in docs.values():
        spans = item.find_in(doc.text)
        if not spans:
            continue
        resolution.in_documents.append(doc.doc_id)
        for start, end in spans:
            covering = [
                c.chunk_id for c in chunks
                if c.doc_id == doc.doc_id and c.start < end and c.end > start and c.end > c.start
            ]
            if len(covering) > 1 and not resolution.split_across:
                resolution.split_across = covering
    return resolution


def iter_chunks(value: Any) -> Iterator[tuple[Chunk, ScoredChunk | None]]:
    """Every chunk a node value holds, in order: chunks, scored chunks, a prompt's evidence
    blocks, an answer's evidence, documents (as one whole-document chunk), and lists of them."""
    if isinstance(value, ScoredChunk):
        yield value.chunk, value
    elif isinstance(value, Chunk):
        yield value, None
    elif isinstance(value, Prompt | Answer):
        for scored in value.evidence:
            yield scored.chunk, scored
    elif isinstance(value, Document):
        yield Chunk(chunk_id=value.doc_id, doc_id=value.doc_id, text=value.text,
                    end=len(value.text), source=value.source), None
    elif isinstance(value, list | tuple):
        for entry in value:
            yield from iter_chunks(entry)
