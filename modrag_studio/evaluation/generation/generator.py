"""Generate an evaluation set from a corpus: the graph's own chunks, sampled across documents,
a chat model writing one question and its answer phrase per call, every candidate verified
before it is kept (rejections counted by reason), rows in the evaluation-set format."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from modrag_nodes.llm.api import chat
from modrag_nodes.text.scripts import language_of
from modrag_studio.engine.core.datatypes import ChatMessage, Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.core.resources import Resources
from modrag_studio.engine.evidence.expected import ExpectedEvidence, normalise_text
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import EvalQuestion
from modrag_studio.evaluation.generation.checks import round_trip
from modrag_studio.evaluation.generation.checks.verify import (
    Candidate,
    Deduplicator,
    Verdict,
    check_answerable,
    check_claim,
    check_specific,
)
from modrag_studio.evaluation.generation.config import (
    GenerationConfig,
    generation_context,
    probe_backend,
)
from modrag_studio.evaluation.generation.corpus import find_chunk_source, graph_chunks
from modrag_studio.evaluation.generation.fact_questions import FactQuestions
from modrag_studio.evaluation.generation.facts import ValueFact
from modrag_studio.evaluation.generation.reading.content import (
    DocumentSpread,
    content_chunks,
    names_any,
    package_name,
    question_subjects,
    scoped_question,
    skipped_text,
    subject_terms,
)
from modrag_studio.evaluation.generation.reading.errors import GenerationError
from modrag_studio.evaluation.generation.reading.prompts import (
    build_prompt,
    parse_claim,
    parse_reply,
)
from modrag_studio.evaluation.generation.reading.search import CorpusSearch, build_search
from modrag_studio.evaluation.generation.reading.subjects import (
    absent_details,
    named_subjects,
)
from modrag_studio.evaluation.generation.reading.terms import word_stems
from modrag_studio.evaluation.generation.report import QualityReport
from modrag_studio.evaluation.generation.rewording import Progress, Rewording
from modrag_studio.evaluation.generation.sampling import (
    TermLinks,
    capacity,
    capped,
    facts_first,
    hand_on,
    join_questions,
    rotated,
    stratified_order,
    targets,
    usable_chunks,
    vocabulary,
)
from modrag_studio.evaluation.generation.unanswerable import UnanswerableQuestions

log = logging.getLogger(__name__)
GIVE_UP = 2  # a type that has had this many calls per question it owes stops asking
GIVE_UP_EMPTY = 8  # ... or this many tries without keeping one
BATCH = 6  # questions drafted before they are checked
# drafts of one prompt family in a row: value sentences (single and two-chunk, then
# paraphrase, whose instructions add a sentence), then the kind of a thing, then chunks
DRAFT_ORDER = {"single": 0, "multi": 0, "paraphrase": 1, "unanswerable": 2}


@dataclass
class GenerationResult:
    questions: list[EvalQuestion]
    report: QualityReport
    candidates: list[Candidate] = field(default_factory=list)
    chunks: dict[str, Chunk] = field(default_factory=dict)


class _Generator(Rewording, FactQuestions, UnanswerableQuestions):
    def __init__(self, config: GenerationConfig, chunks: list[Chunk], search: CorpusSearch,
                 links: TermLinks, cancel: CancelToken, report: QualityReport,
                 resources: Resources | None = None) -> None:
        self.config, self.chunks, self.search, self.links = config, chunks, search, links
        self.cancel, self.report = cancel, report
        self.vocab = vocabulary(search.chunks)
        self.absent_details = absent_details(self.vocab)
        self.dedup = Deduplicator(search)
        self.rng = random.Random(config.seed)
        self.used_pairs: set[tuple[str, str]] = set()
        self.spec = config.llm.model_copy(update={
            "max_tokens": config.reply_tokens,
            "seed": config.seed if config.llm.seed is not None else None,
            "extra": {**config.llm.extra, "reuse_prefix": True}})  # the prompts share a prefix
        self.used_facts: set[tuple[str, str]] = set()
        self.facts_by_chunk: dict[str, list[ValueFact]] = {}
        self.kinds: dict[str, str] = {}  # the model's word for what a thing is, per thing
        self.deferred = False
        self.asked: set[tuple[str, str]] = set()  # (thing, detail) of unanswerable questions
        self.ctx = generation_context(cancel, resources)
        self.calls = 0

    @cached_property
    def spread(self) -> DocumentSpread:
        return DocumentSpread(self.search.chunks)

    @cached_property
    def stems(self) -> set[str]:
        return word_stems(self.vocab)

    def ask(self, system: str, user: str, max_tokens: int | None = None) -> str:
        self.calls += 1
        messages = [ChatMessage(role="system", content=system),
                    ChatMessage(role="user", content=user)]
        spec = self.spec if max_tokens is None else self.spec.model_copy(
            update={"max_tokens": max_tokens})
        try:
            return chat(spec, messages, ctx=self.ctx, stream=False).text
        except RunCancelled:
            raise
        except Exception as exc:
            raise GenerationError(f"chat backend '{self.spec.backend}' with model "
                                  f"'{self.spec.model or 'default'}' failed: {exc}") from None

    def candidate(self, kind: str, chunk: Chunk, fallback: str | None = None, *,
                  finish: bool = True) -> Candidate | None:
        """One verified (or rejected) question about ``chunk``; None when a two-chunk
        question finds no partner chunk. ``fallback``: the type a paraphrase worded too
        close to its statement is kept as (a type still owed questions), not lost;
        ``finish`` False: the checks that ask the model are left to ``finish``."""
        self.deferred = not finish
        language = language_of(chunk.text)
        if kind == "multi":
            fact = self.fact_of(chunk) if self.config.value_facts else None
            partner = self.fact_partner(chunk, fact) if fact is not None else None
            if partner is not None:
                return self._two_facts(chunk, fact, *partner)
            return self._two_chunk(chunk, language)
        if kind == "claim":
            reply_text = self.ask(*build_prompt("claim", language, chunk.text))
            claim = parse_claim(reply_text)
            verdict = (check_claim(claim, chunk) if claim else
                       Verdict("unreadable_reply", "no claim in the reply"))
            return self._finish(Candidate("claim", language, claim, [], [chunk], verdict,
                                          reply_text))
        if kind == "unanswerable":
            return self._unanswerable(chunk, language)
        fact = self.fact_of(chunk) if self.config.value_facts else None
        if fact is not None:
            return self._from_fact(kind, chunk, fact, fallback)
        reply_text = self.ask(*build_prompt(kind, language, chunk.text))
        reply = parse_reply(reply_text, 1)
        if reply.problem:
            verdict = Verdict("unreadable_reply", reply.problem)
        else:
            verdict = check_answerable(reply.question, reply.answers, [chunk])
        cand = Candidate(kind, language, reply.question, verdict.facts or reply.answers[:1],
                         [chunk], verdict, reply_text)
        if kind == "paraphrase" and verdict.reason is None:
            cand = self._reworded(cand)
        return self._finish(cand)

    def _two_chunk(self, chunk: Chunk, language: str) -> Candidate | None:
        """A question about the term two chunks share, joined from one verified question
        per chunk, so answering it needs a fact from each."""
        found = self.links.partner(chunk, self.rng, self.used_pairs, language)
        if found is None:
            return None
        other, term = found
        self.used_pairs.add(tuple(sorted((chunk.chunk_id, other.chunk_id))))
        chunks, halves, replies = [chunk, other], [], []
        for part in chunks:
            replies.append(self.ask(*build_prompt("about", language, part.text, term)))
            reply = parse_reply(replies[-1], 1)
            verdict = (Verdict("unreadable_reply", reply.problem) if reply.problem else
                       check_answerable(reply.question, reply.answers, [part]))
            if verdict.reason is not None:
                return Candidate("multi", language, reply.question, reply.answers[:1], chunks,
                                 verdict, "\n---\n".join(replies))
            halves.append((reply.question, verdict.facts[0]))
        question = join_questions(halves[0][0], halves[1][0], language)
        facts = [halves[0][1], halves[1][1]]
        verdict = check_answerable(question, facts, chunks)
        return self._finish(Candidate("multi", language, question, facts, chunks, verdict,
                                      "\n---\n".join(replies)))

    def _finish(self, cand: Candidate) -> Candidate:
        return cand if self.deferred else self.finish(cand)

    def finish(self, cand: Candidate) -> Candidate:
        """Specificity (answerable questions), near-duplicates and the round trip, after
        the other checks (the cheap ones first)."""
        verdict = cand.verdict
        subjects = self.spread.naming(question_subjects(cand.chunks, cand.language),
                                      cand.chunks)
        if verdict.reason is None and cand.kind != "claim" and not names_any(cand.question,
                                                                              subjects):
            if self._scoped(cand):
                verdict = cand.verdict
            else:
                verdict.reason = "unnamed_subject"
                verdict.detail = f"names none of {', '.join(subjects[:4]) or '(no subject)'}"
        cand.names = {normalise_text(t) for t in subjects if names_any(cand.question, [t])}
        if verdict.reason is None and cand.kind not in ("unanswerable", "claim"):
            cand.verdict = verdict = self.changed_fact(cand) or verdict
        if verdict.reason is None and cand.kind != "unanswerable":
            cand.verdict = verdict = check_specific(verdict, cand.question, self.search)
        if verdict.reason is None:
            twin = self.dedup.duplicate_of(cand.question, cand.names, self._facts(cand))
            if twin is not None:
                verdict.reason, verdict.detail = "near_duplicate", f"of {twin}"
        if verdict.reason is None and self.config.round_trip and cand.round_trip:
            facts = [] if cand.kind == "unanswerable" else cand.facts
            ask = partial(self.ask, max_tokens=round_trip.REPLY_TOKENS)
            if cand.kind == "claim":
                trip = round_trip.check_claim(self.search, ask, cand.language, cand.question,
                                              cand.chunks, self.config.seed)
            else:
                trip = round_trip.check(self.search, ask, cand.language, cand.question, facts,
                                        cand.chunks, self.config.seed)
            cand.reply = f"{cand.reply}\n---\n{trip.answer or '(no answer)'}"
            if not trip.agrees:
                verdict.reason = ("answered_by_corpus" if cand.kind == "unanswerable"
                                  else "round_trip_mismatch")
                verdict.detail = (f"asked of {', '.join(trip.passages)}, the model answers "
                                  f"{trip.answer or '(nothing)'!r}")
            elif cand.kind in ("single", "paraphrase") and not named_subjects(
                    cand.question, cand.language) and not names_any(
                    cand.question, subject_terms(cand.chunks[0], deep=False)):
                trip = round_trip.check_elsewhere(self.search, ask, cand.language,
                                                  cand.question, cand.facts, cand.chunks)
                cand.reply = f"{cand.reply}\n---\n{trip.answer or '(no answer)'}"
                if not trip.agrees:
                    verdict.reason = "answered_elsewhere"
                    verdict.detail = (f"asked of {', '.join(trip.passages)} (not its source), "
                                      f"the model answers {trip.answer!r}")
        return cand

    def _scoped(self, cand: Candidate) -> bool:
        """A question (a two-chunk one of one document) from the document of a software
        package that leaves the package unsaid, said of it ("In tqdm, what ...?") when it
        still passes its checks; whether it was."""
        packages = {package_name(c) for c in cand.chunks}
        package = packages.pop() if len(packages) == 1 else ""
        if cand.kind == "claim" or cand.language != "en" or (
                package not in self.software_packages):
            return False
        scoped = scoped_question(cand.question, package)
        if scoped is None:
            return False
        verdict = check_answerable(scoped, cand.facts, cand.chunks,
                                   paraphrase=cand.kind == "paraphrase")
        if verdict.reason is not None:
            return False
        cand.question, cand.verdict = scoped, verdict
        return True

    @staticmethod
    def _facts(cand: Candidate) -> list[str]:
        """The facts a near-duplicate of ``cand`` shares (none: an unanswerable question)."""
        return [] if cand.kind == "unanswerable" else list(cand.facts)

    def record(self, cand: Candidate, qid: str, *tags: str) -> EvalQuestion | None:
        """Count ``cand`` in the report; a kept one becomes row ``qid`` (with ``tags``
        added), which later candidates are checked against as near-duplicates."""
        self.report.add(cand.kind, cand.language, cand.verdict.reason, cand.verdict.hard,
                        question=cand.question, expected=cand.facts,
                        detail=cand.verdict.detail, chunk_ids=[c.chunk_id for c in cand.chunks],
                        reply=cand.reply)
        if cand.verdict.reason is not None:
            return None
        cand.row = self.row(qid, cand)
        cand.row.tags.extend(tags)
        self.dedup.add(qid, cand.question, cand.names, self._facts(cand))
        return cand.row

    def row(self, qid: str, cand: Candidate) -> EvalQuestion:
        tags = ["generated", f"type:{cand.kind}", f"model:{self.config.model_name}",
                f"seed:{self.config.seed}"]
        if cand.verdict.hard:
            tags.append("hard")
        if cand.kind == "unanswerable":
            return EvalQuestion(id=qid, question=cand.question, answerable=False,
                                language=cand.language, tags=tags)
        sources = cand.verdict.sources
        if cand.kind == "claim":  # a retrieval question: its evidence, no fact phrase
            evidence = ExpectedEvidence.from_dict({
                "chunk_ids": [c.chunk_id for c in sources],
                "doc_ids": list(dict.fromkeys(c.doc_id for c in sources))})
            return EvalQuestion(id=qid, question=cand.question, expected_evidence=evidence,
                                answerable=True, language=cand.language, tags=tags)
        phrases = [f for f, c in zip(cand.facts, sources, strict=True)
                   if normalise_text(f) in normalise_text(c.text)]
        evidence = ExpectedEvidence.from_dict({
            "chunk_ids": [c.chunk_id for c in sources],
            "doc_ids": list(dict.fromkeys(c.doc_id for c in sources)),
            "phrases": phrases})
        return EvalQuestion(id=qid, question=cand.question, expected_evidence=evidence,
                            expected_facts=[[f] for f in cand.facts], answerable=True,
                            reference_answer="; ".join(cand.facts), language=cand.language,
                            tags=tags)


def _next_number(rows: Sequence[EvalQuestion]) -> int:
    """The number after the highest ``gNNN`` id of ``rows`` (1 without any)."""
    numbers = [int(r.id[1:]) for r in rows if r.id[:1] == "g" and r.id[1:].isdigit()]
    return max(numbers, default=0) + 1


def generate_evalset(doc: GraphDocument, inputs: Mapping[str, Any], config: GenerationConfig,
                     *, executor: Executor, cancel: CancelToken | None = None,
                     on_progress: Progress | None = None,
                     on_status: Callable[[str], None] | None = None,
                     reword: Sequence[EvalQuestion] | None = None,
                     extend: Sequence[EvalQuestion] = ()) -> GenerationResult:
    """Generate ``config.n`` verified questions (fewer when the model calls run out; the report
    says so); with ``reword``, paraphrase those questions instead of writing new ones; with
    ``extend``, questions of an earlier set: new ones must not be near-duplicates of them and
    are numbered after them (a second seed grows a set a small corpus cannot fill in one).
    Raises GenerationError naming the cause, RunCancelled when cancelled."""
    config.check()
    cancel = cancel or CancelToken()
    status = on_status or (lambda _: None)
    started = time.monotonic()
    source = find_chunk_source(doc, executor.registry, config.chunks)
    status(f"asking {config.model_name} for a first reply")
    probe_backend(config.llm, cancel, executor.resources)
    status(f"reading the corpus through '{source.loader}' -> '{source.spec}'")
    all_chunks = graph_chunks(doc, executor, inputs, source, cancel=cancel)
    if not all_chunks:
        raise GenerationError(f"the corpus gave no chunks ('{source.spec}' is empty): it holds "
                              "no document the loader reads")
    chunks, skipped = content_chunks(usable_chunks(all_chunks, config.language))
    documents = len({c.doc_id for c in chunks})
    links = TermLinks(chunks)
    caps = capacity(chunks, config.types, links)
    possible = sum(caps.values())
    lang = "" if config.language == "auto" else f" in language '{config.language}'"
    if possible == 0:
        raise GenerationError(
            f"the corpus is too small: {len(all_chunks)} chunk(s) from "
            f"{len({c.doc_id for c in all_chunks})} document(s), none with enough text{lang} "
            "to ask about (80 characters or more, not headings, badges, links, code or "
            f"changelog alone{'; ' + skipped_text(skipped) if skipped else ''}); add documents")
    if possible < config.n and reword is None:
        raise GenerationError(
            f"the corpus is too small for {config.n} questions: {len(all_chunks)} chunk(s) "
            f"from {len({c.doc_id for c in all_chunks})} document(s), {len(chunks)} with "
            f"enough text{lang} (80 characters or more), allow at most {possible} "
            f"({', '.join(f'{t} {c}' for t, c in caps.items())}); ask for --n {possible} or "
            "fewer, or add documents")
    search = build_search(doc, executor, inputs, all_chunks, source.splitter,
                          dense=config.dense, cancel=cancel, on_status=status)
    report = QualityReport(requested=config.n, model=config.model_name, seed=config.seed,
                           chunks=len(chunks), documents=documents, skipped=skipped)
    generator = _Generator(config, chunks, search, links, cancel, report, executor.resources)
    for earlier in extend:
        generator.dedup.add(earlier.id, earlier.question,
                            facts=[a for fact in earlier.expected_facts for a in fact])
    first = _next_number(extend)
    if reword is not None:
        kept, candidates = generator.reword_all(reword, on_progress)
        report.calls, report.seconds = generator.calls, time.monotonic() - started
        return GenerationResult(kept, report, candidates, {c.chunk_id: c for c in all_chunks})
    caps = capped(caps, config.unanswerable_cap)
    if "unanswerable" in caps and config.unanswerable_cap < config.n:
        report.notes.append(f"unanswerable: at most {config.unanswerable_cap} of {config.n} "
                            f"(share {config.unanswerable_share:g})")
    want = targets(config.n, caps)
    order = stratified_order(chunks, config.seed)
    by_fact = ("single", "paraphrase", "multi") if config.value_facts else ()
    streams = {t: facts_first(order, i / len(want)) if t in by_fact else
               rotated(order, i / len(want)) for i, t in enumerate(want)}
    kept: list[EvalQuestion] = []
    got = dict.fromkeys(want, 0)
    tried = dict.fromkeys(want, 0)
    candidates: list[Candidate] = []
    limit = config.max_attempts or (4 if config.round_trip else 3) * config.n + 20
    while len(kept) < config.n and generator.calls < limit:
        cancel.raise_if_cancelled()
        # A batch: the questions drafted one after another, then checked one after another,
        # so consecutive calls share their instructions (which the backend keeps).
        jobs: list[tuple[str, Chunk]] = []
        size = min(BATCH, config.n - len(kept), max(1, (limit - generator.calls) // 2))
        while len(jobs) < size:  # a type is asked at most what it still owes (its cap holds)
            queued = Counter(kind for kind, _ in jobs)
            open_types = [t for t in want if got[t] + queued[t] < want[t] and t in streams]
            if not open_types:
                break
            kind = min(open_types, key=lambda t: tried[t] / want[t])  # types take turns
            chunk = next(streams[kind], None)
            if chunk is None:  # every chunk tried: the other types make up what it lacks
                del streams[kind]
                hand_on(want, got, kind, [t for t in streams if want[t] < caps[t]], caps)
                continue
            tried[kind] += 1
            jobs.append((kind, chunk))
        if not jobs:
            break
        jobs.sort(key=lambda job: DRAFT_ORDER.get(job[0], len(DRAFT_ORDER)))
        drafts: list[tuple[str, Candidate]] = []
        for kind, chunk in jobs:
            if generator.calls >= limit:
                break
            fallback = "single" if kind == "paraphrase" and got.get("single", 0) < want.get(
                "single", 0) else None
            cand = generator.candidate(kind, chunk, fallback, finish=False)
            if cand is None:
                tried[kind] -= 1
            else:
                drafts.append((kind, cand))
        for kind, cand in drafts:  # each drafted question is checked (a call may pass limit)
            if len(kept) >= config.n:
                break
            cand = generator.finish(cand)
            candidates.append(cand)
            row = generator.record(cand, f"g{first + len(kept):03d}")
            if row is not None:
                kept.append(row)
                got[cand.kind] += 1
            others = [t for t in streams if t != kind and want[t] < caps[t]]
            spent = tried[kind] >= min(GIVE_UP * want[kind] + 2,
                                       GIVE_UP_EMPTY if got[kind] == 0 else 1 << 30)
            if got[kind] < want[kind] and spent and others:
                # a type that keeps failing hands the rest of its share to the others
                note = (f"{kind}: {got[kind]} kept of {want[kind]} after {tried[kind]} "
                        "tries; the rest of its share went to ")
                report.notes.append(note + ", ".join(hand_on(want, got, kind, others, caps)))
            if on_progress is not None:
                mark = ("kept" if cand.verdict.reason is None
                        else f"rejected ({cand.verdict.reason})")
                on_progress(len(kept), config.n, f"{cand.kind}/{cand.language} {mark}")
    short = [f"{t} {got[t]}/{want[t]}" for t in want if got[t] < want[t]]
    if short and len(kept) < config.n:
        report.notes.append(f"fewer questions than asked ({', '.join(short)}) after "
                            f"{generator.calls} model calls")
    report.calls = generator.calls
    report.seconds = time.monotonic() - started
    return GenerationResult(kept, report, candidates, {c.chunk_id: c for c in all_chunks})
