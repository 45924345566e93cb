"""Generating an evaluation set from a corpus: the graph's own chunks, verified questions,
rejections by reason, bad input named, nothing written unless complete. A canned chat
backend (the test fixture 'test-canned-questions') answers from a table of facts."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from modrag_nodes.generation.fact_match import fact_found
from modrag_nodes.llm.client import ChatResult, LLMSpec, register_backend, unregister_backend
from modrag_nodes.text.scripts import language_of
from modrag_nodes.text.words import words
from modrag_studio import cli
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import load_evalset
from modrag_studio.evaluation.generation import GenerationConfig, GenerationError, generate_evalset
from modrag_studio.evaluation.generation import report as report_module
from modrag_studio.evaluation.generation.checks import round_trip
from modrag_studio.evaluation.generation.checks.round_trip import (
    agrees_with,
    answers_it,
    check_elsewhere,
    passages_for,
    read_answer,
    wordy,
)
from modrag_studio.evaluation.generation.checks.verify import (
    WORD_CHECK_VOCABULARY,
    check_answerable,
    check_back_translation,
    check_claim,
    check_unanswerable,
    stated_in,
)
from modrag_studio.evaluation.generation.corpus import find_chunk_source, graph_chunks
from modrag_studio.evaluation.generation.reading.prompts import (
    ABSENT_DETAILS,
    parse_claim,
    parse_reply,
    parse_synonyms,
    parse_translation,
    substitute,
)
from modrag_studio.evaluation.generation.reading.subjects import (
    KIND_DETAILS,
    absent_details,
    build_kind_prompt,
    fitting_details,
    named_subjects,
    parse_kind,
    template_question,
    thing_subjects,
)
from modrag_studio.evaluation.generation.reading.terms import key_terms, word_stems
from modrag_studio.evaluation.generation.sampling import stratified_order
from tests.tiny_rag import tiny_rag_graph

BACKEND = "test-canned-questions"
DOCS = {
    "pumps.md": "The lubrication pump LP-07 is serviced every 500 operating hours. Its inlet "
                "filter is cleaned at each service and the grease reservoir is refilled.",
    "press.md": "The hydraulic press PR-300 stamps steel brackets for rail equipment. Its seal "
                "kit HS-40 is replaced every 2 years by the supplier Voss Hydraulik.",
    "people.md": "Ingrid Holm leads the maintenance team at the Eastbank plant. She mentors "
                 "Tomas Reyes, who looks after the lubrication pump LP-07 since 2021.",
    "hall.md": "The Eastbank machining hall holds two five-axis machining centres, CNC-A01 "
               "and CNC-A02, which report their spindle temperature to the Telemetry Hub.",
    "zh_air.md": "空压机 AC-05 位于东岸工厂，每3个月由维修班保养一次。保养时更换空气滤芯，"
                 "并检查排水阀是否堵塞，记录写入维修日志。",
}
# chunk keyword -> (question, answer) the canned model writes for a single question
SINGLE = {
    "LP-07 is serviced": ("How often is the lubrication pump LP-07 serviced?",
                          "every 500 operating hours"),
    "PR-300": ("Which company replaces the seal kit HS-40 of the hydraulic press?",
               "Voss Hydraulik"),
    "Ingrid Holm": ("Who leads the maintenance team at the Eastbank plant?", "Ingrid Holm"),
    "CNC-A01": ("Where do the Eastbank machining centres report their spindle temperature?",
                "Telemetry Hub"),
    "AC-05": ("空压机 AC-05 多久保养一次？", "每3个月"),
}
# chunk keyword -> the claim the canned model states about it
CLAIMS = {"LP-07 is serviced": "The greasing unit of the line gets a regular check after a "
                               "fixed span of running time.",
          "PR-300": "A stamping machine for rail parts has its gasket set swapped on a fixed "
                    "schedule by an outside firm.",
          "Ingrid Holm": "The head of the upkeep crew also coaches a colleague who runs a pump."}
# a word -> the other word the canned model gives for it (paraphrases)
SYNONYMS = {"lubrication": "greasing", "pump": "unit", "serviced": "maintained",
            "replaces": "swaps", "seal": "gasket", "kit": "set", "hydraulic": "fluid-powered",
            "press": "stamping machine"}


class CannedBackend:
    """Test fixture: answers generation prompts from the tables above (``override`` may
    replace the reply to a prompt); counts its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.override = None

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        user = messages[-1].content
        self.calls.append(user)
        text = self.override(user) if self.override else None
        if text is None:
            text = self.reply(user)
        return ChatResult(text=text, model=spec.model or "canned")

    def reply(self, user: str) -> str:
        if user.startswith("Reply with: OK"):
            return "OK"
        if user.startswith(("Passages:", "段落：")):
            if "\nStatement: " in user or "\n陈述：" in user:
                return self.passage_of(user)
            return self.answer(user)
        if "CLAIM:" in user or "主张：" in user:
            for key, claim in CLAIMS.items():
                if key in user:
                    return f"CLAIM: {claim}"
            return "CLAIM: It is about machines."
        if "what kind of thing is" in user or "是哪一类东西" in user:
            named = re.search(r'what kind of thing is "(.+?)"|“(.+?)”是哪一类', user)
            thing = next(g for g in named.groups() if g)
            return "person" if " " in thing or not re.search(r"\d", thing) else "Machine."
        if "does NOT give" in user or "无法回答" in user:
            named = re.search(r"The text names (.+?)\. Write one question asking for the (.+?) "
                              r"of |这段文本提到了(.+?)。写一个问.+?的(.+?)的问题", user)
            thing, detail = [g for g in named.groups() if g]
            if "这段文本提到了" in user:
                return f"问题：{thing} 的{detail}是多少？\n答案：无"
            return f"QUESTION: What is the {detail} of {thing}?\nANSWER: none"
        if "For each word below" in user or "下面每个词" in user:
            words = [w.rstrip(":：") for w in user.split("\n")[3:-1]]
            return "\n".join(f"{w}: {SYNONYMS.get(w, w)}" for w in words)
        for key, (question, answer) in SINGLE.items():
            if key in user:
                return f"**QUESTION:** {question}\n**ANSWER:** {answer}."
        return "I cannot think of a question."


    @staticmethod
    def passage_of(user: str) -> str:
        """The claim round trip: the number of the passage that holds the claim's key."""
        claim = next(ln for ln in user.splitlines() if ln.startswith(("Statement:", "陈述：")))
        key = next(k for k, c in CLAIMS.items() if c in claim)
        found = [ln[1] for ln in user.splitlines() if ln.startswith("[") and key in ln]
        return found[0] if found else "1"

    @staticmethod
    def answer(user: str) -> str:
        """The round trip: the answers of the table's questions the asked question holds
        (paraphrases read back through the synonyms), else NONE."""
        asked = next(ln for ln in user.splitlines() if ln.startswith(("Question:", "问题：")))
        for word, other in SYNONYMS.items():
            asked = re.sub(rf"\b{re.escape(other)}\b", word, asked)
        found = [a for q, a in SINGLE.values() if q.rstrip("?？")[1:].lower() in asked.lower()]
        return "; ".join(found) or "NONE"


