"""Claim alignment: whether the evidence states an answer's value *about* what was asked.

A name or number written somewhere in a cited block is not yet evidence for the answer: block
[2] of a contract register names both suppliers, and "The seal kit HS-40 is supplied by Baltic
Bearing Supply" states a pairing the block never makes. Alignment asks, for each value of the
answer (a claim that is not itself a subject of the question), whether one evidence sentence
states it together with a subject of the question. A sentence stands for more than its words:

- its **context**: the document's file name and the headings above it ("bcrypt.md",
  "## Parts supply"), so a README's sentences are about its package;
- its **antecedents**: a sentence that does not open on a name of its own ("It employs about
  640 people …", "It is signed with Baltic Bearing Supply …": no identifier or name in its
  first three words) continues the one before it;
- its **bridges**: a sentence shares an identifier or name with another sentence of its block
  ("HT-2024-1107 covers HS-40." and "HT-2024-1107 is signed with Kestrel Hydraulics."): the two
  state one pairing between them, as a knowledge graph's hops do (at most ``BRIDGE_HOPS``).

The subjects of a question are its identifiers and proper names, the corpus dictionary's
entities it names, the words that name a document of the evidence (its file name or title),
and the topic a Chinese question opens with ("X的Y是什么" asks about X) when the evidence
writes it. A value whose every sentence speaks of other subjects, while a subject of the question
is written in the evidence, is a **mismatch**, named with what its sentence is about instead.
A question with no subject the evidence writes is not judged here (``absent_terms`` is).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath

from modrag_nodes.grounding.claims import (
    CITATION,
    Block,
    claim_found,
    extract_claims,
    is_identifier,
    key_terms,
    spellings,
)
from modrag_nodes.ingest.spans import sentence_spans
from modrag_nodes.text.normalise import normalise as flat
from modrag_nodes.text.normalise import normalise_map
from modrag_nodes.text.scripts import HAN, is_han
from modrag_nodes.text.words import contains_phrase, word_count
from modrag_studio.engine.core.node import Claim, ScoredChunk

ENTITY_KINDS = ("identifier", "name")
CARRY_BACK = 3  # sentences a value's sentence may continue (antecedents)
BRIDGE_HOPS = 2  # shared names a pairing may pass through within a block
LEAD_WORDS = 3  # a sentence whose first name starts within this many words is about it
MIN_TITLE = 2  # a document title this long (characters) written in a question is a subject
TERM_SHARE = 0.5  # an answer whose located terms are beside other subjects more than this …
MIN_TERMS = 2  # … and at least this many of them, states what another subject's text says
_LINES = re.compile(r"[^\n]+")
_HEADING = re.compile(r"^#+[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# a line that stands alone: a table row, a list item, a heading
_OWN_LINE = re.compile(r"^\s*(?:\||[-*+] |\d{1,3}[.)] |#)", re.MULTILINE)


@dataclass
class EvidenceSentence:
    """One sentence of an evidence block, normalised, with what it names."""

    block: int
    text: str
    entities: set[str]
    context: set[str] = field(default_factory=set)
    spelt: dict[str, str] = field(default_factory=dict)  # entity -> as the block writes it
    lead_of: dict[str, int] = field(default_factory=dict)  # entity -> where it starts
    parsed: Block | None = field(default=None, compare=False)  # read on first ``states``
    raw: str = ""  # as the block writes it (``text`` is normalised)

    def states(self, claim: Claim, aliases: list[set[str]]) -> bool:
        if self.parsed is None:
            self.parsed = Block.of(self.text)
        return claim_found(claim, self.parsed, aliases)

    def names(self, spellings: set[str]) -> bool:
        return any(contains_phrase(self.text, s) or any(_names_document(s, w) for w in self.context)
                   for s in spellings)


def _names_document(subject: str, word: str) -> bool:
    """Whether ``subject`` names what a document word (file name, heading) is about: the same,
    or one the start of the other ("chroma" and "chromadb.md", "requests" and "requests-oauth")
    when both have four letters or more, or its end ("pytorch" and "torch.md"); a subject of
    several words by one of them ("hugging face transformers" and "transformers.md")."""
    if subject == word:
        return True
    for part in {subject, *subject.split()}:
        short, long = sorted((part, word), key=len)
        if len(short) >= 4 and (long.startswith(short) or long.endswith(short)):
            return True
    return False


@dataclass(frozen=True)
class Mismatch:
    """A value the evidence states only about other subjects."""

    claim: Claim
    block: int
    asked: str          # a subject of the question, as the question spells it
    instead: list[str]  # what the value's sentence speaks of

    def describe(self) -> str:
        beside = " and ".join(self.instead[:3]) or "other things"
        return (f"block [{self.block}] names {self.claim.text} beside {beside}, "
                f"not beside {self.asked}")


def describe_mismatches(mismatches: list[Mismatch], most: int = 4) -> str:
    """One clause per block and subject: "block [2] names 双翼豆, 翅果木 beside 盾柱木, not
    beside 马来穿山甲" (at most ``most`` values each)."""
    groups: dict[tuple[int, str, tuple[str, ...]], list[str]] = {}
    for m in mismatches:
        groups.setdefault((m.block, m.asked, tuple(m.instead[:3])), []).append(m.claim.text)
    clauses = []
    for (block, asked, instead), values in groups.items():
        named = ", ".join(dict.fromkeys(values[:most])) + (" …" if len(values) > most else "")
        beside = " and ".join(instead) or "other things"
        clauses.append(f"block [{block}] names {named} beside {beside}, not beside {asked}")
    return "; ".join(clauses)


