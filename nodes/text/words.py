"""Words of a text: Latin words and CJK character bigrams (or single characters), and a
token count where each CJK character counts one."""

from __future__ import annotations

import logging
import re
import threading
from typing import Literal

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import CJK, HAN_RUN

#: A Latin word of normalised text: letters and digits, inner ``-``, ``_`` and ``.`` kept
#: ("hs-40", "v2.1"), one character on its own.
LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9\-_.]*[a-z0-9]|[a-z0-9]")
#: A word of letters only, inner hyphens and apostrophes kept, of normalised text: the key
#: terms of a question ("joblib.dump" gives "joblib" and "dump", "HNF4A" gives "hnf").
LETTER_WORD = re.compile(r"[a-z][a-z\-']*[a-z]")
#: A word in any script (letters and digits, no underscore): the BM25 bigram tokenizer's
#: words between runs of CJK characters.
UNICODE_WORD = re.compile(r"[^\W_]+")
#: A run of word characters in any script (letters, digits, underscore): the regex
#: tokenizer's default token.
WORD_CHARACTERS = re.compile(r"\w+")
#: A Latin word of raw text, either case.
LATIN_WORD_ANY_CASE = re.compile(LATIN_WORD.pattern, re.IGNORECASE)
#: A token of raw text: one CJK character, or a run of other non-space characters.
TOKEN = re.compile(rf"[{CJK}]|[^\s{CJK}]+")
_jieba_lock = threading.Lock()


def bigrams(run: str) -> list[str]:
    """The overlapping character pairs of a run (a lone character as itself)."""
    return [run[i:i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]


def split(text: str, word: re.Pattern[str] = LATIN_WORD, run: re.Pattern[str] = HAN_RUN,
          han: Literal["bigrams", "chars"] = "bigrams") -> list[str]:
    """The ``word`` matches between the ``run`` matches of ``text`` and each run cut into
    bigrams (or single characters), in reading order. ``text`` is taken as it is."""
    found: list[str] = []
    position = 0
    for match in run.finditer(text):
        found += word.findall(text, position, match.start())
        found += bigrams(match.group()) if han == "bigrams" else list(match.group())
        position = match.end()
    return found + word.findall(text, position)


def words(text: str, han: Literal["bigrams", "chars"] = "bigrams") -> list[str]:
    """Latin words and Chinese character bigrams (or characters) of ``text``, normalised."""
    return split(normalise(text), han=han)


def contains_phrase(text: str, phrase: str) -> bool:
    """``phrase`` in ``text``, not inside a longer Latin word or number ("640" not in "6400",
    "3%" not in "10.3%"); an empty phrase is in no text."""
    if not phrase:
        return False
    left = r"(?<![a-z0-9])" if re.match(r"[a-z0-9]", phrase) else ""
    right = r"(?![a-z0-9])" if re.search(r"[a-z0-9]$", phrase) else ""
    if re.match(r"[0-9]", phrase):  # "3%" is not in "10.3%"
        left += r"(?<![0-9][.,])"
    if re.search(r"[0-9]$", phrase):  # nor "3" in "3.5"
        right += r"(?![.,][0-9])"
    return re.search(left + re.escape(phrase) + right, text) is not None


def loaded_jieba():  # noqa: ANN201 - jieba has no types
    """The jieba module (Chinese word segmentation), its dictionary loaded once (thread-safe)
    and its logging quiet; ImportError when it is not installed."""
    import jieba

    with _jieba_lock:
        if not getattr(jieba, "_modrag_ready", False):
            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            jieba._modrag_ready = True
    return jieba


#: jieba's part-of-speech tags of the words that say how something is done or is (verbs,
#: adjectives, adverbs), not what it is about
_ACTION_TAGS = frozenset(("v", "vd", "vi", "vg", "a", "ad", "ag", "d"))


def chinese_action_words(text: str) -> set[str]:
    """The verbs, adjectives and adverbs of ``text``'s Chinese, as jieba tags them ("担任",
    "擅长"); empty when jieba is not installed."""
    try:
        loaded_jieba()
    except ImportError:
        return set()
    import jieba.posseg as posseg

    with _jieba_lock:
        tagged = posseg.lcut(text)
    return {w.word for w in tagged if w.flag in _ACTION_TAGS and HAN_RUN.fullmatch(w.word)}


def word_count(text: str) -> int:
    """Words of ``text``: its Latin words, and its Chinese characters two to a word (a run of
    three counts two)."""
    norm = normalise(text)
    return (len(LATIN_WORD.findall(HAN_RUN.sub(" ", norm)))
            + sum((len(run) + 1) // 2 for run in HAN_RUN.findall(norm)))


def token_count(text: str) -> int:
    """Tokens of ``text``: its CJK characters, one each, and its other runs of non-space
    characters."""
    return len(TOKEN.findall(text))
