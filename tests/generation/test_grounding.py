"""Grounding check: claims of English and Chinese answers looked up in the evidence, routes,
citations re-pointed, key terms absent from the evidence, the refusal that names them."""

from __future__ import annotations

import pytest

from modrag_nodes.grounding.check import GroundingCheck, RefuseAnswer
from modrag_nodes.grounding.claims import (
    Block,
    extract_claims,
    key_terms,
    locate,
)
from modrag_nodes.text.scripts import language_of
from modrag_studio.engine.core.datatypes import Answer, Query

from .conftest import cited_answer as _answer
from .conftest import scored

PUMPS = ("The lubrication pump LP-07 is serviced every 500 operating hours. The hydraulic "
         "pump HP-03 is serviced every 6 months. Supplier: Baltic Bearing Supply.")
PRESS_ZH = ("液压机 PR-300 的额定压力为 300 吨。更换密封件需要停机四个小时。"
            "空压机 AC-05 每个月保养一次。")


def _claims(text: str, *blocks: str, cited: set[int] | None = None, question: str = ""):
    return {c.text: c.verdict for c in locate(extract_claims(text), [Block.of(b) for b in blocks],
                                              cited or set(), question, [])}


def test_claims_of_an_english_answer() -> None:
    text = ("LP-07 is serviced every 500 hours [1]. Chen Hao's mentor is Ingrid Holm; the "
            "contract HT-2024-0892 ends on 2025-03-31 and costs 15,000 EUR.\n1. five days")
    kinds = {c.text: c.kind for c in extract_claims(text)}
    assert kinds == {"LP-07": "identifier", "500 hours": "quantity", "Chen Hao": "name",
                     "Ingrid Holm": "name", "HT-2024-0892": "identifier",
                     "2025-03-31": "date", "15,000 EUR": "number", "five days": "quantity"}
    # a citation and a list marker are not claims
    assert not any(c.text in ("1", "[1]") for c in extract_claims(text))


@pytest.mark.parametrize("text", [
    "The wear of SKF-6205 is caused by LP-07. This can be found in evidence blocks 3 and 4, "
    "respectively.",
    "The wear of SKF-6205 is caused by LP-07 (block 2, block [3]).",
    "SKF-6205 的磨损是 LP-07 造成的，见证据块 3、4 和第2块。",
])
def test_a_block_named_in_prose_is_a_citation_not_a_number(text) -> None:
    # Qwen wrote "evidence blocks 3 and 4"; the check read 3 and 4 as numbers no document
    # states, sent the answer back and refused the right one ("the documents do not mention 3, 4")
    assert {c.text for c in extract_claims(text)} == {"SKF-6205", "LP-07"}
    assert {c.text for c in extract_claims("Block 2 says LP-07 has 3 filters.")} == {"LP-07", "3"}


def test_units_number_words_and_full_width_digits_are_normalised() -> None:
    assert _claims("LP-07: every 500 h", PUMPS)["500 h"] == "cited"
    assert _claims("每５００小时保养一次", PUMPS)["５００小时"] == "cited"
    assert _claims("It takes 4 hours.", PRESS_ZH)["4 hours"] == "cited"
    assert _claims("停机4个小时", PRESS_ZH)["4个小时"] == "cited"
    assert _claims("The rated pressure is 300 tonnes.", PRESS_ZH)["300 tonnes"] == "cited"
    found = _claims("PR-300 的额定压力为15,000 psi，每6个月保养一次。", PRESS_ZH)
    assert found == {"PR-300": "cited", "15,000 psi": "missing", "6个月": "missing"}
    assert _claims("five hundred hours? no: 640 people", PUMPS)["640 people"] == "missing"


def test_a_grouped_number_written_against_chinese_characters_is_one_number() -> None:
    """"每2,000小时" has no word boundary after its zeros: the claim was "2" and "000小时",
    both missing from evidence that says 2,000 hours."""
    hours = "The AC-05 compressor is serviced every 2,000 operating hours."
    assert [c.text for c in extract_claims("AC-05 每2,000小时保养一次。[1]")] == [
        "AC-05", "2,000小时"]
    assert _claims("AC-05 每2,000小时保养一次。", hours)["2,000小时"] == "cited"
    assert _claims("AC-05 每2,500小时保养一次。", hours)["2,500小时"] == "missing"
    assert Block.of("压缩机每２，０００小时保养").numbers >= {2000.0}
    assert Block.of("版本 1,2345 与 2,000km").numbers >= {2000.0, 1.0, 2345.0}


