"""Name normalisation and the alias table that merges spellings of one entity.

Normalisation folds Unicode compatibility forms (full-width ``ＣＮＣ－Ａ０１`` becomes
``CNC-A01``), case, whitespace, leading articles and separators (``-``, ``_``, ``·``, ``.``),
so ``the Order-Service``, ``order service`` and ``ORDER SERVICE`` meet on one key.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_SEPARATORS = re.compile(r"[\s\-_·•・.,'\"“”‘’()（）\[\]【】/\\]+")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def normalize(name: str) -> str:
    """The merge key of a name (see module docstring)."""
    text = unicodedata.normalize("NFKC", name).strip()
    text = _ARTICLE.sub("", text)
    return _SEPARATORS.sub("", text).casefold()


def display(name: str) -> str:
    """A clean display form: NFKC, single spaces, no surrounding punctuation."""
    text = unicodedata.normalize("NFKC", name)
    return " ".join(text.split()).strip(" .,;:，。；：")


def initials(name: str) -> str | None:
    """An abbreviation for names of three or more words (``Norvale Precision Manufacturing``
    gives ``NPM``); None for shorter names, where initials collide too often."""
    words = _WORD.findall(unicodedata.normalize("NFKC", name))
    if len(words) < 3:
        return None
    return "".join(w[0] for w in words).upper()


class AliasTable:
    """Maps normalised aliases to node ids; an alias claimed by two nodes becomes ambiguous
    and is dropped from lookups (reported by ``ambiguous``)."""

    def __init__(self) -> None:
        self._map: dict[str, str] = {}
        self._surface: dict[str, str] = {}
        self._ambiguous: set[str] = set()

    def add(self, alias: str, node: str) -> None:
        key = normalize(alias)
        if not key or key in self._ambiguous:
            return
        current = self._map.get(key)
        if current is None:
            self._map[key] = node
            self._surface[key] = display(alias)
        elif current != node:
            self._ambiguous.add(key)
            del self._map[key]

    def add_many(self, aliases: Iterable[str], node: str) -> None:
        for alias in aliases:
            self.add(alias, node)

    def lookup(self, name: str) -> str | None:
        return self._map.get(normalize(name))

    def rename(self, old: str, new: str) -> None:
        for key, node in self._map.items():
            if node == old:
                self._map[key] = new

    def remove_node(self, node: str) -> None:
        for key in [k for k, v in self._map.items() if v == node]:
            del self._map[key]
            self._surface.pop(key, None)

    def surfaces(self) -> dict[str, str]:
        """Alias surface form -> node id (for building mention matchers)."""
        return {self._surface[k]: v for k, v in self._map.items()}

    @property
    def ambiguous(self) -> set[str]:
        return set(self._ambiguous)

    def to_dict(self) -> dict[str, str]:
        """Alias surface form -> node id, as persisted in the graph file."""
        return dict(sorted(self.surfaces().items()))

    @classmethod
    def from_dict(cls, surfaces: dict[str, str], ambiguous: Iterable[str] = ()) -> AliasTable:
        table = cls()
        table._ambiguous = set(ambiguous)
        for alias, node in surfaces.items():
            table.add(alias, node)
        return table

    def __len__(self) -> int:
        return len(self._map)
