"""A corpus's text files together are bounded (``max_total_mb``), not only each file: three
59 MB files, each under the 64 MB cap, held 3.7 GB in one run."""

from __future__ import annotations

import os
import resource

import pytest

from modrag_nodes.ingest.loaders import LoadParams, load_documents
from modrag_studio.engine.core.errors import NodeConfigError


def _big_files(folder, count: int, megabytes: int) -> None:
    folder.mkdir()
    line = b"The pump is serviced every 500 hours.\n"
    for index in range(count):
        with open(folder / f"part{index}.txt", "wb") as out:
            out.write(line * (megabytes * (1 << 20) // len(line)))


def test_text_files_over_the_total_budget_are_refused_before_any_is_read(tmp_path):
    _big_files(tmp_path / "corpus", 3, 59)  # each under max_file_mb (64)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(NodeConfigError) as caught:
        load_documents(tmp_path / "corpus", LoadParams())
    message = str(caught.value)
    assert "max_total_mb (128 MB)" in message and "MB together" in message
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 50  # refused from the sizes, nothing read


def test_a_corpus_within_the_budget_or_with_the_limit_lifted_loads(tmp_path):
    _big_files(tmp_path / "corpus", 3, 1)
    docs, report = load_documents(tmp_path / "corpus", LoadParams(max_total_mb=4))
    assert report.files_loaded == 3 and len(docs) == 3
    with pytest.raises(NodeConfigError, match="max_total_mb"):
        load_documents(tmp_path / "corpus", LoadParams(max_total_mb=2))
    docs, _ = load_documents(tmp_path / "corpus", LoadParams(max_total_mb=0))
    assert len(docs) == 3
    os.truncate(tmp_path / "corpus" / "part0.txt", 0)  # a file over max_file_mb is not
    big = tmp_path / "corpus" / "part0.txt"             # counted: it is not read
    with open(big, "wb") as out:
        out.write(b"x" * (3 << 20))
    docs, report = load_documents(tmp_path / "corpus",
                                  LoadParams(max_total_mb=2.5, max_file_mb=2))
    assert report.files_loaded == 2 and [u.file for u in report.unreadable] == ["part0.txt"]