def test_verdict_names_the_block_and_the_question() -> None:
    blocks = [Block.of("The coolant pump CP-12 is serviced every 3 months."), Block.of(PUMPS)]
    claims = locate(extract_claims("LP-07 every 500 hours [1]"), blocks, {1},
                    "How often is LP-07 serviced?", [])
    assert [(c.text, c.verdict, c.block) for c in claims] == [
        ("LP-07", "evidence", 2), ("500 hours", "evidence", 2)]
    asked = locate(extract_claims("VP-02 is not listed"), blocks, set(), "What about VP-02?", [])
    assert asked[0].verdict == "question"


def test_grounded_route(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS)]
    out = run_node(GroundingCheck, {}, answer=_answer("LP-07: every 500 operating hours [1].",
                                                      evidence, "How often is LP-07 serviced?"))
    assert list(out) == ["grounded"]
    assert [c.verdict for c in out["grounded"].claims] == ["cited", "cited"]
    assert run_node.ctx.details["route"] == "grounded"


def test_ungrounded_route_narrates_the_claim(run_node) -> None:
    evidence = [scored("press", 0.9, text=PRESS_ZH)]
    out = run_node(GroundingCheck, {}, answer=_answer("PR-300 的额定压力为15,000 psi [1]。",
                                                      evidence, "PR-300 的额定压力是多少？"))
    assert list(out) == ["ungrounded"]
    details = run_node.ctx.details
    assert details["ungrounded"] == ["15,000 psi"]
    assert details["reason"] == "the answer says 15,000 psi; no document says that"
    assert {"claim": "15,000 psi", "kind": "number", "verdict": "missing", "block": None,
            "where": "not found"} in details["claims"]


def test_scope_cited_or_evidence_and_citation_repair(run_node) -> None:
    evidence = [scored("other", 0.9, text="The coolant pump CP-12 is serviced every 3 months."),
                scored("pumps", 0.8, text=PUMPS, chunk_id="pumps#1")]
    answer = _answer("The lubrication pump LP-07 is serviced every 500 hours [1].", evidence)
    strict = run_node(GroundingCheck, {"scope": "cited", "fix_citations": False}, answer=answer)
    assert list(strict) == ["ungrounded"]
    assert "only blocks it does not cite" in run_node.ctx.details["reason"]
    loose = run_node(GroundingCheck, {"scope": "evidence", "fix_citations": False}, answer=answer)
    assert list(loose) == ["grounded"]
    assert any("500 hours, which only evidence it does not cite states" in w
               for w in run_node.ctx.warnings)  # said in words a newcomer reads
    fixed = run_node(GroundingCheck, {"scope": "cited"}, answer=answer)
    assert list(fixed) == ["grounded"]
    assert fixed["grounded"].text.endswith("500 hours [2].")
    assert fixed["grounded"].citations[0].chunk_id == "pumps#1"
    assert run_node.ctx.details["citations_moved"] == ["[1] -> [2]"]


def test_a_citation_of_the_graph_facts_moves_to_the_document_that_says_it(run_node) -> None:
    """The knowledge graph's facts block is written from the documents: a sentence citing only
    it is re-pointed to a text block holding all its claims; one no text block holds keeps it."""
    facts = scored("knowledge-graph", 2.0, chunk_id="kg:paths", derived="knowledge graph",
                   text="Telemetry Hub collects data from CNC-A01.\n"
                        "Telemetry Hub collects data from PR-300.")
    hub = scored("it", 0.9, chunk_id="it#3",
                 text="The Telemetry Hub collects data from CNC-A01 and the press PR-300.")
    evidence = [facts, scored("other", 0.8, text=PUMPS), hub]
    answer = _answer("The Telemetry Hub collects data from CNC-A01 and PR-300. [1]", evidence)
    out = run_node(GroundingCheck, {"scope": "evidence"}, answer=answer)
    assert out["grounded"].text.endswith("PR-300. [3]")
    assert [c.chunk_id for c in out["grounded"].citations] == ["it#3"]
    assert run_node.ctx.details["citations_moved"] == ["[1] -> [3]"]
    # no one document states both: the two that do between them
    pumps = scored("pumps", 0.7, chunk_id="pumps#1", text=PUMPS)
    two = _answer("The Telemetry Hub collects data from CNC-A01; LP-07 is serviced every "
                  "500 hours. [1]", [facts, hub, pumps])
    out = run_node(GroundingCheck, {"scope": "evidence"}, answer=two)
    assert out["grounded"].text.endswith("500 hours. [2][3]")
    only_graph = _answer("The Telemetry Hub collects data from CNC-A01 and VP-02 [1].",
                         [facts, hub])
    kept = run_node(GroundingCheck, {"scope": "evidence"}, answer=only_graph)
    assert next(iter(kept.values())).text.endswith("VP-02 [1].")


