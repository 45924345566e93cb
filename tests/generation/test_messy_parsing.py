"""Tolerant parsing of messy model replies."""

from __future__ import annotations

import pytest

from modrag_nodes.generation.messy_parsing import (
    clean_single_text,
    extract_json,
    parse_graded_lines,
    parse_list,
    parse_yes_no,
)


@pytest.mark.parametrize("reply", [
    "yes", "Yes.", "YES", "**Yes**", "yes, relevant", "Yes - the document covers it.",
    "Answer: yes", "Verdict: Supported", "y", "true", "`yes`", "relevant",
    "  \n Yes, it is supported by evidence [1].", "Final answer: YES",
])
def test_yes_variants(reply: str) -> None:
    assert parse_yes_no(reply) is True


@pytest.mark.parametrize("reply", [
    "no", "No.", "NO", "**No**", "no, not relevant", "Not relevant.", "irrelevant",
    "Answer: no", "n", "false", "The answer is not supported by the evidence.",
    "unsupported", "It doesn't mention the warranty.", "Nope",
    "The passage is not directly relevant.",
    "No, it is relevant only to another question",
])
def test_no_variants(reply: str) -> None:
    assert parse_yes_no(reply) is False


@pytest.mark.parametrize("reply", ["", "maybe", "I am not sure.", "Nobody knows", "yesterday"])
def test_unreadable_verdicts(reply: str) -> None:
    assert parse_yes_no(reply) is None


@pytest.mark.parametrize("reply, expected", [
    ("[doc 0] yes\n[doc 1] no\n[doc 2] yes", {0: True, 1: False, 2: True}),
    ("[doc 1] yes\n[doc 2] no\n[doc 3] yes", {0: True, 1: False, 2: True}),
    ("1. no\n2. yes\n3. yes", {0: False, 1: True, 2: True}),
    ("Doc 1: NO\nDoc 2: YES\nDoc 3: no", {0: False, 1: True, 2: False}),
    ("Here are my grades:\n\n[doc 1]: yes, relevant\n[doc 2] - not relevant\n[doc 3] Yes",
     {0: True, 1: False, 2: True}),
    ("yes, relevant\nno\nYES", {0: True, 1: False, 2: True}),
    ("Document #1 is relevant.\nDocument #2 is irrelevant.\nDocument #3 is relevant.",
     {0: True, 1: False, 2: True}),
    ("**[doc 2]** no\n**[doc 1]** yes", {0: True, 1: False}),
    ("1) Yes\n2) No", {0: True, 1: False}),
    ("(1) yes\n(2) no\n(3) no", {0: True, 1: False, 2: False}),
    ("[doc 1] yes [doc 2] no [doc 3] yes", {0: True, 1: False, 2: True}),
    ("Doc 1: yes, Doc 2: no; Doc 3: no", {0: True, 1: False, 2: False}),
    ("1. [doc 1] yes\n2. [doc 2] no", {0: True, 1: False}),
])
def test_graded_lines(reply: str, expected: dict[int, bool]) -> None:
    grades, _ = parse_graded_lines(reply, 3)
    assert grades == expected


def test_graded_lines_report_unreadable_and_ignore_out_of_range() -> None:
    grades, unreadable = parse_graded_lines("[doc 1] yes\n[doc 2] hmm, hard to say\n"
                                            "[doc 9] no", 3)
    assert grades == {0: True}
    assert unreadable == ["[doc 2] hmm, hard to say"]


@pytest.mark.parametrize("reply", [
    "1. What is X?\n2. How does Y work?\n3. Why Z?",
    "Sure! Here are the sub-queries:\n1) What is X?\n2) How does Y work?\n3) Why Z?",
    "- What is X?\n- How does Y work?\n- Why Z?",
    "* \"What is X?\"\n* 'How does Y work?'\n* Why Z?",
    "Q1: What is X?\nQ2: How does Y work?\nQ3: Why Z?",
    "Sub-query 1: What is X?\n\nSub-query 2: How does Y work?\n\nSub-query 3: Why Z?",
    "What is X?\nHow does Y work?\nWhy Z?\nwhy z?",
    "• What is X?\n• How does Y work?\n• Why Z?\n",
    "Here are the questions:\n```\nWhat is X?\nHow does Y work?\nWhy Z?\n```",
])
def test_parse_list(reply: str) -> None:
    assert parse_list(reply) == ["What is X?", "How does Y work?", "Why Z?"]


def test_parse_list_limit() -> None:
    assert parse_list("1. a1\n2. b2\n3. c3\n4. d4", max_items=2) == ["a1", "b2"]


@pytest.mark.parametrize("reply", [
    "solar panel output in winter",
    "Rewritten query: solar panel output in winter",
    "Sure! Here is the rewritten query:\n\"solar panel output in winter\"",
    "Query: **solar panel output in winter**",
    "  'solar panel output in winter'  ",
    "Here is the rewritten question: solar panel output in winter",
    "Rewrite the question to: solar panel output in winter",
    "The reformulated search query would be: solar panel output in winter",
])
def test_clean_single_text(reply: str) -> None:
    assert clean_single_text(reply) == "solar panel output in winter"


@pytest.mark.parametrize("reply", ["LP-07: service interval", "What is the LP-07 interval?",
                                   "Pump question LP-07 interval"])
def test_clean_single_text_keeps_content(reply: str) -> None:
    assert clean_single_text(reply) == reply


@pytest.mark.parametrize("reply, expected", [
    ('{"answer": "42"}', {"answer": "42"}),
    ('Sure, here it is:\n```json\n{"answer": "42", "sources": ["a"]}\n```\nHope it helps.',
     {"answer": "42", "sources": ["a"]}),
    ('The result is {"answer": "42",} as asked.', {"answer": "42"}),
    ("{'answer': 'forty two', 'ok': True}", {"answer": "forty two", "ok": True}),
    ('{"answer": "a {nested} brace", "n": [1, 2,]}', {"answer": "a {nested} brace", "n": [1, 2]}),
    ('Output: {“answer”: “42”}', {"answer": "42"}),
    ('[1, 2] and then {"answer": "x"}', {"answer": "x"}),
])
def test_extract_json(reply: str, expected: object) -> None:
    assert extract_json(reply) == expected


def test_extract_json_without_json() -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("I cannot answer that.")
