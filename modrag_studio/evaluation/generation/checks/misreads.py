"""Model-free checks that a question asks for what its value answers in the sentence it
comes from: the value keeps the bound or range its sentence gives it ("less than 20
seconds", not "20 seconds"; "15至20厘米", not "20厘米"; "Python 3.8+", not "Python 3.8"); it is
no name that only the example code of its chunk defines (a subclass the example writes); no
changelog entry's value the same document says was changed later; the question keeps the
kind the sentence gives the value ("the environment variable ``SHELL``" is no interpreter);
and its wording is not garbled (a word twice, an article before the question mark, a
paraphrase's adjective put for a noun: "a noticeable unnecessary?")."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import is_han
from modrag_nodes.text.words import contains_phrase
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.reading.content import code_line_indices, names_any
from modrag_studio.evaluation.generation.reading.sentences import text_sentences

# a bound before a number: the value is a limit, not an amount ("under 30 seconds")
_BOUND_BEFORE = re.compile(
    r"(?:\b(?:less|fewer|more|greater|longer|shorter|no more|no less|not more|not less) than"
    r"|\bup to|\bat (?:least|most)|\b(?:under|over|above|below|past|beyond|within|exceeding)"
    r"|超过|超出|不到|不足|不超过|不少于|不低于|至少|最多|最少|逾|高于|低于|多于|少于|大于|小于)"
    r"(?:\s+every|\s+only)?\s*$", re.I)
_BOUND_AFTER = re.compile(r"^(?:以上|以下|以内|之内|有余|\s*or (?:more|less|fewer|longer|"
                          r"shorter)\b|\+(?![\w+]))", re.I)
# the other end of a range, list or choice before a number ("15至20厘米", "15、6岁",
# "10 to 20 s", "1或3条")
_RANGE_BEFORE = re.compile(r"\d[\d.,]*\s?(?:-|–|—|－|−|~|～|至|到|、|或|\bto\b|\bor\b)\s?$")


def widened(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The span of the value at ``start:end`` of ``sentence`` with the bound or the range
    its sentence gives it (``start, end`` when it has none)."""
    before = sentence[:start]
    found = _RANGE_BEFORE.search(before) or _BOUND_BEFORE.search(before)
    if found is not None and not found.group(0)[:1].isspace():
        start = found.start()
    after = _BOUND_AFTER.match(sentence[end:])
    if after is not None:
        end += after.end()
    return start, end


# the digits a Chinese amount goes on with after its unit ("2米11": 2.11 m)
_MORE_DIGITS = re.compile(r"\d+")
# a question saying a "+" bound in words ("the minimum Python version", "3.8 or later")
_PLUS_SAID = re.compile(r"\d\+|\b(?:min(?:imum|imal)?|lowest|oldest|earliest|at least|"
                        r"or (?:later|newer|higher|above|more|greater|up)|and (?:later|newer|"
                        r"higher|above|up))\b", re.I)


def partial_value(fact: str, question: str, sentences: Sequence[str]) -> str | None:
    """The fuller value when ``fact`` (an amount: opening with its number) drops the bound or
    range that every sentence stating it gives it, or ``fact`` (ending in a number: "Python
    3.8") drops the "+" after it ("Python 3.8+"), and the question does not say it either;
    else None ("under Python 3.8" bounds no amount)."""
    amount = re.match(r"[$€£¥]?\d", fact.strip()) is not None
    if not amount and not re.search(r"\d$", fact.strip()):
        return None
    folded_fact, folded_question = normalise(fact), normalise(question)
    fuller = ""
    for sentence in sentences:
        for match in re.finditer(re.escape(fact), sentence, re.I):
            more = _MORE_DIGITS.match(sentence, match.end())
            if more is not None and is_han(fact.strip()[-1]):  # "2米" of "2米11" (2.11 m)
                fuller = fuller or sentence[match.start():more.end()]
                continue
            start, end = widened(sentence, match.start(), match.end())
            if sentence[match.end():end] == "+":  # "3.8+": the bound ends the word
                if _PLUS_SAID.search(question):
                    return None
                fuller = fuller or sentence[start if amount else match.start():end].strip()
                continue
            if not amount:
                return None  # stated whole ("under Python 3.8" bounds no amount)
            extra = normalise(sentence[start:match.start()] + " " + sentence[match.end():end])
            extra = re.sub(r"\bevery\b|\bonly\b|[\d.,\s]+$", " ", extra).strip()
            # stated whole somewhere, or the question says the bound (as a phrase: "over"
            # is not in "turnover", nor "10 to" in "1.10 to")
            if not extra or any(contains_phrase(t, extra) for t in (folded_fact,
                                                                   folded_question)):
                return None
            fuller = fuller or sentence[start:end].strip()
    return fuller or None


