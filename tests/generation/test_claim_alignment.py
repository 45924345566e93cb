"""Claim alignment in the grounding check: a value written in a cited block, but only beside
another subject than the question's, is a mismatch (English and Chinese); correct answers in
other words pass; an answer that cites nothing is never grounded."""

from __future__ import annotations

from modrag_nodes.grounding import alignment
from modrag_nodes.grounding.alignment import (
    EvidenceReading,
    _names_document,
    misaligned,
    question_subjects,
)
from modrag_nodes.grounding.check import EMPTY, NO_CITATION, GroundingCheck, RefuseAnswer
from modrag_nodes.grounding.claims import extract_claims

from .conftest import cited_answer as _answer
from .conftest import scored

REGISTER = (
    "## Parts supply\n\n"
    "The contract HT-2024-0892 covers the spindle bearing SKF-6205. The contract HT-2024-0892 "
    "is signed\nwith Baltic Bearing Supply. It fixes the unit price for two years.\n\n"
    "The contract HT-2024-1107 covers the seal kit HS-40. The contract HT-2024-1107 is signed "
    "with\nKestrel Hydraulics. The seal kits are kept in the Hillcrest store, six at a time.")
PRESSES_ZH = ("液压机 PR-300 配有液压泵 HP-03 和密封件 HS-40。"
              "液压机 PR-200 配有液压泵 HP-05 和密封件 HS-50。更换密封件需要停机约四个小时。")


def _check(run_node, question: str, text: str, evidence, **params):
    out = run_node(GroundingCheck, params, answer=_answer(text, evidence, question))
    return out, run_node.ctx.details


