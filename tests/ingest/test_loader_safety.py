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
