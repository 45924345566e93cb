"""The sentences of a chunk's text as the checks read them: the sentence stating a value
(``checks.verify.fact_sentences``), the changelog sentence saying a value was changed later
(``checks.misreads.changed_later``) and the sentences naming a subject
(``subjects.naming_sentences``) are cut by this one rule.

Drafting value facts (``facts.sentences``) cuts prose by a finer rule of its own
(semicolons and list items cut, no cut after "e.g."); this rule in its place, or the node
library's ``sentence_spans`` in either place, changes what the development corpora give.
"""

from __future__ import annotations

import re

# sentence ends, and blank lines (a single line break is a Markdown hard wrap)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n\s*\n")


def text_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as written (code and headings kept), each stripped: cut
    after ``.!?`` and the space that follows, after Chinese ``。！？`` and at blank lines."""
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s.strip()]
