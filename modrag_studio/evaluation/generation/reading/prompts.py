"""What the chat model is asked, per question type and language, and how its reply is read.

A reply is asked for as two labelled lines (``QUESTION: ...`` / ``ANSWER: ...``); a two-chunk
question is two such questions, one per chunk, about the term the chunks share, joined; a
paraphrase is a verified single question whose words its chunk holds are replaced by the
synonyms a second call gives (asked to reword a question, a small model copies it); a claim
is reworded by translating it into the other language and back. Small
models wrap the lines in chatter, bold them, number them, answer in JSON or with Chinese
labels; ``parse_reply`` reads all of those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from modrag_nodes.generation.api import extract_json
from modrag_nodes.text.scripts import han_count, is_han

QUESTION_TYPES = ("single", "multi", "unanswerable", "paraphrase", "claim")
DEFAULT_TYPES = ("single", "multi", "unanswerable", "paraphrase")
MAX_CHUNK_CHARS = 1400

SYSTEM = {
    "en": "You write exam questions about a text. You reply only in the format asked.",
    "zh": "你根据文本出考试题。只按要求的格式回答。",
}
FORMAT = {
    "en": "Reply with exactly two lines:\nQUESTION: <the question>\nANSWER: <the short answer, "
          "copied word for word from the text, at most 8 words>",
    "zh": "只回复两行：\n问题：<问题>\n答案：<简短答案，从文本中原样复制，不超过15个字>",
}
PROMPTS = {
    ("single", "en"): "Text:\n{text}\n\nWrite one question that this text answers with a "
                      "specific fact (a name, number, date, place or short phrase). The "
                      "question must make sense without the text and must not contain its "
                      "answer.\n{format}",
    ("single", "zh"): "文本：\n{text}\n\n根据这段文本写一个问题，答案是文本中的一个具体事实（名称、"
                      "数字、日期、地点或短语）。问题不看文本也要能看懂，且不能包含答案。\n{format}",
    ("synonyms", "en"): "Question: {question}\n\nFor each word below, give a different word "
                        "or short phrase with the same meaning in this question.\n{words}\n"
                        "Reply with one line per word, as word: other word",
    ("synonyms", "zh"): "问题：{question}\n\n下面每个词，给出在这个问题里意思相同的另一个词或短语。"
                        "\n{words}\n每个词回复一行，格式为：词：另一个词",
    ("claim", "en"): "Text:\n{text}\n\nWrite one sentence that states the main finding or "
                     "point of this text, as a reader who read it last week would put it: in "
                     "your own words, at most 25 words, without copying its numbers.\n"
                     "Reply with exactly one line:\nCLAIM: <the sentence>",
    ("claim", "zh"): "文本：\n{text}\n\n用一句话说出这段文本的主要发现或要点，像一周前读过它的读者"
                     "那样转述：用自己的话，不超过40个字，不照抄其中的数字。\n只回复一行：\n"
                     "主张：<这句话>",
    ("about", "en"): "Text:\n{text}\n\nWrite one question about {term} that this text "
                     "answers with a specific fact (a name, number, date, place or short "
                     "phrase). The question must name {term}, make sense without the text and "
                     "must not contain its answer.\n{format}",
    ("about", "zh"): "文本：\n{text}\n\n写一个关于“{term}”的问题，答案是这段文本中的一个具体事实"
                     "（名称、数字、日期、地点或短语）。问题要写出“{term}”，不看文本也要能看懂，且"
                     "不能包含答案。\n{format}",
}


def clip(text: str, limit: int = MAX_CHUNK_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


#: details an unanswerable question asks for, (English, Chinese): things, organisations and
#: people have some of them, and most corpora never state them. One detail the corpus never
#: mentions (``absent_details``) and the asked thing's kind has (``subjects.KIND_DETAILS``) is
#: drawn per question, and the question must ask for it: left to
#: choose, a small model asked for a warranty of everything, a canteen's included, or for a
#: detail the corpus states in other words ("the frequency of maintenance" of a pump whose
#: interval is given).
ABSENT_DETAILS: tuple[tuple[str, str], ...] = (
    ("price", "价格"), ("warranty period", "保修期"), ("manufacturer", "制造商"),
    ("serial number", "序列号"), ("weight", "重量"), ("insurer", "保险公司"),
    ("budget", "预算"), ("founder", "创始人"), ("email address", "电子邮箱"), ("age", "年龄"),
    ("phone number", "电话号码"), ("website", "网址"), ("purchase date", "购买日期"),
    ("commercial licence price", "商业许可价格"),
    ("mascot", "吉祥物"), ("release date", "发布日期"),
    ("number of contributors", "贡献者人数"),
)


def build_prompt(kind: str, language: str, text: str, term: str = "") -> tuple[str, str]:
    """(system, user) messages for one question of ``kind`` in ``language`` (``about``: a
    single-chunk question naming ``term``, one half of a two-chunk question; ``paraphrase``
    starts as a ``single`` question; an unanswerable question is written from a template,
    ``subjects.template_question``)."""
    lang = language if language in SYSTEM else "en"
    kind = "single" if kind == "paraphrase" else kind
    limit = MAX_CHUNK_CHARS
    user = PROMPTS[(kind, lang)].format(text=clip(text, limit), term=term, format=FORMAT[lang])
    return SYSTEM[lang], user


def build_synonym_prompt(language: str, question: str, replace: list[str]) -> tuple[str, str]:
    """(system, user) messages asking for another word for each of ``replace`` (the
    question's key words its chunk holds), one ``word: other word`` line each."""
    lang = language if language in SYSTEM else "en"
    lines = "\n".join(f"{w}{'：' if lang == 'zh' else ':'}" for w in replace)
    user = PROMPTS[("synonyms", lang)].format(question=question.strip(), words=lines)
    return SYNONYM_SYSTEM[lang], user


SYNONYM_SYSTEM = {
    "en": "You suggest synonyms. You reply only in the format asked.",
    "zh": "你给出同义词。只按要求的格式回答。",
}
_PAIR = re.compile(r"^\W{0,4}(?:\d{1,2}[.)、]\s*)?(?P<word>[^:：=>]+?)\W{0,3}\s*(?:[:：=]|->|→)"
                   r"\s*(?P<other>.+?)\s*$")


def parse_synonyms(text: str, asked: list[str]) -> dict[str, str]:
    """``word -> other word`` for the asked words the reply gives another word for."""
    wanted = {w.lower(): w for w in asked}
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _PAIR.match(line.strip())
        if match is None:
            continue
        word = wanted.get(_tidy(match.group("word")).lower())
        other = _fact(match.group("other").split(" / ")[0].split(";")[0])
        if (word and other and other.lower() != word.lower() and len(other) <= 40
                and len(other.split()) <= len(word.split()) + 1):  # a word, not a definition
            found.setdefault(word, other)
    return found


def substitute(question: str, synonyms: dict[str, str]) -> str:
    """``question`` with each word of ``synonyms`` replaced (Latin words whole, any case)."""
    for word, other in synonyms.items():
        if is_han(word):
            question = question.replace(word, other)
        else:
            question = re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", lambda _, o=other: o,
                              question, flags=re.IGNORECASE)
    return question