def _entities(text: str, aliases: list[set[str]]) -> dict[str, tuple[str, int]]:
    """The identifiers, names and dictionary entities of ``text``: normalised -> (as written,
    where it starts in ``flat(text)``), in reading order."""
    norm = flat(text)
    found = {}
    for claim in extract_claims(text):
        if claim.kind in ENTITY_KINDS:
            key = flat(claim.text)
            found[key] = (claim.text, max(0, norm.find(key)))
    for group in aliases:
        written = [s for s in group if contains_phrase(norm, s)]
        if written and not any(s in found for s in group):
            first = min(written, key=norm.find)
            found[min(group, key=len)] = (max(written, key=len), norm.find(first))
    return dict(sorted(found.items(), key=lambda kv: kv[1][1]))


def _opens_on_name(sentence: EvidenceSentence, value: set[str]) -> bool:
    """Whether a name other than the value starts within the sentence's first words."""
    starts = [sentence.lead_of[e] for e in sentence.entities - value if e in sentence.lead_of]
    if not starts:
        return False
    return word_count(sentence.text[:min(starts)]) < LEAD_WORDS


def document_words(item: ScoredChunk) -> set[str]:
    """What names a chunk's document: its file name (stem) and its headings, normalised."""
    return _file_words(item) | {flat(h) for _, h in _heading_path(item)}


def _file_words(item: ScoredChunk) -> set[str]:
    """A chunk's file name (stem), normalised."""
    words = set()
    for name in (item.chunk.doc_id, item.chunk.source):
        stem = PurePath(name or "").stem
        if stem:
            words.add(flat(stem))
    return words


def _heading_path(item: ScoredChunk) -> list[tuple[int, str]]:
    """The document's title (level 0) and the headings above a chunk, outermost first, with
    their levels (1 for the first heading)."""
    title = item.chunk.metadata.get("title")
    path = [h.strip("# ") for h in item.chunk.metadata.get("heading_path") or []
            if isinstance(h, str) and h.strip("# ")]
    top = [(0, title.strip())] if isinstance(title, str) and title.strip() else []
    return top + list(enumerate(path, start=1))


def _under(path: list[tuple[int, str]], level: int, heading: str) -> list[tuple[int, str]]:
    """``path`` with a heading of ``level`` read: it replaces that level and those below."""
    return [*(h for h in path if h[0] < level), (level, heading)]


