"""Cheaper questions of the same quality: value sentences whose value is no fact (a link's
label, an example, one of a list) rejected before any call; a two-chunk question from two
value sentences of one subject in one call; a paraphrase worded like its statement kept as
the single question it is; the round trip shown the sentences about the question, not whole
chunks; drafts written one after another, then checked (calls sharing their instructions)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from modrag_nodes.ingest.splitters import split_markdown
from modrag_nodes.llm.client import ChatResult, LLMSpec, register_backend, unregister_backend
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk, Document
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.generation import GenerationConfig, generate_evalset
from modrag_studio.evaluation.generation.checks.round_trip import build_prompt, window
from modrag_studio.evaluation.generation.checks.verify import Deduplicator
from modrag_studio.evaluation.generation.facts import (
    build_fact_prompt,
    link_labels,
    parse_fact_questions,
    value_facts,
)
from modrag_studio.evaluation.generation.reading.content import subject_terms
from modrag_studio.evaluation.generation.reading.subjects import lower_case_words, thing_subjects
from tests.conftest import PKGDOCS
from tests.tiny_rag import tiny_rag_graph

needs_pkgdocs = pytest.mark.skipif(not (PKGDOCS / "docs").is_dir(),
                                   reason="shared pkgdocs corpus absent")


def _chunk(text: str, doc: str = "notes.md", index: int = 0) -> Chunk:
    return Chunk(chunk_id=f"{doc}#{index}", doc_id=doc, text=text, index=index)


def _values(text: str, doc: str = "notes.md") -> set[str]:
    return {f.value for f in value_facts(_chunk(text, doc))}


def _readme(name: str) -> list[Chunk]:
    path = PKGDOCS / "docs" / name
    return split_markdown(Document(doc_id=name, text=path.read_text(encoding="utf-8"),
                                   source=str(path)), 800, 0)


def test_a_value_is_no_link_label_example_list_item_or_snippet():
    # a link's label points elsewhere ("as described in Getting Started")
    linked = ("For small fixes, you can install the nightly version as described in "
              "[Getting Started](https://example.org/start).")
    assert "Getting Started" in link_labels(linked) and "Getting Started" not in _values(
        linked, "torch.md")
    assert _values("Professional support for charset-normalizer is available as part of "
                   "the [Tidelift Subscription][1] for companies.", "charset.md") == set()
    # an example value is no fact of the subject
    assert _values("A form with only text, like a username, is sent as one short line: "
                   "`username=alice`.", "python-multipart.md") == set()
    assert _values("Array libraries run on the GPU too, for example `cupy` in the torch "
                   "ecosystem.", "torch.md") == set()
    # one of a list has other answers too
    assert _values("Conversions can be applied per label using the `ulabel` or `alabel` "
                   "functions for specialized use cases.", "idna.md") == set()
    assert _values("The Order Service depends on the Inventory Service and the Payment "
                   "Gateway for every order.") == set()
    # two sentences of one frame: "Who does Zhang Min mentor?" has two answers
    mentors = ("Zhang Min is the mentor of Wang Fang in the plant.\n\nZhang Min is the "
               "mentor of Lukas Berg in the plant.")
    assert _values(mentors) == set()
    # a snippet is no name
    assert _values("If using float, consider specifying `{n:.3f}` in the bar format of the "
                   "progress display.", "tqdm.md") == set()
    # what is a fact stays one; a comma after a name ends no list of names
    assert _values("The contract HT-2025-0031 is signed with Corvid Cloud, who host the "
                   "database replica.") == {"Corvid Cloud"}
    assert _values("The ``BESTMATCH`` flag makes fuzzy matching search for the best match "
                   "instead of the next match.", "regex.md") == {"BESTMATCH"}


@needs_pkgdocs
def test_value_facts_on_real_readmes_keep_facts_and_drop_labels_and_examples():
    values = {f.value for c in _readme("python-multipart.md") for f in value_facts(c)}
    assert "5 GB" in values and "username=alice" not in values
    torch = {f.value for c in _readme("torch.md") for f in value_facts(c)}
    assert "Getting Started" not in torch and "30-60 minutes" in torch


def test_code_and_pieces_of_longer_names_are_no_values():
    assert _values("The pattern ``{2i+2d+1s<=4}`` allows errors, checked in a loop by "
                   "the regex engine.", "regex.md") == set()
    assert "Universal File" not in _values("This is a Python package for writing binary "
                                           "files in the GGML Universal File format.",
                                           "gguf.md")
    assert "International System" not in _values("The number is scaled with the "
                                                  "International System of Units prefixes.",
                                                  "tqdm.md")


def test_a_value_is_not_its_subject_renamed_nor_one_flag_of_a_command_line():
    assert "Beautiful Soup" not in _values("If you use Beautiful Soup as part of your "
                                           "professional work, consider a subscription.",
                                           "beautifulsoup4.md")
    assert _values("Some common combinations: `--sdist --wheel` (`-sw`) produce an SDist "
                   "and a wheel, both from the source.", "build.md") == set()
    assert _values("Use the `--outdir` flag to choose the output directory of the built "
                   "files.", "build.md") == {"--outdir"}


def test_a_title_cased_phrase_is_no_thing_to_ask_about():
    text = ("See Best Practices and Featured Sponsors. It is kept by Natalia Gimelshein; "
            "write to andrew.svetlov@example.org or to Andrew Svetlov.")
    common = lower_case_words(["Follow the best practices of our sponsors.", text])
    assert not {"andrew", "svetlov", "org"} & common  # an address writes no word
    assert thing_subjects(text, "en", "torch", common) == ["torch", "Natalia Gimelshein",
                                                          "Andrew Svetlov"]


def _zh(text: str, title: str = "", doc: str = "zh.md") -> list[tuple[str, str, str]]:
    chunk = Chunk(chunk_id=f"{doc}#0", doc_id=doc, text=text, metadata={"title": title})
    return [(f.value, f.subject, f.kind) for f in value_facts(chunk) if f.language == "zh"]


def test_chinese_sentences_state_values_about_a_code_a_title_or_a_name():
    assert _zh("冷却泵 CP-12 的保养周期为每3个月。保养内容包括检查叶轮和更换轴封。") == [
        ("每3个月", "CP-12", "quantity")]
    # a record's short title is what its sentences are about, though they leave it unsaid
    assert _zh("尤金袋鼠\n\n尤金袋鼠分布在澳洲南部岛屿。牠们很细小，约只有8公斤重，适合饲养。",
               title="尤金袋鼠") == [("8公斤", "尤金袋鼠", "quantity")]
    assert _zh("松平康忠是日本武将。在永禄5年（1562年）元服，被任命为知行。", title="松平康忠") == [
        ("1562年", "松平康忠", "date")]
    assert _zh("李娜负责空压机 AC-05，每次保养后要记录读数和所用备件。") == [
        ("AC-05", "李娜", "code")]
    # a decade, a reign's ninth year and the digits of a code are no amounts
    assert _zh("1980年代开始人工引入冷水性鱼类，成为著名的养殖基地。", title="赛里木湖") == []
    assert _zh("九年，命权宣徽南院事，后来又升为枢密使。", title="楚昭辅") == []
    assert _zh("空压机 AC-05 位于山顶工厂，为装配线的气动工具供气。") == []
    # two values of a kind: a question about one has another answer too
    assert _zh("这台液压泵在2019年和2021年各检修过一次。", title="液压泵") == []
    # a question names a record's subject by its title (a record has no headings)
    record = Chunk(chunk_id="T#0", doc_id="TRIAL_154", text="牠们很细小，约只有8公斤重。",
                   metadata={"title": "尤金袋鼠", "heading_path": []})
    assert subject_terms(record) == ["尤金袋鼠"]
    # the prompt is Chinese, its instructions the system message
    chunk = Chunk(chunk_id="z#0", doc_id="z", text="冷却泵 CP-12 的保养周期为每3个月。")
    system, user = build_fact_prompt(value_facts(chunk)[0])
    assert user == "主题：CP-12\n陈述：冷却泵 CP-12 的保养周期为____。\n答案：每3个月"
    assert "问题：" in system
    assert parse_fact_questions("问题：冷却泵 CP-12 多久保养一次？") == [
        "冷却泵 CP-12 多久保养一次？"]


def test_fact_questions_are_read_one_per_statement():
    reply = "**QUESTION 1:** How much memory does x need?\nQUESTION 2: Which flag does y use?"
    assert parse_fact_questions(reply) == ["How much memory does x need?",
                                           "Which flag does y use?"]
    assert parse_fact_questions("Sure!\nHow much memory does x need?") == [
        "How much memory does x need?"]


def test_round_trip_shows_each_passage_cut_to_the_sentences_about_the_question():
    filler = " ".join(f"The canteen serves soup number {i} on weekdays." for i in range(20))
    text = f"{filler} The lubrication pump LP-07 is serviced every 500 operating hours. {filler}"
    cut = window(text, "How often is the lubrication pump LP-07 serviced?")
    assert "LP-07 is serviced every 500 operating hours." in cut and len(cut) <= 260
    passages = [_chunk(text, "a.md"), _chunk(filler + " " + filler, "b.md", 1)]
    system, user = build_prompt("en", "How often is the pump LP-07 serviced?", passages)
    assert user.startswith("Passages:\n[1] ") and len(user) < 800  # not 2 x 1,500 characters
    assert "reply NONE" in system and "reply NONE" not in user  # the shared part is the system
    assert window("Short passage.", "anything?") == "Short passage."


# --- generation with a scripted backend ---------------------------------------------------

BACKEND = "test-scripted-cheap"
DOCS = {
    "python-multipart.md": "# python-multipart\n\n## Big files\n\nIf the server reads the "
                           "whole request first, python-multipart needs 5 GB of memory per "
                           "upload. The parser streams the request in small pieces.\n\n"
                           + "More text about how python-multipart parses forms follows. " * 14
                           + "\n\n## Spooling\n\nOnce a file reaches 1 MiB, python-multipart"
                             " moves it to a temporary file on disk.",
}
QUESTIONS = {"5 GB": "How much memory does python-multipart need per upload?",
             "1 MiB": "At what size does python-multipart move a file to disk?"}
PARAPHRASES = {"5 GB": "How much RAM must python-multipart have for each transfer?"}


class Scripted:
    """Words a question per statement of a value prompt (``own_words``: the paraphrase table,
    unless ``copy``), answers the round trip with the values its passages hold; records
    the (system, user) messages."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.copy = False
        self.blank = False  # the model writes its statement back as the question
        self.joined = ""  # the one question the model writes for a two-statement prompt

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        system, user = messages[0].content, messages[-1].content
        self.calls.append((system, user))
        if user.startswith("Reply with: OK"):
            return ChatResult(text="OK", model="scripted")
        if "what kind of thing is" in user:
            return ChatResult(text="software", model="scripted")
        if user.startswith("Passages:"):
            asked = user.split("Question:")[-1]
            found = [v for v, q in QUESTIONS.items()  # each half of a joined question
                     if q.rstrip("?")[1:] in asked or PARAPHRASES.get(v) == asked.strip()]
            return ChatResult(text="; ".join(found) or "NONE", model="scripted")
        if self.joined and user.count("Subject:") == 2:
            return ChatResult(text=f"QUESTION: {self.joined}", model="scripted")
        if self.blank:
            statement = re.search(r"^Statement: (.+)$", user, re.M).group(1)
            return ChatResult(text=f"QUESTION: {statement.rstrip('.')}?", model="scripted")
        lines = []
        for value in re.findall(r"^Answer: (.+)$", user, re.M):
            table = PARAPHRASES if "own words" in system and not self.copy else QUESTIONS
            lines.append(f"QUESTION: {table.get(value, QUESTIONS.get(value, '?'))}")
        return ChatResult(text="\n".join(lines) or "nothing", model="scripted")