TRANSLATE_SYSTEM = "You are a translator. Reply with the translation only."
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}
_TRANSLATION_LABEL = re.compile(r"^\W{0,4}(?:translation|english|chinese|译文|翻译|英文|中文)"
                                r"\s*\**\s*[:：]\s*\**\s*", re.IGNORECASE)


def build_translate_prompt(text: str, target: str) -> tuple[str, str]:
    """(system, user) messages asking for ``text`` in language ``target`` (en, zh)."""
    return TRANSLATE_SYSTEM, f"Translate into {LANGUAGE_NAMES[target]}:\n{text.strip()}"


def parse_translation(text: str) -> str:
    """The translation of a reply: its first line, label and quotes taken off."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return _tidy(_TRANSLATION_LABEL.sub("", lines[0])) if lines else ""


_CLAIM_LABEL = re.compile(r"^\W{0,4}(?:claim|statement|finding|主张|结论|要点)\s*\**\s*[:：]\s*"
                          r"\**\s*", re.IGNORECASE)


def parse_claim(text: str) -> str:
    """The claim sentence of a reply: the labelled line, else its first line ('' if none)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    labelled = [ln for ln in lines if _CLAIM_LABEL.match(ln)]
    line = labelled[0] if labelled else (lines[0] if lines else "")
    return _tidy(_CLAIM_LABEL.sub("", line))


