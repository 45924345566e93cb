"""The one normalisation texts are compared after: NFKC (full-width digits and letters to
ASCII), case folding, thousands separators removed ("2,000" is 2000, "每2,000小时" too)."""

from __future__ import annotations

import re
import unicodedata

#: A thousands separator: the comma of "2,000". The group ends where the digits do:
#: "每2,000小时" has no word boundary after its zeros.
THOUSANDS_SEPARATOR = re.compile(r"(?<=\d)[,，](?=\d{3}(?!\d))")


def normalise(text: str) -> str:
    """``text`` normalised, its runs of white space one space."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = THOUSANDS_SEPARATOR.sub("", text)
    return " ".join(text.split())


def normalise_map(text: str) -> tuple[str, list[int]]:
    """``text`` normalised character by character (white space kept) and, for each character
    of the result, the index of the character of ``text`` it came from (so spans map back)."""
    out: list[str] = []
    index: list[int] = []
    for i, char in enumerate(text):
        for piece in unicodedata.normalize("NFKC", char).casefold():
            out.append(piece)
            index.append(i)
    joined = "".join(out)
    drop = {m.start() for m in THOUSANDS_SEPARATOR.finditer(joined)}
    if drop:
        out = [c for n, c in enumerate(out) if n not in drop]
        index = [i for n, i in enumerate(index) if n not in drop]
    return "".join(out), index
