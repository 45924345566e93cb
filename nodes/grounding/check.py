"""Grounding check (no model call) and the refusal that names what the documents lack.

``check.grounding`` finds the answer's claims (numbers with units, dates, identifiers,
proper names; see ``claims``) and looks each up in the evidence blocks the answer cites
(param ``scope``: or in any block). It emits the answer, its ``claims`` filled in, on
``grounded`` or ``ungrounded``; the question's key terms that no block contains go to
``Answer.absent_terms`` and, when any is found, the answer is routed to ``absent``
(a retry cannot help: the evidence lacks what was asked). Typical wiring:

    parse.answer -> check.grounding
    grounded   -> answer.select.primary
    ungrounded -> prompt.build.feedback   (loop, max_iterations 1: one retry, the
                                           prompt names the ungrounded claims)
    ungrounded -> answer.refuse.answer    (after the retry)
    absent     -> answer.refuse.answer
    answer.refuse.answer -> answer.select.fallback
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from modrag_nodes.generation.fact_match import is_refusal
from modrag_nodes.generation.parser import extract_citations
from modrag_nodes.grounding.alignment import (
    EvidenceReading,
    Mismatch,
    answer_terms,
    describe_mismatches,
    misaligned,
    misaligned_terms,
)
from modrag_nodes.grounding.claims import (
    Block,
    absent_terms,
    alias_groups,
    compound_terms,
    dictionary_entities,
    extract_claims,
    is_identifier,
    is_plain_word,
    locate,
    term_present,
)
from modrag_nodes.grounding.events import opposite_events
from modrag_nodes.grounding.sentences import (
    cite_uncited,
    cited_blocks,
    declined_sentences,
    renumber_invalid,
    repoint_citations,
    unbacked_sentences,
    with_text,
)
from modrag_nodes.grounding.subjects import (
    missing_asked_value,
    repeats_question,
    restated_terms,
    says_nothing,
    swapped_subjects,
    type_words,
    typed_entities,
)
from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import language_of
from modrag_studio.engine.cache.node_cache import stable_hash
from modrag_studio.engine.core.node import (
    Answer,
    Claim,
    InputPort,
    NodeContext,
    NodeType,
    OptionalFilePath,
    OutputPort,
    Query,
    ScoredChunk,
    resolve_path,
)
from modrag_studio.engine.evidence.lineage import EvidenceRole

ClaimKind = Literal["quantity", "number", "date", "identifier", "name", "code"]
NO_CITATION = "the answer cites no evidence block"
EMPTY = "the answer states nothing but block numbers"
ALL_KINDS: list[ClaimKind] = ["quantity", "number", "date", "identifier", "name", "code"]


class GroundingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: Literal["cited", "evidence"] = Field(
        "cited", description="cited: a claim must be in a block the answer cites (any block "
                             "when it cites none); evidence: in any evidence block (found "
                             "elsewhere is then grounded, and noted)")
    kinds: list[ClaimKind] = Field(
        default_factory=lambda: list(ALL_KINDS),
        description="Claim kinds checked: quantity, number, date, identifier, name, code")
    absent_terms: Literal["off", "identifiers", "ask", "all"] = Field(
        "identifiers", description="Key terms of the question that no evidence block contains "
                                   "are named; identifiers (LP-07, VP-02) route the answer to "
                                   "'absent'; ask: an absent word also makes the first "
                                   "attempt 'ungrounded' (the retry names it); all: an absent "
                                   "word routes to 'absent' too (on the demo set words were "
                                   "absent for 8 to 12 of 42 answerable questions); off: none")
    stop_words: list[str] = Field(
        default_factory=list, description="More words that are never key terms (the "
                                          "aliases_file's entity types, such as person or "
                                          "machine, never are)")
    aliases_file: OptionalFilePath = Field(
        None, description="Corpus dictionary (entities with aliases, the kg.extract_rules "
                          "format): a claim or term is found under any alias")
    fix_citations: bool = Field(
        True, description="Re-point a [n] citation whose sentence's claims are all in one "
                          "other evidence block to that block (small models often cite a "
                          "neighbouring block); an answer that cites nothing gets [n] after "
                          "each sentence whose claims block n states (noted as added); a "
                          "block number the evidence does not have is replaced by the block "
                          "that holds the sentence's claims or, without claims, writes most "
                          "of the words it adds to the question (noted as renumbered)")
    check_language: bool = Field(
        True, description="On the first attempt, an answer not in the question's language "
                          "(English for Chinese, or the reverse) is ungrounded")
    restated_terms: bool = Field(
        True, description="An answer that states an absent key term of the question in its "
                          "own words ('the head of purchasing is …' when no block says "
                          "'head of purchasing') goes to 'absent' (with absent_terms 'ask': "
                          "after the retry); terms are phrases, identifiers and Chinese "
                          "words, single English words only with restated_words")
    restated_words: bool = Field(
        False, description="Single English words count as restated terms too "
                           "(a question asked in other words than the documents' has many "
                           "such absent words, and an answer echoing it restates them)")
    subject_check: bool = Field(
        True, description="With a corpus dictionary (aliases_file): an answer that names, "
                          "instead of an entity the question names, another entity of its "
                          "type (another plant, service, machine) goes to 'absent'")
    alignment: bool = Field(
        True, description="A claim must be stated beside a subject of the question (its "
                          "identifiers and names, a dictionary entity, a word naming a "
                          "document) in one evidence sentence, or in sentences joined by a "
                          "shared name; a value written only beside other subjects is a "
                          "mismatch ('block [2] names X beside Y, not beside Z')")
    term_alignment: Literal["off", "zh", "all"] = Field(
        "zh", description="With alignment: the answer's content words the question does not "
                          "write are aligned too, and an answer most of whose words the "
                          "evidence writes only beside other subjects is a mismatch (zh: "
                          "Chinese words, where no capital letter marks a name; all: English "
                          "words too)")
    event_check: bool = Field(
        True, description="With alignment: a date the question asks for one event (died, "
                          "founded, 逝世, 成立) that every evidence sentence stating it gives "
                          "for the opposite event (born, closed, 出生, 解散) is a mismatch")
    require_citation: bool = Field(
        True, description="An answer that states something and cites no evidence block "
                          "(no valid [n]) is ungrounded: it is never shown as grounded")
    cut_unbacked: bool = Field(
        True, description="An answer whose first sentence the evidence backs, but whose later "
                          "sentences state a claim no evidence backs (or backs only beside "
                          "another subject), loses those sentences instead of being sent back "
                          "whole; the cut answer is checked again, and the sentences cut are "
                          "noted in the trace ('cut')")
    asked_value: bool = Field(
        True, description="A question that asks for a price, a count, an amount (how "
                          "long, how often, which level …) or a date, answered with no "
                          "number or date that could be one, or for a flag, option, "
                          "command or variable, answered with no name written as code "
                          "(`x`, --flag, NAME_X, a.b, f()), is ungrounded (the retry says "
                          "so; after it, the refusal)")


class GroundingCheck(NodeType):
    type_id = "check.grounding"
    key_params = ("scope", "absent_terms")
    corpus_params = ("aliases_file",)
    evidence_role = EvidenceRole("passes", inputs=("answer",), checks_answer=True)
    title = "Grounding check"
    category = "Checks"
    description = (
        "Checks without a model that every number, unit, date, identifier and name of the "
        "answer is written in the evidence it cites; emits 'grounded', 'ungrounded' (loop it "
        "back with the claims named) or 'absent' (the question's key terms are in no block)."
    )
    routes = True
    Params = GroundingParams
    inputs = (
        InputPort("answer", Answer, description="The parsed answer"),
        InputPort("evidence", list[ScoredChunk], required=False,
                  description="Evidence to check against (else the answer's own)"),
        InputPort("query", Query, required=False,
                  description="The question (else the answer's); its key terms are checked"),
    )
    outputs = (
        OutputPort("grounded", Answer, "The answer, when every claim is in the evidence"),
        OutputPort("ungrounded", Answer, "The answer with its claims, when one is not"),
        OutputPort("absent", Answer, "The answer, when a key term of the question is in no "
                                     "evidence block"),
    )

    def fingerprint(self, params: GroundingParams, inputs: dict[str, Any],
                    run_inputs: dict[str, Any]) -> str | None:
        aliases = (resolve_path(params.aliases_file).read_text(encoding="utf-8")
                   if params.aliases_file else None)
        if aliases is None:
            return None  # the code of claims and fact_match is in the cache key
        return stable_hash(aliases)

    def run(self, ctx: NodeContext, params: GroundingParams, answer: Answer,
            evidence: list[ScoredChunk] | None = None,
            query: Query | None = None) -> dict[str, Any]:
        attempt = ctx.iteration + 1
        question = (query.original or query.text) if query is not None else answer.query
        if answer.fallback:
            ctx.note(attempt=attempt, route="grounded", reason="fallback answer: no claims")
            return {"grounded": answer}
        items = evidence if evidence is not None else answer.evidence
        entries = (dictionary_entities(resolve_path(params.aliases_file))
                   if params.aliases_file else [])  # the file read once a run
        aliases = alias_groups(entries)
        reading = EvidenceReading(question, items, aliases)  # the evidence read once
        raw_blocks = [item.chunk.text for item in items]
        blocks = [Block.of(text) for text in raw_blocks]
        cited = cited_blocks(answer, items)
        claims = [c for c in extract_claims(answer.text) if c.kind in params.kinds]
        claims = locate(claims, blocks, cited, question, aliases)
        derived = {n for n, item in enumerate(items, start=1) if item.chunk.metadata.get("derived")}
        def recited(text: str) -> tuple[Answer, set[int], list[Claim]]:
            """The answer with its citations rewritten, what it cites, its claims again."""
            changed = answer.model_copy(update={
                "text": text, "citations": extract_citations(text, items)})
            now = cited_blocks(changed, items)
            return changed, now, locate(extract_claims_of(text, params.kinds), blocks, now,
                                        question, aliases)

        if (params.fix_citations and not cited and not is_refusal(answer)
                and any(not c.valid for c in answer.citations)):
            fixed, renumbered = renumber_invalid(answer.text, claims, blocks, aliases,
                                                 derived, question or "")
            if renumbered:
                ctx.note(citations_renumbered=renumbered)
                answer, cited, claims = recited(fixed)
        if params.fix_citations and not cited and claims and not is_refusal(answer):
            fixed, added = cite_uncited(answer.text, claims, blocks, aliases, derived)
            if added:
                ctx.note(citations_added=added)
                answer, cited, claims = recited(fixed)
        if params.fix_citations and (any(c.verdict == "evidence" for c in claims)
                                     or cited and cited <= derived):
            fixed, moves = repoint_citations(answer.text, claims, blocks, aliases, derived)
            if moves:
                ctx.note(citations_moved=moves)
                answer, cited, claims = recited(fixed)
        refused = is_refusal(answer)
        mismatches = (misaligned(claims, reading, answer.text)
                      if params.alignment and question and not refused else [])
        if params.alignment and params.event_check and question and not refused:
            taken = {m.claim.start for m in mismatches}
            mismatches += [m for m in opposite_events(claims, reading)
                           if m.claim.start not in taken]
        if mismatches or not params.alignment or params.term_alignment == "off" or refused:
            strays = []
        else:
            strays = misaligned_terms(
                answer_terms(answer.text, question, params.term_alignment), reading)
        mismatches = [*mismatches, *strays]
        claims = _mark_mismatches([*claims, *(m.claim for m in strays)], mismatches)
        if params.scope == "evidence":
            missing = [c for c in claims if c.verdict in ("missing", "mismatch")]
        else:
            missing = [c for c in claims if c.verdict in ("missing", "evidence", "mismatch")]
        uncited = (params.require_citation and not refused and bool(items)
                   and not any(c.valid for c in answer.citations))
        stop_words = [*params.stop_words, *type_words(entries)]
        # a document's file name and headings say what its text is about ("bcrypt.md")
        named = blocks + [Block.of(" ".join(sorted(words))) for words in reading.document_words]
        absent = (absent_terms(question, named, raw_blocks, aliases, stop_words)
                  if params.absent_terms != "off" and question else [])
        blocking = absent if params.absent_terms == "all" else [
            t for t in absent if is_identifier(t)]
        asking = (params.absent_terms == "ask" and attempt == 1 and not refused
                  and bool(absent) and not blocking)
        restated = (restated_terms(restatable(absent, question, params.restated_words),
                                   answer.text, question,
                                   lambda t: term_present(t, named, aliases))
                    if params.restated_terms and not refused and not asking else [])
        entities = typed_entities(entries) if params.subject_check else []
        swapped = (swapped_subjects(question, answer.text, entities, stop_words)
                   if entities and question and not refused else [])
        blocking = list(dict.fromkeys([*blocking, *restated]))
        language = language_of(question) if question else ""
        wrong_language = (params.check_language and attempt == 1 and bool(question)
                          and not refused and language_of(answer.text) != language)
        checked = answer.model_copy(update={"claims": claims, "absent_terms": absent,
                                            "evidence": items, "query": question})
        echoed = bool(question) and not refused and repeats_question(question, answer.text)
        empty = not refused and says_nothing(answer.text)
        unasked = (missing_asked_value(question, answer.text)
                   if params.asked_value and question and not refused else "")
        if (blocking or swapped) and not refused:
            port = "absent"
        elif (missing and not refused or wrong_language or asking or echoed or unasked
              or uncited or empty):
            port = "ungrounded"
        else:
            port = "grounded"
        reason = (describe_mismatches(mismatches)
                  if mismatches and port == "ungrounded"
                  else NO_CITATION if uncited and port == "ungrounded" and not missing
                  else "the answer repeats the question" if echoed and port == "ungrounded"
                  else EMPTY if empty and port == "ungrounded"
                  else f"the question asks for {unasked}; the answer states none"
                  if unasked and port == "ungrounded" and not missing
                  else narrate(claims, missing, absent if asking and not missing else
                               blocking if port == "absent" else [], refused,
                               language if wrong_language else "", params.scope, swapped))
        if port != "grounded":
            checked = checked.model_copy(update={"check_reason": reason})
        details = dict(attempt=attempt, route=port, verdict=port, reason=reason,
                       claims=[_claim_row(c) for c in claims], absent_terms=absent,
                       ungrounded=[c.text for c in missing], language=language,
                       restated=restated, swapped=[list(pair) for pair in swapped],
                       mismatches=[m.describe() for m in mismatches])
        only_claims = (port == "ungrounded" and bool(missing) and not refused
                       and not (wrong_language or asking or echoed or unasked or uncited
                                or empty))
        kept, cut = (unbacked_sentences(answer.text, missing)
                     if params.cut_unbacked and only_claims else ("", []))
        if cut:
            before, warned = dict(ctx.details), len(ctx.warnings)
            again = self.run(ctx, params.model_copy(update={"cut_unbacked": False}),
                             with_text(answer, kept, items), evidence=items, query=query)
            if "grounded" in again:  # the shorter answer's check noted and warned itself
                ctx.note(cut=cut, cut_reason=reason)
                return again
            ctx.details.clear()  # the cut answer's check is not this answer's
            ctx.details.update(before)
            del ctx.warnings[warned:]
        if refused and missing and not answer.fallback:
            # a refusal is not checked, so what its other sentences state must be backed
            kept, cut = declined_sentences(checked.text, missing)
            if cut:
                checked = with_text(checked, kept, items)
                details.update(cut=cut, cut_reason="the answer declines to answer, and its "
                               "other sentences state what no evidence backs")
        found_elsewhere = [c.text for c in claims if c.verdict == "evidence"]
        if found_elsewhere and params.scope == "evidence":
            ctx.warn(f"the answer says {', '.join(found_elsewhere)}, which only evidence it "
                     "does not cite states (check the citations)")
        ctx.note(**details)
        return {port: checked}


def _mark_mismatches(claims: list[Claim], mismatches: list[Mismatch]) -> list[Claim]:
    """``claims`` with each misaligned one's verdict set to ``mismatch`` (its block kept) and
    the question's subject it is not stated beside in ``about``."""
    by_start = {m.claim.start: m for m in mismatches}
    return [c.model_copy(update={"verdict": "mismatch", "block": by_start[c.start].block,
                                 "about": by_start[c.start].asked})
            if c.start in by_start else c for c in claims]