def test_absent_identifier_routes_to_absent(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS)]
    answer = _answer("The vacuum pump VP-02 is serviced every 6 months [1].", evidence)
    out = run_node(GroundingCheck, {}, answer=answer,
                   query=Query(text="How often is the vacuum pump VP-02 serviced?"))
    assert list(out) == ["absent"]
    assert out["absent"].absent_terms == ["VP-02", "vacuum"]
    # the answer restates "vacuum", which no block says either: a single English word is no
    # restated term (a question in other words than the documents' has many), unless asked
    assert run_node.ctx.details["reason"] == (
        "the question asks about “VP-02”; no document mentions it")
    assert run_node.ctx.details["restated"] == ["VP-02"]
    run_node(GroundingCheck, {"restated_words": True}, answer=answer,
             query=Query(text="How often is the vacuum pump VP-02 serviced?"))
    assert run_node.ctx.details["restated"] == ["VP-02", "vacuum"]
    assert run_node.ctx.details["reason"] == (
        "the question asks about “VP-02”, “vacuum”; no document mentions it")
    # absent words the answer does not state route only with absent_terms = all
    warranty = _answer("HP-03 is serviced every 6 months [1].", evidence,
                       "What is the warranty period of HP-03?")
    assert list(run_node(GroundingCheck, {}, answer=warranty)) == ["grounded"]
    assert list(run_node(GroundingCheck, {"absent_terms": "all"}, answer=warranty)) == ["absent"]


def test_refusals_and_fallbacks_pass(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS)]
    refusal = _answer("The evidence does not say.", evidence, "How often is VP-02 serviced?")
    assert list(run_node(GroundingCheck, {}, answer=refusal)) == ["grounded"]
    fallback = Answer(text="No reliable evidence: 42 h.", fallback=True)
    assert list(run_node(GroundingCheck, {}, answer=fallback)) == ["grounded"]


def test_language_checked_on_the_first_attempt_only(run_node) -> None:
    evidence = [scored("press", 0.9, text=PRESS_ZH)]
    answer = _answer("AC-05 is serviced every month [1].", evidence, "空压机 AC-05 多久保养一次？")
    assert list(run_node(GroundingCheck, {}, answer=answer)) == ["ungrounded"]
    assert run_node.ctx.details["reason"] == "the question is in Chinese, the answer is not"
    assert list(run_node(GroundingCheck, {}, answer=answer, iteration=1)) == ["grounded"]
    assert list(run_node(GroundingCheck, {"check_language": False}, answer=answer)) == [
        "grounded"]
    # Chinese that names an English company twice is Chinese
    assert language_of("密封件 HS-40 由 Kestrel Hydraulics 合同供应，供应商是 Kestrel "
                       "Hydraulics。[1]") == "zh"
    assert language_of("Ingrid Holm (英格丽·霍尔姆) is the mentor of Chen Hao.") == "en"


@pytest.mark.parametrize("question, text", [
    ("What is the rated pressure of PR-300?", "The documents do not mention 15,000 psi."),
    ("PR-300 的额定压力是多少？", "文档中没有提到15,000 psi。"),
])
def test_refusal_names_what_is_missing(run_node, question, text) -> None:
    evidence = [scored("press", 0.9, text=PRESS_ZH)]
    run_node(GroundingCheck, {}, answer=_answer("PR-300: 15,000 psi [1]", evidence, question))
    checked = _answer("PR-300: 15,000 psi [1]", evidence, question)
    out = run_node(GroundingCheck, {"check_language": False}, answer=checked)
    refusal = run_node(RefuseAnswer, {}, answer=[out["ungrounded"]])["answer"]
    assert refusal.fallback is True and refusal.text == text
    assert refusal.evidence == evidence