# a value opening with a comparison ("<= chaos <= 1"), and an operand ending the text before
_OPERATOR_START = re.compile(r"^\s*(?:<=|>=|==|!=|<|>|≤|≥|=)")
_OPERAND_END = re.compile(r"[\w.)\]]+\s*$")


def cut_range(fact: str, text: str) -> str | None:
    """The range ``fact`` was cut from when it opens with a comparison whose left operand
    ``text`` (its chunk) gives right before it ("<= chaos <= 1" of "0. <= chaos <= 1", where
    a sentence splitter would part "0." from the rest); else None."""
    value = fact.strip()
    if _OPERATOR_START.match(value) is None:
        return None
    for match in re.finditer(re.escape(value), text):
        operand = _OPERAND_END.search(text[:match.start()])
        if operand is not None:
            return " ".join(text[operand.start():match.end()].split())
    return None


# the limit a question asks for, and the bound a value states, each way
_ASKS_MOST = re.compile(r"\b(?:max(?:imum|imal)?|at most|up to|upper (?:limit|bound)|largest|"
                        r"biggest|longest|highest)\b|最多|最大|最长|最高|上限", re.I)
_ASKS_LEAST = re.compile(r"\b(?:min(?:imum|imal)?|at least|lower (?:limit|bound)|smallest|"
                         r"shortest|lowest|earliest)\b|最少|最小|最短|最低|下限|最早", re.I)
_ABOVE = re.compile(r"\b(?:(?<!no )(?<!not )(?:more|greater|longer|higher) than|at least|"
                    r"no (?:less|fewer) than|over|above|past|beyond|exceeding|or (?:more|"
                    r"greater|longer|higher))\b|\d\+(?![\w+])|超过|超出|至少|不少于|不低于|逾|"
                    r"以上|多于|大于|高于", re.I)
_BELOW = re.compile(r"\b(?:(?<!no )(?<!not )(?:less|fewer|shorter|lower) than|at most|up to|"
                    r"no more than|not more than|under|below|within|or (?:less|fewer|shorter|"
                    r"lower))\b|不到|不足|不超过|最多|以下|以内|之内|少于|小于|低于", re.I)


def bound_against_question(fact: str, question: str, sentences: Sequence[str]) -> str | None:
    """The value with its bound when the bound runs against the limit the question asks:
    a maximum asked, a lower bound given ("the maximum number of tokens" -> "over 512
    tokens": past it inputs are windowed, no maximum), or a minimum asked, an upper bound
    given; else None. The bound is the fact's own or the one its sentences give it."""
    most, least = _ASKS_MOST.search(question), _ASKS_LEAST.search(question)
    if bool(most) == bool(least):
        return None
    spans = [fact]
    for sentence in sentences:
        for match in re.finditer(re.escape(fact.strip()), sentence, re.I):
            start, end = widened(sentence, match.start(), match.end())
            spans.append(sentence[start:end])
    against, along = (_ABOVE, _BELOW) if most else (_BELOW, _ABOVE)
    for span in spans:
        if against.search(span) and not along.search(span):
            return span.strip()
    return None


# a negation governing what follows it in its clause ("does not automatically call
# ``close()`` upon ``Exception``"), and what ends a clause
_NEGATION = re.compile(r"\b(?:not|never|cannot|no longer)\b|n't\b", re.I)
_CLAUSE_BREAK = re.compile(r"[,;:!?]|\.\s|\b(?:and|but|because|so|which|while|whereas|since|"
                           r"if|when|unless|though|although)\b", re.I)