def restatable(absent: list[str], question: str, words: bool) -> list[str]:
    """The absent terms an answer may not restate: phrases, identifiers and Chinese words,
    and for an absent English word the question's "<noun> of <noun>" phrase holding it (a
    role such as "head of purchasing"); every absent word with ``words``."""
    if words:
        return absent
    plain = {normalise(t) for t in absent if is_plain_word(t)}
    phrases = [p for p in compound_terms(question) if set(p.split(" of ")) & plain]
    return [t for t in absent if not is_plain_word(t)] + phrases


def extract_claims_of(text: str, kinds: list[str]) -> list[Claim]:
    return [c for c in extract_claims(text) if c.kind in kinds]


def _claim_row(claim: Claim) -> dict[str, Any]:
    where = {"cited": f"found in block [{claim.block}]",
             "evidence": f"found elsewhere in the evidence, block [{claim.block}]",
             "mismatch": f"block [{claim.block}] states it about something else, "
                         f"not {claim.about}",
             "question": "only in the question", "missing": "not found"}[claim.verdict]
    return {"claim": claim.text, "kind": claim.kind, "verdict": claim.verdict,
            "block": claim.block, "where": where}


def narrate(claims: list[Claim], missing: list[Claim], absent: list[str], refused: bool,
            wrong_language: str, scope: str,
            swapped: list[tuple[str, str]] | None = None) -> str:
    """The decision in plain words ("the answer says 15,000 psi; no document says that")."""
    if swapped and not absent:
        asked, answered = swapped[0]
        return f"the question asks about {asked}; the answer speaks of {answered}"
    if absent:
        terms = ", ".join(f"“{t}”" for t in absent)
        return f"the question asks about {terms}; no document mentions it"
    if missing:
        said = ", ".join(dict.fromkeys(c.text for c in missing))
        if all(c.verdict == "evidence" for c in missing):
            return f"the answer says {said}; only blocks it does not cite say that"
        return f"the answer says {said}; no document says that"
    if wrong_language:
        name = {"zh": "Chinese", "en": "English"}.get(wrong_language, wrong_language)
        return f"the question is in {name}, the answer is not"
    if refused:
        return "the answer declines to answer: nothing to check"
    if not claims:
        return "the answer states no number, date, identifier or name to check"
    where = "the blocks it cites" if scope == "cited" else "the evidence"
    return f"all {len(claims)} claims of the answer are written in {where}"