@pytest.fixture
def scripted():
    backend = Scripted()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


def _generate(tmp_path: Path, types: list[str], n: int = 1, **options) -> object:
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    data = tiny_rag_graph(folder, DOCS, backend=BACKEND)
    doc = GraphDocument.model_validate_json(json.dumps(data))
    config = GenerationConfig(n=n, llm=LLMSpec(backend=BACKEND), types=types, dense=False,
                              **options)
    return generate_evalset(doc, {}, config, executor=Executor(default_registry()))


def _value_prompts(scripted: Scripted) -> list[str]:
    return [user for _, user in scripted.calls if user.startswith("Subject:")]


def test_a_two_chunk_question_comes_from_two_value_sentences_of_one_subject_in_one_call(
        scripted, tmp_path):
    result = _generate(tmp_path, ["multi"])
    [row] = result.questions
    assert row.question == ("How much memory does python-multipart need per upload, and at "
                            "what size does python-multipart move a file to disk?")
    assert [f[0] for f in row.expected_facts] == ["5 GB", "1 MiB"]
    assert len(row.expected_evidence.to_dict()["chunk_ids"]) == 2
    [prompt] = _value_prompts(scripted)  # one call wrote both halves
    assert prompt.count("Subject: python-multipart") == 2
    assert result.report.calls == 2  # that call and the round trip


