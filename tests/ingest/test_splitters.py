"""Splitters: offsets, sizes, overlap, sentences (Latin and Chinese), headings, tokens."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modrag_nodes.ingest.markdown import headings
from modrag_nodes.ingest.spans import recursive_spans, sentence_spans, token_spans
from modrag_nodes.ingest.splitters import (
    MarkdownParams,
    MarkdownSplitter,
    RecursiveParams,
    RecursiveSplitter,
    SizeParams,
    split_fixed,
    split_markdown,
    split_recursive,
    split_sentences,
)
from modrag_studio.engine.core.datatypes import Document
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken, NodeContext
from tests.ingest.helpers import MARKDOWN

PROSE = ("The cat sat on the mat. It was warm and quiet. Dr. Smith came in at noon. "
         "He fed the cat, e.g. fish and rice. Then he left again!\n\n"
         "A second paragraph starts here. It talks about dogs. Dogs bark loudly?\n\n"
         "第一句话讲猫。第二句话讲狗！第三句是问题吗？第四句有分号；最后一句。")
CHINESE_SENTENCES = ["第一句话讲猫。", "第二句话讲狗！", "第三句是问题吗？", "第四句有分号；",
                     "最后一句。"]


def doc(text: str, **metadata) -> Document:
    return Document(doc_id="doc", text=text, source="doc.txt", title="T", metadata=metadata)


def assert_offsets(document: Document, chunks) -> None:
    assert chunks, "no chunks: every check below would pass on nothing"
    for index, chunk in enumerate(chunks):
        assert chunk.text == document.text[chunk.start:chunk.end]
        assert chunk.text.strip() == chunk.text and chunk.text
        assert chunk.chunk_id == f"doc#{index}" and chunk.index == index
        assert chunk.doc_id == "doc" and chunk.source == "doc.txt"


def non_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_fixed_characters_with_overlap():
    document = doc("abcdefghij" * 30)
    chunks = split_fixed(document, 100, 20)
    assert_offsets(document, chunks)
    assert all(len(c.text) <= 100 for c in chunks)
    assert [c.start for c in chunks] == [0, 80, 160, 240]
    assert chunks[0].text[-20:] == chunks[1].text[:20]
    assert chunks[-1].end == len(document.text)


def test_fixed_tokens_count_words_and_cjk_characters():
    assert len(token_spans("hello world 你好")) == 4
    document = doc(" ".join(f"w{i}" for i in range(50)))
    chunks = split_fixed(document, 10, 2, unit="tokens")
    assert_offsets(document, chunks)
    assert [len(c.text.split()) for c in chunks] == [10, 10, 10, 10, 10, 10]
    assert chunks[1].text.split()[:2] == chunks[0].text.split()[-2:]


def test_overlap_must_be_smaller_than_size():
    with pytest.raises(ValueError, match="overlap"):
        SizeParams(chunk_size=100, overlap=100)


def test_sentences_latin_abbreviations_and_chinese_punctuation():
    sentences = [PROSE[a:b] for a, b in sentence_spans(PROSE)]
    assert "Dr. Smith came in at noon." in sentences
    assert "He fed the cat, e.g. fish and rice." in sentences
    assert "Dogs bark loudly?" in sentences
    assert sentences[-5:] == CHINESE_SENTENCES


def test_sentence_splitter_keeps_whole_sentences():
    document = doc(PROSE)
    chunks = split_sentences(document, 80, overlap=1)
    assert_offsets(document, chunks)
    boundaries = {b for _, b in sentence_spans(PROSE)}
    assert len(boundaries) > 3 and len(chunks) > 1
    assert all(c.end in boundaries for c in chunks)
    assert all(len(c.text) <= 80 for c in chunks)
    # overlap: each chunk after the first starts with the previous chunk's last sentence
    assert chunks[1].start < chunks[0].end


def test_recursive_prefers_paragraphs_then_sentences():
    document = doc(PROSE)
    chunks = split_recursive(document, 200, 0)
    assert_offsets(document, chunks)
    assert chunks[0].text.endswith("Then he left again!")
    small = split_recursive(document, 40, 0)
    assert len(small) > len(chunks)
    assert all(len(c.text) <= 40 for c in small)
    assert non_space("".join(c.text for c in small)) == non_space(PROSE)
    chinese = split_recursive(doc("".join(CHINESE_SENTENCES)), 16, 0)
    first, second, third, fourth, last = CHINESE_SENTENCES
    assert [c.text for c in chinese] == [first + second, third + fourth, last]


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab .\n。你x")), max_size=400),
       size=st.integers(5, 60), overlap=st.integers(0, 4))
def test_recursive_spans_cover_text_within_size(text, size, overlap):
    spans = recursive_spans(text, size, overlap)
    assert all(0 <= a < b <= len(text) and b - a <= size for a, b in spans)
    assert all(s2[0] >= s1[0] and s2[1] > s1[1] for s1, s2 in zip(spans, spans[1:], strict=False))
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_markdown_chunks_keep_their_heading_path():
    document = doc(MARKDOWN)
    chunks = split_markdown(document, 200, 0)
    assert_offsets(document, chunks)
    sections = [c.metadata["section"] for c in chunks]
    assert sections == ["Handbook", "Handbook > Install", "Handbook > Install > On Linux",
                        "Handbook > Use"]
    assert chunks[2].metadata["heading_path"] == ["Handbook", "Install", "On Linux"]
    assert chunks[2].text.startswith("### On Linux")


def test_markdown_ignores_hashes_in_code_and_joins_empty_sections():
    text = ("# Top\n\n## Empty\n\n### Deep\n\nBody text that is long enough to stand as a "
            "section of its own here.\n\n```\n# comment, not a heading\n```\n")
    document = doc(text)
    chunks = split_markdown(document, 500, 0)
    assert len(chunks) == 1
    assert chunks[0].metadata["heading_path"] == ["Top", "Empty", "Deep"]
    assert chunks[0].start == 0


def test_hash_lines_inside_running_text_are_not_headings():
    text = "Edit the Makefile:\n# where to install\nBIN = /usr/bin\n\n# Real heading\n\nBody.\n"
    assert [t for _, _, t in headings(text)] == ["Real heading"]


def test_long_section_is_split_but_keeps_path():
    text = "# A\n\n" + "Words in a long section. " * 40 + "\n\n## B\n\nShort body text for B."
    chunks = split_markdown(doc(text), 200, 20, min_section=0)
    assert len(chunks) > 3
    assert {c.metadata["section"] for c in chunks[:-1]} == {"A"}
    assert chunks[-1].metadata["section"] == "A > B"


def test_chunks_copy_metadata_and_page():
    document = doc("Some text here. " * 10, path="x.pdf", page=3)
    chunks = split_recursive(document, 50, 0)
    assert len(chunks) >= 3  # 160 characters in pieces of at most 50
    assert all(c.metadata["page"] == 3 and c.metadata["path"] == "x.pdf" for c in chunks)
    assert all(c.metadata["title"] == "T" for c in chunks)


def _ctx(cancel: CancelToken, progress: list) -> NodeContext:
    return NodeContext(node_id="split", type_id="split.recursive", iteration=0, cancel=cancel,
                       on_progress=lambda f, m: progress.append(f), on_stream=lambda t: None,
                       logger=logging.getLogger("test"), work_dir=Path("."), run_inputs={})


def test_splitter_nodes_report_progress_and_stop_on_cancel():
    docs = [Document(doc_id=f"d{i}", text=PROSE) for i in range(5)]
    progress: list[float] = []
    context = _ctx(CancelToken(), progress)
    out = RecursiveSplitter().run(context, RecursiveParams(chunk_size=100, overlap=0), docs)
    assert {c.doc_id for c in out["chunks"]} == {f"d{i}" for i in range(5)}
    assert progress[0] == 0.0 and progress[-1] == 1.0 and progress == sorted(progress)
    assert context.details == {"documents": 5, "chunks": len(out["chunks"])}
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(RunCancelled):
        MarkdownSplitter().run(_ctx(cancel, []), MarkdownParams(), docs)