def test_a_supplier_named_beside_another_part_is_a_mismatch(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    question = "Which company supplies the seal kit HS-40?"
    out, details = _check(run_node, question,
                          "The seal kit HS-40 is supplied by Baltic Bearing Supply. [1]", evidence)
    assert list(out) == ["ungrounded"]
    assert details["mismatches"] == [
        "block [1] names Baltic Bearing Supply beside HT-2024-0892 and SKF-6205, "
        "not beside HS-40"]
    claim = next(c for c in out["ungrounded"].claims if c.text == "Baltic Bearing Supply")
    assert (claim.verdict, claim.block, claim.about) == ("mismatch", 1, "HS-40")
    refusal = run_node(RefuseAnswer, {}, answer=[out["ungrounded"]])["answer"]
    assert refusal.text == ("The documents do not mention Baltic Bearing Supply in connection "
                            "with HS-40.")
    # the same check with alignment off lets the answer out: every name is in block [1]
    off, _ = _check(run_node, question,
                    "The seal kit HS-40 is supplied by Baltic Bearing Supply. [1]", evidence,
                    alignment=False)
    assert list(off) == ["grounded"]


def test_a_list_that_adds_another_suppliers_part_is_a_mismatch(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    out, details = _check(run_node, "What does Kestrel Hydraulics supply?",
                          "HS-40 seal kit and SKF-6205 spindle bearing. [1]", evidence)
    assert list(out) == ["ungrounded"]
    assert [c.text for c in out["ungrounded"].claims if c.verdict == "mismatch"] == ["SKF-6205"]
    assert "not beside Kestrel Hydraulics" in details["reason"]


def test_a_chinese_part_of_another_press_is_a_mismatch(run_node) -> None:
    evidence = [scored("press", 0.9, text=PRESSES_ZH)]
    question = "液压机 PR-300 配有哪个密封件？"
    out, details = _check(run_node, question, "液压机 PR-300 配有密封件 HS-50。[1]", evidence)
    assert list(out) == ["ungrounded"]
    assert details["mismatches"] == ["block [1] names HS-50 beside PR-200 and HP-05, "
                                     "not beside PR-300"]
    refusal = run_node(RefuseAnswer, {}, answer=[out["ungrounded"]])["answer"]
    assert refusal.text == "文档中没有提到PR-300与HS-50的关系。"
    right, _ = _check(run_node, question, "液压机 PR-300 配有密封件 HS-40。[1]", evidence)
    assert list(right) == ["grounded"]


def test_right_answers_in_other_words_pass(run_node) -> None:
    """The pairing may span two sentences joined by a contract number, or continue a
    sentence through "It"; the answer's verbs need not be the evidence's."""
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    for question, text in [
        ("Which company supplies the seal kit HS-40?",
         "Kestrel Hydraulics provides the HS-40 seal kits [1]."),
        ("Which contract covers the seal kit HS-40, and who signed it?",
         "HT-2024-1107, concluded with Kestrel Hydraulics [1]."),
        ("What does Kestrel Hydraulics supply?", "The seal kit HS-40 [1]."),
        ("For how long does the contract covering SKF-6205 hold?",
         "SKF-6205's contract holds for 2 years [1]."),
    ]:
        out, details = _check(run_node, question, text, evidence)
        assert list(out) == ["grounded"], (question, details["reason"])


def test_a_readme_value_must_come_from_the_package_asked_about(run_node) -> None:
    """Words that name a document (its file name) are the question's subject: a value
    from another package's README is a mismatch, the package's own passes."""
    evidence = [scored("bcrypt", 0.9, text="The default number of rounds is 12."),
                scored("passlib", 0.8, text="Changelog: rounds now default to 14.")]
    question = "How many rounds does bcrypt use by default?"
    assert [s.name for s in question_subjects(question, evidence, [])] == ["bcrypt"]
    wrong, details = _check(run_node, question, "bcrypt uses 14 rounds by default [2].",
                            evidence)
    assert list(wrong) == ["ungrounded"]
    assert details["mismatches"] == ["block [2] names 14 beside passlib, not beside bcrypt"]
    right, _ = _check(run_node, question, "It uses 12 rounds by default [1].", evidence)
    assert list(right) == ["grounded"]


def test_a_document_named_after_its_subject_speaks_of_it(run_node) -> None:
    """"Chroma" is what chromadb.md is about: its sentences need not repeat the name."""
    evidence = [scored("chromadb", 0.9, text="## Release Cadence\n\nWe release on Mondays."),
                scored("other", 0.8, text="Chroma is an embedding database.")]
    out, _ = _check(run_node, "On which weekday does Chroma release new versions?",
                    "Chroma releases on Mondays [1].", evidence)
    assert list(out) == ["grounded"]
    assert not _names_document("ch", "chromadb") and _names_document("chroma", "chromadb")
    assert _names_document("hugging face transformers", "transformers")
    assert not _names_document("hugging face transformers", "tokenizers")
    assert _names_document("pytorch", "torch") and not _names_document("pytorch", "tor")


def test_one_check_reads_the_evidence_once(run_node, monkeypatch) -> None:
    """Alignment, the event check and term alignment share one reading of the evidence's
    sentences, and the absent terms and alignment one of its document words."""
    read: list[str] = []
    sentences, words = alignment.evidence_sentences, alignment.document_words
    monkeypatch.setattr(alignment, "evidence_sentences",
                        lambda *a: read.append("sentences") or sentences(*a))
    monkeypatch.setattr(alignment, "document_words", lambda i: read.append("words") or words(i))
    evidence = [scored("acme", 0.9, text="Acme Corp was founded in 1998 in Oslo. It closed "
                                         "in 2010 in Bergen."),
                scored("other", 0.8, text="Kestrel Hydraulics was founded in 1975.")]
    out, details = _check(run_node, "When was Acme Corp founded?",
                          "Acme Corp was founded in 1998 in Oslo [1].", evidence,
                          term_alignment="all")
    assert list(out) == ["grounded"] and not details["mismatches"]
    assert sorted(read) == ["sentences", "words", "words"]


def test_no_subject_in_the_evidence_is_not_judged_here() -> None:
    """The question names HS-99, which no block writes: absent_terms decides, not alignment."""
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    located = [c.model_copy(update={"verdict": "cited", "block": 1})
               for c in extract_claims("The seal kit is supplied by Baltic Bearing Supply [1].")]
    assert misaligned(located, EvidenceReading("Who supplies HS-99?", evidence, [])) == []
    assert misaligned(located, EvidenceReading("Who supplies HS-40?", evidence, [])) != []


def test_an_answer_citing_nothing_is_never_grounded(run_node) -> None:
    """The check cites the blocks it verified (noted as added); what it cannot place, or an
    answer with nothing to verify, is sent back."""
    evidence = [scored("other", 0.9, text="The canteen opens at noon."),
                scored("contracts", 0.8, text=REGISTER)]
    question = "Which company supplies the seal kit HS-40?"
    out, details = _check(run_node, question,
                          "The seal kit HS-40 is supplied by Kestrel Hydraulics.", evidence)
    assert list(out) == ["grounded"] and details["citations_added"] == ["[2]"]
    assert out["grounded"].text == "The seal kit HS-40 is supplied by Kestrel Hydraulics. [2]"
    assert [c.ref for c in out["grounded"].citations] == ["2"]
    vague, details = _check(run_node, question, "A hydraulics firm supplies it.", evidence)
    assert list(vague) == ["ungrounded"] and details["reason"] == NO_CITATION
    # a wrong citation number is no citation either
    bad, _ = _check(run_node, question, "A hydraulics firm supplies it [7].", evidence)
    assert list(bad) == ["ungrounded"]
    refused, _ = _check(run_node, question, "The documents do not say.", evidence)
    assert list(refused) == ["grounded"]
    allowed, _ = _check(run_node, question, "A hydraulics firm supplies it.", evidence,
                        require_citation=False)
    assert list(allowed) == ["grounded"]


def test_a_name_of_code_must_be_written_as_the_answer_writes_it(run_node) -> None:
    """A flag or a `backticked` name is a claim: ``-installer`` is not ``--installer``; a
    span a citation was put into is not judged."""
    evidence = [scored("build", 0.9, text="Pass --installer to choose pip or uv.")]
    question = "Which option of build picks the installer?"
    assert [(c.kind, c.text) for c in extract_claims("Use `--installer` or -v [1].")] == [
        ("code", "--installer"), ("code", "-v")]
    wrong, details = _check(run_node, question, "The option is `-installer` [1].", evidence)
    assert list(wrong) == ["ungrounded"]
    assert details["reason"] == "the answer says -installer; no document says that"
    right, _ = _check(run_node, question, "The option is `--installer` [1].", evidence)
    assert list(right) == ["grounded"]
    assert [c.kind for c in extract_claims("It is `narwhals. [1]from_native`.")] == []


MACHINES = ("## Spindle vibration on CNC-A01\n\nCNC-A01 shows spindle vibration. Operators "
            "notice it as a humming noise at speeds above 8,000 rpm.")


def test_the_nearest_heading_naming_a_thing_says_what_a_section_is_about(run_node) -> None:
    """Under a document titled for two machines, a section headed for one speaks of that one:
    its value asked of the other is a mismatch, in a block after a heading line as in one
    whose heading is in its path; a heading naming nothing hides no title."""
    asked = "What is the maximum spindle speed of CNC-A02?"
    wrong = "The maximum spindle speed of CNC-A02 is 8,000 rpm. [1]"
    title = "Machining centres CNC-A01 and CNC-A02"
    for evidence in (
        [scored("machines", 0.9, text=MACHINES, title=title)],
        [scored("machines", 0.9, text=MACHINES.split("\n\n", 1)[1], title=title,
                heading_path=[title, "Spindle vibration on CNC-A01"])],
        [scored("machines", 0.9, text=f"# {title}\n\n{MACHINES}")],
    ):
        out, details = _check(run_node, asked, wrong, evidence)
        assert list(out) == ["ungrounded"], evidence[0].chunk.text
        assert details["mismatches"][0].startswith("block [1] names 8,000 rpm beside CNC-A01")
        right, _ = _check(run_node, "At which speed does CNC-A01 hum?",
                          "CNC-A01 hums above 8,000 rpm. [1]", evidence)
        assert list(right) == ["grounded"]
    plain = [scored("machines", 0.9, text="## Speeds\n\nOperators hear a hum above 8,000 rpm.",
                    title=title)]
    out, _ = _check(run_node, asked, wrong, plain)
    assert list(out) == ["grounded"]  # the title is all that says what the section is about


LIFE_ZH = ("清嘉庆九年(1804年)，祖籍福建的潘仕成出生。同治十二年(1873年)，潘仕成在广州逝世。")
LIFE_EN = "Pan Shicheng was born in 1804 in Guangzhou. Pan Shicheng died in 1873."


def test_a_date_of_the_opposite_event_is_a_mismatch(run_node) -> None:
    """A year the evidence gives for a birth, asked as a death (or the reverse), is refused
    with both events named; the right year, and a year beside no event word, pass."""
    zh = [scored("pan", 0.9, text=LIFE_ZH)]
    out, details = _check(run_node, "潘仕成逝世的时间是？", "潘仕成去世的时间是1804年[1]。", zh)
    assert list(out) == ["ungrounded"]
    assert details["mismatches"] == ["block [1] names 1804年 beside 出生, not beside 逝世"]
    right, _ = _check(run_node, "潘仕成逝世的时间是？", "潘仕成于1873年逝世[1]。", zh)
    assert list(right) == ["grounded"]
    en = [scored("pan", 0.9, text=LIFE_EN)]
    out, details = _check(run_node, "When did Pan Shicheng die?", "He died in 1873 [1].", en)
    assert list(out) == ["grounded"]
    out, details = _check(run_node, "When was Pan Shicheng born?", "In 1873 [1].", en)
    assert list(out) == ["ungrounded"]
    assert details["mismatches"] == ["block [1] names 1873 beside died, not beside born"]
    off, _ = _check(run_node, "When was Pan Shicheng born?", "In 1873 [1].", en,
                    event_check=False)
    assert list(off) == ["grounded"]
    span = [scored("pan", 0.9, text="Pan Shicheng (1804–1873) was a merchant.")]
    out, _ = _check(run_node, "When did Pan Shicheng die?", "In 1804 [1].", span)
    assert list(out) == ["grounded"]  # no event word: the check cannot tell, and says nothing


def _mismatched(query: str, pairs: list[tuple[str, str]]):
    from modrag_studio.engine.core.datatypes import Answer, Claim

    claims = [Claim(text=text, kind=kind, verdict="mismatch", block=1, about="盾柱木")
              for text, kind in pairs]
    return Answer(text="…", query=query, claims=claims)


def test_a_refusal_names_three_pairings_values_first_and_counts_the_rest(run_node) -> None:
    """An answer about another plant mismatches on many of its words: the refusal names the
    answer's names and values before its plain words, three at most, and counts the rest."""
    answer = _mismatched("盾柱木的名字是怎样得来的？", [
        ("天然", "term"), ("温泉", "term"), ("从那时起", "term"), ("480年", "date"),
        ("列奥尼达", "name")])
    refusal = run_node(RefuseAnswer, {}, answer=[answer])["answer"]
    assert refusal.text == ("文档中没有提到盾柱木与480年的关系、盾柱木与列奥尼达的关系、"
                            "盾柱木与天然的关系等5项。")
    assert run_node.ctx.details["named"][3:] == ["盾柱木与温泉的关系", "盾柱木与从那时起的关系"]
    english = _mismatched("How did the plant get its name?", [
        ("natural", "term"), ("Thermopylae", "name"), ("hot springs", "term"),
        ("soldiers", "term")])
    refusal = run_node(RefuseAnswer, {}, answer=[english])["answer"]
    assert refusal.text == (
        "The documents do not mention Thermopylae in connection with 盾柱木, natural in "
        "connection with 盾柱木, hot springs in connection with 盾柱木 and 1 more.")
    two = _mismatched("How did the plant get its name?",
                      [("natural", "term"), ("Leonidas", "name")])
    assert run_node(RefuseAnswer, {}, answer=[two])["answer"].text == (
        "The documents do not mention Leonidas in connection with 盾柱木, natural in connection "
        "with 盾柱木.")


def test_the_event_check_reads_dates_as_the_asked_value_check_does(run_node) -> None:
    """A year written in Chinese numerals with its era is a date the event check judges (as
    the asked-value check reads dates)."""
    zh = [scored("pan", 0.9, text=LIFE_ZH)]
    out, details = _check(run_node, "潘仕成逝世的时间是？", "潘仕成于清嘉庆九年逝世[1]。", zh)
    assert list(out) == ["ungrounded"], details
    assert "出生" in details["reason"] and "逝世" in details["reason"]



EMPRESSES_ZH = [
    "何皇后是晋穆帝的皇后。何皇后在元兴三年去世，谥号章皇后。",
    "王法慧是晋孝武帝的皇后。太元五年九月（380年10月24日），王法慧去世，谥号定，"
    "十一月（380年12月25日）葬于隆平陵。",
]


def test_a_chinese_question_asks_about_the_topic_before_its_de(run_node) -> None:
    """"何皇后的谥号是什么" asks about 何皇后, though no title or dictionary names her: a date
    written only beside 王法慧 is a mismatch; her own entry passes."""
    evidence = [scored("he", 0.9, text=EMPRESSES_ZH[0], title="何法倪"),
                scored("wang", 0.8, text=EMPRESSES_ZH[1], title="王法慧")]
    question = "何皇后的谥号是什么？"
    assert [s.name for s in question_subjects(question, evidence, [])] == ["何皇后"]
    out, details = _check(run_node, question, "她的谥号是定，380年12月25日葬于隆平陵。[2]",
                          evidence)
    assert list(out) == ["ungrounded"]
    assert details["mismatches"][0].endswith("not beside 何皇后")
    right, _ = _check(run_node, question, "何皇后在元兴三年去世，谥号章皇后。[1]", evidence)
    assert list(right) == ["grounded"]
    # no topic where the words before 的 are no name the evidence writes
    assert question_subjects("如今的谥号是什么？", evidence, []) == []


def test_an_answer_of_block_numbers_alone_is_never_grounded(run_node) -> None:
    """What a parser leaves of a reply that repeats the answer it was sent back for."""
    evidence = [scored("contracts", 0.9, text=REGISTER)]
    out, details = _check(run_node, "Which company supplies the seal kit HS-40?", "[1]",
                          evidence)
    assert list(out) == ["ungrounded"] and details["reason"] == EMPTY
