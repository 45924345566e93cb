"""load.files: cancel while walking and reading, non-UTF-8 names, symlinks leaving the corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from modrag_nodes.ingest.loaders import LoadParams, load_documents, match_files, read_bytes
from modrag_studio.engine.core.errors import RunCancelled
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.cancel_scope import cancel_scope


def test_walking_a_large_tree_stops_when_the_run_is_cancelled(tmp_path):
    for i in range(30):
        folder = tmp_path / f"d{i}"
        folder.mkdir()
        (folder / "a.md").write_text("# a\n\ntext\n")
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 5

    with pytest.raises(RunCancelled):
        match_files(tmp_path, LoadParams(), stop)
    assert len(asked) == 6  # asked once per folder, stopped at once


def test_reading_a_large_file_stops_when_the_run_is_cancelled(tmp_path):
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (3 << 20))
    token = CancelToken()
    token.cancel()
    with cancel_scope(token), pytest.raises(RunCancelled):
        read_bytes(big)
    assert len(read_bytes(big)) == 3 << 20  # no run in this context: reads it all


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nfine\n")
    bad = os.fsencode(str(tmp_path)) + b"/caf\xe9.md"
    with open(bad, "wb") as fh:
        fh.write(b"# Bad name\n\ntext\n")
    docs, report = load_documents(tmp_path, LoadParams())
    assert [d.doc_id for d in docs] == ["good.md"]
    assert [(p.file, "UTF-8" in p.reason) for p in report.skipped] == [("caf\\xe9.md", True)]


def test_symlinks_leaving_the_corpus_are_not_followed_by_default(tmp_path):
    corpus, outside = tmp_path / "corpus", tmp_path / "private"
    corpus.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nSECRET\n")
    (corpus / "inside.md").write_text("# Inside\n\ntext\n")
    (corpus / "link.md").symlink_to(outside / "secret.md")
    (corpus / "folder").symlink_to(outside)
    (corpus / "alias.md").symlink_to(corpus / "inside.md")
    docs, report = load_documents(corpus, LoadParams())
    assert sorted(d.doc_id for d in docs) == ["alias.md", "inside.md"]
    assert not any("SECRET" in d.text for d in docs)
    assert {p.file for p in report.skipped} == {"link.md", "folder"}
    followed, _ = match_files(corpus, LoadParams(follow_external_links=True))
    assert Path(corpus / "link.md") in followed


class _CancelledAfter(CancelToken):
    """A token that reads as cancelled from its ``reads``-th look on (deterministic)."""

    def __init__(self, reads: int) -> None:
        super().__init__()
        self.reads = reads
        self.looks = 0

    @property
    def cancelled(self) -> bool:
        self.looks += 1
        return self.looks >= self.reads


def test_splitting_one_huge_document_stops_when_the_run_is_cancelled():
    from modrag_nodes.ingest.splitters import RecursiveParams, RecursiveSplitter, split_all
    from modrag_studio.engine.core.datatypes import Document
    from modrag_studio.engine.run.cancel_scope import cancel_scope

    doc = Document(doc_id="big", text="A short sentence here. " * 60_000)  # 1.4 M chars
    splitter, params = RecursiveSplitter(), RecursiveParams(chunk_size=200, overlap=0)

    class Ctx:  # what split_all asks of a node context
        def __init__(self, token: CancelToken) -> None:
            self.cancel = token

        def check_cancelled(self) -> None:
            self.cancel.raise_if_cancelled()

        def progress(self, *_args) -> None:
            pass

    whole = split_all(Ctx(CancelToken()), [doc], lambda d: splitter.split_one(params, d))
    assert len(whole) > 5000
    token = _CancelledAfter(reads=3)  # not cancelled at the document's start: inside it
    with pytest.raises(RunCancelled), cancel_scope(token):  # the scope a run opens
        split_all(Ctx(token), [doc], lambda d: splitter.split_one(params, d))
    assert token.looks >= 3


def test_a_text_file_over_the_size_cap_is_named_and_a_large_one_warned(tmp_path, monkeypatch):
    from modrag_nodes.ingest import loaders

    (tmp_path / "huge.txt").write_bytes(b"word " * (600 << 10))  # 3 MB
    (tmp_path / "large.md").write_bytes(b"# t\n\n" + b"line\n" * (300 << 10))  # 1.5 MB
    (tmp_path / "small.md").write_text("# s\n\nok\n")
    monkeypatch.setattr(loaders, "LARGE_FILE_BYTES", 1 << 20)
    warned: list[str] = []

    class Ctx:
        cancel = CancelToken()

        def check_cancelled(self) -> None:
            pass

        def progress(self, *_args) -> None:
            pass

        def warn(self, message: str) -> None:
            warned.append(message)

    docs, report = load_documents(tmp_path, LoadParams(max_file_mb=2), Ctx())
    assert sorted(d.doc_id for d in docs) == ["large.md", "small.md"]
    assert [p.file for p in report.unreadable] == ["huge.txt"]
    assert "max_file_mb (2 MB)" in report.unreadable[0].reason
    assert any("large file large.md (1.5 MB)" in w for w in warned), warned
    docs, report = load_documents(tmp_path, LoadParams(max_file_mb=0), Ctx())  # no limit
    assert len(docs) == 3 and not report.unreadable
