"""What an answer is about: a key term of the question that no block contains, stated by the
answer as its own words, and an answer about another entity of the asked one's type (from
the corpus dictionary), both refused; the word naming the answer's type, a refusal's own
words and an answer that names its subject are left alone."""

from __future__ import annotations

import json

import pytest

from modrag_nodes.generation.prompt import PromptBuilder
from modrag_nodes.grounding.check import GroundingCheck, RefuseAnswer
from modrag_nodes.grounding.claims import compound_terms, dictionary_entities
from modrag_nodes.grounding.subjects import (
    answer_type_words,
    missing_asked_value,
    repeats_question,
    restated_terms,
    swapped_subjects,
    type_words,
    typed_entities,
)
from modrag_studio.engine.core.datatypes import Query

from .conftest import cited_answer as _answer
from .conftest import scored

PEOPLE = ("At Norvale, Ingrid Holm is the head of IT. Zhang Min is the head of maintenance "
          "engineering. Zhang Min is the mentor of Wang Fang.")
CONTRACTS = ("The contract HT-2023-0415 covers the hydraulic pump HP-03. It is signed with "
             "Lumen Industrial Services.")
CANTEEN = "The canteen at the Eastbank Plant opens at 06:00."
CANTEEN_ZH = "东岸工厂的食堂早上六点开门。两个工厂之间每天有四班通勤班车。"