def test_one_question_asking_for_both_values_is_a_two_chunk_question(scripted, tmp_path):
    scripted.joined = ("How much memory does python-multipart need per upload, and at what "
                       "size does python-multipart move a file to disk?")
    [row] = _generate(tmp_path, ["multi"]).questions
    assert row.question == scripted.joined
    assert [f[0] for f in row.expected_facts] == ["5 GB", "1 MiB"]


def test_a_paraphrase_is_worded_apart_or_kept_as_the_single_question_still_owed(
        scripted, tmp_path):
    result = _generate(tmp_path, ["paraphrase"], max_attempts=4)
    [row] = result.questions
    assert row.question == PARAPHRASES["5 GB"] and "type:paraphrase" in row.tags
    # no synonym call: the value prompt asked for other words itself
    assert [s for s, _ in scripted.calls if "own words" in s] and not any(
        "For each word below" in u for _, u in scripted.calls)
    scripted.calls.clear()
    scripted.copy = True  # the model copies its statement's words
    copied = _generate(tmp_path, ["single", "paraphrase"], n=2, seed=3)
    kinds = [c.kind for c in copied.candidates]
    assert kinds.count("single") == 2 and [r.tags[1] for r in copied.questions] == [
        "type:single"] * 2
    scripted.calls.clear()  # no single owed: a second call gives other words
    lone = _generate(tmp_path, ["paraphrase"], max_attempts=2)
    assert lone.questions == [] and lone.candidates[0].verdict.reason == "unreadable_reply"
    assert any("For each word below" in u for _, u in scripted.calls)


