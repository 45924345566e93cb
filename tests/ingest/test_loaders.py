"""load.files: file types, doc ids, glob, unreadable files, empty results, fingerprint."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from modrag_nodes.ingest.html_text import html_to_text
from modrag_nodes.ingest.loaders import LoadFiles, LoadParams, load_documents
from modrag_nodes.ingest.splitters import split_recursive
from modrag_studio.engine.core.errors import NodeConfigError, RunCancelled
from modrag_studio.engine.core.node import CancelToken, NodeContext
from tests.ingest.helpers import HTML_PAGE, write_corpus, write_pdf


def by_id(docs):
    return {d.doc_id: d for d in docs}


def test_loads_every_supported_type_with_stable_ids(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    docs, report = load_documents(root, LoadParams())
    ids = by_id(docs)
    assert set(ids) == {"notes.txt", "handbook.md", "site/garden.html", "report.pdf#page=1",
                        "report.pdf#page=2", "d1", "d2"}
    assert ids["handbook.md"].title == "Handbook"
    assert ids["report.pdf#page=2"].metadata["page"] == 2
    assert "Pears are green" in ids["report.pdf#page=2"].text
    assert ids["d1"].text == "Alpha\n\nAlpha text about cells."
    assert ids["d1"].title == "Alpha" and ids["d2"].text == "Beta text about proteins."
    assert ids["notes.txt"].source == str(root / "notes.txt")
    assert report.files_matched == 5 and report.files_loaded == 5 and report.documents == 7
    assert [p.file for p in report.skipped] == ["image.png"]  # hidden file ignored
    again, _ = load_documents(root, LoadParams())
    assert [d.doc_id for d in again] == [d.doc_id for d in docs]


def test_html_drops_scripts_and_navigation_and_keeps_structure():
    title, text = html_to_text(HTML_PAGE)
    assert title == "Garden guide"
    for noise in ("SCRIPT_TEXT", "HEADER_TEXT", "NAV_TEXT", "ASIDE_TEXT", "FOOTER_TEXT",
                  "color: red"):
        assert noise not in text
    assert "# Growing tomatoes" in text and "## Soil" in text
    assert "Tomatoes need full sun and regular watering." in text
    assert "- Loamy soil\n- pH 6.5" in text
    assert "| May | Plant |" in text
    assert "```\nwater(plants)\n  twice()\n```" in text
    _, nested = html_to_text("<ul><li>Outer <b>bold</b><ul><li>inner</li></ul></li></ul><p>P</p>")
    assert nested == "- Outer bold\n- inner\n\nP\n"


def test_glob_and_recursion_filters(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    html_only, _ = load_documents(root, LoadParams(glob="*.html"))
    assert [d.doc_id for d in html_only] == ["site/garden.html"]
    flat, _ = load_documents(root, LoadParams(recursive=False))
    assert "site/garden.html" not in by_id(flat)
    by_path, _ = load_documents(root, LoadParams(glob="site/*"))
    assert [d.doc_id for d in by_path] == ["site/garden.html"]
    single, _ = load_documents(root / "notes.txt", LoadParams())
    assert [d.doc_id for d in single] == ["notes.txt"]


def test_pdf_per_file_keeps_page_offsets_and_chunks_report_pages(tmp_path):
    pdf = write_pdf(tmp_path / "book.pdf", ["Page one text. " * 20, "Page two text. " * 20])
    docs, _ = load_documents(pdf, LoadParams(pdf_mode="file"))
    assert len(docs) == 1 and docs[0].doc_id == "book.pdf"
    offsets = docs[0].metadata["page_offsets"]
    assert [page for _, page in offsets] == [1, 2]
    chunks = split_recursive(docs[0], 120, 0)
    pages = {c.metadata["page"] for c in chunks}
    assert pages == {1, 2}
    for chunk in chunks:
        assert "page_offsets" not in chunk.metadata
        expected = "one" if chunk.metadata["page"] == 1 else "two"
        assert expected in chunk.text or chunk.metadata.get("page_end") == 2


def test_unreadable_files_are_reported_and_the_rest_continue(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "bad.jsonl").write_text('{"_id": "x", "text": "ok"}\n{not json}\n')
    warnings = []

    class Ctx:
        def check_cancelled(self):
            pass

        def progress(self, *args):
            pass

        def warn(self, message):
            warnings.append(message)

    docs, report = load_documents(root, LoadParams(), Ctx())
    reasons = {p.file: p.reason for p in report.unreadable}
    assert set(reasons) == {"broken.pdf", "latin.txt", "bad.jsonl"}
    assert "utf-8" in reasons["latin.txt"] and "line 2" in reasons["bad.jsonl"]
    assert len(warnings) == 3 and any("broken.pdf" in w for w in warnings)
    assert len(docs) == 7  # the readable files are all there
    latin, _ = load_documents(root / "latin.txt", LoadParams(encoding="latin-1"))
    assert latin[0].text == "café"


def test_no_documents_is_a_clear_error_naming_path_and_glob(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    node = LoadFiles()
    with pytest.raises(NodeConfigError, match=r"corpus.*glob '\*\.docx'"):
        node.run(_ctx(), LoadParams(path=str(root), glob="*.docx"))
    with pytest.raises(NodeConfigError, match="does not exist"):
        node.run(_ctx(), LoadParams(path=str(tmp_path / "missing")))


def test_path_input_overrides_param_and_fingerprint_follows_content(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    node = LoadFiles()
    params = LoadParams(path=str(tmp_path / "elsewhere"))
    out = node.run(_ctx(), params, path=str(root))
    assert out["report"].documents == 7
    first = node.fingerprint(params, {"path": str(root)}, {})
    assert node.fingerprint(params, {"path": str(root)}, {}) == first
    target = root / "notes.txt"
    stat = target.stat()
    target.write_text("Plain notes about ants!\n\nAnts make no honey at all.\n")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: content decides
    assert node.fingerprint(params, {"path": str(root)}, {}) != first


def _ctx(cancel: CancelToken | None = None) -> NodeContext:
    return NodeContext(node_id="n", type_id="t", iteration=0, cancel=cancel or CancelToken(),
                       on_progress=lambda f, m: None, on_stream=lambda t: None,
                       logger=logging.getLogger("test"), work_dir=Path("."), run_inputs={})


def test_duplicate_ids_across_files_are_renamed_and_cancel_stops_loading(tmp_path):
    root = write_corpus(tmp_path / "corpus")
    (root / "zz.jsonl").write_text('{"_id": "d1", "title": "", "text": "Again d1."}\n')
    docs, _ = load_documents(root, LoadParams())
    ids = [d.doc_id for d in docs]
    assert len(ids) == len(set(ids)) and "zz.jsonl:d1" in ids
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(RunCancelled):
        LoadFiles().run(_ctx(cancel), LoadParams(path=str(root)))


def test_files_that_hold_no_documents_are_skipped_and_counted(tmp_path):
    """The default glob meets data files beside the documents (a sample corpus's questions,
    a dictionary, a binary): they are skipped with a reason and counted, not "unreadable"."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "pumps.md").write_text("# Pumps\n\nLP-07 is serviced every 500 hours.\n")
    (root / "eval_questions.jsonl").write_text('{"question": "How often?", "expected": "500"}\n')
    (root / "kg_dictionary.json").write_text('{"LP-07": ["lubrication pump"]}')
    (root / "dump.txt").write_bytes(b"\x00\x01\x02binary")
    ctx = _ctx()
    out = LoadFiles().run(ctx, LoadParams(path=str(root)))
    report = out["report"]
    assert [d.doc_id for d in out["documents"]] == ["pumps.md"]
    assert not report.unreadable and not ctx.warnings
    reasons = {p.file: p.reason for p in report.skipped}
    assert set(reasons) == {"eval_questions.jsonl", "kg_dictionary.json", "dump.txt"}
    assert "not a BEIR corpus" in reasons["eval_questions.jsonl"]
    assert "binary" in reasons["dump.txt"]
    assert "3 skipped" in report.preview()
    assert ctx.details["skipped"] == 3 and ctx.details["unreadable"] == 0
    assert "kg_dictionary.json" in ctx.details["skipped_files"]
