"""Tokenizer contract: regex words, stop words, stemming, jieba words and CJK bigrams."""

from __future__ import annotations

import pytest

from modrag_nodes.retrieval.bm25 import BM25IndexParams
from modrag_nodes.retrieval.tokenizers import Tokenizer, english_stopwords


def test_regex_lowercases_words_and_drops_punctuation():
    assert Tokenizer().tokenize("The Cats' DNA, (sequenced) in 2020!") == [
        "the", "cats", "dna", "sequenced", "in", "2020"]


def test_lowercase_can_be_turned_off():
    assert Tokenizer(lowercase=False).tokenize("BRCA1 gene") == ["BRCA1", "gene"]


def test_stopwords_and_stemming():
    tok = Tokenizer(stopwords="english", stemmer="english")
    assert tok.tokenize("The running of the cells is studied") == ["run", "cell", "studi"]
    assert {"the", "of", "is", "and"} <= english_stopwords()


def test_default_pattern_is_the_one_saved_graphs_hold():
    assert Tokenizer().pattern == BM25IndexParams().pattern == r"\w+"


def test_custom_pattern_and_bad_pattern():
    assert Tokenizer(pattern=r"[a-z]+").tokenize("covid-19 cases") == ["covid", "cases"]
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Tokenizer(pattern="(").tokenize("x")


def test_bigrams_over_cjk_runs_and_words_elsewhere():
    tokens = Tokenizer(kind="bigram").tokenize("泡泡战士 is a Nexon game，由韩国开发")
    assert tokens == ["泡泡", "泡战", "战士", "is", "a", "nexon", "game", "由韩", "韩国",
                      "国开", "开发"]
    assert Tokenizer(kind="bigram").tokenize("水 and 火") == ["水", "and", "火"]


def test_jieba_words_without_punctuation():
    tokens = Tokenizer(kind="jieba").tokenize("玩家以水枪泡封敌人。Nexon开发！")
    assert "玩家" in tokens and "水枪" in tokens and "nexon" in tokens
    assert not {"。", "！", " "} & set(tokens)


def test_tokenizer_is_a_serialisable_contract():
    tok = Tokenizer(kind="regex", stopwords="english", stemmer="porter")
    again = Tokenizer.model_validate_json(tok.model_dump_json())
    assert again == tok and again.tokenize("Walking dogs") == tok.tokenize("Walking dogs")