@pytest.fixture
def canned():
    backend = CannedBackend()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    data = tiny_rag_graph(tmp_path, DOCS, backend=BACKEND)
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _chunks(graph: Path):
    doc = GraphDocument.model_validate_json(graph.read_text())
    registry = default_registry()
    return graph_chunks(doc, Executor(registry), {}, find_chunk_source(doc, registry))


def _generate(args: list[str]) -> int:
    return cli.main(["evalset", "generate", *args, "--no-dense", "--quiet",
                     "--model", f"{BACKEND}:canned-1"])


def test_cli_writes_verified_rows_with_evidence_and_report(graph, canned, tmp_path):
    out, report = tmp_path / "set.jsonl", tmp_path / "report.json"
    code = _generate([str(graph), "--n", "6", "--out", str(out), "--report", str(report),
                      "--types", "single,unanswerable", "--seed", "3",
                      "--unanswerable-share", "0.5"])
    assert code == 0
    rows = load_evalset(out).questions
    chunks = {c.chunk_id: c for c in _chunks(graph)}
    answerable = [r for r in rows if r.answerable]
    assert len(answerable) == 3 and len(rows) == 6
    for row in answerable:
        ids = row.expected_evidence.to_dict()["chunk_ids"]
        assert all(i in chunks for i in ids)  # the graph's own chunk ids
        assert row.expected_evidence.to_dict()["doc_ids"] == [chunks[ids[0]].doc_id]
        assert all(fact_found(f[0], chunks[ids[0]].text) for f in row.expected_facts)
        assert not any(fact_found(f[0], row.question) for f in row.expected_facts)
        assert {"type:single", "model:test-canned-questions:canned-1", "seed:3"} <= set(row.tags)
    assert {r.language for r in rows} == {"en", "zh"}
    absent = [r for r in rows if not r.answerable]
    assert len(absent) == 3
    assert all(r.expected_facts == [] and "type:unanswerable" in r.tags for r in absent)
    data = json.loads(report.read_text())
    assert data["kept"] == 6
    assert data["generated"] == data["kept"] + sum(data["rejected"].values())
    assert data["by_language"]["zh"]["kept"] >= 1
    # each asks for a detail the corpus never mentions, drawn per call
    details = {d for pair in ABSENT_DETAILS for d in pair}
    assert all(any(d in r.question for d in details) for r in absent)


def test_claims_are_statements_of_a_chunk_checked_by_the_passage_the_model_picks(graph,
                                                                                 canned):
    result = _api(graph, GenerationConfig(n=5, llm=LLMSpec(backend=BACKEND), types=["claim"],
                                          dense=False, max_attempts=20))
    rows = result.questions
    assert {r.question for r in rows} == set(CLAIMS.values())
    chunks = {c.chunk_id: c for c in _chunks(graph)}
    for row in rows:
        assert row.answerable and row.expected_facts == [] and "type:claim" in row.tags
        [cid] = row.expected_evidence.to_dict()["chunk_ids"]
        key = next(k for k, c in CLAIMS.items() if c == row.question)
        assert key in chunks[cid].text
    # "It is about machines." is too short a claim
    assert result.report.by_type["claim"].rejected == {"not_a_claim": 2}
    # a model picking another passage rejects the claim; a claim copying its chunk too
    canned.override = lambda user: "[9]" if "\nStatement: " in user else None
    wrong = _api(graph, GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), types=["claim"],
                                         dense=False, max_attempts=6))
    assert wrong.questions == [] and "round_trip_mismatch" in wrong.report.total.rejected
    copied = check_claim("The lubrication pump LP-07 is serviced every 500 operating hours "
                         "and more.", Chunk(chunk_id="p#0", doc_id="p", text=DOCS["pumps.md"]))
    assert copied.reason == "copies_text"
    assert parse_claim("Sure!\n**Claim:** Seals wear out.") == "Seals wear out."


def test_rejections_are_recorded_and_nothing_is_written(graph, canned, tmp_path):
    replies = iter([
        "QUESTION: How often is LP-07 serviced?\nANSWER: every 900 hours",  # not in source
        "QUESTION: Who leads the team, Ingrid Holm?\nANSWER: Ingrid Holm",  # answer in question
        "I am not sure what to write.",  # unreadable
        "QUESTION: What does the text say about the press?\nANSWER: steel brackets",
        "QUESTION: Which brackets?\nANSWER: " + "steel " * 15,  # too long
    ])
    canned.override = lambda user: None if user.startswith("Reply") else next(replies, "?")
    out, report = tmp_path / "set.jsonl", tmp_path / "r.json"
    code = _generate([str(graph), "--n", "5", "--types", "single", "--out", str(out),
                      "--report", str(report), "--max-calls", "5"])
    assert code == 1
    assert not out.exists() and not report.exists()


def test_rejection_reasons_in_the_report(graph, canned):
    replies = iter([
        "QUESTION: How often is LP-07 serviced?\nANSWER: every 900 hours",
        "QUESTION: Who leads the team, Ingrid Holm?\nANSWER: Ingrid Holm",
        "I am not sure what to write.",
        "QUESTION: What does the text say about the press?\nANSWER: steel brackets",
        "QUESTION: Which brackets are these?\nANSWER: " + "steel " * 15,
    ])
    canned.override = lambda user: None if user.startswith("Reply") else next(replies)
    result = _api(graph, GenerationConfig(n=5, llm=LLMSpec(backend=BACKEND), types=["single"],
                                          value_facts=False, dense=False, max_attempts=5))
    assert result.questions == []
    assert dict(result.report.total.rejected) == {
        "answer_not_in_source": 1, "answer_in_question": 1, "unreadable_reply": 1,
        "refers_to_text": 1, "answer_too_long": 1}
    assert "fewer questions than asked" in result.report.text()
    # the report keeps each rejected candidate's texts, so a rejection can be read
    data = result.report.to_dict()
    kept = {r["reason"]: r for r in data["rejected_candidates"]}
    assert set(kept) == set(data["rejected"]) and data["rejected_candidates_left_out"] == 0
    assert kept["answer_not_in_source"]["question"] == "How often is LP-07 serviced?"
    assert kept["answer_not_in_source"]["expected"] == ["every 900 hours"]
    assert kept["refers_to_text"]["type"] == "single" and kept["refers_to_text"]["chunk_ids"]
    assert kept["unreadable_reply"]["reply"] == "I am not sure what to write."


