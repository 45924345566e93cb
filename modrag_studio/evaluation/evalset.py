"""Evaluation sets: JSON Lines of questions with the evidence and facts a right answer needs.

One object a line (schema: ``resources/evalset.schema.json``)::

    {"id": "q01", "question": "How often is LP-07 serviced?",
     "expected_evidence": {"doc_ids": [...], "chunk_ids": [...], "phrases": [...], "regex": [...]},
     "expected_facts": ["500 hours", ["LP-07", "lubrication pump"]],
     "answerable": true, "reference_answer": "...", "language": "en", "tags": ["one-hop"]}

An item of ``expected_facts`` that is a list holds alternatives (any one counts). Errors name
the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.document import atomic_write_text
from modrag_studio.engine.evidence.expected import EvidenceSpecError, ExpectedEvidence

FIELDS = ("id", "question", "expected_evidence", "expected_facts", "answerable",
          "reference_answer", "language", "tags")


class EvalSetError(ValueError):
    """An evaluation set that cannot be read; the message names the line and the field."""


@dataclass
class EvalQuestion:
    """One question of an evaluation set."""

    id: str
    question: str
    expected_evidence: ExpectedEvidence = field(default_factory=ExpectedEvidence)
    expected_facts: list[list[str]] = field(default_factory=list)
    answerable: bool = True
    reference_answer: str = ""
    language: str = ""
    tags: list[str] = field(default_factory=list)
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "question": self.question}
        evidence = self.expected_evidence.to_dict()
        if evidence:
            data["expected_evidence"] = evidence
        data["expected_facts"] = [f[0] if len(f) == 1 else list(f) for f in self.expected_facts]
        data["answerable"] = self.answerable
        if self.reference_answer:
            data["reference_answer"] = self.reference_answer
        if self.language:
            data["language"] = self.language
        if self.tags:
            data["tags"] = list(self.tags)
        return data

    def to_json_line(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


@dataclass
class EvalSet:
    path: str
    questions: list[EvalQuestion]
    sha256: str = ""

    def __len__(self) -> int:
        return len(self.questions)

    def by_id(self, question_id: str) -> EvalQuestion:
        for question in self.questions:
            if question.id == question_id:
                return question
        raise KeyError(question_id)


def question_from_dict(data: Any, where: str = "") -> EvalQuestion:
    """Validate one decoded line; ``where`` ("FILE line N") prefixes every error."""
    prefix = f"{where}: " if where else ""

    def fail(name: str, message: str) -> EvalSetError:
        return EvalSetError(f"{prefix}field '{name}': {message}")

    if not isinstance(data, dict):
        raise EvalSetError(f"{prefix}expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise EvalSetError(f"{prefix}unknown field(s) {', '.join(unknown)} "
                           f"(known: {', '.join(FIELDS)})")
    for name in ("id", "question"):
        value = data.get(name)
        if not isinstance(value, str) or not value.strip():
            raise fail(name, "required, a non-empty string")
    raw_evidence = data.get("expected_evidence")
    if raw_evidence is not None and not isinstance(raw_evidence, dict):
        raise fail("expected_evidence", "an object with doc_ids, chunk_ids, phrases, regex")
    try:
        evidence = ExpectedEvidence.from_dict(raw_evidence)
    except EvidenceSpecError as exc:
        raise fail("expected_evidence", str(exc)) from None
    facts = _facts(data.get("expected_facts", []), fail)
    answerable = data.get("answerable", True)
    if not isinstance(answerable, bool):
        raise fail("answerable", "true or false")
    if not answerable and facts:
        raise fail("expected_facts", "must be empty when 'answerable' is false")
    for name in ("reference_answer", "language"):
        if not isinstance(data.get(name, ""), str):
            raise fail(name, "a string")
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail("tags", "a list of strings")
    return EvalQuestion(
        id=data["id"].strip(), question=data["question"].strip(), expected_evidence=evidence,
        expected_facts=facts, answerable=answerable,
        reference_answer=data.get("reference_answer", ""), language=data.get("language", ""),
        tags=list(tags),
    )


def _facts(raw: Any, fail) -> list[list[str]]:
    if not isinstance(raw, list):
        raise fail("expected_facts", "a list of strings (an item may be a list of alternatives)")
    facts: list[list[str]] = []
    for n, item in enumerate(raw):
        alternatives = [item] if isinstance(item, str) else item
        if (not isinstance(alternatives, list) or not alternatives
                or not all(isinstance(a, str) and a.strip() for a in alternatives)):
            raise fail(f"expected_facts[{n}]",
                       "a non-empty string or a non-empty list of non-empty strings")
        facts.append([a.strip() for a in alternatives])
    return facts


def parse_evalset(text: str, source: str = "<evalset>") -> EvalSet:
    """Read JSON Lines text; blank lines and lines starting with ``//`` are skipped."""
    questions: list[EvalQuestion] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        where = f"{source} line {number}"
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise EvalSetError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        question = question_from_dict(data, where)
        if question.id in seen:
            raise EvalSetError(f"{where}: field 'id': '{question.id}' already used on line "
                               f"{seen[question.id]}")
        seen[question.id] = number
        question.line = number
        questions.append(question)
    if not questions:
        raise EvalSetError(f"{source}: no questions (one JSON object a line)")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return EvalSet(path=source, questions=questions, sha256=digest)


def load_evalset(path: str | Path) -> EvalSet:
    """Load a ``.jsonl`` evaluation set; raises ``EvalSetError`` naming line and field."""
    file = Path(path)
    if not file.is_file():
        raise EvalSetError(f"evaluation set {file}: no such file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise EvalSetError(f"evaluation set {file}: not UTF-8 text ({exc.reason})") from None
    return parse_evalset(text, str(file))


def dumps_evalset(questions: Iterable[EvalQuestion]) -> str:
    return "".join(q.to_json_line() + "\n" for q in questions)


def save_evalset(path: str | Path, questions: Iterable[EvalQuestion]) -> None:
    """Write the questions as JSON Lines, atomically (the graph files' own writer: a
    temporary copy of its own, then renamed)."""
    atomic_write_text(Path(path), dumps_evalset(questions))


def append_question(path: str | Path, question: EvalQuestion) -> None:
    """Add ``question`` to a set file (created when missing); its id must be new."""
    file = Path(path)
    existing = load_evalset(file).questions if file.is_file() and file.stat().st_size else []
    if any(q.id == question.id for q in existing):
        raise EvalSetError(f"{file}: field 'id': '{question.id}' is already in the set")
    question_from_dict(question.to_dict(), "new question")  # same checks as loading
    save_evalset(file, [*existing, question])


def next_question_id(questions: Iterable[EvalQuestion], prefix: str = "q") -> str:
    """The first ``prefixNN`` id not used yet."""
    used = {q.id for q in questions}
    n = 1
    while f"{prefix}{n:02d}" in used:
        n += 1
    return f"{prefix}{n:02d}"
