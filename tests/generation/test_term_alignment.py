"""Answer words aligned (``term_alignment``): where no capital letter marks a name, an
answer most of whose words the evidence writes only beside another subject (another
record's title) is a mismatch; a right answer in other words, or one stray word, passes."""

from __future__ import annotations

from modrag_nodes.grounding.alignment import answer_terms, question_subjects
from modrag_nodes.grounding.check import GroundingCheck

from .conftest import cited_answer as _answer
from .conftest import scored

PANGOLIN = scored("TRIAL_193", 0.9, title="马来穿山甲",
                  text="马来穿山甲\n\n马来穿山甲的别称有爪哇穿山甲和爪哇鲮鲤，是穿山甲科的一种。"
                       "它们主要吃蚂蚁和白蚁。")
TREE = scored("TRIAL_177", 0.8, title="盾柱木",
              text="盾柱木\n\n盾柱木的别称有双翼豆、闭荚木、黄焰木及翅果木，是豆科的植物。"
                   "因盾柱木的柱头形状貌如盾形，故而得名。")
QUESTION = "马来穿山甲的别称是什么？"


def _check(run_node, text: str, evidence, **params):
    out = run_node(GroundingCheck, params, answer=_answer(text, evidence, QUESTION))
    return out, run_node.ctx.details


def test_another_records_aliases_are_a_mismatch_named_with_its_title(run_node) -> None:
    evidence = [PANGOLIN, TREE]
    assert [s.name for s in question_subjects(QUESTION, evidence, [])] == ["马来穿山甲"]
    wrong = "马来穿山甲的别称是双翼豆、闭荚木、黄焰木及翅果木。[2]"
    out, details = _check(run_node, wrong, evidence)
    assert list(out) == ["ungrounded"], details
    assert details["reason"].startswith("block [2] names 双翼")
    assert details["reason"].endswith("beside 盾柱木, not beside 马来穿山甲")
    assert {c.kind for c in out["ungrounded"].claims if c.verdict == "mismatch"} == {"term"}
    off, _ = _check(run_node, wrong, evidence, term_alignment="off")
    assert list(off) == ["grounded"]  # names and numbers alone see nothing to check


def test_right_answers_in_other_words_and_one_stray_word_pass(run_node) -> None:
    evidence = [PANGOLIN, TREE]
    for text in ("它也被称为爪哇穿山甲，或者爪哇鲮鲤。[1]",
                 "马来穿山甲又名爪哇鲮鲤，属于穿山甲科。[1]",
                 "马来穿山甲又叫爪哇穿山甲，不属于豆科。[1]",
                 # one word, written only in the other record (豆科), is too little to judge
                 "马来穿山甲常见于豆科树下。[1]"):
        out, details = _check(run_node, text, evidence)
        assert list(out) == ["grounded"], (text, details["reason"])


def test_terms_are_the_answers_words_the_question_does_not_write() -> None:
    terms = answer_terms("马来穿山甲的别称是双翼豆。[2] See SKF-6205.", QUESTION)
    assert [t.text for t in terms] == ["双翼"] or [t.text for t in terms] == ["双翼豆"]
    assert all(t.kind == "term" for t in terms)
    english = answer_terms("It ships a rollback command. [1]", "Which command undoes it?",
                           languages="all")
    assert "rollback" in [t.text for t in english]
    assert answer_terms("It ships a rollback command.", "Which command undoes it?") == []