def test_the_report_keeps_a_bounded_number_of_rejected_texts(monkeypatch):
    monkeypatch.setattr(report_module, "KEEP_REJECTED", 2)
    report = report_module.QualityReport(requested=3, model="m", seed=0)
    for i in range(4):
        report.add("single", "en", "garbled", question=f"q{i}?", expected=[f"v{i}"])
    report.add("single", "en", None, question="kept?")
    data = report.to_dict()
    assert [r["question"] for r in data["rejected_candidates"]] == ["q0?", "q1?"]
    assert data["rejected_candidates_left_out"] == 2 and data["rejected"] == {"garbled": 4}


def _api(graph: Path, config: GenerationConfig, **kwargs):
    doc = GraphDocument.model_validate_json(graph.read_text())
    return generate_evalset(doc, {}, config, executor=Executor(default_registry()), **kwargs)


def test_multi_question_links_two_chunks_and_needs_both(graph, canned):
    result = _api(graph, GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), types=["multi"],
                                          dense=False))
    [row] = result.questions
    evidence = row.expected_evidence.to_dict()
    assert len(evidence["chunk_ids"]) == 2 and len(evidence["doc_ids"]) == 2
    assert set(evidence["doc_ids"]) == {"pumps.md", "people.md"}  # linked by LP-07
    assert {f[0] for f in row.expected_facts} == {"every 500 operating hours", "Ingrid Holm"}
    # one question per chunk, joined; two model calls for one candidate, and the round trip
    assert row.question in (
        "How often is the lubrication pump LP-07 serviced, and who leads the maintenance "
        "team at the Eastbank plant?",
        "Who leads the maintenance team at the Eastbank plant, and how often is the "
        "lubrication pump LP-07 serviced?")
    assert result.report.calls == 3 and result.report.total.generated == 1
    assert sum('question about lp-07' in c for c in canned.calls) == 2
    assert sum(c.startswith("Passages:") for c in canned.calls) == 1


def test_paraphrase_rewords_a_verified_question_and_copies_are_rejected(graph, canned):
    result = _api(graph, GenerationConfig(value_facts=False, n=2, llm=LLMSpec(backend=BACKEND),
                                          types=["paraphrase"], dense=False, max_attempts=12))
    kept = {r.question: r for r in result.questions}
    assert set(kept) == {"How often is the greasing unit LP-07 maintained?",
                         "Which company swaps the gasket set HS-40 of the fluid-powered "
                         "stamping machine?"}
    row = kept["How often is the greasing unit LP-07 maintained?"]
    assert "type:paraphrase" in row.tags and row.expected_facts == [["every 500 operating hours"]]
    assert row.expected_evidence.to_dict()["chunk_ids"] == [
        c.chunk_id for c in _chunks(graph) if "LP-07 is serviced" in c.text]
    # the second call asks for the key words the chunk holds, not for the pump's code
    asked = next(c for c in canned.calls if c.startswith("Question: How often"))
    assert "\nlubrication:\npump:\nserviced:\n" in asked and "LP-07:" not in asked
    assert canned.calls.count(asked) == 1
    # other words for too few of them leave most key words in the chunk: rejected
    canned.override = lambda user: ("serviced: maintained" if user.startswith(
        "Question: How often") else None)
    copied = _api(graph, GenerationConfig(value_facts=False, n=2, llm=LLMSpec(backend=BACKEND),
                                          types=["paraphrase"], dense=False, max_attempts=12))
    questions = [r.question for r in copied.questions]
    assert "How often is the greasing unit LP-07 maintained?" not in questions
    assert "How often is the lubrication pump LP-07 maintained?" not in questions
    assert copied.report.total.rejected["not_a_paraphrase"] >= 1


def test_a_paraphrase_putting_an_adjective_for_a_noun_is_garbled(graph, canned):
    canned.override = lambda user: ("lubrication: greasing\npump: unit\nserviced: serviceable"
                                     if user.startswith("Question: How often") else None)
    result = _api(graph, GenerationConfig(value_facts=False, n=2, llm=LLMSpec(backend=BACKEND),
                                          types=["paraphrase"], dense=False, max_attempts=12))
    garbled = [c for c in result.candidates if c.verdict.reason == "garbled"]
    assert [c.question for c in garbled] == ["How often is the greasing unit LP-07 "
                                             "serviceable?"]
    assert "serviceable" in garbled[0].verdict.detail


def test_synonym_replies_are_read_and_substituted():
    reply = ("Here are the words:\n1. **mortality**: death\npatients: individuals / people\n"
             "study: study\nkinase -> enzyme")
    found = parse_synonyms(reply, ["mortality", "patients", "study", "kinase"])
    assert found == {"mortality": "death", "patients": "individuals", "kinase": "enzyme"}
    assert substitute("Which patients of the kinase-test had a higher Mortality?", found) == (
        "Which individuals of the kinase-test had a higher death?")
    assert substitute("空压机 AC-05 多久保养一次？", {"保养一次": "维护一回"}) == (
        "空压机 AC-05 多久维护一回？")
    # a definition is no other word ("hosts: database server administrator")
    assert parse_synonyms("hosts: database server administrator\nreplica: mirror copy",
                          ["hosts", "replica"]) == {"replica": "mirror copy"}


def test_a_paraphrase_repeating_one_word_is_garbled(graph, canned):
    canned.override = lambda user: ("lubrication: pump oil\nserviced: pump checked"
                                    if user.startswith(("Question:", "问题：")) else None)
    result = _api(graph, GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), value_facts=False,
                                          types=["paraphrase"], dense=False, max_attempts=20))
    assert result.questions == []
    [cand] = [c for c in result.candidates if "LP-07" in c.question]
    assert cand.question == "How often is the pump oil pump LP-07 pump checked?"
    assert cand.verdict.reason == "garbled" and "pump" in cand.verdict.detail


def test_reword_paraphrases_the_questions_of_a_set_and_keeps_their_evidence(graph, canned,
                                                                           tmp_path):
    base, out = tmp_path / "base.jsonl", tmp_path / "reworded.jsonl"
    assert _generate([str(graph), "--n", "5", "--types", "single", "--out", str(base)]) == 0
    originals = {r.id: r for r in load_evalset(base).questions}
    canned.calls.clear()
    assert _generate([str(graph), "--reword", str(base), "--n", "10", "--out", str(out)]) == 0
    rows = load_evalset(out).questions
    assert rows and not any(c.startswith(("Text:", "文本：")) for c in canned.calls)  # no new
    for row in rows:
        original = originals[row.id.removesuffix("-p")]
        assert f"reworded:{original.id}" in row.tags and "type:paraphrase" in row.tags
        assert row.question != original.question
        assert row.expected_facts == original.expected_facts
        assert row.expected_evidence.to_dict()["chunk_ids"] == (
            original.expected_evidence.to_dict()["chunk_ids"])
    lp07 = next(r for r in rows if "LP-07" in r.question)
    assert lp07.question == "How often is the greasing unit LP-07 maintained?"
    missing = tmp_path / "nope.jsonl"
    assert _generate([str(graph), "--reword", str(missing), "--out", str(tmp_path / "x.jsonl")]
                     ) != 0
    assert not (tmp_path / "x.jsonl").exists()


