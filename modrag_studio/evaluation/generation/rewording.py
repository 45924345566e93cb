"""Rewording a verified question: a paraphrase by another word for each key word its chunk
holds (names and codes kept), a claim by translating it into the other language and back;
``reword_all`` paraphrases the questions of an existing set. The generator's part that
rewords."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from modrag_nodes.text.scripts import language_of
from modrag_nodes.text.words import words
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.evaluation.evalset import EvalQuestion
from modrag_studio.evaluation.generation.checks.misreads import adjective_for_noun
from modrag_studio.evaluation.generation.checks.verify import (
    PARAPHRASE_MAX_OVERLAP,
    Candidate,
    Verdict,
    check_answerable,
    check_back_translation,
    check_claim,
)
from modrag_studio.evaluation.generation.config import GenerationConfig
from modrag_studio.evaluation.generation.reading.prompts import (
    build_synonym_prompt,
    build_translate_prompt,
    parse_synonyms,
    parse_translation,
    substitute,
)
from modrag_studio.evaluation.generation.reading.search import CorpusSearch
from modrag_studio.evaluation.generation.reading.terms import key_terms, overlap, words_to_replace

Progress = Callable[[int, int, str], None]  # (kept, wanted, what the last call gave)


class Rewording:
    """Paraphrases and back-translated claims; the generator provides ``ask``, ``_finish``,
    ``record``, its config, search, vocabulary and call count."""

    config: GenerationConfig
    search: CorpusSearch
    cancel: CancelToken
    vocab: set[str]
    stems: set[str]
    calls: int

    def ask(self, system: str, user: str, max_tokens: int | None = None) -> str:
        raise NotImplementedError

    def _finish(self, cand: Candidate) -> Candidate:
        raise NotImplementedError

    def record(self, cand: Candidate, qid: str, *tags: str) -> EvalQuestion | None:
        raise NotImplementedError

    def _reworded(self, cand: Candidate) -> Candidate:
        """A verified single question reworded: a second call gives another word for each
        key word the chunk holds (names and codes are kept), and the question with those
        words replaced is checked as a paraphrase (its facts not in it, at most half its key
        words in the chunk). A question already worded apart is kept as it is."""
        chunk = cand.chunks[0]
        if overlap(cand.question, chunk.text) <= PARAPHRASE_MAX_OVERLAP:
            return cand
        replace = words_to_replace(cand.question, chunk.text)
        if not replace:
            cand.verdict = Verdict("not_a_paraphrase", "its shared key words are names or "
                                                       "codes a paraphrase keeps")
            return cand
        reply_text = self.ask(*build_synonym_prompt(cand.language, cand.question, replace))
        synonyms = parse_synonyms(reply_text, replace)
        cand.reply = f"{cand.reply}\n---\n{reply_text}"
        if not synonyms:
            cand.verdict = Verdict("unreadable_reply", "no other word in the reply")
            return cand
        cand.question = substitute(cand.question, synonyms)
        no_noun = adjective_for_noun(cand.question, synonyms)
        if no_noun is not None:
            cand.verdict = Verdict("garbled", no_noun)
            return cand
        terms = set(key_terms(cand.question))
        repeated = [w for w, n in Counter(words(cand.question)).items() if n >= 3 and w in terms]
        if repeated:
            cand.verdict = Verdict("garbled", f"'{repeated[0]}' three times: replacements "
                                              "that repeat one word")
            return cand
        cand.verdict = check_answerable(cand.question, cand.facts, [chunk], paraphrase=True)
        return cand

    def _back_translated(self, cand: Candidate) -> Candidate:
        """A claim reworded by translating it into the other language and back: the words
        come back as the model puts them, not as its chunk has them (names and codes
        survive); the result is checked against the claim (nothing left untranslated, no
        number or unknown word brought in) and as a new claim is."""
        pivot = "zh" if cand.language == "en" else "en"
        middle = parse_translation(self.ask(*build_translate_prompt(cand.question, pivot)))
        back = parse_translation(self.ask(*build_translate_prompt(middle, cand.language))
                                 ) if middle else ""
        cand.reply = f"{pivot}: {middle}\n---\n{back}"
        if not middle or not back:
            cand.verdict = Verdict("unreadable_reply", "no translation in the reply")
        elif language_of(middle) != pivot:
            cand.verdict = Verdict("not_translated", f"{pivot}: {middle[:40]} / {back[:40]}")
        else:
            original, cand.question = cand.question, back
            cand.verdict = check_back_translation(original, back, cand.language,
                                                  cand.chunks[0], self.vocab, self.stems)
            if cand.verdict.reason is None:
                cand.verdict = check_claim(back, cand.chunks[0])
        return cand

    def reword_all(self, questions: Sequence[EvalQuestion], on_progress: Progress | None,
                   ) -> tuple[list[EvalQuestion], list[Candidate]]:
        """Paraphrases of ``questions`` (answerable, one source chunk of this corpus, one fact
        or a claim; others are skipped), each checked as a generated paraphrase or claim is:
        ids ``<id>-p``, the original's evidence and facts, tagged ``reworded:<id>``. A
        question is reworded by synonyms of its chunk's words, a claim by translation
        there and back."""
        by_id = {c.chunk_id: c for c in self.search.chunks}
        kept: list[EvalQuestion] = []
        candidates: list[Candidate] = []
        for question in questions:
            if len(kept) >= self.config.n or self.calls >= (self.config.max_attempts or 1 << 30):
                break
            self.cancel.raise_if_cancelled()
            ids = question.expected_evidence.to_dict().get("chunk_ids", []) if (
                question.expected_evidence is not None) else []
            if not question.answerable or len(ids) != 1 or ids[0] not in by_id:
                continue
            chunk = by_id[ids[0]]
            language = question.language or language_of(chunk.text)
            if "type:claim" in question.tags and not question.expected_facts:
                cand = self._back_translated(Candidate(
                    "claim", language, question.question, [], [chunk],
                    Verdict(None, sources=[chunk])))
            elif len(question.expected_facts) != 1:
                continue
            elif overlap(question.question, chunk.text) <= PARAPHRASE_MAX_OVERLAP:
                continue  # worded apart already: its copy would add nothing
            else:
                fact = question.expected_facts[0][0]
                cand = self._reworded(Candidate("paraphrase", language, question.question,
                                                [fact], [chunk],
                                                Verdict(None, sources=[chunk], facts=[fact])))
            cand = self._finish(cand)
            candidates.append(cand)
            row = self.record(cand, f"{question.id}-p", f"reworded:{question.id}")
            if row is not None:
                kept.append(row)
            if on_progress is not None:
                on_progress(len(kept), self.config.n, f"{cand.kind} reworded from "
                            f"{question.id}: {cand.verdict.reason or 'kept'}")
        return kept, candidates
