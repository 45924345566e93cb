"""Tokenizers for sparse retrieval, described by a ``Tokenizer`` contract.

The contract travels inside a BM25 index so queries are tokenized exactly like the indexed
chunks. Kinds:

- ``regex``: words matched by ``pattern`` (default ``\\w+``), for space-delimited languages;
- ``jieba``: Chinese words from jieba's search mode (fine-grained, good for recall); Latin
  words inside Chinese text come out as words too;
- ``bigram``: overlapping character bigrams over runs of CJK characters (a lone character
  stays a unigram); non-CJK text is split into regex words.

Then, in this order: lower-casing, English stop-word removal (``modrag_nodes.text.stopwords``),
and Snowball stemming through PyStemmer (Latin tokens only).
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import Literal

from pydantic import Field

from modrag_nodes.text.scripts import CJK_RUN
from modrag_nodes.text.stopwords import english_stopwords
from modrag_nodes.text.words import UNICODE_WORD, WORD_CHARACTERS, loaded_jieba, split
from modrag_studio.engine.core.node import Contract

TokenizerKind = Literal["regex", "jieba", "bigram"]
StopWords = Literal["none", "english"]
StemmerName = Literal["none", "english", "porter", "french", "german", "spanish", "italian",
                      "portuguese", "dutch", "russian", "swedish"]

_lock = threading.Lock()


class Tokenizer(Contract):
    """How text becomes tokens; stored in an index and reused at query time."""

    kind: TokenizerKind = "regex"
    lowercase: bool = True
    stopwords: StopWords = "none"
    stemmer: StemmerName = "none"
    pattern: str = Field(WORD_CHARACTERS.pattern,
                         description="Token pattern of the regex tokenizer")

    def tokenize(self, text: str) -> list[str]:
        return tokenize(self, text)

    def tokenize_many(self, texts: list[str]) -> list[list[str]]:
        return [tokenize(self, text) for text in texts]

    def preview(self) -> str:
        extras = [n for n, on in (("lower", self.lowercase),
                                  (f"stop:{self.stopwords}", self.stopwords != "none"),
                                  (f"stem:{self.stemmer}", self.stemmer != "none")) if on]
        return f"{self.kind} tokenizer" + (f" ({', '.join(extras)})" if extras else "")


def tokenize(config: Tokenizer, text: str) -> list[str]:
    """Tokens of ``text`` under ``config`` (see the module docstring for the steps)."""
    if config.lowercase:
        text = text.lower()
    if config.kind == "regex":
        tokens = _compiled(config.pattern).findall(text)
    elif config.kind == "jieba":
        tokens = _jieba_tokens(text)
    else:
        tokens = split(text, word=UNICODE_WORD, run=CJK_RUN)
    if config.stopwords == "english":
        stop = english_stopwords()
        tokens = [t for t in tokens if t not in stop]
    if config.stemmer != "none":
        tokens = _stemmer(config.stemmer).stemWords(tokens)
    return tokens


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.UNICODE)
    except re.error as exc:
        raise ValueError(f"tokenizer pattern {pattern!r} is not a valid regular expression: "
                         f"{exc}") from exc


@cache
def _stemmer(name: str):
    try:
        import Stemmer
    except ImportError as exc:  # pragma: no cover - part of the rag extra
        raise RuntimeError("stemming needs PyStemmer: pip install PyStemmer") from exc
    with _lock:
        return Stemmer.Stemmer(name)


def _jieba_tokens(text: str) -> list[str]:
    jieba = loaded_jieba()
    return [t for t in jieba.cut_for_search(text) if UNICODE_WORD.search(t)]