# chunk keyword -> (the claim in Chinese, and back in English) the canned model translates
BACK = {"LP-07 is serviced": ("生产线的润滑装置在固定的运行时间后定期检查。",
                              "The production line's lubricating device is checked regularly "
                              "after a set running time."),
        "PR-300": ("一家外部公司按固定计划更换铁路零件冲压机的垫片组。",
                   "An outside company changes the gasket set of the rail part press on a "
                   "fixed plan."),
        "Ingrid Holm": ("维修团队的负责人也指导一位操作泵的同事。",
                        "维修团队的负责人也指导一位操作泵的同事。")}  # comes back untranslated


def _translating(user: str) -> str | None:
    """Test fixture: the canned model translating the claims of BACK there and back, and
    naming the passage a translated claim is about."""
    text = user.split("\n", 1)[-1]
    if user.startswith("Translate into Chinese:"):
        key = next(k for k, c in CLAIMS.items() if c == text)
        return f"译文：{BACK[key][0]}"
    if user.startswith("Translate into English:"):
        return next(back for zh, back in BACK.values() if zh == text)
    if "\nStatement: " in user:
        claim = next(ln for ln in user.splitlines() if ln.startswith("Statement:"))
        key = next(k for k, (_, back) in BACK.items() if back in claim)
        return next(ln[1] for ln in user.splitlines() if ln.startswith("[") and key in ln)
    return None


def test_reword_translates_claims_there_and_back(graph, canned, tmp_path):
    base = tmp_path / "claims.jsonl"
    assert _generate([str(graph), "--n", "3", "--types", "claim", "--out", str(base)]) == 0
    originals = {r.id: r for r in load_evalset(base).questions}
    assert len(originals) == 3
    canned.override = _translating
    result = _api(graph, GenerationConfig(n=10, llm=LLMSpec(backend=BACKEND), dense=False),
                  reword=list(originals.values()))
    rows = {r.question: r for r in result.questions}
    assert set(rows) == {BACK["LP-07 is serviced"][1], BACK["PR-300"][1]}
    for row in rows.values():
        original = originals[row.id.removesuffix("-p")]
        assert "type:claim" in row.tags and f"reworded:{original.id}" in row.tags
        assert row.expected_facts == [] and row.expected_evidence.to_dict()["chunk_ids"] == (
            original.expected_evidence.to_dict()["chunk_ids"])
    # the third came back in Chinese: rejected, with its reason
    assert result.report.by_type["claim"].rejected == {"not_translated": 1}
    assert parse_translation("**Translation:** “Seals wear out.”\nNote: literal") == (
        "Seals wear out.")


def test_a_translation_that_drifted_from_its_claim_is_rejected(graph, canned, tmp_path):
    base = tmp_path / "claims.jsonl"
    assert _generate([str(graph), "--n", "3", "--types", "claim", "--out", str(base)]) == 0
    drifted = {BACK["LP-07 is serviced"][1]: "The production line's lubricating device is "
                                             "checked every 800 hours."}

    def drifting(user: str) -> str | None:
        reply = _translating(user)
        return drifted.get(reply, reply) if user.startswith("Translate into English:") \
            else reply

    canned.override = drifting
    result = _api(graph, GenerationConfig(n=10, llm=LLMSpec(backend=BACKEND), dense=False),
                  reword=load_evalset(base).questions)
    assert [r.question for r in result.questions] == [BACK["PR-300"][1]]
    assert result.report.by_type["claim"].rejected == {"drifted": 1, "not_translated": 1}
    assert any(c.verdict.detail.endswith("holds: 800") for c in result.candidates)


def test_back_translation_check_names_what_drifted():
    chunk = Chunk(chunk_id="c#0", doc_id="c", text="Patients with a BMI below 18.5 were "
                  "underweight (5%). Swaddling reduced crying in 40 infants.")
    vocab = set(words(chunk.text + " babies hugging system"))
    vocab |= {f"w{i}" for i in range(WORD_CHECK_VOCABULARY)}  # a corpus large enough
    stems = word_stems(vocab)
    claim = "Swaddling reduces crying in infants, and 5% of patients are underweight."

    def reason(back: str) -> tuple[str | None, str]:
        verdict = check_back_translation(claim, back, "en", chunk, vocab, stems)
        return verdict.reason, verdict.detail

    assert reason("Hugging babies reduces crying; 5% of patients are underweight.") == (
        None, "")  # other words the corpus knows: a fair rewording
    assert reason("Swaddling reduces crying in infants, 5% weigh under 50 kg.") == (
        "drifted", "a number neither the claim nor its chunk holds: 50")
    assert reason("Sidebrain hugging reduces crying; 5% of patients are underweight.")[1] == (
        "a word the corpus never uses: sidebrain")
    small = set(words(chunk.text))  # too few words to call one made up
    kept = check_back_translation(claim, "Sidebrain hugging reduces crying; 5% of patients "
                                  "are underweight.", "en", chunk, small, word_stems(small))
    assert kept.reason is None
    assert reason("Swaddling reduces crying in the吞噬 system of infants.") == (
        "not_translated", "left in the other language: 吞噬")
    assert reason("襁褓能减少婴儿哭闹，5%的患者体重过轻。")[0] == "not_translated"


def test_paraphrase_of_a_rejected_question_is_not_asked(graph, canned):
    """A single question that fails its checks is rejected before any rewrite call."""
    canned.override = lambda user: ("QUESTION: How often is LP-07 serviced, every 500 "
                                    "operating hours?\nANSWER: every 500 operating hours"
                                    if user.startswith(("Text:", "文本：")) else None)
    result = _api(graph, GenerationConfig(value_facts=False, n=1, llm=LLMSpec(backend=BACKEND),
                                          types=["paraphrase"], dense=False, max_attempts=5))
    assert result.questions == []
    rejected = result.report.total.rejected
    assert rejected["answer_in_question"] == 1  # the LP-07 chunk; the others lack the fact
    assert rejected["answer_not_in_source"] == result.report.total.generated - 1
    assert not any(c.startswith(("Question:", "问题：")) for c in canned.calls)


def _kinds_asked(calls: list[str]) -> list[str]:
    return [c for c in calls if "what kind of thing is" in c or "是哪一类东西" in c]


def test_unanswerable_must_name_something_absent_that_its_chunk_is_about():
    chunk = Chunk(chunk_id="p#0", doc_id="p", text=DOCS["pumps.md"])
    vocab = set(words(" ".join(DOCS.values())))
    assert check_unanswerable("How often is LP-07 serviced?", vocab, chunk).reason == (
        "not_absent")
    assert check_unanswerable("What is the warranty period of the canteen toaster?", vocab,
                              chunk).reason == "no_subject"
    assert check_unanswerable("Who insures LP-07 in this incident?", vocab,
                              chunk).reason == "refers_to_text"
    assert check_unanswerable("What is the warranty period of LP-07?", vocab,
                              chunk).reason is None


