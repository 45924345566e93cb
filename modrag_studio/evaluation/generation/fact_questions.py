"""Questions from sentences stating a value (``facts.value_facts``): one short call words a
question per sentence, whose value is the expected fact; a single question, a paraphrase
(worded apart, or kept as the single question still owed) or a two-chunk question from two
sentences about one subject, in one call. The generator's part that drafts them."""

from __future__ import annotations

from collections.abc import Iterable

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.evidence.expected import normalise_text
from modrag_studio.evaluation.generation.checks.misreads import changed_later
from modrag_studio.evaluation.generation.checks.verify import Candidate, Verdict, check_answerable
from modrag_studio.evaluation.generation.facts import (
    REPLY_TOKENS,
    ValueFact,
    build_fact_prompt,
    parse_fact_questions,
    value_facts,
)
from modrag_studio.evaluation.generation.reading.content import names_any
from modrag_studio.evaluation.generation.reading.search import CorpusSearch
from modrag_studio.evaluation.generation.sampling import join_questions


class FactQuestions:
    """Drafting from value sentences; the generator provides ``ask``, ``_finish``, its
    chunks and the sets of used facts and pairs."""

    chunks: list[Chunk]
    used_facts: set[tuple[str, str]]
    used_pairs: set[tuple[str, str]]
    facts_by_chunk: dict[str, list[ValueFact]]
    search: CorpusSearch
    _documents: dict[str, list[Chunk]] | None = None

    def ask(self, system: str, user: str, max_tokens: int | None = None) -> str:
        raise NotImplementedError

    def _finish(self, cand: Candidate) -> Candidate:
        raise NotImplementedError

    def _reworded(self, cand: Candidate) -> Candidate:
        raise NotImplementedError

    def facts(self, chunk: Chunk) -> list[ValueFact]:
        """The value sentences of ``chunk`` (a changelog entry's value that its document
        says was changed later left out)."""
        if chunk.chunk_id not in self.facts_by_chunk:
            self.facts_by_chunk[chunk.chunk_id] = current_facts(chunk, self.document(chunk))
        return self.facts_by_chunk[chunk.chunk_id]

    def document(self, chunk: Chunk) -> list[Chunk]:
        """All chunks of ``chunk``'s document (content or not)."""
        if self._documents is None:
            self._documents = {}
            for other in self.search.chunks:
                self._documents.setdefault(other.doc_id, []).append(other)
        return self._documents.get(chunk.doc_id, [chunk])

    def changed_fact(self, cand: Candidate) -> Verdict | None:
        """A ``changed_later`` verdict when a fact of ``cand`` comes from a changelog entry
        its document says was changed later; None otherwise."""
        for fact, source in zip(cand.facts, cand.verdict.sources or cand.chunks,
                                strict=False):
            said = changed_later(fact, source, self.document(source))
            if said is not None:
                return Verdict("changed_later", f"{fact!r}: {said[:100]!r}")
        return None

    def fact_of(self, chunk: Chunk) -> ValueFact | None:
        """The first value-stating sentence of ``chunk`` no question has used yet."""
        for fact in self.facts(chunk):
            if (chunk.chunk_id, fact.sentence) not in self.used_facts:
                return fact
        return None

    def fact_partner(self, chunk: Chunk, fact: ValueFact) -> tuple[Chunk, ValueFact] | None:
        """Another chunk with an unused value sentence about the same subject (of the same
        document, or naming the same subject), for a two-chunk question; the nearest chunk
        of the document first."""
        options: list[tuple[int, int, str, Chunk, ValueFact]] = []
        for other in self.chunks:
            if other.chunk_id == chunk.chunk_id or tuple(sorted(
                    (chunk.chunk_id, other.chunk_id))) in self.used_pairs:
                continue
            same_doc = other.doc_id == chunk.doc_id
            if not same_doc and not (fact.subject and names_any(other.text, [fact.subject])):
                continue
            found = self.fact_of(other)
            if found is None or found.value == fact.value or (
                    normalise_text(found.subject) != normalise_text(fact.subject)):
                continue
            options.append((0 if same_doc else 1, abs(other.index - chunk.index),
                            other.chunk_id, other, found))
        if not options:
            return None
        best = min(options, key=lambda o: o[:3])
        return best[3], best[4]

    def _from_fact(self, kind: str, chunk: Chunk, fact: ValueFact,
                   fallback: str | None = None) -> Candidate:
        """A question rephrased from a sentence stating a value in one short call: the value
        is the expected fact (found in code, verified in the chunk as any answer is), the
        model only words the question, which must name the subject. A paraphrase is asked in
        other words; one still worded like its statement is kept as ``fallback`` (a type
        still owed), else reworded by synonyms (one more short call)."""
        self.used_facts.add((chunk.chunk_id, fact.sentence))
        reply_text = self.ask(*build_fact_prompt(fact, own_words=kind == "paraphrase"),
                              max_tokens=REPLY_TOKENS)
        questions = parse_fact_questions(reply_text)
        question = questions[0] if questions else ""
        verdict = (_checked(question, [fact.value], [chunk]) if question else
                   Verdict("unreadable_reply", "no question in the reply"))
        reword = False
        if kind == "paraphrase" and verdict.reason is None:
            worded = check_answerable(question, [fact.value], [chunk], paraphrase=True)
            if worded.reason is None:
                verdict = worded
            elif fallback is not None:
                kind = fallback
            else:
                reword = True  # the synonym call words it apart
        cand = Candidate(kind, fact.language, question, [fact.value], [chunk], verdict,
                         f"{fact.kind}: {fact.sentence}\n---\n{reply_text}")
        return self._finish(self._reworded(cand) if reword else cand)

    def _two_facts(self, chunk: Chunk, fact: ValueFact, other: Chunk, second: ValueFact
                   ) -> Candidate:
        """A two-chunk question from two value sentences about one subject: one call words
        a question per sentence, joined in code; answering needs both values."""
        chunks = [chunk, other]
        self.used_pairs.add(tuple(sorted((chunk.chunk_id, other.chunk_id))))
        self.used_facts.update({(chunk.chunk_id, fact.sentence), (other.chunk_id,
                                                                  second.sentence)})
        reply_text = self.ask(*build_fact_prompt(fact, second),
                              max_tokens=2 * REPLY_TOKENS)
        questions = parse_fact_questions(reply_text)
        facts = [fact.value, second.value]
        reply = f"{fact.kind}: {fact.sentence}\n{second.kind}: {second.sentence}\n---\n{reply_text}"
        if len(questions) == 1:  # one question asking for both values: as good as joined
            return self._finish(Candidate("multi", fact.language, questions[0], facts, chunks,
                                          _checked(questions[0], facts, chunks), reply))
        if not questions:
            return self._finish(Candidate("multi", fact.language, "", facts, chunks,
                                          Verdict("unreadable_reply", "no question"), reply))
        for half, value, part in zip(questions, facts, chunks, strict=False):
            verdict = _checked(half, [value], [part])
            if verdict.reason is not None:
                return self._finish(Candidate("multi", fact.language, half, facts, chunks, verdict,
                                              reply))
        question = join_questions(questions[0], questions[1], fact.language)
        verdict = check_answerable(question, facts, chunks)
        return self._finish(Candidate("multi", fact.language, question, facts, chunks,
                                      verdict, reply))


def current_facts(chunk: Chunk, document: Iterable[Chunk]) -> list[ValueFact]:
    """``value_facts`` of ``chunk`` but a changelog entry's values that its ``document``
    (all its chunks) says were changed later."""
    document = list(document)
    return [f for f in value_facts(chunk) if changed_later(f.value, chunk, document) is None]


def _checked(question: str, facts: list[str], chunks: list[Chunk]) -> Verdict:
    """``check_answerable``'s verdict on a question worded from value sentences, unless it
    kept the sentence's blank ("__") instead of asking for the value."""
    if "__" in question:
        return Verdict("unreadable_reply", "the question kept the blank")
    return check_answerable(question, facts, chunks)
