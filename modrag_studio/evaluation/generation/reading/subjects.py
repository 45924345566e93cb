"""What an unanswerable question asks about: a thing its chunk names (a code, a name), and
a detail that kind of thing has.

A small model asked to pick "a thing this text names" and ask for a drawn detail puts the
detail on whatever the chunk mentions ("the colour of the maintenance log", "the age of the
IT team"). Here the subject is chosen in code among the chunk's codes and names, the model
only says what kind of thing it is (person, machine, contract, ...), and the detail is drawn
among those that kind of thing has.
"""

from __future__ import annotations

import re

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.stopwords import english_stopwords
from modrag_nodes.text.words import loaded_jieba
from modrag_studio.evaluation.generation.reading.prompts import ABSENT_DETAILS, clip
from modrag_studio.evaluation.generation.reading.sentences import text_sentences
from modrag_studio.evaluation.generation.reading.terms import absent_terms, key_terms

KINDS = ("person", "organisation", "machine", "part", "software", "contract", "place",
         "standard")
# Details (the English names of ABSENT_DETAILS) a thing of each kind has.
KIND_DETAILS: dict[str, tuple[str, ...]] = {
    "person": ("age", "email address", "phone number"),
    "organisation": ("founder", "website", "phone number", "email address", "budget"),
    "machine": ("price", "warranty period", "manufacturer", "serial number", "weight",
                "purchase date"),
    "part": ("price", "manufacturer", "weight", "warranty period"),
    # a project's trade and symbols, not an organisation's budget ("the budget of Flake8");
    # not the year it was founded either, which a README says in other words ("first
    # written in 2003")
    "software": ("commercial licence price", "mascot", "release date",
                 "number of contributors"),
    "contract": ("insurer", "price"),
    "place": ("phone number", "website"),
    # a standard, format or protocol (PEP-561, ISO-8601) has no price, maker or licence
    "standard": (),
}
# Words of a reply naming a kind, first match wins.
_KIND_WORDS: tuple[tuple[str, str], ...] = (
    ("person", "person"), ("people", "person"), ("人物", "person"), ("人员", "person"),
    ("organisation", "organisation"), ("organization", "organisation"),
    ("company", "organisation"), ("机构", "organisation"), ("公司", "organisation"),
    ("组织", "organisation"), ("machine", "machine"), ("equipment", "machine"),
    ("device", "machine"), ("设备", "machine"), ("机器", "machine"), ("part", "part"),
    ("component", "part"), ("零件", "part"), ("部件", "part"), ("software", "software"),
    ("service", "software"), ("system", "software"), ("application", "software"),
    ("软件", "software"), ("服务", "software"), ("系统", "software"),
    ("contract", "contract"), ("agreement", "contract"), ("合同", "contract"),
    ("协议", "contract"), ("place", "place"), ("plant", "place"), ("site", "place"),
    ("地点", "place"), ("工厂", "place"), ("地方", "place"), ("standard", "standard"),
    ("specification", "standard"), ("format", "standard"), ("proposal", "standard"),
    ("标准", "standard"), ("规范", "standard"), ("other", "other"),
    ("其他", "other"),
)
KIND_PROMPTS = {
    "en": "Text:\n{text}\n\nIn this text, what kind of thing is \"{subject}\"?",
    "zh": "文本：\n{text}\n\n在这段文本中，“{subject}”是哪一类东西？",
}
# the instructions first, the same every call (the backend keeps them: reuse_prefix)
KIND_SYSTEM = {"en": "You classify things named in a text. You reply with one word: person, "
                     "organisation, machine, part, software, contract, place, standard or "
                     "other.",
               "zh": "你给文本中提到的东西分类。只回复一个词：人物、机构、设备、零件、软件、合同、"
                     "地点、标准或其他。"}
KIND_REPLY_TOKENS = 8
KIND_CONTEXT_CHARS = 400  # the sentences naming the thing, not the whole chunk
# How an unanswerable question asks for a detail (written in code: a model asked to write it
# joined two questions, "Who is Marco Gorelli and what is his phone number?"); others ask
# "What is the <detail> of <thing>?". Each holds its detail's words, which the check needs.
QUESTION_TEMPLATES: dict[tuple[str, str], str] = {
    ("age", "en"): "What age is {s}?",
    ("commercial licence price", "en"): "What is the price of a commercial licence for {s}?",
    ("mascot", "en"): "What is the name of the {s} mascot?",
    ("release date", "en"): "What was the release date of the first version of {s}?",
    ("number of contributors", "en"): "How many contributors does {s} have?",
    ("manufacturer", "en"): "Who is the manufacturer of {s}?",
    ("founder", "en"): "Who is the founder of {s}?",
    ("insurer", "en"): "Who is the insurer of {s}?",
}

# A code: letters and digits with at least one capital letter and one digit ("PR-300",
# "WH-DB-01", "HT-2024-1107", "IL6"); a year alone is no code.
_CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*"
                   r"(?![\w-])")
# Two or more capitalised words in a row ("Inventory Service", "Baltic Bearing Supply").
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*[-*]?\s*)$")
_PERSON_TAGS = frozenset(("nr", "nrt"))  # jieba's person names ("陈浩", "英格丽" · "霍尔姆")
_ORGANISATION_TAG = "nt"  # (its place names, "ns", take common words: 日志, 深度)
_NAME_DOTS = frozenset("·•・")


def _english_names(text: str) -> list[str]:
    stop = english_stopwords()
    names: list[str] = []
    for match in _NAME.finditer(text):
        words = match.group(0).split()
        if _SENTENCE_START.search(text[:match.start()]) and words[0].lower() in stop:
            words = words[1:]  # "The Inventory Service" at a sentence start
        if len(words) >= 2:
            names.append(" ".join(words))
    return names