def test_questions_are_drafted_one_after_another_then_checked(scripted, tmp_path):
    result = _generate(tmp_path, ["single"], n=2)
    assert len(result.questions) == 2
    kinds = ["value" if u.startswith("Subject:") else "trip" for _, u in scripted.calls[1:]]
    assert kinds == ["value", "value", "trip", "trip"]  # consecutive calls share a system
    systems = [s for s, _ in scripted.calls[1:]]
    assert systems[0] == systems[1] and systems[2] == systems[3]
    assert build_fact_prompt.__doc__


def test_what_kind_a_thing_is_is_asked_once_and_each_detail_once(scripted, tmp_path):
    result = _generate(tmp_path, ["unanswerable"], n=3)
    assert len(result.questions) == 3 == len(result.candidates)  # a detail asked once
    assert all("python-multipart" in r.question for r in result.questions)
    kinds = [u for _, u in scripted.calls if "what kind of thing is" in u]
    assert len(kinds) == 1 and '"python-multipart"' in kinds[0]


def test_the_value_is_a_blank_of_its_statement_and_a_question_keeping_it_is_rejected(
        scripted, tmp_path):
    scripted.blank = True
    result = _generate(tmp_path, ["single"], max_attempts=2)
    [prompt] = _value_prompts(scripted)[:1]
    assert "needs ____ of memory" in prompt and prompt.count("5 GB") == 1  # the answer line
    assert result.questions == [] and {c.verdict.detail for c in result.candidates} == {
        "the question kept the blank"}


