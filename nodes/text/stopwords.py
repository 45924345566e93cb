"""Stop words and question words, loaded from the word lists beside this module (one or more
words a line, ``#`` starts a comment): ``stopwords_en.txt`` (English function words),
``question_words_en.txt`` and ``question_words_zh.txt`` (the words a question asks with,
never what it asks about), ``function_words_en.txt`` (words a named mention never starts or
ends with), ``asking_words_en.txt`` and ``asking_words_zh.txt`` (the words of a generated
question that say how it asks)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent
#: The lists, part of this module's code identity (a cached result never outlives an edit).
__data_files__ = ("stopwords_en.txt", "question_words_en.txt", "question_words_zh.txt",
                  "function_words_en.txt", "asking_words_en.txt", "asking_words_zh.txt")


@cache
def word_list(name: str) -> frozenset[str]:
    """The words of the list ``name`` (``stopwords_en``, ...), lower case."""
    if f"{name}.txt" not in __data_files__:
        raise ValueError(f"no word list '{name}' (the lists: {', '.join(__data_files__)})")
    lines = (_HERE / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(word.lower() for line in lines
                     for word in line.partition("#")[0].split())


def english_stopwords() -> frozenset[str]:
    """The shipped English stop-word list."""
    return word_list("stopwords_en")


@cache
def question_stop_words() -> frozenset[str]:
    """English stop words and the English words a question asks with."""
    return english_stopwords() | word_list("question_words_en")