def _chinese_names(text: str) -> list[str]:
    """Person names (a transliterated name joined over its middle dot) and organisation
    names, as jieba tags them."""
    loaded_jieba()
    import jieba.posseg

    tokens = [(p.word, p.flag) for p in jieba.posseg.cut(text)]
    names: list[str] = []
    i = 0
    while i < len(tokens):
        word, tag = tokens[i]
        if tag in _PERSON_TAGS:
            joined = False
            while (i + 2 < len(tokens) and tokens[i + 1][0] in _NAME_DOTS
                   and tokens[i + 2][1] in _PERSON_TAGS):
                word += tokens[i + 1][0] + tokens[i + 2][0]
                i, joined = i + 2, True
            # a transliteration alone ("nrt") is often a piece of a longer word: 诺|维尔|精密
            if len(word) >= 2 and (joined or tag == "nr"):
                names.append(word)
        elif tag == _ORGANISATION_TAG and len(word) >= 2:
            names.append(word)
        i += 1
    return names


def named_subjects(text: str, language: str) -> list[str]:
    """The codes and names ``text`` mentions (headings left out), in order, once each:
    codes in any language, capitalised names in English, person, place and organisation
    names in Chinese."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    found = [m.group(0) for m in _CODE.finditer(body) if not m.group(0).isdigit()]
    found += _chinese_names(body) if language == "zh" else _english_names(body)
    return list(dict.fromkeys(found))


def build_kind_prompt(language: str, text: str, subject: str) -> tuple[str, str]:
    """(system, user) messages asking what kind of thing ``subject`` is in ``text`` (its
    sentences naming ``subject``, the text's start without one)."""
    lang = language if language in KIND_PROMPTS else "en"
    return KIND_SYSTEM[lang], KIND_PROMPTS[lang].format(text=naming_sentences(text, subject),
                                                        subject=subject)


def naming_sentences(text: str, subject: str, limit: int = KIND_CONTEXT_CHARS) -> str:
    """The sentences of ``text`` that name ``subject``, as many as ``limit`` characters
    allow (the text's start when none does)."""
    folded = normalise(subject)
    naming = [p for p in text_sentences(text) if folded in normalise(p)]
    return clip(" ".join(naming) if naming else text, limit)


def template_question(detail: str, subject: str, language: str) -> str:
    """The question asking for ``detail`` of ``subject`` in ``language``."""
    lang = "zh" if language == "zh" else "en"
    default = "{s}的{d}是什么？" if lang == "zh" else "What is the {d} of {s}?"
    return QUESTION_TEMPLATES.get((detail, lang), default).format(s=subject, d=detail)


def thing_subjects(text: str, language: str, package: str = "",
                   common: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """What an unanswerable question may ask about: the ``package`` a document is named
    after, codes that name one thing (letters, a hyphen, digits: PR-300, HT-2024-0892; not
    a flag or a standard: VERSION1, OAuth2, UTF-8) and names (two capitalised words or
    more, not once at a sentence's start, none of whose words the corpus writes in lower
    case, ``common``: "Best Practices", "Featured Sponsors" and "On Windows" are title-cased
    phrases; Chinese person and organisation names)."""
    found = [package] if package else []
    for name in named_subjects(text, language):
        if _CODE.fullmatch(name) and not _THING_CODE.fullmatch(name):
            continue
        if language != "zh" and not _CODE.fullmatch(name) and text.count(name) < 2 and all(
                _SENTENCE_START.search(text[:m.start()])
                for m in re.finditer(re.escape(name), text)):
            continue  # once, opening its sentence: maybe a verb and a name ("Drop Python")
        if language != "zh" and not _CODE.fullmatch(name) and any(
                w.lower() in common for w in name.split()):
            continue
        found.append(name)
    return list(dict.fromkeys(found))


_THING_CODE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*-[A-Za-z]*\d{2,}[A-Za-z0-9-]*")


def parse_kind(reply: str) -> str:
    """The kind a reply names (one of ``KINDS``), "other" when it names none."""
    low = normalise(reply)
    hits = [(low.find(word), kind) for word, kind in _KIND_WORDS if word in low]
    return min(hits)[1] if hits else "other"


def absent_details(vocab: set[str]) -> dict[str, list[tuple[str, list[str]]]]:
    """Per language, the details of ``ABSENT_DETAILS`` the corpus never mentions, each with
    its key terms no chunk holds (a question asking for it must hold one); all of them, with
    no such term to require, when the corpus mentions every one."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for i, lang in enumerate(("en", "zh")):
        details = [(pair[i], absent_terms(key_terms(pair[i]), vocab)) for pair in ABSENT_DETAILS]
        found[lang] = [d for d in details if d[1]] or [(d, []) for d, _ in details]
    return found


def fitting_details(kind: str, language: str, available: list[tuple[str, list[str]]]
                    ) -> list[tuple[str, list[str]]]:
    """The entries of ``available`` (details in ``language`` with their absent terms) that a
    thing of ``kind`` has."""
    index = 1 if language == "zh" else 0
    names = {pair[index] for pair in ABSENT_DETAILS if pair[0] in KIND_DETAILS.get(kind, ())}
    return [entry for entry in available if entry[0] in names]


def names_subject(question: str, subject: str) -> bool:
    """Whether ``question`` names ``subject`` (case and width folded)."""
    return normalise(subject) in normalise(question)


def lower_case_words(texts: list[str]) -> set[str]:
    """The words ``texts`` write in lower case (three letters or more; not in an address, a
    path or a dotted name: "andrew.svetlov@..." writes no name in lower case)."""
    return {w for text in texts
            for w in re.findall(r"(?<![\w\-./@])[a-z]{3,}(?![\w\-/@]|\.\w)", text)}
