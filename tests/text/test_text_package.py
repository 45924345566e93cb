"""The text package: one language threshold, words and CJK bigrams, quantities with units,
stop words from the shipped lists."""

from __future__ import annotations

import sys

import pytest

from modrag_nodes.text.normalise import normalise, normalise_map
from modrag_nodes.text.numbers import frequencies, parse_number, quantities
from modrag_nodes.text.scripts import LATIN_LETTERS, cjk_count, han_count, language_of
from modrag_nodes.text.stopwords import english_stopwords, question_stop_words, word_list
from modrag_nodes.text.words import (
    WORD_CHARACTERS,
    contains_phrase,
    split,
    token_count,
    word_count,
    words,
)


def test_one_language_threshold():
    # Chinese that names an English company is Chinese; English that quotes a name is English
    assert language_of("由 Kestrel Hydraulics 合同供应") == "zh"
    assert language_of("The answer is 鸡毛松 [1]") == "en"
    assert language_of("空压机 AC-05 多久保养一次？") == "zh"
    assert language_of("") == "en"
    # three Chinese characters against two Latin words: 3 > 1.5 * 2 is false, 4 > 3 is true
    assert language_of("abc def 一二三") == "en"
    assert language_of("abc def 一二三四") == "zh"


def test_scripts_count_chinese_and_the_other_cjk_scripts():
    assert han_count("カメラ 相机 𫚭") == 3  # supplementary-plane ideographs count
    assert cjk_count("カメラ 相机") == 5


def test_words_are_latin_words_and_chinese_bigrams_in_reading_order():
    assert words("ＨＳ-40 每2,000小时 check") == ["hs-40", "每", "2000", "小时", "check"]
    assert words("纽西兰鸡毛松") == ["纽西", "西兰", "兰鸡", "鸡毛", "毛松"]
    assert words("树 high") == ["树", "high"]
    assert words("鸡毛松 a", han="chars") == ["鸡", "毛", "松", "a"]


def test_split_takes_its_patterns():
    import re

    assert split("ab_cd 中文", word=re.compile(r"[^\W_]+")) == ["ab", "cd", "中文"]


def test_latin_letters_and_word_characters():
    # a proper name's words: letters only, either case, digits and CJK left out
    assert LATIN_LETTERS.findall("Ingrid Holm's HS-40 鸡毛松") == ["Ingrid", "Holm", "s", "HS"]
    # the regex tokenizer's default token: any script, digits and underscores kept
    assert WORD_CHARACTERS.findall("snake_case v2, 鸡毛松!") == ["snake_case", "v2", "鸡毛松"]


def test_token_count_counts_each_cjk_character():
    assert token_count("HS-40 每两千小时 检查。") == 1 + 5 + 3


def test_word_count_counts_two_chinese_characters_as_a_word():
    assert word_count("HS-40 needs 纽西兰鸡毛松") == 2 + 3
    assert word_count("树高") == 1 and word_count("树高可") == 2


def test_normalise_and_its_map():
    assert normalise("  Ｐｕｍｐ  2,000\thours ") == "pump 2000 hours"
    text, index = normalise_map("Ａ 1,000")
    assert text == "a 1000" and [index[0], index[-1]] == [0, 6]


def test_quantities_read_every_spelling():
    assert quantities("500 hours") == quantities("500小时") == quantities("５００ h") == [
        (500.0, "h")]
    assert quantities("四个小时") == [(4.0, "h")]
    assert parse_number("二十三") == 23.0 and parse_number("twelve") == 12.0
    assert frequencies("每3个月") == {(3.0, "month")}
    assert frequencies("the last two years") == set()


def test_word_lists_are_part_of_the_code_identity(tmp_path, monkeypatch):
    """An edited word list re-runs the nodes that read it, as edited code does."""
    import importlib
    from pathlib import Path

    from modrag_nodes.text import stopwords
    from modrag_studio.engine.cache.code_identity import _module_identity

    shipped = {p.name for p in Path(stopwords.__file__).parent.glob("*.txt")}
    assert set(stopwords.__data_files__) == shipped
    (tmp_path / "lists_mod.py").write_text('__data_files__ = ("words.txt",)\n')
    (tmp_path / "words.txt").write_text("alpha\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("lists_mod")
    try:
        before = _module_identity("lists_mod")
        (tmp_path / "words.txt").write_text("alpha beta\n")
        assert _module_identity("lists_mod") != before
    finally:
        sys.modules.pop("lists_mod", None)


def test_stop_words_come_from_the_word_lists():
    assert {"the", "of", "is", "and"} <= english_stopwords()
    assert "upstream" in question_stop_words() and "upstream" not in english_stopwords()
    assert {"什么", "上游"} <= word_list("question_words_zh")
    assert "#" not in "".join(word_list("question_words_en"))  # comments are not words
    with pytest.raises(ValueError, match="no word list 'stopwords_xx'"):
        word_list("stopwords_xx")


def test_a_number_is_found_whole_not_as_part_of_a_decimal():
    """A fact "3%" is not in "10.3%", "5" not in "0.5", "3" not in "3.5"; "3%" stands alone."""
    assert not contains_phrase("growth was 10.3% last year", "3%")
    assert not contains_phrase("it takes 0.5 s", "5")
    assert not contains_phrase("version 3.5 is out", "3")
    assert contains_phrase("growth was 3%, then 4.", "3%")
    assert contains_phrase("it holds 3, 4 or 5 items", "3")
    assert contains_phrase("in 2024. then", "2024")