def test_unanswerable_questions_ask_of_a_named_thing_for_a_detail_of_its_kind(graph, canned):
    result = _api(graph, GenerationConfig(n=4, llm=LLMSpec(backend=BACKEND), seed=5,
                                          types=["unanswerable"], dense=False))
    assert len(result.questions) == 4
    # the question is written in code: one call per thing for its kind, none for the question
    kinds = _kinds_asked(canned.calls)
    things = {re.search(r'kind of thing is "(.+?)"|“(.+?)”是哪一类', c).group(
        1) or re.search(r"“(.+?)”是哪一类", c).group(1) for c in kinds}
    assert len(kinds) == len(things) <= len(result.candidates)
    assert not any("does NOT give" in c or "无法回答" in c for c in canned.calls)
    for cand in result.candidates:  # the question asks for a detail of its thing's kind
        lang = 0 if cand.language == "en" else 1
        fitting = [p[lang] for p in ABSENT_DETAILS if p[0] in KIND_DETAILS[parse_kind(
            cand.reply)]]
        assert any(cand.question == template_question(d, t, cand.language) for d in fitting
                   for t in named_subjects(cand.question, cand.language)), cand.question
    # what a chunk names: codes and names, not headings or a sentence's first word
    assert named_subjects("# Pump Room\nThe Inventory Service calls WH-DB-01. In 2021 "
                          "Ingrid Holm joined.", "en") == ["WH-DB-01", "Inventory Service",
                                                           "Ingrid Holm"]
    assert named_subjects("英格丽·霍尔姆是信息部的负责人。陈浩负责订单服务和 MQ-02。诺维尔精密制造"
                          "成立。", "zh") == ["MQ-02", "英格丽·霍尔姆", "陈浩"]
    assert parse_kind("Machine.") == "machine" and parse_kind("设备") == "machine"
    assert parse_kind("I am not sure") == "other"
    assert fitting_details("other", "en", absent_details(set())["en"]) == []
    drawable = {en for en, _ in ABSENT_DETAILS}
    assert all(set(details) <= drawable for details in KIND_DETAILS.values())
    assert drawable == {d for details in KIND_DETAILS.values() for d in details}
    # a thing the model cannot place gets no question
    canned.override = lambda user: "hmm" if "what kind of thing" in user else None
    nothing = _api(graph, GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), types=[
        "unanswerable"], dense=False, max_attempts=1, language="en"))
    assert nothing.report.total.rejected == {"no_fitting_detail": 1}


def test_unanswerable_things_are_named_things_and_their_details_fit_them():
    # a flag, a standard or a version is no thing with a price or a founder
    assert thing_subjects("The flag VERSION1 works with UTF-8 and OAuth2 on PR-300, said "
                          "Marco Gorelli.", "en", "regex") == ["regex", "PR-300",
                                                               "Marco Gorelli"]
    # a name said once, opening its sentence, may be a verb and a name
    assert thing_subjects("Drop Python 3.5 support in the next release.", "en") == []
    # software is asked about its history and trade, never a budget ("the budget of Flake8")
    assert "budget" not in KIND_DETAILS["software"]
    assert "budget" in KIND_DETAILS["organisation"]
    # the kind is asked of the sentences naming the thing, not the whole chunk
    text = ("The plant has a canteen. " * 30) + "The press PR-300 stamps brackets. " + (
        "The canteen opens at six. " * 30)
    user = build_kind_prompt("en", text, "PR-300")[1]
    assert "The press PR-300 stamps brackets." in user and "canteen" not in user
    # one question, no second one joined to it ("Who is Marco Gorelli and what is his
    # phone number?"), holding the words of its detail (the absence check needs them)
    for en, zh in ABSENT_DETAILS:
        for detail, lang in ((en, "en"), (zh, "zh")):
            question = template_question(detail, "PR-300", lang)
            assert "PR-300" in question and question.count("?") + question.count("？") == 1
            # (a count is asked with "how many", not "the number of")
            assert set(key_terms(detail)) - set(key_terms(question)) <= {"number"}, question


def test_unanswerable_questions_ask_for_a_detail_the_corpus_never_mentions(graph, canned):
    vocab = {"price", "unit", "number", "serviced", "pump", "价格", "保修"}
    details = absent_details(vocab)
    assert "price" not in [d for d, _ in details["en"]]  # "unit price" is in the corpus
    assert ("serial number", ["serial"]) in details["en"]  # "number" alone is no detail
    assert "价格" not in [d for d, _ in details["zh"]]
    assert ("保修期", ["修期"]) in details["zh"]
    assert absent_details({w for pair in ABSENT_DETAILS for w in words(" ".join(pair))})[
        "en"][0] == ("price", [])  # a corpus that mentions every detail: none is required
    result = _api(graph, GenerationConfig(n=3, llm=LLMSpec(backend=BACKEND), seed=2,
                                          types=["unanswerable"], dense=False,
                                          language="en"))
    corpus = set(words(" ".join(DOCS.values())))
    for row in result.questions:  # each asks for something no chunk mentions
        assert set(key_terms(row.question)) - corpus, row.question
    assert result.questions and all(c.verdict.detail.startswith("absent: ")
                                    for c in result.candidates if c.verdict.reason is None)


def test_round_trip_rejects_a_question_the_corpus_answers_otherwise(graph, canned):
    canned.override = lambda user: "Tomas Reyes" if user.startswith("Passages:") else None
    result = _api(graph, GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), types=["single"],
                                          value_facts=False, dense=False, max_attempts=4))
    assert result.questions == []  # two candidates, each a question and its round trip
    assert result.report.total.rejected == {"round_trip_mismatch": 2}
    cand = result.candidates[0]
    assert "Tomas Reyes" in cand.verdict.detail and "Tomas Reyes" in cand.reply
    asked = next(c for c in canned.calls if c.startswith("Passages:"))
    assert cand.question in asked and "[1] " in asked  # asked of searched passages
    # the same questions without the round trip are kept
    plain = _api(graph, GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), types=["single"],
                                         value_facts=False, dense=False, max_attempts=2,
                                         round_trip=False))
    assert len(plain.questions) == 1


