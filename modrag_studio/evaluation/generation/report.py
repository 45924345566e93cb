"""The quality report of a generation: generated, kept and rejected by reason, per question
type and per language, and the rejected candidates' texts (the first ``KEEP_REJECTED``) so a
rejection can be read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from modrag_studio.evaluation.generation.reading.content import skipped_text

#: Rejection reasons, as recorded, and what each means.
REASONS = {
    "unreadable_reply": "the reply held no question or no answer",
    "question_too_short": "the question has fewer than three words",
    "not_a_question": "the question does not end with a question mark",
    "refers_to_text": "the question points at 'the text' instead of standing alone",
    "answer_too_long": "the answer phrase is longer than a short fact",
    "answer_not_in_source": "the answer phrase is not in the source chunk(s)",
    "same_answers": "the two answers of a two-chunk question are the same",
    "answer_in_question": "the question contains its own answer",
    "answer_is_heading": "the answer is a heading of its chunk (a title), not a fact it states",
    "answer_is_image_text": "the answer stands only in an image's alt text or tag (a picture's "
                            "caption, 'PyTorch Logo'), not in the text",
    "answer_off_topic": "the sentence stating the answer shares no key word with the question",
    "first_person": "the sentence stating the answer speaks in the first person (one user's "
                    "report or a quote), no fact of its subject",
    "not_a_paraphrase": "a paraphrase question shares most of its words with its chunk",
    "not_absent": "an unanswerable question's key terms are all in the corpus",
    "ambiguous": "no source chunk ranks in the BM25 or dense top 20",
    "near_duplicate": "too similar to a question already kept about the same thing and fact",
    "round_trip_mismatch": "asked of the passages a search finds, the model answers otherwise",
    "answered_elsewhere": "asked of the passages besides its source, the model answers it "
                          "otherwise from them: the question fits more than one thing",
    "answered_by_corpus": "an unanswerable question the model answers from the corpus",
    "not_a_claim": "a claim that is a question or has fewer than five words",
    "asks_otherwise": "an unanswerable question that does not ask for the absent detail given",
    "not_translated": "a claim translated there and back came back in the wrong language "
                      "or with a part left in the other",
    "drifted": "a claim translated there and back holds a number or a word that neither the "
               "claim nor its chunk holds (a mistranslated name)",
    "garbled": "the question reads garbled: a word twice in a row (not 'to to'), an article or a "
               "conjunction before its question mark, or (a paraphrase) replacements that "
               "repeat one word three times or put an adjective for a noun",
    "partial_value": "the expected value leaves out the bound or the range its sentence "
                     "gives it ('30 seconds' of 'under 30 seconds', '20厘米' of '15至20厘米', "
                     "'<= chaos <= 1' of '0. <= chaos <= 1') and the question does not say "
                     "it either",
    "example_code": "the value stands only in the chunk's example code, which defines a "
                    "class of its own: the example's name, not its subject's",
    "changed_later": "the value is from a changelog entry that the same document says was "
                     "changed later (renamed, dropped, the only version using it)",
    "dropped_kind": "the sentence calls the value a kind (environment variable, flag, "
                    "directory, ...) that the question leaves out: it asks for something "
                    "else the sentence names",
    "shape_against_question": "the value's shape makes it a kind of thing the question does "
                              "not ask for: a command-line option asked as a command or a "
                              "type, a file asked as the name of something else, a release "
                              "('Python 3.11') asked as a programming language",
    "bound_against_question": "the value's bound runs against the limit the question asks "
                              "('over 512 tokens' for a maximum, 'under 1 s' for a minimum)",
    "negated_value": "every sentence stating the value negates it ('does not call close() "
                     "upon Exception') and the question negates nothing: it inverts its "
                     "sentence",
    "copies_text": "the question copies its chunk's sentences",
    "no_subject": "an unanswerable question does not name the thing of its chunk it was "
                  "asked about",
    "unnamed_subject": "the question names none of its source's subjects (package, title, "
                       "heading name, or a code or name the chunk gives): it is not "
                       "answerable without knowing its chunk",
    "no_fitting_detail": "the thing drawn is of a kind no detail absent from the corpus fits "
                         "(or the model could not say its kind)",
}


#: rejected candidates whose texts the report keeps (the rest are only counted)
KEEP_REJECTED = 300
#: characters of a rejected candidate's reply the report keeps (its value sentence, the
#: model's reply and the round trip's answer)
REPLY_CHARS = 400


@dataclass
class Tally:
    generated: int = 0
    kept: int = 0
    hard: int = 0
    rejected: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"generated": self.generated, "kept": self.kept, "hard": self.hard,
                "rejected": dict(sorted(self.rejected.items()))}


@dataclass
class QualityReport:
    """Counts of one generation; ``add`` records each candidate question."""

    requested: int
    model: str
    seed: int
    chunks: int = 0
    documents: int = 0
    seconds: float = 0.0
    calls: int = 0  # model calls (a two-chunk question takes two)
    total: Tally = field(default_factory=Tally)
    by_type: dict[str, Tally] = field(default_factory=dict)
    by_language: dict[str, Tally] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # chunks left out before any call, by why
    rejections: list[dict[str, Any]] = field(default_factory=list)  # the first KEEP_REJECTED

    def add(self, kind: str, language: str, reason: str | None, hard: bool = False, *,
            question: str = "", expected: Sequence[str] = (), detail: str = "",
            chunk_ids: Sequence[str] = (), reply: str = "") -> None:
        """Count one candidate; a rejected one's texts are kept (up to ``KEEP_REJECTED``,
        its model reply cut to ``REPLY_CHARS``)."""
        for tally in (self.total, self.by_type.setdefault(kind, Tally()),
                      self.by_language.setdefault(language, Tally())):
            tally.generated += 1
            if reason is None:
                tally.kept += 1
                tally.hard += int(hard)
            else:
                tally.rejected[reason] += 1
        if reason is not None and len(self.rejections) < KEEP_REJECTED:
            self.rejections.append({"type": kind, "language": language, "reason": reason,
                                    "detail": detail, "question": question,
                                    "expected": list(expected), "chunk_ids": list(chunk_ids),
                                    "reply": reply[:REPLY_CHARS]})

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "model": self.model, "seed": self.seed,
                "chunks": self.chunks, "documents": self.documents,
                "skipped": dict(self.skipped.most_common()),
                "seconds": round(self.seconds, 1), "calls": self.calls,
                **self.total.to_dict(),
                "by_type": {k: v.to_dict() for k, v in self.by_type.items()},
                "by_language": {k: v.to_dict() for k, v in self.by_language.items()},
                "reasons": {k: REASONS[k] for k in sorted(self.total.rejected)},
                "notes": list(self.notes),
                # the texts of the first KEEP_REJECTED rejected candidates ("rejected" above
                # stays the count per reason)
                "rejected_candidates": [dict(r) for r in self.rejections],
                "rejected_candidates_left_out": max(
                    0, self.total.generated - self.total.kept - len(self.rejections))}

    def text(self) -> str:
        t = self.total
        lines = [f"{t.kept} of {self.requested} questions kept ({t.generated} generated, "
                 f"{t.generated - t.kept} rejected, {t.hard} kept as hard) from {self.chunks} "
                 f"chunks of {self.documents} documents with {self.model}, seed {self.seed}, "
                 f"{self.calls} model calls in {self.seconds:.0f} s"]
        if self.skipped:
            lines.append(f"  chunks {skipped_text(self.skipped)} (no model call)")
        if self.calls:
            per = f", {self.seconds / t.kept:.0f} s per kept question" if t.kept else ""
            lines.append(f"  yield: {t.kept / self.calls:.2f} kept per model call{per}")
        for title, group in (("type", self.by_type), ("language", self.by_language)):
            for name, tally in sorted(group.items()):
                why = ", ".join(f"{r} {n}" for r, n in tally.rejected.most_common())
                lines.append(f"  {title} {name}: {tally.kept}/{tally.generated} kept"
                             + (f", {tally.hard} hard" if tally.hard else "")
                             + (f"; rejected: {why}" if why else ""))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)
