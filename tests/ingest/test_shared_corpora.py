"""The loaders and smart ingest on the shared HTML and Chinese HTML + PDF corpora."""

from __future__ import annotations

import pytest

from modrag_nodes.ingest.loaders import LoadParams, load_documents
from modrag_nodes.ingest.smart_ingest import SmartParams, smart_ingest
from modrag_nodes.ingest.splitters import split_markdown, split_recursive

pytestmark = pytest.mark.shared_data


def by_id(docs):
    return {d.doc_id: d for d in docs}


def check_offsets(docs, chunks):
    texts = {d.doc_id: d.text for d in docs}
    for chunk in chunks:
        assert texts[chunk.doc_id][chunk.start:chunk.end] == chunk.text


def test_python_tutorial_html(shared_data):
    docs, report = load_documents(shared_data / "corpora" / "python-tutorial", LoadParams())
    assert report.files_loaded == 17 and not report.unreadable
    assert [p.file for p in report.skipped] == ["COPYRIGHT"]
    classes = by_id(docs)["classes.html"]
    assert classes.title.startswith("9. Classes")
    assert "# 9. Classes" in classes.text and "```" in classes.text
    for noise in ("Navigation", "¶", "Theme", "Previous topic", "Report a Bug"):
        assert noise not in classes.text
    chunks = split_markdown(classes, 1000, 0)
    check_offsets(docs, chunks)
    assert any(c.metadata["heading_path"][-1].startswith("9.3.") for c in chunks)

    smart_chunks, smart = smart_ingest(docs, SmartParams())
    check_offsets(docs, smart_chunks)
    assert smart.strategies.get("markdown", 0) >= 10  # tutorial pages are heading-rich
    assert all(any(t.passed for t in d.tried) for d in smart.documents)


def test_debian_zh_html_and_pdf(shared_data):
    folder = shared_data / "corpora" / "debian-zh"
    docs, report = load_documents(folder, LoadParams())
    assert report.files_loaded == 5 and not report.unreadable
    ids = by_id(docs)
    chapter = ids["ch01.zh-cn.html"]
    assert chapter.title == "第 1 章 GNU/Linux 教程" and "控制台基础" in chapter.text
    assert "上一页" not in chapter.text  # the DocBook navigation header is gone
    pages = [d for d in docs if d.doc_id.startswith("maint-guide.zh-cn.pdf#page=")]
    assert 55 <= len(pages) <= 63 and all(d.metadata["n_pages"] == 63 for d in pages)
    assert any("维护者" in d.text for d in pages)

    chunks = split_recursive(chapter, 300, 0)
    check_offsets(docs, chunks)
    sentence_ends = sum(c.text.endswith(("。", "！", "？", "；")) for c in chunks)
    assert sentence_ends > len(chunks) / 3  # Chinese sentence boundaries are used

    smart_chunks, smart = smart_ingest(docs, SmartParams())
    check_offsets(docs, smart_chunks)
    html = [d for d in smart.documents if d.doc_id.endswith(".html")]
    assert all(d.strategy == "markdown" and "CJK" in d.reason for d in html)
    pdf_chunks = [c for c in smart_chunks if c.doc_id.startswith("maint-guide")]
    assert all(isinstance(c.metadata["page"], int) for c in pdf_chunks)