def test_a_question_other_passages_answer_otherwise_is_rejected(graph, canned):
    # asked of the passages besides the hall's chunk, the model names a place one of them holds
    def reply(user: str) -> str | None:
        if "Question: How often is the lubrication pump LP-07" in user:
            canned.asked_lp07 = getattr(canned, "asked_lp07", 0) + 1
        if ("Question: Where do the Eastbank machining centres report" in user
                and "Telemetry Hub" not in user):
            return "the Eastbank plant"
        return None

    canned.override = reply
    result = _api(graph, GenerationConfig(n=5, llm=LLMSpec(backend=BACKEND), types=["single"],
                                          value_facts=False, dense=False, max_attempts=20))
    rejected = [c for c in result.candidates if c.verdict.reason == "answered_elsewhere"]
    assert [c.question for c in rejected] == [SINGLE["CNC-A01"][0]]
    assert "the Eastbank plant" in rejected[0].verdict.detail and "not its source" in (
        rejected[0].verdict.detail)
    # a question naming a code or a name is specific: asked once (its round trip), kept
    assert canned.asked_lp07 == 1
    assert any("LP-07" in q.question for q in result.questions)


def test_other_passages_disagree_only_with_their_own_words_and_the_kind_of_answer_asked():
    intro = Chunk(chunk_id="i#0", doc_id="i", text="New engineers are paired with an "
                                                   "experienced colleague for two years.")

    class Search:  # ranks the source first: the check must leave it out
        def top(self, question, k):
            return [intro, MENTORS, SCHEDULE][:k]

    def trip(question: str, facts: list[str], reply: str):
        asked: list[str] = []
        result = check_elsewhere(Search(), lambda system, user: asked.append(user) or reply,
                                 "en", question, facts, [intro])
        assert "experienced colleague" not in asked[0] and result.passages == ["m#1", "s#1"]
        return result.agrees

    mentor = "Who is the mentor for the new engineers?"
    assert not trip(mentor, ["an experienced colleague"], "Ingrid Holm")  # fits another
    assert trip(mentor, ["an experienced colleague"], "NONE")
    assert trip(mentor, ["an experienced colleague"], "An experienced colleague.")  # same
    assert trip(mentor, ["an experienced colleague"], "Lars Olsen")  # invented: no evidence
    when = "When do new engineers get a colleague?"
    assert trip(when, ["for two years"], "Ingrid Holm")  # no time: a guess
    assert not trip(when, ["for two years"], "every 3 months")


def test_a_heading_is_no_fact_of_its_chunk():
    chunk = Chunk(chunk_id="p#0", doc_id="p", text=(
        "# Preventive maintenance schedule for pumps\n\nMaintenance engineering keeps a "
        "preventive schedule for every pump on both sites."))
    verdict = check_answerable("What is the maintenance schedule for pumps called?",
                               ["Preventive maintenance schedule for pumps"], [chunk])
    assert verdict.reason == "answer_is_heading"
    kept = check_answerable("Who keeps a preventive schedule for every pump?",
                            ["Maintenance engineering"], [chunk])
    assert kept.reason is None


def test_round_trip_passages_always_hold_the_source_in_a_seeded_order():
    others = [Chunk(chunk_id=f"o#{i}", doc_id="o", text=f"other {i}") for i in range(5)]

    class Search:  # a search that does not find the source at all
        def top(self, question, k):
            return others[:k]

    orders = {tuple(c.chunk_id for c in passages_for(Search(), "Q?", [SCHEDULE], seed))
              for seed in range(8)}
    assert all(len(o) == 3 and "s#1" in o and set(o) - {"s#1"} <= {"o#0", "o#1"}
               for o in orders)
    assert len({o.index("s#1") for o in orders}) > 1  # not always first
    two = passages_for(Search(), "Q?", [SCHEDULE, MENTORS], 0)
    assert {c.chunk_id for c in two} == {"s#1", "m#1", "o#0"}
    assert passages_for(Search(), "Q?", [SCHEDULE], 3) == passages_for(Search(), "Q?",
                                                                       [SCHEDULE], 3)


def test_round_trip_agrees_with_a_part_of_the_fact_and_both_parts_of_two():
    assert agrees_with("every 500 operating hours", "500 operating hours")
    assert agrees_with("Ingrid Holm", "It is Ingrid Holm.")
    assert agrees_with("Three months before they expire", "3 months before expiration")
    assert not agrees_with("Three months before they expire", "6 months before expiration")
    assert not agrees_with("An experienced colleague", "Zhang Min")
    assert not agrees_with("Missed services are reported to the head of maintenance "
                           "engineering", "Zhang Min")
    assert not agrees_with("Zhang Min", "")
    copied = ("New engineers at Norvale are paired with an experienced colleague for their "
              "first two years. The mentor meets the engineer every two weeks, reviews their work "
              "and helps them find their way through the company.")
    assert wordy(copied, ["An experienced colleague"])
    assert not wordy("The coolant pump CP-12 is serviced every 3 months.", ["every 3 months"])
    assert read_answer("**Answer:** NONE") == "" and read_answer("无") == ""
    assert read_answer("The passages do not say.") == ""
    assert read_answer("ANSWER: \"Voss Hydraulik\"\nbecause ...") == "Voss Hydraulik"


def test_round_trip_rejects_an_unanswerable_question_the_passages_answer():
    class Search:
        def top(self, question, k):
            return [MENTORS, SCHEDULE][:k]

    def trip(reply: str) -> bool:
        return round_trip.check(Search(), lambda system, user: reply, "en", "What is the "
                                "relationship between Ingrid Holm and Tomas Reyes?", [],
                                [SCHEDULE]).agrees

    assert not trip("Ingrid Holm; mentor of Tomas Reyes")  # the passages say it
    assert trip("Acme Gasket Company")  # an invented answer keeps the question
    assert trip("NONE")


def test_an_unanswerable_question_asking_for_words_no_chunk_uses_needs_no_round_trip(
        graph, canned):
    result = _api(graph, GenerationConfig(n=2, llm=LLMSpec(backend=BACKEND), types=[
        "unanswerable"], dense=False, language="en"))
    assert len(result.questions) == 2
    assert not any(c.startswith("Passages:") for c in canned.calls)
    assert result.report.calls == len(_kinds_asked(canned.calls))  # a kind call per thing


SCHEDULE = Chunk(chunk_id="s#1", doc_id="s", text=(
    "The coolant pump CP-12 is serviced every 3 months. The contract HT-2023-0415 covers the "
    "coolant pump CP-12. 冷却泵 CP-12 的保养周期为每3个月。"))
MENTORS = Chunk(chunk_id="m#1", doc_id="m", text=(
    "Ingrid Holm is the mentor of Chen Hao. Ingrid Holm is the mentor of Tomas Reyes. "
    "Contracts are reviewed three months before they expire."))


@pytest.mark.parametrize(("question", "answer", "answered"), [
    # the model's words are the passages', about nothing the question names: kept
    ("What is the warranty period of the coolant pump CP-12?", "every 3 months", False),
    ("冷却泵 CP-12 的保修期是多少？", "每3个月；无", False),
    ("What is the warranty policy for the pump services?", "HT-2023-0415", False),
    ("What is the warranty of CP-12?", "NONE", False),
    # invented words: kept
    ("Who insures the coolant pump CP-12?", "Acme Insurance Group", False),
    # the passages say something of what the question names: rejected
    ("What is the relationship between Ingrid Holm and Tomas Reyes?",
     "Ingrid Holm; mentor of Tomas Reyes", True),
    ("What is the purpose of the three-month review period for contracts?",
     "Contracts are reviewed three months before they expire", True),
])
def test_an_unanswerable_question_is_answered_when_the_passages_speak_of_its_subject(
        question, answer, answered):
    assert answers_it(question, answer, [SCHEDULE, MENTORS]) is answered