def negated_value(fact: str, question: str, sentences: Sequence[str]) -> str | None:
    """The clause saying that what ``fact`` belongs to does not happen ("the notebook version
    does not automatically call ``close()`` upon ``Exception``") when every English sentence
    stating it negates it so and the question negates nothing (it asks what triggers the
    call: it inverts its sentence); else None."""
    if _NEGATION.search(question) or not sentences:
        return None
    pattern = re.compile(rf"(?<![\w-]){re.escape(fact.strip())}(?![\w-])", re.I)
    clause = ""
    for sentence in sentences:
        matches = list(pattern.finditer(sentence))  # as written, not "bools" for "bool"
        negated = ""
        for match in matches:
            before = sentence[:match.start()]
            breaks = [b.end() for b in _CLAUSE_BREAK.finditer(before.rstrip("`'\" "))]
            start = breaks[-1] if breaks else 0
            if _NEGATION.search(before[start:]):
                negated = " ".join(sentence[start:match.end()].split())
        if matches and not negated:
            return None  # stated once without a negation: the question may ask that
        clause = clause or negated
    return clause or None


# --- example code -----------------------------------------------------------------------

# a line opening a Python block ("for i in TqdmExtraFormat(range(9)):")
_BLOCK_OPENER = re.compile(r"^\s*(?:for|while|with|if|elif|else|try|except|async|def)\b.*:\s*$")
_CLASS = re.compile(r"^(?P<indent>[ \t]*)class[ \t]+(?P<name>[A-Za-z_]\w*)\b[^\n]*:[ \t]*$",
                    re.M)


def _example_class_lines(lines: list[str], subject: str) -> tuple[list[str], set[int]]:
    """The classes the code of ``lines`` defines other than ``subject`` (an example's own:
    a subclass it writes), and the indices of their lines (header and indented body)."""
    names: list[str] = []
    inside: set[int] = set()
    for i, line in enumerate(lines):
        match = _CLASS.match(line)
        if match is None or names_any(match.group("name"), [subject]):
            continue
        names.append(match.group("name"))
        indent = len(match.group("indent").expandtabs())
        inside.add(i)
        for j in range(i + 1, len(lines)):
            if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) <= indent:
                break
            inside.add(j)
    return names, inside


def example_code_value(value: str, text: str, subject: str) -> str | None:
    """The class when ``text``'s code defines a class of its own (not ``subject``) and
    ``value`` stands only in code lines there (that class's body, docstrings included):
    the example's name, not the subject's ("a ``total_time`` format parameter" that a
    subclass of tqdm provides); else None."""
    lines = text.splitlines()
    names, inside = _example_class_lines(lines, subject)
    if not names:
        return None
    code, _ = code_line_indices(text)
    code |= {i for i, line in enumerate(lines) if _BLOCK_OPENER.match(line)}
    bare = value.strip("`")
    pattern = re.compile(rf"(?<![\w-]){re.escape(bare)}(?![\w-])")
    hits = [i for i, line in enumerate(lines) if pattern.search(line)]
    if hits and all(i in inside or i in code for i in hits):
        return names[0]
    return None


# --- changelog entries the document says were changed later -----------------------------

_VERSION_HEADING = re.compile(r"^\s*v?\d+\.\d+(?:\.\d+)*(?:[a-z]+\d*)?\b")
# what the old name of a change is followed by ("``--pure-python`` is now just ...") or, within
# a few words, preceded by ("the only version using the ``--pure-python`` setting name");
# the new name ("renamed to ``x``", "replaced by ``x``") is neither
_OLD_BEFORE = re.compile(r"^[^.;]{0,60}?\b(?:(?:is|are) now|now just|(?:was|were|has been|"
                         r"have been) (?:renamed|replaced|superseded|dropped|removed|"
                         r"deprecated)|no longer|(?:is|are) obsolete)\b", re.I)
_OLD_AFTER = re.compile(r"\b(?:(?:was|were) the only versions? (?:using|with|to use)|"
                        r"renamed|replaced|dropped|deprecated|removed)(?: the)?\W{0,3}$", re.I)


def changelog_entry(chunk: Chunk) -> bool:
    """Whether ``chunk`` stands under a version heading (a changelog entry: "1.9.3
    (2023-11-20)")."""
    headings = chunk.metadata.get("heading_path") or []
    return bool(headings) and bool(_VERSION_HEADING.match(str(headings[0])))


