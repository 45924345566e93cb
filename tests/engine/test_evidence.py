"""Expected evidence: specs, matching, positions in node values, phrase resolution."""

from __future__ import annotations

import pytest

from modrag_studio.engine.core.datatypes import Answer, Chunk, Document, Prompt, ScoredChunk
from modrag_studio.engine.evidence.expected import EvidenceSpecError, ExpectedEvidence, iter_chunks

DOC = Document(
    doc_id="maint", text="Pump LP-07 is serviced every 500\noperating hours by the team."
)


def _chunk(cid: str, start: int, end: int, doc: Document = DOC) -> Chunk:
    return Chunk(chunk_id=cid, doc_id=doc.doc_id, text=doc.text[start:end], start=start, end=end)


def test_parse_specs_and_round_trip_to_dict() -> None:
    expected = ExpectedEvidence.parse(["doc:maint", "chunk:c1", "text:500 operating hours",
                                       "re:LP-\\d+", "doc:maint"])
    assert [i.kind for i in expected.items] == ["doc", "chunk", "text", "regex"]
    assert expected.specs == ["doc:maint", "chunk:c1", "text:500 operating hours", "re:LP-\\d+"]
    again = ExpectedEvidence.from_dict(expected.to_dict())
    assert again == expected


@pytest.mark.parametrize("spec", ["maint", "url:x", "text:", "re:("])
def test_bad_specs_name_the_spec(spec: str) -> None:
    with pytest.raises(EvidenceSpecError):
        ExpectedEvidence.parse([spec])


def test_unknown_dict_field_is_named() -> None:
    with pytest.raises(EvidenceSpecError, match="doc_id"):
        ExpectedEvidence.from_dict({"doc_id": ["x"]})


def test_phrase_matches_across_line_breaks_and_case() -> None:
    chunk = _chunk("c0", 0, len(DOC.text))
    assert ExpectedEvidence.parse(["text:500 Operating Hours"]).is_relevant(chunk)
    assert not ExpectedEvidence.parse(["text:600 operating hours"]).is_relevant(chunk)


def test_chinese_phrase_matches() -> None:
    doc = Document(doc_id="zh", text="润滑泵每运行500小时保养一次。")
    chunk = _chunk("z0", 0, len(doc.text), doc)
    assert ExpectedEvidence.parse(["text:500小时"]).is_relevant(chunk)


def test_positions_in_ranked_list_use_ranks() -> None:
    chunks = [_chunk("a", 0, 10), _chunk("b", 10, 40), _chunk("c", 40, len(DOC.text))]
    ranked = [ScoredChunk(chunk=c, score=1.0 / (i + 1), rank=i + 1) for i, c in enumerate(chunks)]
    expected = ExpectedEvidence.parse(["chunk:b"])
    [pos] = expected.positions(ranked)
    assert (pos.position, pos.rank, pos.chunk.chunk_id) == (2, 2, "b")
    prompt = Prompt(messages=[], evidence=ranked[1:])
    assert [p.position for p in expected.positions(prompt)] == [1]
    answer = Answer(text="x", evidence=ranked[:1])
    assert expected.positions(answer) == []


def test_phrase_split_across_chunks_and_missing() -> None:
    cut = DOC.text.index("operating")
    chunks = [_chunk("c0", 0, cut), _chunk("c1", cut, len(DOC.text))]
    [split] = ExpectedEvidence.parse(["text:500 operating hours"]).resolve(chunks, [DOC])
    assert not split.found and split.split_across == ["c0", "c1"]
    assert "split across chunks c0 and c1" in split.describe()
    [missing] = ExpectedEvidence.parse(["text:900 hours"]).resolve(chunks, [DOC])
    assert not missing.found and "loader or splitter dropped it" in missing.describe()
    [found] = ExpectedEvidence.parse(["text:by the team"]).resolve(chunks, [DOC])
    assert found.chunk_ids == ["c1"]


def test_qrels_and_documents_as_chunks() -> None:
    expected = ExpectedEvidence.from_qrels({"maint": 1, "other": 0})
    assert expected.specs == ["doc:maint"]
    assert [c.chunk_id for c, _ in iter_chunks([DOC])] == ["maint"]
    assert expected.positions([DOC])[0].position == 1