def test_a_failing_type_hands_its_share_to_the_others(graph, canned):
    canned.override = lambda user: "no idea" if _kinds_asked([user]) else None
    result = _api(graph, GenerationConfig(n=2, llm=LLMSpec(backend=BACKEND),
                                          types=["single", "unanswerable"], dense=False))
    assert [r.tags[1] for r in result.questions] == ["type:single"] * 2
    assert result.report.by_type["unanswerable"].rejected == {"no_fitting_detail": 4}
    assert "unanswerable: 0 kept of 1 after 4 tries" in result.report.text()


def test_chunks_are_sampled_across_documents_and_seeded(graph, canned):
    chunks = _chunks(graph)
    order = stratified_order(chunks, seed=1)
    docs = {c.doc_id for c in chunks}
    assert {c.doc_id for c in order[:len(docs)]} == docs
    assert [c.chunk_id for c in stratified_order(chunks, 1)] == [c.chunk_id for c in order]
    assert any([c.chunk_id for c in stratified_order(chunks, s)] != [c.chunk_id for c in order]
               for s in range(2, 6))


def test_parse_reply_reads_small_model_formats():
    assert parse_reply("Here you go:\n1. QUESTION - Who is it?\n2. Answer: **Bob**.").answers \
        == ["Bob"]
    json_reply = parse_reply('```json\n{"question": "Where?", "answer": "Oslo"}\n```')
    assert (json_reply.question, json_reply.answers) == ("Where?", ["Oslo"])
    zh = parse_reply("问题：空压机多久保养一次？\n答案：“每3个月”。")
    assert (zh.question, zh.answers) == ("空压机多久保养一次？", ["每3个月"])
    loose = parse_reply("What colour is the pump?\nRed")
    assert (loose.question, loose.answers) == ("What colour is the pump?", ["Red"])
    assert parse_reply("QUESTION: Why?\nANSWER: none").problem == "no answer in the reply"
    assert parse_reply("QUESTION: Why?\nANSWER: none", 0).problem == ""
    assert parse_reply("no idea").problem == "no question in the reply"
    assert language_of("空压机 AC-05 多久保养一次？") == "zh"
    assert language_of("How often is AC-05 serviced?") == "en"