def test_questions_naming_different_things_are_no_near_duplicates():
    class Search:  # no embedder: word overlap
        embedder = None

    dedup = Deduplicator(Search())
    dedup.add("g001", "What is the price of a commercial licence for regex?", {"regex"})
    assert dedup.duplicate_of("What is the price of a commercial licence for tqdm?",
                              {"tqdm"}) is None
    assert dedup.duplicate_of("What is the price of a commercial licence for regex now?",
                              {"regex"}) == "g001"
    assert dedup.duplicate_of("What is the price of a commercial licence for regex?") == "g001"


def test_questions_expecting_different_facts_are_no_near_duplicates():
    class Search:  # no embedder: word overlap
        embedder = None

    dedup = Deduplicator(Search())
    dedup.add("g001", "In regex, what attribute of the match object gives the fuzzy counts?",
              {"regex"}, ["fuzzy_counts"])
    asked = "In regex, what attribute of the match object gives the fuzzy changes?"
    assert dedup.duplicate_of(asked, {"regex"}, ["fuzzy_changes"]) is None
    assert dedup.duplicate_of(asked, {"regex"}, ["`fuzzy_counts`"]) == "g001"  # same fact
    assert dedup.duplicate_of(asked, {"regex"}) == "g001"  # an unanswerable one: no facts


def test_a_type_that_keeps_none_of_its_first_tries_hands_its_share_on(scripted, tmp_path):
    docs = {f"pkg{i}.md": f"# pkg{i}\n\nThe pkg{i} parser needs {i + 2} GB of memory for "
                          "each upload in its default setup, which the server reads in small "
                          "pieces while it streams." for i in range(12)}
    graph = GraphDocument.model_validate_json(json.dumps(tiny_rag_graph(
        tmp_path, docs, backend=BACKEND)))
    config = GenerationConfig(n=12, llm=LLMSpec(backend=BACKEND), dense=False,
                              types=["paraphrase", "unanswerable"], unanswerable_share=1.0)
    result = generate_evalset(graph, {}, config, executor=Executor(default_registry()))
    tried = result.report.by_type["paraphrase"]  # (the model writes no question of these)
    # it gives up after 8 tries (counted as drafted: a batch or two more), not 2 x 6 + 2
    assert tried.kept == 0 and tried.generated <= 12
    assert any(note.startswith("paraphrase: 0 kept of 6 after")
               for note in result.report.notes)
    assert len(result.questions) == 12  # the unanswerable type made up for it


def test_a_default_or_flag_value_keeps_no_stray_backtick_or_equals_sign():
    """The expected answer is the name a user writes: "dist", not "`dist" (the closing
    backtick cut with the bracket), and "--config-json", not "--config-json=" (its value
    placeholder dropped): an answer written either way is found in it."""
    assert "dist" in _values("The build writes its archives to a folder of the project "
                             "(defaults to `dist`).", "build.md")
    assert "--config-json" in _values("- `--config-json=<value>`: An alternative way to pass "
                                      "in complex config settings as JSON strings.", "build.md")
