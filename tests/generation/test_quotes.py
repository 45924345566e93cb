"""Supporting quotes: the cited evidence's own sentences that state what the answer says,
appended verbatim; none for a refusal, an answer no cited sentence supports, or a sentence
the answer copies whole."""

from __future__ import annotations

from modrag_nodes.grounding.quotes import SupportingQuotes, pick_quotes
from modrag_studio.engine.core.datatypes import Answer, Query

from .conftest import cited_answer as _answer
from .conftest import scored

TREE = ("纽西兰鸡毛松是新西兰特有的松科植物。树高可达55米，树干直径达1米，有巨大树基支撑。"
        "其叶螺旋状排列，幼树的叶呈尖锥状。成熟的树的叶则呈鳞状，均匀分布于整个枝上。")
PUMPS = ("The coolant pump CP-12 is serviced every 3 months. The lubrication pump LP-07 is "
         "serviced every 500 operating hours. Work orders are raised one week before.")


def test_a_restated_answer_gets_the_documents_sentence_verbatim(run_node) -> None:
    evidence = [scored("other", 0.9, text="与本题无关的段落。"), scored("tree", 0.8, text=TREE)]
    answer = _answer("纽西兰鸡毛松的高度可达55米。[2]", evidence, "纽西兰鸡毛松有多高？")
    out = run_node(SupportingQuotes, {}, answer=answer)["answer"]
    assert out.text == ("纽西兰鸡毛松的高度可达55米。[2]\n\n"
                        "> “树高可达55米，树干直径达1米，有巨大树基支撑。” [2]")
    assert out.citations == answer.citations
    assert run_node.ctx.details["quotes"] == [
        {"block": 2, "text": "树高可达55米，树干直径达1米，有巨大树基支撑。"}]


def test_neighbouring_sentences_of_one_block_are_one_quote() -> None:
    answer = "纽西兰鸡毛松的叶子螺旋状排列，幼树呈尖锥状；成熟的树的叶呈鳞状。[1]"
    quotes = pick_quotes(answer, "纽西兰鸡毛松的树叶是什么形状的？", {1: TREE})
    assert [q.text for q in quotes] == [
        "其叶螺旋状排列，幼树的叶呈尖锥状。成熟的树的叶则呈鳞状，均匀分布于整个枝上。"]


def test_only_cited_blocks_are_quoted_and_the_question_words_do_not_count() -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS), scored("tree", 0.8, text=TREE)]
    # the answer's own words ("3 months") are in block 1, which it does not cite
    answer = _answer("It is serviced every 3 months [2].", evidence,
                     "How often is the coolant pump CP-12 serviced?")
    assert pick_quotes(answer.text, answer.query,
                       {2: TREE}) == []
    # a sentence that shares only the question's words is no support
    assert pick_quotes("CP-12 is a coolant pump [1].", "Which pump is CP-12, the coolant pump?",
                       {1: PUMPS}) == []


def test_a_quote_holds_a_number_of_the_answer() -> None:
    town = "瓦士本市的总面积为16.0平方公里，其中10.2平方公里为陆地面积。"
    answer, question = "西施故里旅游区的总面积是1.44平方公里。[2]", "西施故里旅游区的总面积是多少？"
    assert pick_quotes(answer, question, {2: town}) == []
    right = "旅游区已建成一个横跨浣江两岸、总面积为1.44平方公里的人文风景旅游区。"
    assert [q.text for q in pick_quotes(answer, question, {2: town + right})] == [right]


def test_a_copied_sentence_is_not_quoted_again_and_a_refusal_gets_no_quote(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS)]
    copied = _answer("The lubrication pump LP-07 is serviced every 500 operating hours. [1]",
                     evidence, "How often is LP-07 serviced?")
    assert run_node(SupportingQuotes, {}, answer=copied)["answer"].text == copied.text
    refusal = Answer(text="The documents do not say.", evidence=evidence, fallback=True)
    assert run_node(SupportingQuotes, {}, answer=refusal)["answer"].text == refusal.text
    assert run_node.ctx.details["quotes"] == []


def test_the_question_port_and_the_quote_format(run_node) -> None:
    evidence = [scored("pumps", 0.9, text=PUMPS)]
    answer = _answer("Every 500 hours of operation [1].", evidence)
    out = run_node(SupportingQuotes, {"quote_format": "[{block}] {quote}"}, answer=answer,
                   query=Query(text="How often is LP-07 serviced?"))["answer"]
    assert out.text.endswith(
        "\n\n[1] The lubrication pump LP-07 is serviced every 500 operating hours.")


def test_a_quote_is_marked_as_appended_so_metrics_read_the_models_own_words(run_node) -> None:
    """The headline reads the model's words: a wrong answer whose quote holds the gold span
    scores 0 in its own words and 1 only with the quote, reported apart."""
    from modrag_studio.evaluation.answer_eval import score_question
    from modrag_studio.evaluation.evalset import EvalQuestion

    evidence = [scored("other", 0.9, text="与本题无关的段落。"), scored("tree", 0.8, text=TREE)]
    asked = "纽西兰鸡毛松有多高？"
    wrong = _answer("纽西兰鸡毛松的树干直径达1米，高度55厘米。[2]", evidence, asked)
    out = run_node(SupportingQuotes, {}, answer=wrong)["answer"]
    assert out.appended and out.own_text == wrong.text
    assert out.text == wrong.text + out.appended[0]
    question = EvalQuestion(id="t", question=asked, expected_facts=[["树高可达55米"]])
    row = score_question(question, out, None, 1.0)
    assert row.metrics["fact_recall"] == 0.0
    assert row.metrics["fact_recall_with_quotes"] == 1.0
    unquoted = score_question(question, wrong, None, 1.0)
    assert "fact_recall_with_quotes" not in unquoted.metrics