@pytest.fixture
def dictionary(tmp_path):
    path = tmp_path / "kg.json"
    path.write_text(json.dumps({"entities": [
        {"name": "Eastbank Plant", "type": "Site", "aliases": ["东岸工厂", "Eastbank"]},
        {"name": "Hillcrest Plant", "type": "Site", "aliases": ["山顶工厂", "Hillcrest"]},
        {"name": "Zhang Min", "type": "Person", "aliases": ["张敏"]},
        {"name": "Wang Fang", "type": "Person", "aliases": ["王芳"]},
    ]}, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_an_absent_word_the_answer_states_is_refused_and_named(run_node) -> None:
    evidence = [scored("people", 0.9, text=PEOPLE)]
    answer = _answer("The head of purchasing at Norvale is Ingrid Holm [1].", evidence,
                     "Who is the head of purchasing?")
    out = run_node(GroundingCheck, {}, answer=answer)
    # the absent word is restated as the question's role phrase that holds it
    assert list(out) == ["absent"]
    assert run_node.ctx.details["restated"] == ["head of purchasing"]
    refusal = run_node(RefuseAnswer, {}, answer=[out["absent"]])["answer"]
    assert refusal.text == "The documents do not mention “purchasing”."
    # under 'ask' the first attempt is retried with the word named, the retry refused
    first = run_node(GroundingCheck, {"absent_terms": "ask"}, answer=answer)
    assert list(first) == ["ungrounded"]
    again = run_node(GroundingCheck, {"absent_terms": "ask"}, answer=answer, iteration=1)
    assert list(again) == ["absent"]
    assert list(run_node(GroundingCheck, {"restated_terms": False}, answer=answer)) == [
        "grounded"]


def test_the_word_naming_the_answers_type_is_not_a_restated_claim(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=CONTRACTS)]
    question = "Which company services the hydraulic pump HP-03 under contract?"
    answer = _answer("The company that services HP-03 is Lumen Industrial Services [1].",
                     evidence, question)
    assert answer_type_words(question) == {"company"}
    assert list(run_node(GroundingCheck, {}, answer=answer)) == ["grounded"]
    assert answer_type_words("物流服务使用哪家货运公司？") == {"货运公司"}


def test_a_refusal_naming_the_absent_word_is_not_a_statement_of_it() -> None:
    assert restated_terms(["purchasing"], "The documents do not mention purchasing.") == []
    assert restated_terms(["首席执行官"], "文档中没有提到首席执行官。") == []
    assert restated_terms(["首席执行官"], "诺维尔的首席执行官是王芳。") == ["首席执行官"]


@pytest.mark.parametrize("question, text, evidence", [
    ("When does the canteen at the Hillcrest Plant open?",
     "The canteen at the Eastbank Plant opens at 06:00 [1].", CANTEEN),
    ("山顶工厂的食堂几点开门？", "东岸工厂的食堂早上六点开门。[1]", CANTEEN_ZH),
])
def test_an_answer_about_another_site_is_refused(run_node, dictionary, question, text,
                                                 evidence) -> None:
    blocks = [scored("canteen", 0.9, text=evidence)]
    out = run_node(GroundingCheck, {"aliases_file": dictionary},
                   answer=_answer(text, blocks, question))
    assert list(out) == ["absent"]
    assert run_node.ctx.details["swapped"] == [["Hillcrest Plant", "Eastbank Plant"]]
    assert run_node.ctx.details["reason"] == (
        "the question asks about Hillcrest Plant; the answer speaks of Eastbank Plant")
    refusal = run_node(RefuseAnswer, {}, answer=[out["absent"]])["answer"]
    assert refusal.fallback is True and refusal.text.startswith(("The documents do not",
                                                                 "文档中没有"))
    assert list(run_node(GroundingCheck, {"aliases_file": dictionary, "subject_check": False},
                         answer=_answer(text, blocks, question))) == ["grounded"]


def test_answers_naming_their_subject_or_only_the_asked_for_entity_pass(dictionary) -> None:
    entities = typed_entities(dictionary_entities(dictionary))
    assert {e.type for e in entities} == {"Site", "Person"}
    # the asked-for person is of the subject's type; the answer restates no other term
    assert swapped_subjects("Who mentors Wang Fang?", "Zhang Min [1].", entities) == []
    assert swapped_subjects("Who mentors Wang Fang?", "Zhang Min mentors Wang Fang [1].",
                            entities) == []
    assert swapped_subjects("When does the Eastbank canteen open?",
                            "The canteen at the Eastbank Plant opens at 06:00.", entities) == []
    assert swapped_subjects("When does the canteen open?", "At 06:00.", entities) == []


def test_the_subject_checks_are_in_the_grounding_checks_cache_key() -> None:
    from modrag_studio.engine.cache.code_identity import defining_modules

    assert "modrag_nodes.grounding.subjects" in set(defining_modules(GroundingCheck))


def test_an_answer_that_repeats_the_question_is_sent_back(run_node) -> None:
    evidence = [scored("db", 0.9, text="库存服务依赖仓储数据库。报表服务读取仓储数据库。")]
    question = "哪些服务依赖仓储数据库？"
    echo = _answer("哪些服务依赖仓储数据库？[1]、[2]", evidence, question)
    assert list(run_node(GroundingCheck, {}, answer=echo)) == ["ungrounded"]
    assert run_node.ctx.details["reason"] == "the answer repeats the question"
    right = _answer("库存服务和报表服务依赖仓储数据库。[1]", evidence, question)
    assert list(run_node(GroundingCheck, {}, answer=right)) == ["grounded"]
    assert repeats_question("Which services use the DB?", "which services use the db")
    assert not repeats_question("Which services use the DB?", "The Order Service uses the DB.")


def test_a_chinese_type_word_counts_by_its_modifier(run_node) -> None:
    """"哪家货运公司": 公司 names the answer's type; 货运 (freight) is what is asked about."""
    evidence = [scored("it", 0.9,
                       text="物流服务通过承运商接口发送运单。承运商接口使用消息队列 MQ-02。")]
    question = "物流服务通过承运商接口使用哪家货运公司？"
    invented = _answer("物流服务通过承运商接口使用MQ-02货运公司。[1]", evidence, question)
    out = run_node(GroundingCheck, {}, answer=invented)
    assert list(out) == ["absent"] and run_node.ctx.details["restated"] == ["货运公司"]
    # the head alone (公司) is the type: an answer naming a company is not refused for it
    known = [scored("c", 0.9,
                    text="液压泵 HP-03 由红隼液压维护。红隼液压的合同编号是 HT-2023-0415。")]
    named = _answer("维护 HP-03 的公司是红隼液压。[1]", known, "哪家公司维护液压泵 HP-03？")
    assert list(run_node(GroundingCheck, {}, answer=named)) == ["grounded"]


PURCHASING = ("Purchasing keeps a register of the framework contracts. The contract HT-2024-0892 "
              "covers the spindle bearing SKF-6205. It is signed with Baltic Bearing "
              "Supply and fixes the unit price for two years.")


def test_a_role_phrase_whose_words_are_written_apart_is_absent(run_node) -> None:
    """"head of purchasing": the evidence says "the head of IT" and "Purchasing keeps…", never
    the phrase; an answer pinning the role on a person is refused and names the phrase."""
    evidence = [scored("people", 0.9, text=PEOPLE), scored("contracts", 0.8, text=PURCHASING)]
    question = "Who is the head of purchasing at Norvale?"
    answer = _answer("The head of purchasing at Norvale is Ingrid Holm [1].", evidence, question)
    out = run_node(GroundingCheck, {}, answer=answer)
    assert list(out) == ["absent"] and run_node.ctx.details["restated"] == ["head of purchasing"]
    refusal = run_node(RefuseAnswer, {}, answer=[out["absent"]])["answer"]
    assert refusal.text == "The documents do not mention “head of purchasing”."
    # the phrase the evidence writes passes; "of the" is no role phrase
    right = _answer("Zhang Min is the head of maintenance engineering [1].", evidence,
                    "Who is the head of maintenance engineering?")
    assert list(run_node(GroundingCheck, {}, answer=right)) == ["grounded"]
    assert compound_terms("What is the unit price of the spindle bearing SKF-6205?") == []
    assert compound_terms("What is the maximum spindle speed of CNC-A02?") == []


def test_a_price_question_answered_without_a_price_is_sent_back(run_node) -> None:
    evidence = [scored("contracts", 0.9, text=PURCHASING)]
    question = "What is the unit price of the spindle bearing SKF-6205?"
    dodge = _answer("The contract HT-2024-0892 fixes the unit price for two years. [1]",
                    evidence, question)
    out = run_node(GroundingCheck, {}, answer=dodge)
    assert list(out) == ["ungrounded"]
    reason = "the question asks for a price; the answer states none"
    assert run_node.ctx.details["reason"] == reason and out["ungrounded"].check_reason == reason
    # the retry prompt says why; after the retry the refusal names nothing it cannot name
    retry = PromptBuilder.Params(feedback_instruction="{feedback}\nBecause {reason}.")
    prompt = run_node(PromptBuilder, retry.model_dump(), query=Query(text=question),
                      evidence=evidence, feedback=out["ungrounded"])["prompt"]
    assert f"Because {reason}." in prompt.messages[-1].content
    refusal = run_node(RefuseAnswer, {}, answer=[out["ungrounded"]])["answer"]
    assert refusal.text == "The documents do not answer this question."
    assert list(run_node(GroundingCheck, {"asked_value": False}, answer=dodge)) == ["grounded"]
    # claims an uncited block states are named only when the check sent them back (scope
    # 'cited'), not when the answer went back for the date it does not give
    two = [scored("people", 0.9, text=PEOPLE), *evidence]
    late = _answer("HT-2024-0892 was signed with Baltic Bearing Supply [1].", two,
                   "When was the contract HT-2024-0892 signed?")
    texts = {}
    for scope in ("evidence", "cited"):
        sent = run_node(GroundingCheck, {"scope": scope, "fix_citations": False},
                        answer=late)["ungrounded"]
        texts[scope] = run_node(RefuseAnswer, {}, answer=[sent])["answer"].text
    assert texts == {"evidence": "The documents do not answer this question.",
                     "cited": "The documents do not mention HT-2024-0892, Baltic Bearing "
                              "Supply."}


@pytest.mark.parametrize("question, text, missing", [
    ("What is the unit price of SKF-6205?", "It fixes the unit price for two years.", "a price"),
    ("What is the unit price of SKF-6205?", "It costs EUR 12.50 per piece.", ""),
    ("SKF-6205 的单价是多少？", "单价为每件 35 元。", ""),
    ("How many people does Norvale employ?", "Norvale employs 640 people.", ""),
    ("Within how many days is it delivered?", "Within five working days.", ""),
    ("How many people does Norvale employ?", "Norvale is a manufacturer.", "a number"),
    ("工厂有几台压机？", "工厂有两台压机。", ""),
    ("Who mentors Wang Fang?", "Zhang Min.", ""),
    ("When does the contract HT-2024-1107 expire?",
     "The contract HT-2024-1107 expires three months before it expires.", "a date"),
    ("When does the contract HT-2024-1107 expire?", "It expires on 31 March 2027.", ""),
    ("When does the canteen open?", "At 06:00.", ""),
    ("山顶工厂的食堂几点开门？", "食堂早上六点开门。", ""),
    ("合同什么时候到期？", "合同在三个月后审查。", "a date"),
    ("When is the pump LP-07 serviced?", "Every 500 operating hours.", ""),
    ("蓝帐汗国形成于什么时候？", "蓝帐汗国形成于1227年前后。[2]", ""),
    ("When was the abbey founded?", "It was founded in 1132. [1]", ""),
    ("When was the abbey founded?", "In the 12th century. [1]", ""),
    ("乡里组织什么时候开始瓦解的？", "乡里组织在唐末的混战中瓦解。[2]", ""),
    ("这座寺庙是什么时候建成的？", "它建于清代。[1]", ""),
    ("这座寺庙是什么时候建成的？", "它由僧人唐明建成。[1]", "a date"),
    ("When did the guild start to decline?", "In the 1870s. [1]", ""),
    ("What flag do the wheels declare?", "The full API works on 3.14t. [1]",
     "a name of code (a flag, option, command or variable)"),
    ("What flag do the wheels declare?", "They declare `Py_MOD_GIL_NOT_USED`. [1]", ""),
    ("Which environment variables skip the C build?", "MULTIDICT_NO_EXTENSIONS=1 [1]", ""),
    ("Which option picks the installer?", "The --installer option [2].", ""),
    ("Which command starts the server?", "Run transformers.serve() [2].", ""),
    ("Which command starts the server?", "It is started from the shell [2].",
     "a name of code (a flag, option, command or variable)"),
    # an amount asked by the first question word: a citation is no number
    ("Which compression level does joblib.dump use?", "It uses zlib and gzip. [3]",
     "a number"),
    ("Which compression level does joblib.dump use?", "Level 3 [1].", ""),
    ("How often is the pump serviced?", "It is serviced monthly [1].", ""),
    ("空压机 AC-05 多久保养一次？", "AC-05 is serviced every month [1].", ""),
    ("How long does an end mill last?", "It lasts a long time [1].", "a number"),
    ("纽西兰鸡毛松有多高？", "它是乔木。[1]", "a number"),
    ("纽西兰鸡毛松有多高？", "它高达二十五米。[1]", ""),
    ("Which attribute tells you how many edits were made?", "fuzzy_counts [1].", ""),
])
def test_the_value_asked_for(question, text, missing) -> None:
    assert missing_asked_value(question, text) == missing


def test_an_entity_type_of_the_dictionary_is_no_key_term(run_node, dictionary) -> None:
    """"the person responsible": documents write the person's name, never "person"."""
    evidence = [scored("people", 0.9, text=PEOPLE)]
    question = "Who is the mentor of the person Wang Fang?"
    answer = _answer("The mentor of the person Wang Fang is Zhang Min [1].", evidence, question)
    # a single English word is a restated term only with restated_words
    assert list(run_node(GroundingCheck, {}, answer=answer)) == ["grounded"]
    words = {"restated_words": True}
    assert list(run_node(GroundingCheck, words, answer=answer)) == ["absent"]  # no dictionary
    out = run_node(GroundingCheck, {**words, "aliases_file": dictionary}, answer=answer)
    assert list(out) == ["grounded"] and out["grounded"].absent_terms == []
    assert type_words(dictionary_entities(dictionary)) == ["person", "persons", "site", "sites"]


def test_a_chinese_questions_verbs_need_not_be_written_but_its_nouns_must() -> None:
    """Documents restate how a question asks (担任 as 任, 擅长 as 善于); what it asks about
    (首席执行官, a freight company) must be written."""
    from modrag_nodes.grounding.claims import Block, absent_terms

    def absent(question: str, text: str) -> list[str]:
        return absent_terms(question, [Block.of(text)], [text], [])

    bio = "1992年4月，任中共天津市大港区委副书记、代区长。佩内塔善于稳定的底线相持与网前战术。"
    assert absent("1992年4月，罗保铭担任什么职务？", "罗保铭" + bio) == ["职务"]
    assert absent("佩内塔擅长什么战术？", bio) == []
    assert absent("诺维尔的首席执行官是谁？", "诺维尔的总经理是张敏。") == ["首席", "执行官"]


def test_a_refusal_names_absent_words_only_when_they_are_why(run_node) -> None:
    """An answer sent back for the number it does not give is refused in plain words, not
    with a word of the question the documents happen to lack."""
    evidence = [scored("joblib", 0.9, text="Joblib compresses with zlib or gzip.")]
    question = "Which compression level does joblib.dump use when you pass compress=True?"
    answer = _answer("Joblib uses zlib and gzip. [1]", evidence, question)
    out = run_node(GroundingCheck, {}, answer=answer)
    assert list(out) == ["ungrounded"]
    sent = out["ungrounded"]
    assert sent.check_reason == "the question asks for a number; the answer states none"
    assert "pass" in sent.absent_terms
    refusal = run_node(RefuseAnswer, {}, answer=[sent])["answer"]
    assert refusal.text == "The documents do not answer this question."
    why = sent.model_copy(update={"check_reason": "the question asks about “pass”; no "
                                                  "document mentions it"})
    assert run_node(RefuseAnswer, {}, answer=[why])["answer"].text == (
        "The documents do not mention “pass”.")
