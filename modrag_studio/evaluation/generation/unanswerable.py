"""Unanswerable questions: a detail the corpus never gives, asked of a thing a chunk names.
The thing is its document's title when the chunk writes it (an encyclopedia's entry: "假苹婆"),
else drawn in code among the chunk's package, codes and names (not a Chinese name the
corpus writes only as a piece of a longer one: 马洪 of 瑞克·马洪); its kind is the
document's own package's when that package is software (installed or imported in its
document, or said to be a library), else the model's word (asked once per thing); the detail
is drawn among those its kind has, leaving out a maker the corpus gives beside the thing
("NVIDIA's Jetson Nano"); the question is written from a template. The generator's part that
drafts them."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import cached_property

from modrag_nodes.text.scripts import HAN_CHAR
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.checks.verify import Candidate, Verdict, check_unanswerable
from modrag_studio.evaluation.generation.reading.content import names_any, package_name, prose
from modrag_studio.evaluation.generation.reading.search import CorpusSearch
from modrag_studio.evaluation.generation.reading.subjects import (
    KIND_REPLY_TOKENS,
    build_kind_prompt,
    fitting_details,
    lower_case_words,
    names_subject,
    parse_kind,
    template_question,
    thing_subjects,
)
from modrag_studio.evaluation.generation.reading.terms import key_terms

# words saying a document's own name is software ("narwhals is a dataframe library")
_SOFTWARE_WORDS = (r"librar(?:y|ies)|package|module|framework|linter|formatter|parser|"
                   r"bindings?|SDK|API")
# details naming who made, founded or insures a thing: given when the corpus writes the
# thing with an owner's name ("NVIDIA's Jetson Nano", "Jetson Nano by NVIDIA")
MAKER_DETAILS = frozenset(("manufacturer", "founder", "insurer", "制造商", "创始人", "保险公司"))


def is_software(package: str, texts: Sequence[str]) -> bool:
    """Whether ``package``, the name a document is filed under, is software by its document
    ``texts``: installed (``pip install``, ``npm install``, ...) or imported by that name,
    or said to be a library, package, module, framework, ... right after its name."""
    if not package:
        return False
    name = re.escape(package)
    module = re.escape(package.replace("-", "_"))
    text = "\n".join(texts)
    return bool(
        re.search(rf"(?:pip3?|conda|uv|poetry|npm|yarn|cargo|gem)\s+(?:install|add)\b"
                  rf"[^\n`]*?(?<![\w-]){name}(?![\w-])", text, re.I)
        or re.search(rf"^\s*(?:>>>\s*)?(?:import|from)\s+{module}\b", text, re.I | re.M)
        or re.search(rf"(?<![\w-]){name}(?![\w-])[^.\n]{{0,60}}?\b(?:{_SOFTWARE_WORDS})\b",
                     text, re.I))


def maker_given(subject: str, texts: Sequence[str]) -> bool:
    """Whether the corpus names who owns or made ``subject`` beside it: a capitalised name's
    possessive right before it ("NVIDIA's Jetson Nano", "Google’s Gemma") or "by" and a
    capitalised name after it ("Gemma by Google", "Gemma, made by Google")."""
    name = re.escape(subject)
    owner = r"[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*"
    pattern = re.compile(rf"(?<![\w-]){owner}['’]s\s+{name}(?![\w-])|(?<![\w-]){name},?\s+"
                         rf"(?:(?:made|built|manufactured|developed|founded|produced|"
                         rf"published|insured)\s+)?by\s+(?:the\s+)?{owner}")
    return any(pattern.search(t) for t in texts)


_NAME_DOT = "·•・"


def piece_of_a_name(name: str, texts: Sequence[str]) -> bool:
    """Whether the corpus writes a Chinese ``name`` only as a piece of a longer
    transliterated name: each time right after or before a middle dot ("瑞克·马洪" for 马洪,
    "玛丽亚·贝尔纳" for 玛丽亚), so the short name is another's or no one's."""
    if HAN_CHAR.search(name) is None or name[0] in _NAME_DOT or name[-1] in _NAME_DOT:
        return False
    seen = False
    for text in texts:
        for match in re.finditer(re.escape(name), text):
            seen = True
            before = text[match.start() - 1] if match.start() else ""
            after = text[match.end()] if match.end() < len(text) else ""
            if not (before and before in _NAME_DOT) and not (after and after in _NAME_DOT):
                return False
    return seen


class UnanswerableQuestions:
    """Drafting unanswerable questions; the generator provides ``ask``, ``_finish``, its
    search's chunks, vocabulary, details absent from the corpus, the seeded ``rng``, the
    kinds said so far and the (thing, detail) pairs asked."""

    search: CorpusSearch
    rng: random.Random
    vocab: set[str]
    absent_details: dict[str, list[tuple[str, list[str]]]]
    kinds: dict[str, str]
    asked: set[tuple[str, str]]

    def ask(self, system: str, user: str, max_tokens: int | None = None) -> str:
        raise NotImplementedError

    def _finish(self, cand: Candidate) -> Candidate:
        raise NotImplementedError

    @cached_property
    def corpus_texts(self) -> list[str]:
        return [c.text for c in self.search.chunks]

    @cached_property
    def lower_words(self) -> set[str]:
        return lower_case_words(self.corpus_texts)

    @cached_property
    def software_packages(self) -> set[str]:
        """The packages documents are filed under that their documents show as software."""
        by_package: dict[str, list[str]] = {}
        for chunk in self.search.chunks:  # code-only chunks too (install lines)
            package = package_name(chunk)
            if package:
                by_package.setdefault(package, []).append(chunk.text)
        return {p for p, texts in by_package.items() if is_software(p, texts)}

    def _kind(self, subject: str, chunk: Chunk, language: str) -> tuple[str, str]:
        """(kind, what it rests on): software for a document's own package that is software,
        else the model's word, asked once per thing."""
        if subject == package_name(chunk) and subject in self.software_packages:
            return "software", "software: its document installs, imports or describes it"
        if subject not in self.kinds:
            self.kinds[subject] = self.ask(*build_kind_prompt(language, chunk.text, subject),
                                           max_tokens=KIND_REPLY_TOKENS)
        reply = self.kinds[subject]
        thing = parse_kind(reply)
        return thing, f"{thing}: {reply}"

    def _unanswerable(self, chunk: Chunk, language: str) -> Candidate | None:
        """A question asking for a detail the corpus never gives of a thing ``chunk`` names,
        written from a template; None when the chunk names nothing or each fitting detail of
        the thing drawn was asked already."""
        body = prose(chunk.text)  # not a heading's or a badge's words
        package = package_name(chunk)
        title = str(chunk.metadata.get("title") or "").strip()
        if title and title != package and len(title) <= 40 and title in body:
            subjects = [title]  # what its document is about ("百老汇剧院"), written so
        else:
            subjects = thing_subjects(body, language,
                                      package if names_any(body, [package]) else "",
                                      self.lower_words)
        subjects = [s for s in subjects if not piece_of_a_name(s, self.corpus_texts)]
        if not subjects:
            return None
        subject = self.rng.choice(subjects)
        thing, said = self._kind(subject, chunk, language)
        details = fitting_details(thing, language, self.absent_details[language])
        if not details:
            verdict = Verdict("no_fitting_detail", f"{subject!r} is a {thing}: no detail of "
                                                   "that kind is absent from the corpus")
            return self._finish(Candidate("unanswerable", language, "", [], [chunk], verdict,
                                          said))
        details = [d for d in details if (subject, d[0]) not in self.asked and not (
            d[0] in MAKER_DETAILS and maker_given(subject, self.corpus_texts))]
        if not details:  # each detail of this thing asked already: another chunk's turn
            return None
        detail, absent = self.rng.choice(details)
        self.asked.add((subject, detail))
        question = template_question(detail, subject, language)
        if not names_subject(question, subject):
            verdict = Verdict("no_subject", f"does not name {subject!r}")
        else:
            verdict = check_unanswerable(question, self.vocab, chunk)
            if verdict.reason is None and absent and not set(absent) & set(
                    key_terms(question)):
                verdict = Verdict("asks_otherwise", f"asked for its {detail}")
        # a detail named in words no chunk uses is given nowhere: no round trip to show it
        return self._finish(Candidate("unanswerable", language, question, [], [chunk],
                                      verdict, said, round_trip=not absent))
