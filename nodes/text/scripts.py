"""Which script a character is in, and the language of a text (``en`` or ``zh``).

``HAN`` holds the Chinese characters (CJK unified ideographs, extension A, the compatibility
block and the supplementary planes' ideographs); ``CJK`` adds Japanese kana and Korean
Hangul, the scripts written without spaces between words. Both are character-class bodies,
to be put inside ``[...]``.

The language of a text is decided in one place, ``language_of``, by one threshold.
"""

from __future__ import annotations

import re

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
CJK = "\u3040-\u30ff" + HAN + "\uac00-\ud7af"
HAN_CHAR = re.compile(f"[{HAN}]")
HAN_RUN = re.compile(f"[{HAN}]+")
CJK_CHAR = re.compile(f"[{CJK}]")
CJK_RUN = re.compile(f"[{CJK}]+")
#: A run of Latin letters, either case, no digits: a Latin word as the language threshold
#: counts it, and the words of a proper name ("Ingrid Holm").
LATIN_LETTERS = re.compile(r"[A-Za-z]+")

#: A text is Chinese when its Chinese characters outnumber its Latin words by this factor
#: (a word counting as one and a half characters: "由 Kestrel Hydraulics 合同供应" is Chinese
#: that names a company, "The answer is 鸡毛松 [1]" is English that quotes a word).
HAN_PER_LATIN_WORD = 1.5


def is_han(text: str) -> bool:
    """Whether ``text`` starts with a Chinese character."""
    return HAN_CHAR.match(text) is not None


def han_count(text: str) -> int:
    """The Chinese characters of ``text``."""
    return len(HAN_CHAR.findall(text))


def cjk_count(text: str) -> int:
    """The characters of ``text`` in a script written without spaces (Chinese, kana, Hangul)."""
    return len(CJK_CHAR.findall(text))


def language_of(text: str) -> str:
    """``zh`` when the Chinese characters of ``text`` outnumber ``HAN_PER_LATIN_WORD`` times
    its Latin words, else ``en``."""
    han = han_count(text)
    return "zh" if han and han > HAN_PER_LATIN_WORD * len(LATIN_LETTERS.findall(text)) else "en"
