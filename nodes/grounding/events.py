"""Opposite events: a date the evidence gives for one event, asked of its opposite.

"潘仕成逝世的时间是？" answered "1804年" from "清嘉庆九年(1804年)，……潘仕成出生": the year is
written beside the person asked about, so alignment passes it, but the sentence gives it for
his birth, not his death. A question that names an event of a pair (born and died, founded
and closed) and a date claim every evidence sentence of which names the opposite event, and
never the one asked, is a mismatch: "block [1] names 1804年 beside 出生, not beside 逝世".
"""

from __future__ import annotations

import re

from modrag_nodes.grounding.alignment import EvidenceReading, Mismatch
from modrag_nodes.grounding.subjects import DATE_WORDS
from modrag_nodes.text.normalise import normalise as flat
from modrag_studio.engine.core.node import Claim

# each event: its English words (whole words) and Chinese words
_EVENTS: dict[str, tuple[str, ...]] = {
    "birth": (r"born", r"birth", r"出生", r"生于", r"诞生", r"出世"),
    "death": (r"died", r"dies", r"death", r"passed away", r"逝世", r"去世", r"卒于", r"死于",
              r"病逝", r"辞世", r"过世", r"逝于", r"身故"),
    "opening": (r"founded", r"established", r"opened", r"成立", r"建立", r"创立", r"创建",
                r"始建", r"开业", r"开馆", r"建校"),
    "closing": (r"closed", r"dissolved", r"disbanded", r"abolished", r"demolished", r"解散",
                r"关闭", r"废除", r"撤销", r"拆除", r"停业", r"倒闭", r"灭亡"),
}
_OPPOSITE = {"birth": "death", "death": "birth", "opening": "closing", "closing": "opening"}
_PATTERNS = {
    event: re.compile("|".join(rf"\b{w}\b" if w.isascii() else w for w in words))
    for event, words in _EVENTS.items()}


def _events_in(text: str) -> dict[str, str]:
    """The events ``text`` (normalised) names: event -> the word as written."""
    return {event: m.group(0) for event, pattern in _PATTERNS.items()
            if (m := pattern.search(text))}


def opposite_events(claims: list[Claim], evidence: EvidenceReading) -> list[Mismatch]:
    """The located date claims every evidence sentence of which names the opposite of an
    event the question names, and none the event itself."""
    named_in_question = _events_in(flat(evidence.question))
    asked = {e: w for e, w in named_in_question.items()
             if _OPPOSITE[e] not in named_in_question}
    dates = [c for c in claims if c.verdict in ("cited", "evidence")
             and (c.kind == "date" or DATE_WORDS.search(flat(c.text)))]
    if not asked or not dates or not evidence.items:
        return []
    sentences, aliases = evidence.sentences, evidence.aliases
    found = []
    for claim in dates:
        stating = [s for s in sentences if s.states(claim, aliases)]
        if not stating:
            continue
        named = [_events_in(s.text) for s in stating]
        for event, word in asked.items():
            opposite = _OPPOSITE[event]
            if all(opposite in n and event not in n for n in named):
                found.append(Mismatch(claim, stating[0].block, word, [named[0][opposite]]))
                break
    return found