def test_key_terms() -> None:
    assert key_terms("How often is the lubrication pump LP-07 serviced?") == [
        "lp-07", "lubrication", "pump", "serviced"]
    assert key_terms("液压机 PR-300 的额定压力是多少？")[:2] == ["pr-300", "液压机"]
    # how a question asks ("关于 … 是怎样描述的", "how is … described") is no key term
    terms = key_terms("在传说中，关于名将岳飞是怎样描述的？")
    assert "岳飞" in terms and not {"关于", "描述"} & set(terms)
    assert key_terms("How is the press PR-300 described?") == ["pr-300", "press"]


def test_plural_names_and_helper_code_in_the_fingerprint() -> None:
    assert _claims("Reporting Services and Payment Gateways", "The Reporting Service and the "
                   "Payment Gateway.") == {"Reporting Services": "cited",
                                           "Payment Gateways": "cited"}
    # the helpers doing the check's work are in its cache key (code identity), so a cached
    # verdict never outlives a change of them
    from modrag_studio.engine.cache.code_identity import defining_modules

    assert {"modrag_nodes.grounding.claims", "modrag_nodes.generation.fact_match"} <= set(
        defining_modules(GroundingCheck))


def test_absent_words_ask_for_one_retry(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS)]
    answer = _answer("HP-03 is serviced every 6 months [1].", evidence,
                     "What is the warranty period of HP-03?")
    first = run_node(GroundingCheck, {"absent_terms": "ask"}, answer=answer)
    assert list(first) == ["ungrounded"]
    assert run_node.ctx.details["reason"] == (
        "the question asks about “warranty”, “period”; no document mentions it")
    again = run_node(GroundingCheck, {"absent_terms": "ask"}, answer=answer, iteration=1)
    assert list(again) == ["grounded"] and again["grounded"].absent_terms == ["warranty",
                                                                              "period"]


def test_refusal_names_only_what_no_block_states(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS), scored("press", 0.8, text=PRESS_ZH)]
    answer = _answer("PR-300 is serviced every 7 months [1].", evidence,
                     "How often is PR-300 serviced?")
    out = run_node(GroundingCheck, {"scope": "evidence", "fix_citations": False},
                   answer=answer)
    assert [(c.text, c.verdict) for c in out["ungrounded"].claims] == [
        ("PR-300", "evidence"), ("7 months", "missing")]
    refusal = run_node(RefuseAnswer, {}, answer=[out["ungrounded"]])["answer"]
    assert refusal.text == "The documents do not mention 7 months."


def test_a_block_number_the_evidence_lacks_is_renumbered_to_the_block_that_backs_it(
        run_node) -> None:
    """[3] beside two blocks cites nothing: a sentence citing only such numbers cites the block
    holding its claims, or (without claims) writing most of the words it adds to the
    question, two at least; one no block backs stays uncited."""
    legend = scored("legend", 0.9, text="据传说，这位将军就是白虎星转世，后来成为守城的名将。")
    other = scored("city", 0.8, text="这座城市建于明代，城墙长约十公里。")
    question = "传说中这位将军是怎样的？"
    answer = _answer("在传说中，这位将军被描绘为白虎星转世。[3]", [other, legend], question)
    out = run_node(GroundingCheck, {}, answer=answer)
    assert list(out) == ["grounded"]
    assert out["grounded"].text.endswith("转世。[2]")
    assert run_node.ctx.details["citations_renumbered"] == ["[3] -> [2]"]
    for unbacked in ("这位将军擅长骑射，一生未尝败绩。[3]",  # words no block writes
                     "传说这位将军是名将。[3]"):  # one word more than the question
        out = run_node(GroundingCheck, {}, answer=_answer(unbacked, [other, legend], question))
        assert list(out) == ["ungrounded"]
        assert out["ungrounded"].check_reason == "the answer cites no evidence block"
    pumps = _answer("LP-07 is serviced every 500 hours [4].",
                    [scored("other", 0.9, text="The canteen opens at 06:00."),
                     scored("pumps", 0.8, text=PUMPS)], "How often is LP-07 serviced?")
    out = run_node(GroundingCheck, {}, answer=pumps)
    assert out["grounded"].text.endswith("500 hours [2].")