def changed_later(value: str, chunk: Chunk, document: Iterable[Chunk]) -> str | None:
    """The sentence of ``chunk``'s document saying that ``value``, given in a changelog
    entry, was changed afterwards, the old name of a change ("v1.9.3 was the only version
    using the ``--pure-python`` setting name", "``--pure-python`` is now just
    ``pure-python``": not ``pure-python``); None when the document says no such thing or
    ``chunk`` is no changelog entry."""
    if not changelog_entry(chunk):
        return None
    bare = re.escape(value.strip("`"))
    pattern = re.compile(rf"(?<![\w-]){bare}(?![\w-])")
    for other in document:
        for sentence in text_sentences(other.text):
            for match in pattern.finditer(sentence):
                after = sentence[match.end():].lstrip("`'\" ")
                if _OLD_BEFORE.match(after) or _OLD_AFTER.search(sentence[:match.start()]):
                    return " ".join(sentence.split())
    return None


# --- the kind a sentence gives its value ----------------------------------------------

#: what a software document calls a value right before or after it ("the environment
#: variable ``SHELL``", "the ``dist`` directory")
VALUE_KINDS = ("environment variable", "variable", "flag", "option", "argument", "parameter",
               "method", "function", "class", "attribute", "property", "directory", "folder",
               "file", "module", "submodule", "package", "command", "setting", "field", "key",
               "exception", "extra", "keyword")
_KIND = "|".join(sorted(VALUE_KINDS, key=len, reverse=True))
_KIND_BEFORE = re.compile(rf"\b(?P<kind>{_KIND})s?\W{{0,3}}$", re.I)
_KIND_AFTER = re.compile(rf"^\W{{0,3}}(?P<kind>{_KIND})s?\b", re.I)


def dropped_kind(fact: str, question: str, sentences: Sequence[str]) -> str | None:
    """The kind that every sentence stating ``fact`` gives it right before or after it
    ("environment variable ``SHELL``") when the question names no such kind (it asks for
    something else the sentence names: "the user's preferred interpreter"); else None."""
    kinds: set[str] = set()
    pattern = re.compile(rf"(?<![\w-]){re.escape(fact)}(?![\w-])")
    for sentence in sentences:
        for match in pattern.finditer(sentence):  # as written ("SHELL", not "sub-shell")
            near = (_KIND_BEFORE.search(sentence[max(0, match.start() - 30):match.start()])
                    or _KIND_AFTER.match(sentence[match.end():match.end() + 30]))
            if near is None:
                return None  # stated once without a kind: the question may ask otherwise
            kinds.add(near.group("kind").lower())
    if not kinds:
        return None
    asked = normalise(question)
    if any(re.search(rf"\b{re.escape(k.split()[-1])}", asked) for k in kinds):
        return None
    return sorted(kinds)[0]


# --- the kind a value's shape gives it ---------------------------------------------------

# the words an English question puts between its asking word and the rest ("what command
# can you use", "what is the name of the performance benchmark suite")
_ASKED = re.compile(
    r"\b(?:what|which)\s+(?:(?:is|are|was|were)\s+)?(?:(?:the|a|an)\s+)?"
    r"(?P<phrase>(?:[\w-]+\s+){0,3}?[\w-]+?)(?=\s+(?:of|for|in|on|to|that|which|does|do|did|"
    r"is|are|was|were|can|could|should|must|will|would|used|when|where|by|with|from|at|you|"
    r"i|we|it|they|has|have|lets?|makes?|controls?|gives?|turns?)\b|\s*[?？,])", re.I)
_NAME_OF = re.compile(r"^(?:(?:the|a|an)\s+)?(?P<phrase>(?:[\w-]+\s+){0,3}?[\w-]+?)"
                      r"(?=\s+(?:of|for|in|on|to|that|which|used|by|with|from|at|is|are|"
                      r"does|do|can|should)\b|\s*[?？,]|$)", re.I)
_OPTION_SHAPE = re.compile(r"^`?--?[A-Za-z][\w-]*(?:[= ]\S+)?`?$")
_FILE_SHAPE = re.compile(r"^`?[\w./-]*\w\.(?:md|rst|txt|py|pyi|toml|cfg|ini|json|ya?ml|c|h|"
                         r"cc|cpp|rs|js|ts|sh|html?|lock|in|ipynb)`?$", re.I)
_RELEASE = re.compile(r"\d+\.\d+")
#: what a question may ask for that a command-line option answers (none of the other
#: kinds), the other kinds a question names, and what a file answers
_OPTION_FITS = {"option", "flag", "argument", "arg", "switch", "parameter", "setting",
                "keyword", "way", "value", "name"}