def _heading_context(path: list[tuple[int, str]], aliases: list[set[str]]) -> set[str]:
    """What the headings above a sentence say it is about: every heading, except that the
    nearest one naming a thing (an identifier or name: "Spindle vibration on CNC-A01") hides
    the farther ones that name things ("Machining centres CNC-A01 and CNC-A02"): a sentence
    under the first is not about CNC-A02."""
    naming = [h for _, h in path if _entities(h, aliases)]
    return {flat(h) for _, h in path if h not in naming or h == naming[-1]}


def evidence_sentences(items: list[ScoredChunk],
                       aliases: list[set[str]]) -> list[EvidenceSentence]:
    """The sentences (and table or list lines) of every evidence block, in order."""
    out = []
    for n, item in enumerate(items, start=1):
        files, path = _file_words(item), _heading_path(item)
        context = files | _heading_context(path, aliases)
        text = item.chunk.text
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            lines = ([m.group(0) for m in _LINES.finditer(sentence)]
                     if _OWN_LINE.search(sentence) else [" ".join(sentence.split())])
            for line in lines:
                piece = line.strip()
                if piece.startswith("#"):  # a heading: what the sentences after it are about
                    level = len(piece) - len(piece.lstrip("#"))
                    path = _under(path, level, piece.strip("# "))
                    context = files | _heading_context(path, aliases)
                elif piece:
                    named = _entities(piece, aliases)
                    out.append(EvidenceSentence(
                        n, flat(piece), set(named), context,
                        {k: v for k, (v, _) in named.items()},
                        {k: at for k, (_, at) in named.items()}, raw=piece))
    return out


@dataclass(frozen=True)
class Subject:
    """A subject of the question: as the question spells it, its spellings, its kind."""

    name: str
    spellings: frozenset[str]
    kind: str  # identifier, name or document


def question_subjects(question: str, items: list[ScoredChunk],
                      aliases: list[set[str]]) -> list[Subject]:
    """The question's subjects (``EvidenceReading.subjects``)."""
    return EvidenceReading(question, items, aliases).subjects


def document_titles(items: list[ScoredChunk]) -> set[str]:
    """The titles of the evidence's documents (a loader's title, else none), normalised."""
    return {title for item in items if (title := _title(item))}


def _title(item: ScoredChunk) -> str:
    """A chunk's document title as its loader gave it, normalised ("" when none)."""
    title = item.chunk.metadata.get("title")
    return flat(title.strip()) if isinstance(title, str) and title.strip() else ""


@dataclass(eq=False)
class EvidenceReading:
    """A question and its evidence, read once for every step of one check: each block's
    document words, the question's subjects, the blocks' sentences (each read on first use)."""

    question: str
    items: list[ScoredChunk]
    aliases: list[set[str]]

    @cached_property
    def document_words(self) -> list[set[str]]:
        """Each item's ``document_words``, in order."""
        return [document_words(item) for item in self.items]

    @cached_property
    def sentences(self) -> list[EvidenceSentence]:
        """The ``evidence_sentences`` of the items."""
        return evidence_sentences(self.items, self.aliases)

    @cached_property
    def subjects(self) -> list[Subject]:
        """The question's subjects: its identifiers and names, the dictionary entities it
        names, its Chinese topic the evidence writes, and its words that name a document of
        the evidence."""
        question, aliases = self.question, self.aliases
        subjects: dict[str, Subject] = {}
        for claim in extract_claims(question):
            if claim.kind in ENTITY_KINDS:
                key = flat(claim.text)
                subjects[claim.text] = Subject(claim.text, frozenset(spellings(key, aliases)),
                                               claim.kind)
        norm = flat(question)
        for group in aliases:
            named = [s for s in group if contains_phrase(norm, s)]
            if named and not any(s in subject.spellings for subject in subjects.values()
                                 for s in named):
                name = max(named, key=len)
                subjects[name] = Subject(name, frozenset(group), "name")
        documents = set().union(*self.document_words)
        for term in key_terms(question):
            if term in documents and not any(term in s.spellings for s in subjects.values()):
                subjects[term] = Subject(term, frozenset({term}), "document")
        topic = _chinese_topic(norm)
        if topic and not any(topic in s.spellings for s in subjects.values()) and any(
                topic in flat(item.chunk.text) for item in self.items):
            subjects[topic] = Subject(topic, frozenset({topic}), "name")
        for title in sorted(document_titles(self.items), key=len, reverse=True):
            if (len(title) >= MIN_TITLE and contains_phrase(norm, title)
                    and not any(title in s.name or s.name in title for s in subjects.values())):
                subjects[title] = Subject(title, frozenset({title}), "document")
        return list(subjects.values())

    @cached_property
    def written(self) -> list[Subject]:
        """The question's subjects some sentence writes (the sentences are not read when the
        question names no subject)."""
        if not self.subjects:
            return []
        # the documents' own words count in full here: a title a nearer heading hides still
        # writes what it names
        titles = EvidenceSentence(0, "", set(), set().union(*(
            words | {flat(h) for h in _HEADING.findall(item.chunk.text)}
            for words, item in zip(self.document_words, self.items, strict=True))))
        return [subject for subject in self.subjects
                if any(s.names(set(subject.spellings)) for s in [*self.sentences, titles])]