REFUSE_EN = "The documents do not mention {missing}."
REFUSE_ZH = "文档中没有提到{missing}。"
REFUSE_PLAIN_EN = "The documents do not answer this question."
REFUSE_PLAIN_ZH = "文档中没有这个问题的答案。"
MAX_NAMED = 3  # what a refusal names at most; the rest are counted


def _named(answer: Answer, zh: bool = False) -> list[str]:
    """What the refusal names: absent identifiers, else the claims no block states about the
    question's subject ("Baltic Bearing Supply in connection with HS-40"), else the claims
    no block states, else the absent words of the question (quoted), else the claims only
    uncited blocks state (the documents do say those, so they come last)."""
    identifiers = [t for t in answer.absent_terms if is_identifier(t)]
    if identifiers:
        return identifiers
    mismatched = sorted((c for c in answer.claims if c.verdict == "mismatch"),
                        key=lambda c: c.kind == "term")  # values and names before words
    if mismatched:
        return list(dict.fromkeys(
            f"{c.about}与{c.text}的关系" if zh else f"{c.text} in connection with {c.about}"
            for c in mismatched))
    missing = list(dict.fromkeys(c.text for c in answer.claims if c.verdict == "missing"))
    # absent words of the question, when they are why the answer was sent here (not, say,
    # a number the answer does not give)
    absent = [t for t in answer.absent_terms
              if not answer.check_reason or t in answer.check_reason]
    if missing or absent:
        return missing or [f"“{t}”" for t in absent]
    # claims only uncited blocks state, when the check sent the answer back for them (not
    # for, say, a date it does not give: those claims the documents do state)
    return [c for c in ungrounded_claims(answer)
            if not answer.check_reason or c in answer.check_reason]