@pytest.mark.parametrize(("args", "message"), [
    (["--n", "0"], "--n 0: ask for at least one question"),
    (["--types", "single,riddles"], "unknown question type(s) riddles"),
    (["--model", "ollama:qwen2.5:1.5b", "--host", "http://127.0.0.1:9"],
     "chat backend 'ollama' with model 'qwen2.5:1.5b' does not answer"),
])
def test_bad_options_are_named_and_nothing_is_written(graph, canned, tmp_path, capsys, args,
                                                       message):
    out = tmp_path / "set.jsonl"
    code = cli.main(["evalset", "generate", str(graph), "--out", str(out), "--no-dense",
                     "--model", BACKEND, *args])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_bad_corpora_are_named(graph, canned, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    short = tmp_path / "short"
    short.mkdir()
    (short / "a.md").write_text("Hello.", encoding="utf-8")
    out = tmp_path / "set.jsonl"
    for corpus, message in ((empty, "no documents loaded"),
                            (short, "none with enough text")):
        assert _generate([str(graph), "--input", f"corpus={corpus}", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err, err
        assert not out.exists()


def test_tiny_corpus_says_how_many_questions_are_possible(graph, canned, tmp_path, capsys):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "a.md").write_text("The pump LP-07 is serviced every 500 operating hours by the "
                               "maintenance team of the Eastbank plant.", encoding="utf-8")
    out = tmp_path / "set.jsonl"
    assert _generate([str(graph), "--input", f"corpus={tiny}", "--out", str(out)]) == 2
    assert re.search(r"too small for 60 questions: 1 chunk\(s\) from 1 document\(s\), 1 with "
                     r"enough text .*allow at most 3 \(single 1, multi 0, unanswerable 1, "
                     r"paraphrase 1\); ask for --n 3 or fewer", capsys.readouterr().err)


def test_graph_without_a_splitter_is_named(tmp_path, canned, capsys):
    data = tiny_rag_graph(tmp_path, DOCS, backend=BACKEND)
    data["nodes"] = [n for n in data["nodes"] if n["id"] in ("corpus", "load")]
    data["edges"] = [e for e in data["edges"] if e["to"] == "load.path"]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _generate([str(path), "--out", str(tmp_path / "s.jsonl")]) == 2
    assert "no splitter" in capsys.readouterr().err
    data["nodes"] = [n for n in data["nodes"] if n["id"] == "corpus"]
    data["edges"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _generate([str(path), "--out", str(tmp_path / "s.jsonl")]) == 2
    assert "no loader node" in capsys.readouterr().err


def test_cancel_stops_generation_and_interrupt_writes_nothing(graph, canned, tmp_path):
    cancel = CancelToken()
    with pytest.raises(RunCancelled):
        _api(graph, GenerationConfig(n=4, llm=LLMSpec(backend=BACKEND), types=["single"],
                                     dense=False),
             cancel=cancel, on_progress=lambda kept, wanted, note: cancel.cancel())
    calls = []

    def interrupt(user: str):
        calls.append(user)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return None

    canned.override = interrupt
    out = tmp_path / "set.jsonl"
    assert _generate([str(graph), "--n", "4", "--types", "single", "--out", str(out)]) == 1
    assert not out.exists() and not list(tmp_path.glob("*.tmp"))


def test_backend_failing_midway_names_backend_and_model(graph, canned):
    def fail(user: str):
        if user.startswith("Reply"):
            return None
        raise ConnectionError("connection refused")

    canned.override = fail
    with pytest.raises(GenerationError, match="chat backend 'test-canned-questions' with "
                                              "model 'm1' failed: connection refused"):
        _api(graph, GenerationConfig(n=2, llm=LLMSpec(backend=BACKEND, model="m1"),
                                     dense=False))


def test_a_frequency_fact_must_be_stated_as_a_frequency_in_its_chunk() -> None:
    """'Every two years' matched 'the failures of the last two years' through the answer
    metrics' leniency; as the source of a fact the chunk must state the frequency."""
    chunk = Chunk(chunk_id="m#0", doc_id="m", text=(
        "The intervals below were adjusted after the failures of the last two years. "
        "The coolant pump CP-12 is serviced every 3 months."))
    zh = Chunk(chunk_id="z#0", doc_id="z",
               text="空压机 AC-05 的保养周期为每1个月。最近两年更换过两次。")
    assert fact_found("Every two years", chunk.text)  # the lenient answer-metrics match
    assert not stated_in("Every two years", chunk.text)
    verdict = check_answerable("How often should the pumps be inspected?",
                               ["Every two years"], [chunk])
    assert verdict.reason == "answer_not_in_source"
    assert stated_in("every three months", chunk.text)
    assert stated_in("3 months", chunk.text)
    assert stated_in("每1个月", zh.text)
    assert not stated_in("每两年", zh.text)
    kept = check_answerable("How often is the coolant pump CP-12 serviced?",
                            ["Every 3 months"], [chunk])
    assert kept.reason is None


def test_a_fact_said_of_something_else_is_rejected() -> None:
    """The half-question asks for HT-2023-0415's counterparty; the model took "Corvid Cloud"
    from the next sentence, which is about HT-2025-0031. A fact whose sentence names what the
    sentence before it is about ("HT-2023-0415 covers CP-12. It is signed with Lumen") stays."""
    contracts = Chunk(chunk_id="c#2", doc_id="c", text=(
        "The contract HT-2023-0415 is a maintenance service agreement for pumps; its scope and\n"
        "counterparty are described in the maintenance schedule. The contract HT-2025-0031\n"
        "covers the Warehouse DB. The contract HT-2025-0031 is signed with Corvid Cloud, who\n"
        "host the database replica and its backups."))
    schedule = Chunk(chunk_id="s#2", doc_id="s", text=(
        "The contract HT-2023-0415 covers the coolant pump CP-12 and the hydraulic pump HP-03.\n"
        "The contract HT-2023-0415 is signed with Lumen Industrial Services."))
    wrong = check_answerable(
        "Who is the counterparty of the maintenance service agreement HT-2023-0415?",
        ["Corvid Cloud"], [contracts])
    assert wrong.reason == "answer_off_topic" and "Corvid Cloud" in wrong.detail
    right = check_answerable("Who is the contractor for the coolant pump CP-12?",
                             ["Lumen Industrial Services"], [schedule])
    assert right.reason is None
    hosts = check_answerable("Who hosts the database replica?", ["Corvid Cloud"], [contracts])
    assert hosts.reason is None
    # a paraphrase shares few words by design: the rule does not apply to it
    assert check_answerable("Which firm keeps copies of the data?", ["Corvid Cloud"],
                            [contracts], paraphrase=True).reason is None


@pytest.mark.parametrize("store", ["store.chroma", "store.lancedb", "embed.chunks"])
def test_the_chunks_are_those_of_the_splitter_that_feeds_an_index(graph, store):
    """With two splitters, the one whose chunks an index takes (any type whose evidence role
    is "indexes": a LanceDB store as a Chroma one) is the source of the questions."""
    data = json.loads(graph.read_text())
    data["nodes"] = [n for n in data["nodes"] if n["id"] not in ("index", "retrieve")]
    data["edges"] = [e for e in data["edges"] if "index." not in e["to"]
                     and not e["from"].startswith("retrieve.") and "retrieve." not in e["to"]]
    data["nodes"] += [{"id": "coarse", "type": "split.recursive", "params": {}},
                      {"id": "store", "type": store, "params": {}}]
    data["edges"] += [{"from": "load.documents", "to": "coarse.documents"},
                      {"from": "coarse.chunks", "to": "store.chunks"}]
    doc = GraphDocument.model_validate(data)
    assert find_chunk_source(doc, default_registry()).splitter == "coarse"


@pytest.mark.parametrize("store", ["store.chroma", "store.lancedb"])
def test_dense_check_reads_the_graphs_store_instead_of_embedding_the_corpus_again(
        graph, canned, monkeypatch, store):
    """With a vector store (Chroma or LanceDB) fed by the splitter and the embedder, the
    specificity check reads the chunks' vectors the store indexed (the same as embedding
    them), and a second check embeds nothing."""
    import numpy as np

    from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
    from modrag_studio.evaluation.generation.reading import search as corpus_search

    data = json.loads(graph.read_text())
    data["nodes"] += [{"id": "embedder", "type": "embed.model", "params": {}},
                      {"id": "store", "type": store, "params": {"collection": "gen"}}]
    data["edges"] += [{"from": "split.chunks", "to": "store.chunks"},
                      {"from": "embedder.embedder", "to": "store.embedder"}]
    doc = GraphDocument.model_validate(data)
    registry = default_registry()
    executor = Executor(registry)
    source = find_chunk_source(doc, registry)
    chunks = graph_chunks(doc, executor, {}, source)
    first = corpus_search.build_search(doc, executor, {}, chunks, source.splitter)
    embedded = np.asarray(embed_texts(EmbedderSpec(), [c.text for c in chunks],
                                      role="passage"), dtype=np.float32)
    assert first.vectors.shape == embedded.shape
    assert np.allclose(first.vectors, embedded, atol=1e-5)
    calls = []
    monkeypatch.setattr(corpus_search, "embed_texts",
                        lambda *a, **k: calls.append(a) or embed_texts(*a, **k))
    again = corpus_search.build_search(doc, executor, {}, chunks, source.splitter)
    assert calls == [] and np.allclose(again.vectors, first.vectors)
    ranked = again.dense_rank("How often is the lubrication pump LP-07 serviced?",
                              [c.chunk_id for c in chunks if "LP-07 is serviced" in c.text])
    assert ranked == 1


def test_extend_grows_a_set_without_near_duplicates_and_numbers_after_it(graph, canned):
    config = GenerationConfig(n=2, llm=LLMSpec(backend=BACKEND), types=["single"], dense=False,
                              max_attempts=8, seed=1)
    first = _api(graph, config).questions
    assert [q.id for q in first] == ["g001", "g002"]
    more = _api(graph, dataclasses.replace(config, seed=2), extend=first)
    # the canned model writes one question per chunk: the first set's two are duplicates now
    assert more.questions and {q.question for q in more.questions}.isdisjoint(
        q.question for q in first)
    assert [q.id for q in more.questions] == [f"g{i:03d}" for i in
                                              range(3, 3 + len(more.questions))]
    assert "near_duplicate" in more.report.total.rejected


def test_cli_extend_writes_the_earlier_rows_then_the_new_ones(graph, canned, tmp_path):
    first, grown = tmp_path / "first.jsonl", tmp_path / "grown.jsonl"
    assert _generate([str(graph), "--n", "2", "--types", "single", "--seed", "1",
                      "--out", str(first)]) == 0
    assert _generate([str(graph), "--n", "1", "--types", "single", "--seed", "2",
                      "--extend", str(first), "--out", str(grown)]) == 0
    earlier, rows = load_evalset(first).questions, load_evalset(grown).questions
    assert rows[:2] == earlier and len(rows) == 3 and rows[2].id == "g003"
