"""The unnamed_subject check leaves out a name the text mentions that most of the corpus's
documents mention ("Python" in a folder of package READMEs): a question naming only it says
nothing of which package it is about. A chunk's own package and a code stay subjects, and a
corpus of few documents keeps every name."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.reading.content import (
    DocumentSpread,
    names_any,
    question_subjects,
)

MULTIDICT = Chunk(chunk_id="multidict.md#7", doc_id="multidict.md", text=(
    "Please note, the pure Python (uncompiled) version is dramatically slower: the pure-Python "
    "backend measures it at about 40 times more instructions than the C extension. The press "
    "PR-300 is not a package."))


def _readme(name: str, text: str) -> Chunk:
    return Chunk(chunk_id=f"{name}.md#0", doc_id=f"{name}.md", text=text)


def _corpus(count: int) -> list[Chunk]:
    return [MULTIDICT, *[_readme(f"pkg{i}", f"pkg{i} supports Python 3.9 and the press PR-300.")
                         for i in range(count - 1)]]


def test_a_name_most_documents_mention_names_no_subject():
    question = "How many more instructions does the pure-Python backend measure?"
    subjects = question_subjects([MULTIDICT], "en")
    assert names_any(question, subjects)  # "Python" is a name of the text
    spread = DocumentSpread(_corpus(4))
    assert spread.widespread("Python") and not spread.widespread("multidict")
    naming = spread.naming(subjects, [MULTIDICT])
    assert not names_any(question, naming)
    assert names_any("In multidict, how many more instructions does it measure?", naming)
    # a code is a thing however many documents name it
    assert names_any("What is the press PR-300?", naming)


def test_a_small_corpus_keeps_every_name():
    subjects = question_subjects([MULTIDICT], "en")
    spread = DocumentSpread(_corpus(3))
    assert not spread.widespread("Python")
    assert spread.naming(subjects, [MULTIDICT]) == subjects


def test_the_chunk_s_own_package_stays_a_subject_when_other_documents_name_it():
    build = _readme("build", "The build frontend writes to dist.")
    others = [_readme(f"pkg{i}", f"pkg{i} has a build step.") for i in range(4)]
    spread = DocumentSpread([build, *others])
    assert spread.widespread("build")
    assert names_any("What does build write to?", spread.naming(["build"], [build]))