_TOPIC = re.compile(f"^([{HAN}·]{{2,8}})的")


def _chinese_topic(question: str) -> str:
    """What a Chinese question of the form "X的Y是什么" asks about: X (何皇后 of 何皇后的谥号)."""
    match = _TOPIC.match(question)
    return match.group(1) if match else ""


def _written_subjects(question: str, items: list[ScoredChunk], aliases: list[set[str]]
                      ) -> tuple[list[EvidenceSentence], list[Subject]]:
    """The evidence's sentences and the question's subjects some sentence writes; both empty
    when none is written (``EvidenceReading`` for a caller outside the check)."""
    reading = EvidenceReading(question, items, aliases)
    return (reading.sentences, reading.written) if reading.written else ([], [])


def _linked(index: int, sentences: list[EvidenceSentence],
            value: set[str]) -> list[EvidenceSentence]:
    """The sentence at ``index`` with its antecedents and bridges (see the module doc)."""
    own = sentences[index]
    linked = [own]
    at = index
    while (at > 0 and len(linked) <= CARRY_BACK and not _opens_on_name(sentences[at], value)
           and sentences[at - 1].block == own.block):
        at -= 1
        linked.append(sentences[at])
    crossed: set[str] = set(value)
    for _ in range(BRIDGE_HOPS):
        bridges = set().union(*(s.entities for s in linked)) - crossed
        if not bridges:
            break
        crossed |= bridges
        linked.extend(s for s in sentences if s.block == own.block and s not in linked
                      and s.entities & bridges)
    return linked


def answer_sentence_of(answer: str) -> Callable[[int], int]:
    """A function from a character offset of ``answer`` to the index of its sentence (or
    list line)."""
    cuts = sorted({end for _, end in sentence_spans(answer)}
                  | {m.end() for m in re.finditer(r"\n", answer)})
    return lambda offset: bisect.bisect_right(cuts, offset)


def answer_terms(answer: str, question: str, languages: str = "zh") -> list[Claim]:
    """The content words of ``answer`` that ``question`` does not write, as claims of kind
    ``term`` with their spans: the plain nouns ("双翼豆", "腺体") a name check cannot see
    where no capital letter marks a name. ``languages``: "zh" for Chinese words only, "all"
    for English words too."""
    masked = CITATION.sub(lambda m: " " * len(m.group(0)), answer)
    norm, index = normalise_map(masked)
    asked = flat(question)
    asked_terms = set(key_terms(question))
    found: list[Claim] = []
    for term in key_terms(masked):
        if (term in asked_terms or contains_phrase(asked, term) or is_identifier(term)
                or languages == "zh" and not all(is_han(ch) for ch in term)):
            continue
        at = norm.find(term)
        if at >= 0:
            first, last = index[at], index[at + len(term) - 1] + 1
            found.append(Claim(text=answer[first:last], kind="term", start=first, end=last))
    return found


