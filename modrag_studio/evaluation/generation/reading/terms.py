"""Words of a text that carry its meaning: the language of a chunk, its key terms (for linking
two chunks and for checking that an unanswerable question's subject is absent) and the share
of a question's words its chunk holds (paraphrases share few)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import HAN_RUN, is_han
from modrag_nodes.text.stopwords import english_stopwords, word_list
from modrag_nodes.text.words import words


def key_terms(text: str) -> list[str]:
    """Content words: no stop words, no question words, Latin words of 3+ characters or with
    a digit, CJK bigrams without question words."""
    stop = english_stopwords() | word_list("asking_words_en")
    asking_zh = word_list("asking_words_zh")
    out: list[str] = []
    for word in words(text):
        if is_han(word):
            if len(word) == 2 and not any(q in word or word in q for q in asking_zh):
                out.append(word)
        elif word not in stop and (len(word) >= 3 or any(ch.isdigit() for ch in word)):
            out.append(word)
    return list(dict.fromkeys(out))


def held_terms(question: str, chunk_text: str) -> list[str]:
    """The question's key terms that its chunk holds; a Latin word counts as held when the
    chunk holds it or a word it starts (plurals)."""
    held = set(words(chunk_text))
    latin = [w for w in held if not is_han(w)]
    return [t for t in key_terms(question)
            if t in held or (not is_han(t) and len(t) >= 4
                             and any(w.startswith(t[:-1]) for w in latin))]


def overlap(question: str, chunk_text: str) -> float:
    """Share of the question's key terms that its chunk holds (0 when it has none)."""
    terms = key_terms(question)
    return len(held_terms(question, chunk_text)) / len(terms) if terms else 0.0


_CODE = re.compile(r"(?<![\w-])[A-Z][A-Za-z]*[A-Z0-9][\w\-]*|\S*\d\S*")


def words_to_replace(question: str, chunk_text: str) -> list[str]:
    """What a paraphrase of ``question`` should say in other words: its key words that the
    chunk holds, as written in the question (Chinese as runs of held characters), without
    names, codes and numbers ("LP-07", "RANKL", "France", "2021"), which a paraphrase
    keeps."""
    held = held_terms(question, chunk_text)
    codes = {normalise(m.group(0)).strip(".,;:?!()") for m in _CODE.finditer(question)}
    codes |= {normalise(w).strip(".,;:?!()\"'") for w in question.split()[1:]
              if w[:1].isupper()}  # a capitalised word inside the question: a name
    latin = [t for t in held if not is_han(t) and t not in codes
             and not any(ch.isdigit() for ch in t)]
    shown = {normalise(w).strip(".,;:?!()\"'"): w.strip(".,;:?!()\"'")
             for w in question.split()}
    out = [shown.get(t, t) for t in latin]
    bigrams = {t for t in held if is_han(t)}
    for run in HAN_RUN.findall(normalise(question)):
        covered = [False] * len(run)
        for i in range(len(run) - 1):
            if run[i:i + 2] in bigrams:
                covered[i] = covered[i + 1] = True
        start = None
        for i, flag in enumerate([*covered, False]):
            if flag and start is None:
                start = i
            elif not flag and start is not None:
                out.append(run[start:i])
                start = None
    return list(dict.fromkeys(out))


def word_stems(vocabulary: set[str]) -> set[str]:
    """Every start of four letters or more of the vocabulary's Latin words (``absent_terms``
    looks a word's stem up in it; build it once for many calls)."""
    return {w[:n] for w in vocabulary if not is_han(w) for n in range(4, len(w) + 1)}


def absent_terms(terms: Iterable[str], vocabulary: set[str],
                 stems: set[str] | None = None) -> list[str]:
    """The terms no chunk of the corpus holds, a Latin word not even in another form (no
    corpus word starts with its stem: all but its last three letters, at least four)."""
    stems = word_stems(vocabulary) if stems is None else stems
    missing: list[str] = []
    for term in terms:
        if term in vocabulary:
            continue
        if not is_han(term) and term[:max(4, len(term) - 3)] in stems:
            continue
        missing.append(term)
    return missing
