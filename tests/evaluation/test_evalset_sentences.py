"""The checks of generated questions read a chunk's sentences by one rule (``reading.sentences``):
the sentence stating a value, the changelog sentence saying a value was changed later and the
sentences naming a subject are cut alike; a chunk with few words of prose is skipped as code,
a heading or too short; and a question says a value's bound or range when it holds it as a
phrase."""

from __future__ import annotations

from modrag_studio.engine.core.datatypes import Chunk
from modrag_studio.evaluation.generation.checks.misreads import changed_later, partial_value
from modrag_studio.evaluation.generation.checks.verify import fact_sentences
from modrag_studio.evaluation.generation.reading.content import skip_reason
from modrag_studio.evaluation.generation.reading.sentences import text_sentences
from modrag_studio.evaluation.generation.reading.subjects import naming_sentences


def test_sentences_are_cut_at_latin_and_chinese_ends_and_blank_lines_only():
    text = ("LP-07 runs 3.5 hours. It is fine\nafter a hard wrap!\n\n"
            "冷却泵每3个月保养。李娜负责")
    assert text_sentences(text) == ["LP-07 runs 3.5 hours.",
                                    "It is fine\nafter a hard wrap!",
                                    "冷却泵每3个月保养。", "李娜负责"]
    assert text_sentences("  \n\n ") == []


def test_the_checks_cut_a_chunk_into_the_same_sentences():
    text = "泵HP-03由李娜保养。泵HP-04每3个月检查一次。"
    assert fact_sentences("3个月", text, with_previous=False) == ["泵HP-04每3个月检查一次。"]
    assert fact_sentences("3个月", text) == ["泵HP-03由李娜保养。 泵HP-04每3个月检查一次。"]
    assert naming_sentences(text, "HP-04") == "泵HP-04每3个月检查一次。"
    entry = Chunk(chunk_id="tool.md#9", doc_id="tool.md", index=9, text=(
        "构建时传入 ``--fast``。``--fast`` is now just ``fast``."),
        metadata={"heading_path": ["2.1.0"]})
    assert changed_later("--fast", entry, [entry]) == "``--fast`` is now just ``fast``."


def test_a_chunk_of_few_prose_words_is_code_a_heading_or_too_short():
    assert skip_reason("Installation\n============\n") == "heading-only"
    assert skip_reason("```\nimport tool\ntool.run()\n```") == "code-only"
    assert skip_reason("Run it:\n\n```\nimport tool\ntool.run()\ntool.stop()\n```") == (
        "code-only")
    assert skip_reason("Run it like this.\n\n```\nimport tool\n```") == "too-short"


def test_a_question_says_a_bound_or_range_it_holds_as_a_phrase():
    leaves = ["The leaves are 2-3 cm long."]
    assert partial_value("3 cm", "How long are the leaves?", leaves) == "2-3 cm"
    assert partial_value("3 cm", "Are the leaves 2-3 cm long?", leaves) is None
    cache = ["The cache holds over 500 entries."]
    assert partial_value("500 entries", "What turnover of entries does the cache have?",
                         cache) == "over 500 entries"  # ("over" is no word of "turnover")