def misaligned_terms(terms: list[Claim], evidence: EvidenceReading) -> list[Mismatch]:
    """The ``answer_terms`` written only beside other subjects than the question's, when they
    are more than ``TERM_SHARE`` of the terms the evidence writes (and ``MIN_TERMS`` or
    more): one plain word may stand anywhere; an answer most of whose words come from text
    about another subject states what that text says of it. Empty when the question names
    no subject the evidence writes."""
    if not evidence.question or not evidence.items or not terms:
        return []
    written = evidence.written
    if not written:
        return []
    sentences = evidence.sentences
    every_spelling = set().union(*(s.spellings for s in written))
    located: list[tuple[Claim, list[EvidenceSentence], bool]] = []
    for term in terms:
        key = flat(term.text)
        if any(key in s or s in key for s in every_spelling):
            continue
        holding = [i for i, s in enumerate(sentences) if contains_phrase(s.text, key)]
        if holding:
            linked = [_linked(i, sentences, {key}) for i in holding]
            about = any(s.names(every_spelling) for group in linked for s in group)
            located.append((term, linked[0], about))
    astray = [(term, linked) for term, linked, about in located if not about]
    if len(astray) < MIN_TERMS or len(astray) <= TERM_SHARE * len(located):
        return []
    return [Mismatch(term.model_copy(update={"verdict": "evidence"}), linked[0].block,
                     written[0].name, _about_instead(linked, {flat(term.text)}))
            for term, linked in astray]


def _about_instead(linked: list[EvidenceSentence], value: set[str]) -> list[str]:
    """What a value's sentences speak of: their names, else their document's words (a title
    before a file or record id)."""
    names = list(dict.fromkeys(s.spelt[e] for s in linked for e in s.spelt if e not in value))
    if names:
        return names
    words = sorted(linked[0].context, key=lambda w: (bool(re.search(r"\d", w)), len(w), w))
    return words[:1]


def misaligned(claims: list[Claim], evidence: EvidenceReading,
               answer: str = "") -> list[Mismatch]:
    """The located ``claims`` (found in the evidence) that no evidence sentence states about
    a subject of the question, nor beside a claim of the same answer sentence that is so
    stated ("Planning Service (depends on … the Telemetry Hub)": the hub is stated beside
    the service, the service beside the question's Warehouse DB). Empty when the question
    names no subject the evidence writes."""
    if not evidence.question or not evidence.items or not any(
            c.verdict in ("cited", "evidence") for c in claims):
        return []
    written = evidence.written
    if not written:
        return []
    sentences, aliases = evidence.sentences, evidence.aliases
    every_spelling = set().union(*(s.spellings for s in written))
    sentence_of = answer_sentence_of(answer)
    values: list[tuple[Claim, set[str], list[list[EvidenceSentence]]]] = []
    for claim in claims:
        if claim.verdict not in ("cited", "evidence"):
            continue
        key = flat(claim.text)
        value = spellings(key, aliases)
        if value & every_spelling or any(key in s or s in key for s in every_spelling):
            continue  # the claim is a subject itself
        holding = [i for i, s in enumerate(sentences) if s.states(claim, aliases)]
        if holding:  # else stated only across sentences' words (a quantity split): not judged
            values.append((claim, value, [_linked(i, sentences, value) for i in holding]))
    aligned: set[int] = set()
    grew = True
    while grew:
        grew = False
        for n, (claim, _, linked) in enumerate(values):
            if n in aligned:
                continue
            beside = set(every_spelling)
            for m in aligned:
                if sentence_of(values[m][0].start) == sentence_of(claim.start):
                    beside |= values[m][1]
            if any(s.names(beside) for group in linked for s in group):
                aligned.add(n)
                grew = True
    found: list[Mismatch] = []
    for n, (claim, value, linked) in enumerate(values):
        if n in aligned:
            continue
        found.append(Mismatch(claim, linked[0][0].block, written[0].name,
                              _about_instead(linked[0], value)))
    return found
