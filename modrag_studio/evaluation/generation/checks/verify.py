"""The checks a generated question passes before it is kept; each failure is a reason of
``report.REASONS``. Facts are matched with the answer metrics' own matcher
(``fact_match.fact_found``: normalised text, numbers with units in any spelling), a fact
that states a frequency ("every two years", "每3个月") must find it stated as one, and the
sentence that states a fact must share a key word with the question (else the fact is said of
something else: "Corvid Cloud" for the counterparty of HT-2023-0415, taken from the next
sentence, which is about HT-2025-0031); and the fact must answer what the question asks in
that sentence (``misreads``: its bound or range kept, no name of example code, the kind its
sentence gives it named)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from modrag_nodes.generation.api import fact_found
from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.numbers import DECIMAL, frequencies
from modrag_nodes.text.scripts import HAN_CHAR, HAN_RUN, han_count, is_han, language_of
from modrag_nodes.text.words import LATIN_WORD, words
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.evalset import EvalQuestion
from modrag_studio.evaluation.generation.checks.misreads import (
    bound_against_question,
    cut_range,
    dropped_kind,
    example_code_value,
    garbled_wording,
    negated_value,
    partial_value,
    shape_against_question,
)
from modrag_studio.evaluation.generation.reading.content import (
    document_subject,
    first_person,
    package_name,
)
from modrag_studio.evaluation.generation.reading.search import CorpusSearch
from modrag_studio.evaluation.generation.reading.sentences import text_sentences
from modrag_studio.evaluation.generation.reading.terms import (
    absent_terms,
    held_terms,
    key_terms,
    overlap,
)

MAX_FACT_WORDS = 12
MAX_FACT_CJK = 25
PARAPHRASE_MAX_OVERLAP = 0.5
_REFERS = re.compile(r"\b(?:the|this|that|above|given|both|two)\s+(?:texts?|passages?|paragraphs?|"
                     r"documents?|excerpts?|articles?|abstracts?)\b|\btexts?\s*[12]\b|"
                     r"\bthis\s+(?:incident|case|event|report|section|study|page)\b|"
                     r"(?:文本|这段|本段|上文|该段|材料|本次|此次|这次)",
                     re.IGNORECASE)
# a sentence end inside the question: it copies the chunk's sentences before asking
_INNER_SENTENCE = re.compile(r"[。！]|[.!]\s+[A-Z]")
# a corpus with fewer distinct words cannot tell a word new to it from a made-up one
WORD_CHECK_VOCABULARY = 20_000
# a Markdown heading line ("# Preventive maintenance schedule for pumps")
_HEADING = re.compile(r"^[ ]{0,3}#{1,6}[ \t].*$", re.MULTILINE)
# an image: its alt text names a picture, no fact of the document ("![PyTorch Logo](...)")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>|^\s*\.\. (?:image|figure)::.*$",
                    re.IGNORECASE | re.MULTILINE)


def stated_in(fact: str, text: str) -> bool:
    """Whether the chunk ``text`` states ``fact``: the answer metrics' match, and each
    frequency of the fact stated as a frequency ("every two years" is not in "the failures
    of the last two years", which the answer metrics' leniency alone would accept)."""
    return fact_found(fact, text) and frequencies(fact) <= frequencies(text)


@dataclass
class Verdict:
    """Why a candidate is rejected (``reason`` None: kept), with what the checks found."""

    reason: str | None = None
    detail: str = ""
    hard: bool = False
    bm25_rank: int | None = None
    dense_rank: int | None = None
    sources: list[Chunk] = field(default_factory=list)  # chunks holding the facts, in order
    facts: list[str] = field(default_factory=list)


@dataclass
class Candidate:
    """One generated question with the verdict of its checks (kept or why not)."""

    kind: str
    language: str
    question: str
    facts: list[str]
    chunks: list[Chunk]
    verdict: Verdict
    reply: str = ""
    row: EvalQuestion | None = None
    round_trip: bool = True  # False: its checks settle it (no model needs to answer it)
    names: set[str] = field(default_factory=set)  # the subjects the question names


def _too_long(fact: str) -> bool:
    cjk = han_count(fact)
    return cjk > MAX_FACT_CJK if cjk else len(fact.split()) > MAX_FACT_WORDS


def only_in_images(fact: str, text: str) -> bool:
    """Whether ``text`` states ``fact`` only in image markup (alt text, an ``<img>`` tag)."""
    return stated_in(fact, text) and not stated_in(fact, _IMAGE.sub(" ", text))


def check_question_text(question: str) -> Verdict | None:
    """Checks of the question alone (too short, pointing at 'the text', garbled)."""
    if len(words(question)) < 3:
        return Verdict("question_too_short", question)
    if not question.rstrip().endswith(("?", "？")):
        return Verdict("not_a_question", question[-40:])
    if _REFERS.search(question):
        return Verdict("refers_to_text", _REFERS.search(question).group(0))
    if _INNER_SENTENCE.search(question.rstrip().rstrip("?？")):
        return Verdict("copies_text", question[:60])
    garbled = garbled_wording(question)
    if garbled is not None:
        return Verdict("garbled", garbled)
    return None


def check_answerable(question: str, facts: list[str], chunks: list[Chunk], *,
                     paraphrase: bool = False) -> Verdict:
    """Facts present in their chunks (a two-chunk question: one fact in each, in either
    order), short, distinct, and not in the question; a paraphrase shares few words."""
    early = check_question_text(question)
    if early is not None:
        return early
    facts = facts[: len(chunks)]
    for fact in facts:
        if _too_long(fact):
            return Verdict("answer_too_long", fact)
    if len(facts) == 2 and fact_found(facts[0], facts[1]) and fact_found(facts[1], facts[0]):
        return Verdict("same_answers", facts[0])
    order = _assign(facts, chunks)
    if order is None:
        missing = [f for f in facts if not any(stated_in(f, c.text) for c in chunks)]
        return Verdict("answer_not_in_source", "; ".join(missing or facts))
    for fact in facts:
        if fact_found(fact, question):
            return Verdict("answer_in_question", fact)
    statings: list[list[str]] = []  # each fact's stating sentences, alone
    for fact, chunk in zip(facts, order, strict=True):
        if not stated_in(fact, _HEADING.sub(" ", chunk.text)):
            return Verdict("answer_is_heading", fact)
        if only_in_images(fact, chunk.text):
            return Verdict("answer_is_image_text", fact)
        statings.append(fact_sentences(fact, chunk.text, with_previous=False))
        misread = _misread(question, fact, chunk, statings[-1], paraphrase,
                           whole=len(facts) == 1)
        if misread is not None:
            return misread
    if paraphrase:
        share = overlap(question, chunks[0].text)
        if share > PARAPHRASE_MAX_OVERLAP:
            return Verdict("not_a_paraphrase", f"{share:.0%} of its key words are in the chunk")
    else:
        for fact, chunk, stating in zip(facts, order, statings, strict=True):
            sentences = fact_sentences(fact, chunk.text)
            if (sentences and key_terms(question)
                    and all(overlap(question, s) == 0 for s in sentences)):
                return Verdict("answer_off_topic", f"{fact!r} is said of something else: "
                                                   f"{sentences[0][:80]!r}")
            if stating and all(first_person(s) for s in stating):
                return Verdict("first_person", f"{fact!r} is one speaker's: "
                                               f"{stating[0].strip()[:80]!r}")
    return Verdict(None, sources=order, facts=facts)


def _misread(question: str, fact: str, chunk: Chunk, stating: list[str],
             paraphrase: bool, *, whole: bool = True) -> Verdict | None:
    """A question that asks for something other than what ``fact`` answers in ``chunk``
    (``misreads``; ``stating``: the sentences of ``chunk`` stating it): the fact cut from
    its bound or range, a name of the chunk's example code, (worded like its sentence, not
    a paraphrase) the kind its sentence gives it left out of the question, or (a question
    in one part, ``whole``) a value whose shape or bound runs against what it asks,
    or that its sentence negates."""
    fuller = partial_value(fact, question, stating) or cut_range(fact, chunk.text)
    if fuller is not None:
        return Verdict("partial_value", f"{fact!r} is {fuller!r} in its sentence")
    example = example_code_value(fact, chunk.text, package_name(chunk) or
                                 document_subject(chunk))
    if example is not None:
        return Verdict("example_code", f"{fact!r} stands only in example code defining "
                                       f"{example}")
    kind = None if paraphrase else dropped_kind(fact, question, stating)
    if kind is not None:
        return Verdict("dropped_kind", f"its sentence calls {fact!r} a {kind}; the question "
                                       "asks for something else")
    if not whole:  # a question in two parts: what one part asks is not the other's
        return None
    shape = shape_against_question(fact, question)
    if shape is not None:
        return Verdict("shape_against_question", f"{fact!r} is a {shape}; the question asks "
                                                 "for another kind of thing")
    bound = bound_against_question(fact, question, stating)
    if bound is not None:
        return Verdict("bound_against_question", f"{bound!r} runs against the limit the "
                                                 "question asks")
    negated = negated_value(fact, question, stating)
    if negated is not None:
        return Verdict("negated_value", f"its sentence negates it: {negated[:80]!r}")
    return None


def fact_sentences(fact: str, text: str, *, with_previous: bool = True) -> list[str]:
    """The sentences of ``text`` that state ``fact``, each with the sentence before it (which
    often names what the fact is about: "HT-2023-0415 covers CP-12. HT-2023-0415 is signed
    with Lumen.") unless not ``with_previous``; [] when only several sentences state it
    together."""
    sentences = text_sentences(text)
    back = 1 if with_previous else 0
    return [" ".join(sentences[max(0, i - back):i + 1]) for i, s in enumerate(sentences)
            if stated_in(fact, s)]


def _assign(facts: list[str], chunks: list[Chunk]) -> list[Chunk] | None:
    if len(facts) != len(chunks):
        return None
    if all(stated_in(f, c.text) for f, c in zip(facts, chunks, strict=True)):
        return list(chunks)
    if len(chunks) == 2 and stated_in(facts[0], chunks[1].text) and stated_in(
            facts[1], chunks[0].text):
        return [chunks[1], chunks[0]]
    return None


def check_unanswerable(question: str, vocabulary: set[str], chunk: Chunk | None = None) -> Verdict:
    """Verified absent: at least one key term of the question is in no chunk of the corpus
    (so no chunk holds all of them); with its source ``chunk``, the question must also name
    something the chunk is about (else it asks of nothing the corpus describes)."""
    early = check_question_text(question)
    if early is not None:
        return early
    terms = key_terms(question)
    missing = absent_terms(terms, vocabulary)
    if not terms or not missing:
        return Verdict("not_absent", f"key terms {', '.join(terms) or 'none'} are all in the "
                                     "corpus")
    if chunk is not None and not held_terms(question, chunk.text):
        return Verdict("no_subject", "no key term of the question is in its chunk")
    return Verdict(None, detail=f"absent: {', '.join(missing)}")


def check_specific(verdict: Verdict, question: str, search: CorpusSearch) -> Verdict:
    """A source chunk ranks in the BM25 and the dense top 20: specific; in one of them:
    kept as hard; in neither: ambiguous."""
    ids = [c.chunk_id for c in verdict.sources]
    verdict.bm25_rank = search.bm25_rank(question, ids)
    verdict.dense_rank = search.dense_rank(question, ids)
    found = [r for r in (verdict.bm25_rank, verdict.dense_rank) if r is not None]
    checks = 2 if search.vectors is not None else 1
    if not found:
        verdict.reason = "ambiguous"
        verdict.detail = "no source chunk in the top 20"
    elif len(found) < checks:
        verdict.hard = True
    return verdict


class Deduplicator:
    """Near-duplicates by embedding similarity (word overlap when there is no embedder); two
    questions naming different things are none ("What is the mascot of regex?", "... of
    tqdm?": one template, two questions), nor two whose expected facts differ ("Who is the
    mentor of Tomas Reyes?", "What is Tomas Reyes responsible for?": one person, two
    facts)."""

    def __init__(self, search: CorpusSearch, threshold: float = 0.93) -> None:
        self.search, self.threshold = search, threshold
        self.kept: list[tuple[str, object, set[str], list[str]]] = []

    def duplicate_of(self, question: str, names: set[str] = frozenset(),
                     facts: list[str] = ()) -> str | None:
        """The id of a kept question too similar to ``question`` (naming ``names``, expecting
        ``facts``; none for an unanswerable one), else None."""
        vector = self._key(question)
        for qid, other, named, expected in self.kept:
            if names and named and not names & named:
                continue
            if facts and expected and not _facts_overlap(facts, expected):
                continue
            if self._similar(vector, other):
                return qid
        return None

    def add(self, qid: str, question: str, names: set[str] = frozenset(),
            facts: list[str] = ()) -> None:
        self.kept.append((qid, self._key(question), set(names), list(facts)))

    def _key(self, question: str) -> object:
        if self.search.embedder is not None:
            return self.search.embed_query(question)
        return set(words(question))

    def _similar(self, a: object, b: object) -> bool:
        if isinstance(a, set):
            assert isinstance(b, set)
            return len(a & b) / max(1, len(a | b)) >= 0.8
        return float(a @ b) >= self.threshold  # type: ignore[operator]


def _facts_overlap(facts: list[str], others: list[str]) -> bool:
    """Whether one of ``facts`` states one of ``others`` or the reverse."""
    return any(fact_found(a, b) or fact_found(b, a) for a in facts for b in others)


def check_claim(claim: str, chunk: Chunk) -> Verdict:
    """A claim: a statement (no question) of five words or more that stands alone and does not
    copy its chunk (no run of eight of its words, or twenty Chinese characters, found there)."""
    if len(words(claim)) < 5 or claim.rstrip().endswith(("?", "？")):
        return Verdict("not_a_claim", claim[:60])
    if _REFERS.search(claim):
        return Verdict("refers_to_text", _REFERS.search(claim).group(0))
    own, text = normalise(claim), normalise(chunk.text)
    latin = LATIN_WORD.findall(own)
    plain = " ".join(LATIN_WORD.findall(text))
    cjk, text_cjk = "".join(HAN_CHAR.findall(own)), "".join(HAN_CHAR.findall(text))
    if any(f" {' '.join(latin[i:i + 8])} " in f" {plain} " for i in range(len(latin) - 7)) or any(
            cjk[i:i + 20] in text_cjk for i in range(len(cjk) - 19)):
        return Verdict("copies_text", claim[:60])
    return Verdict(None, sources=[chunk])


def check_back_translation(original: str, back: str, language: str, chunk: Chunk,
                           vocabulary: set[str], stems: set[str]) -> Verdict:
    """A claim translated there and back into ``language``, against the claim it came from:
    rejected when it came back in the other language or with a part left in it ("the吞噬
    system"), or when it drifted: a number that neither the claim nor its chunk holds ("5%
    weighing less than 50 kg" for "5% underweight"), or, in a corpus of
    ``WORD_CHECK_VOCABULARY`` distinct words or more, a Latin word they do not hold that no
    chunk uses in any form (a name mistranslated: "sidebrain", "Oceanobacteria")."""
    left = HAN_RUN.search(back) if language == "en" else None
    if language_of(back) != language or left:
        return Verdict("not_translated", f"left in the other language: {left.group(0)}"
                       if left else back[:60])
    source = f"{original}\n{chunk.text}"
    numbers = set(DECIMAL.findall(normalise(source)))
    new_number = next((n for n in DECIMAL.findall(normalise(back)) if n not in numbers), None)
    if new_number:
        return Verdict("drifted", f"a number neither the claim nor its chunk holds: {new_number}")
    if len(vocabulary) < WORD_CHECK_VOCABULARY:
        return Verdict(None, sources=[chunk])
    held = set(held_terms(back, source))
    new = [t for t in key_terms(back) if t not in held and not is_han(t)
           and t.replace("-", "") not in vocabulary
           and not all(part in vocabulary for part in t.split("-"))]
    unknown = absent_terms(new, vocabulary, stems)
    if unknown:
        return Verdict("drifted", f"a word the corpus never uses: {unknown[0]}")
    return Verdict(None, sources=[chunk])
