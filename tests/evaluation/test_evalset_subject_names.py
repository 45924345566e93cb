"""The subjects a Chinese question may name (the unnamed_subject check): a two-character
title, a title in 《》, Latin names and the items of a list of names, as CMRC records write
them; a lone Latin word, a title the text does not give and a question naming nothing stay
unnamed."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.reading.content import (
    names_any,
    question_subjects,
    subject_terms,
)


def _record(doc: str, title: str, text: str) -> Chunk:
    """A CMRC record as the loader gives it: one chunk titled after its article."""
    return Chunk(chunk_id=f"{doc}#0", doc_id=doc, text=text, metadata={"title": title})


def _names(question: str, chunk: Chunk) -> bool:
    return names_any(question, question_subjects([chunk], "zh"))


def test_a_two_character_chinese_title_is_a_subject():
    chunk = _record("TRIAL_920", "牛佬",
                    "牛佬，香港漫画家，原名文启明，1961年10月15日出生，生肖属牛，"
                    "已婚无子女，少年时成长于蓝田廉租屋。")
    assert subject_terms(chunk) == ["牛佬"]
    assert _names("牛佬的出生日期是什么？", chunk)


def test_a_title_in_book_marks_is_a_subject():
    chunk = _record("TRIAL_632", "海梅·雷耶斯",
                    "海梅·雷耶斯（）是DC漫画公司的一个虚拟人物。该人物首先出现于"
                    "《无限危机 #3》（2006年二月），是第三代蓝甲虫。")
    assert _names("《无限危机 #3》的出版日期是什么？", chunk)


def test_latin_names_in_chinese_text_are_subjects():
    dairy = _record("TRIAL_359", "冰雪皇后",
                    "第一间Dairy Queen餐厅位于美国伊利诺州乔利埃特，是由谢普·诺布"
                    "在1940年6月22日开设。")
    assert _names("Dairy Queen餐厅的开业日期是什么？", dairy)
    plotosaurus = _record("TRIAL_788", "浮龙属",
                    "第二个种是\"P. tuckeri\"，在1937年发现。"
                    "\"P. tuckeri\"的体长约13公尺。")
    assert _names("P. tuckeri的体长约多少公尺？", plotosaurus)


def test_the_items_of_a_list_of_names_are_subjects():
    chunk = _record("TRIAL_639", "天生三桥",
                    "核心保护区约22平方公里，包括天龙桥、青龙桥、黑龙桥、青龙天坑、"
                    "神鹰天坑。从天龙桥上端到黑龙桥下端，直线距离仅有1500米。")
    assert _names("从天龙桥上端到黑龙桥下端，直线距离仅有多少米？", chunk)
    assert _names("黑龙桥在哪里？", chunk)  # the last bridge of its kind, before the 天坑


def test_a_lone_latin_word_and_a_title_the_text_does_not_give_name_nothing():
    single = _record("TRIAL_554", "Real world",
                    "《real world》为日本音乐团体EXILE的第15张单曲。"
                    "因而获得EXILE第一次的Oricon公信榜单曲榜第1名。")
    assert not _names("EXILE第一次的Oricon公信榜单曲榜第几名？", single)
    anime = _record("TRIAL_126", "宇宙奇兵",
                    "《宇宙奇兵》是Studio Pierrot所制作的机器人动画；1996年木乔"
                    "心动频道曾以「星际战警」之名英文重播。")
    assert not _names("《星际战警》的播出年份是哪一年？", anime)


def test_a_question_naming_nothing_stays_unnamed():
    chunk = _record("TRIAL_697", "小榄精神病治疗中心",
                    "小榄精神病治疗中心是香港一所高度设防院所，位于"
                    "新界屯门区小榄康辉路。2013年6月21日凌晨1时许，一名男院友"
                    "被职员发现吊颈自杀。")
    assert not _names("事件发生的时间是什么？", chunk)
    assert _names("小榄精神病治疗中心的事件发生在什么时间？", chunk)