def _listed(named: list[str], zh: bool) -> str:
    """``named`` joined for a refusal: the first ``MAX_NAMED`` and how many more (a refusal
    listing ten pairings of an answer's words reads as noise, not as a reason)."""
    shown, more = named[:MAX_NAMED], len(named) - MAX_NAMED
    if zh:
        return "、".join(shown) + (f"等{len(named)}项" if more > 0 else "")
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def ungrounded_claims(answer: Answer) -> list[str]:
    """The claims no evidence block states, else (scope 'cited') those only uncited blocks
    state."""
    for verdict in ("missing", "evidence"):
        named = [c.text for c in answer.claims if c.verdict == verdict]
        if named:
            return list(dict.fromkeys(named))
    return []


class RefuseParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_en: str = Field(REFUSE_EN, description="English refusal; {missing}: what no "
                                                   "document says")
    message_zh: str = Field(REFUSE_ZH, description="Chinese refusal (a Chinese question)")
    plain_en: str = Field(REFUSE_PLAIN_EN, description="English refusal naming nothing")
    plain_zh: str = Field(REFUSE_PLAIN_ZH, description="Chinese refusal naming nothing")


class RefuseAnswer(NodeType):
    type_id = "answer.refuse"
    title = "Refusal"
    category = "Checks"
    description = (
        "Turns an ungrounded answer into a refusal (fallback=True) in the question's "
        "language that says what no document states: the absent key terms, else the "
        "ungrounded claims."
    )
    Params = RefuseParams
    inputs = (InputPort("answer", Answer, multiple=True,
                        description="The ungrounded answer (the first that arrives)"),)
    outputs = (OutputPort("answer", Answer, "The refusal"),)

    def run(self, ctx: NodeContext, params: RefuseParams, answer: list[Answer]) -> dict[str, Any]:
        source = answer[0]
        zh = language_of(source.query) == "zh"
        named = _named(source, zh)
        if named:
            joined = _listed(list(dict.fromkeys(named)), zh)
            text = (params.message_zh if zh else params.message_en).replace("{missing}", joined)
        else:
            text = params.plain_zh if zh else params.plain_en
        ctx.note(named=named, language="zh" if zh else "en", refused_answer=source.text)
        return {"answer": Answer(text=text, fallback=True, query=source.query,
                                 evidence=source.evidence, claims=source.claims,
                                 absent_terms=source.absent_terms, model=source.model)}
