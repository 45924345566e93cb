"""Engine and evaluation messages in the studio's words.

The evaluation and tuning code is shared with the command line, so its messages name the
command's flags (``--held-out``, ``--space``). In the studio the same message names the
field of the dialog instead: a user of the window never typed a flag.
"""

from __future__ import annotations

import re

#: whole phrases first (they read differently in a form), then each flag by its field
PHRASES = {
    "give at least one --space node.param=v1,v2 (or node=type.a,type.b)":
        "tick at least one row of the search space",
    "give all its values in one --space": "give all its values in one row",
    "choose another --variant-name or pass --replace-variant":
        "choose another name or delete the variant first",
    "use --answer-output": "choose the answer output",
}
FIELDS = {
    "--held-out": "Held-out share",
    "--space": "Search space",
    "--budget": "Budget",
    "--metric": "Metric",
    "--sampler": "Sampler",
    "--answer-output": "Answer output",
    "--variant-name": "Variant name",
    "--variant": "Variant",
    "--chunks": "Chunks from",
    "--n": "Questions",
    "--types": "Question types",
    "--language": "Language",
}
_FLAG = re.compile("|".join(re.escape(f) for f in sorted(FIELDS, key=len, reverse=True))
                   + r"(?![\w-])")


def in_studio_words(message: object) -> str:
    """``message`` (text or an exception) with command-line flags named as the studio's
    fields: "a larger --held-out" -> "a larger Held-out share"."""
    text = str(message)
    for phrase, words in PHRASES.items():
        text = text.replace(phrase, words)
    return _FLAG.sub(lambda m: FIELDS[m.group(0)], text)
