"""An answer whose first sentence the evidence backs loses its later sentences that no
evidence backs (or backs only beside another subject) instead of being refused whole, in
English and Chinese; an answer whose first sentence is unbacked is never cut."""

from __future__ import annotations

from modrag_nodes.grounding.check import GroundingCheck
from modrag_nodes.grounding.claims import extract_claims
from modrag_nodes.grounding.sentences import unbacked_sentences

from .conftest import cited_answer as _answer
from .conftest import scored
from .test_claim_alignment import REGISTER

QUESTION = "Which contract covers the seal kit HS-40, and who supplies it?"
RIGHT = "The seal kit HS-40 is covered by HT-2024-1107 and supplied by Kestrel Hydraulics. [1]"
WRONG = "That contract is signed with Baltic Bearing Supply. [1]"
REGISTER_ZH = ("合同 HT-2024-0892 涵盖主轴轴承 SKF-6205，签约方是 Baltic Bearing Supply。"
               "合同 HT-2024-1107 涵盖密封件 HS-40，签约方是 Kestrel Hydraulics。")


def _check(run_node, question: str, text: str, evidence, **params):
    out = run_node(GroundingCheck, params, answer=_answer(text, evidence, question))
    return out, run_node.ctx.details


def test_a_later_sentence_naming_another_suppliers_contract_is_cut(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    out, details = _check(run_node, QUESTION, f"{RIGHT} {WRONG}", evidence)
    assert list(out) == ["grounded"]
    assert out["grounded"].text == RIGHT
    assert [c.ref for c in out["grounded"].citations] == ["1"]
    assert details["cut"] == [WRONG]
    assert "Baltic Bearing Supply" in details["cut_reason"]
    # switched off, the whole answer goes back
    off, off_details = _check(run_node, QUESTION, f"{RIGHT} {WRONG}", evidence,
                              cut_unbacked=False)
    assert list(off) == ["ungrounded"] and "cut" not in off_details


def test_an_unbacked_first_sentence_is_never_cut_away(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    out, details = _check(run_node, QUESTION, f"{WRONG} {RIGHT}", evidence)
    assert list(out) == ["ungrounded"]
    assert "cut" not in details and "Baltic Bearing Supply" in details["reason"]


def test_a_chinese_answer_keeps_its_backed_sentence(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=REGISTER_ZH)]
    right = "密封件 HS-40 由合同 HT-2024-1107 涵盖，签约方是 Kestrel Hydraulics。[1]"
    wrong = "这个合同是与 Baltic Bearing Supply 签订的。[1]"
    out, details = _check(run_node, "密封件 HS-40 由哪份合同涵盖，签约方是谁？", right + wrong,
                          evidence)
    assert list(out) == ["grounded"]
    assert out["grounded"].text == right
    assert details["cut"] == [wrong]


def test_unbacked_sentences_keeps_the_order_and_spacing() -> None:
    text = "One is 5 kg. [1] Two is 7 kg. [2] Three is 9 kg. [1]"
    claims = [c for c in extract_claims(text) if c.text.startswith("7")]
    assert unbacked_sentences(text, claims) == ("One is 5 kg. [1] Three is 9 kg. [1]",
                                                ["Two is 7 kg. [2]"])
    first = [c for c in extract_claims(text) if c.text.startswith("5")]
    assert unbacked_sentences(text, first) == ("", [])
    assert unbacked_sentences(text, []) == ("", [])


def test_a_refusal_loses_its_sentences_that_state_what_no_evidence_backs(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    wrong = "The contract HT-2024-1107 runs for five years with HT-2099-0001. [1]"
    declines = "The evidence does not say who signs it."
    out, details = _check(run_node, QUESTION, f"{wrong} {declines}", evidence)
    assert list(out) == ["grounded"]  # a refusal: nothing of it is shown as a fact
    assert out["grounded"].text == declines
    assert details["cut"] == [wrong] and "declines" in details["cut_reason"]
    # backed sentences beside the refusal stay
    backed = "The contract HT-2024-1107 covers the seal kit HS-40. [1]"
    kept, _ = _check(run_node, QUESTION, f"{backed} {declines}", evidence)
    assert kept["grounded"].text == f"{backed} {declines}"
