"""Every splitter keeps the PDF page of its chunks (the citation view opens the PDF there)."""

from __future__ import annotations

import pytest

from modrag_nodes.ingest.loaders import LoadParams, load_documents
from modrag_studio.composition import default_registry
from tests.ingest.helpers import write_pdf
from tests.sparse.helpers import make_ctx

SPLITTERS = {"split.recursive": {"chunk_size": 150, "overlap": 0},
             "split.fixed": {"chunk_size": 150, "overlap": 0},
             "split.sentence": {"chunk_size": 150},
             "split.markdown": {"chunk_size": 150, "overlap": 0},
             "ingest.smart": {"target_size": 150, "max_size": 150}}


@pytest.mark.parametrize("type_id", sorted(SPLITTERS))
@pytest.mark.parametrize("pdf_mode", ["file", "page"])
def test_chunks_carry_the_pdf_page(tmp_path, type_id: str, pdf_mode: str) -> None:
    pdf = write_pdf(tmp_path / "book.pdf", ["Page one text. " * 30, "Page two text. " * 30])
    docs, _ = load_documents(pdf, LoadParams(pdf_mode=pdf_mode))
    node_type = default_registry().get(type_id)
    out = node_type().run(make_ctx(type_id), node_type.Params(**SPLITTERS[type_id]),
                          documents=docs)
    chunks = out["chunks"]
    assert {c.metadata["page"] for c in chunks} == {1, 2}
    for chunk in chunks:
        assert chunk.source == str(pdf)  # the file the "Open PDF at page N" button opens
        other_page = "two" if chunk.metadata["page"] == 1 else "one"
        assert other_page not in chunk.text and chunk.metadata.get("page_end") is None