# a question opening with its asking word ("What ...", "How many ...", "Is ...")
ASKING_START = re.compile(r"^(?:what|which|how|who|whom|whose|when|where|why|is|are|was|"
                          r"were|does|do|did|can|could|should|must|will|would|has|have)\b",
                          re.I)
_ZH_ASKING = re.compile(r"什么|多少|多久|多长|多大|多高|多重|哪|几|谁|何|怎|为什么|吗|是否")


def closed_question(text: str) -> str:
    """``text`` with the question mark a small model left out ("What is the default port
    of pypdf", "空压机多久保养一次。"): an English question opening with its asking word, or
    a Chinese one holding a question word, ends with one; other text is left as it is."""
    text = text.strip()
    if text.endswith(("?", "？")):
        return text
    bare = text.rstrip(".。!！ ")
    if ASKING_START.match(bare):
        return f"{bare}?"
    if _ZH_ASKING.search(bare) and han_count(bare):
        return f"{bare}？"
    return text


@dataclass
class Reply:
    """A reply read: the question and its answer phrase(s); ``problem`` when unreadable."""

    question: str = ""
    answers: list[str] = field(default_factory=list)
    problem: str = ""


_LABELS = re.compile(
    r"^\W{0,4}(?:\d{1,2}[.)、]\s*)?\W{0,4}(?P<label>question|q|问题|题目|answer|a|答案|回答|fact)\s*(?P<n>[12１２])?\s*"
    r"\**\s*[:：\-–]\s*\**\s*(?P<value>.*)$", re.IGNORECASE)
_NO_ANSWER = re.compile(r"^(?:none|n/?a|no answer|unknown|无|没有|无答案|不适用)\W*$",
                        re.IGNORECASE)


def _tidy(value: str) -> str:
    value = re.sub(r"\*\*|__|`", "", value).strip()
    value = re.sub(r"^(?:\d{1,2}[.)、]|[-*•])\s*", "", value)
    value = re.sub(r"^\s*[\"“”'‘’「」]+|[\"“”'‘’「」]+\s*$", "", value).strip()
    return value.strip()


def _fact(value: str) -> str:
    value = re.sub(r"[.。;；,，!！]+$", "", _tidy(value)).strip()
    return re.sub(r"[.。;；,，!！]+$", "", _tidy(value)).strip()


def parse_reply(text: str, answers_expected: int = 1) -> Reply:
    """The question and answer phrase(s) of a model reply (labelled lines, JSON, or a line
    ending in a question mark followed by the answer)."""
    reply = Reply()
    try:
        data = extract_json(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        low = {str(k).lower(): v for k, v in data.items()}
        question = low.get("question") or low.get("问题")
        answers = [low.get(k) for k in ("answer", "answer 1", "answer1", "answer_1", "answer 2",
                                        "answer2", "answer_2", "答案", "答案1", "答案2")]
        if isinstance(question, str):
            reply.question = _tidy(question)
            reply.answers = [_fact(a) for a in answers if isinstance(a, str) and a.strip()]
    if not reply.question:
        loose: list[str] = []
        for line in text.splitlines():
            match = _LABELS.match(line.strip())
            if match is None:
                if line.strip():
                    loose.append(_tidy(line))
                continue
            label, value = match.group("label").lower(), match.group("value")
            if label in ("question", "q", "问题", "题目"):
                if not reply.question:
                    reply.question = closed_question(_tidy(value))
            elif value.strip():
                reply.answers.append(_fact(value))
        if not reply.question:
            asked = next((i for i, ln in enumerate(loose) if ln.endswith(("?", "？"))), None)
            if asked is not None:
                reply.question = loose[asked]
                reply.answers += [_fact(ln) for ln in loose[asked + 1:asked + 1 + answers_expected]]
    reply.answers = [a for a in reply.answers if a]
    if not reply.question:
        reply.problem = "no question in the reply"
    elif answers_expected and not [a for a in reply.answers if not _NO_ANSWER.match(a)]:
        reply.problem = "no answer in the reply"
    elif answers_expected and len(reply.answers) < answers_expected:
        reply.problem = f"{len(reply.answers)} answer(s) in the reply, {answers_expected} asked"
    return reply