_OTHER_KINDS = {"command", "type", "package", "module", "library", "tool", "program",
                "function", "method", "class", "attribute", "variable", "version", "language",
                "directory", "folder", "file", "format", "extra"}
_FILE_FITS = {"file", "script", "document", "documentation", "doc", "docs", "page", "path",
              "module", "config", "configuration", "notebook", "template", "manifest",
              "readme", "source", "program", "entry", "filename", "stub", "stubs"}


def asked_noun(question: str) -> tuple[str, bool] | None:
    """The noun an English question asks for and whether it asks for the name of it ("what
    is the name of the performance benchmark suite" -> ("suite", True); "what command can
    you use" -> ("command", False)); None when it is worded otherwise."""
    found = _ASKED.search(question)
    if found is None:
        return None
    head = found.group("phrase").split()[-1].lower()
    named = head in ("name", "title")
    if named:
        rest = re.match(r"\s+of\s+(.*)", question[found.end():], re.I | re.S)
        inner = _NAME_OF.match(rest.group(1)) if rest else None
        if inner is None:
            return None
        head = inner.group("phrase").split()[-1].lower()
    return head.removesuffix("s") if len(head) > 3 and head.endswith("s") else head, named


def shape_against_question(fact: str, question: str) -> str | None:
    """The kind a value's shape gives it when the question asks for another kind of thing: a
    command-line option ("--installer=uv") asked as a command, a type or a package, a file
    ("tests/README.md") asked as the name of something that is no file (a benchmark suite),
    or a release ("Python 3.11") asked as a programming language; else None."""
    asked = asked_noun(question)
    if asked is None:
        return None
    noun, named = asked
    value = fact.strip()
    if _OPTION_SHAPE.match(value) and noun in _OTHER_KINDS:
        return "command-line option"
    if _FILE_SHAPE.match(value) and noun not in _FILE_FITS and (named or noun in _OTHER_KINDS
                                                                 | _OPTION_FITS):
        return "file"
    if noun == "language" and _RELEASE.search(value):
        return "release"  # "Python 3.11" is one release of a language, "Python 3" is one
    return None


# --- wording -----------------------------------------------------------------------------

_ARTICLE_END = re.compile(r"\b(?:a|an|the|its|their|and|or)\s*[?？]\s*$", re.I)
# word endings that read as an adjective ("noticeable", "unnecessary", "useful")
_ADJECTIVE_END = re.compile(r"(?:ous|ful|less|ible|able|ary|ive)$", re.I)
# what ends a noun phrase: the question mark, a comma, a preposition or a conjunction
_PHRASE_END = re.compile(r"^\s*(?:[?？,;:]|(?:of|for|to|in|on|with|by|from|at|and|or)\b)",
                         re.I)


def garbled_wording(question: str) -> str | None:
    """Why an English question reads garbled: a word twice in a row ("the the"), or an
    article or a conjunction before its question mark; else None."""
    twice = re.search(r"\b([A-Za-z]{2,})\s+\1\b", question, re.I)
    if twice is not None and twice.group(1).lower() not in ("that", "had", "to"):
        return f"'{twice.group(0)}'"
    if _ARTICLE_END.search(question):
        return f"ends in '{question.rstrip(' ?？')[-20:]}'"
    return None


def adjective_for_noun(question: str, synonyms: dict[str, str]) -> str | None:
    """A replacement of a paraphrase that leaves a noun phrase without its noun: a word not
    reading as an adjective replaced, at the end of its phrase (before the question mark, a
    comma or a preposition), by one that does ("a noticeable overhead?" -> "a noticeable
    unnecessary?"); ``question`` is the reworded one. None when there is none."""
    for word, other in synonyms.items():
        last = re.findall(r"[A-Za-z]+", other)
        if (not last or not re.search(r"[A-Za-z]", word) or _ADJECTIVE_END.search(word)
                or not _ADJECTIVE_END.search(last[-1])):
            continue
        pattern = rf"(?<![\w-]){re.escape(other)}(?![\w-])"
        if any(_PHRASE_END.match(question[m.end():])
               for m in re.finditer(pattern, question, re.I)):
            return f"'{word}' replaced by the adjective '{other}' at the end of its phrase"
    return None
