"""Overlay cards, inspector tables, narration and report parsing on their own."""

from __future__ import annotations

import json

import pytest

from modrag_studio.engine.core.datatypes import ChatMessage, Chunk, Prompt, ScoredChunk, SourceRank
from modrag_studio.engine.run.trace import NodeVisit, summarize
from modrag_studio.reporting.narrate import describe_visit
from modrag_studio.ui.evaluate.metrics import node_metrics
from modrag_studio.ui.inspection.card_content import content_for, rank_move
from modrag_studio.ui.inspection.overlays import OverlayCard
from modrag_studio.ui.inspection.views import RecordTable, view_for

pytestmark = pytest.mark.ui


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i % 97}", text=f"text number {i}", index=i)
            for i in range(n)]


def test_big_outputs_are_paged_and_lazy(qtbot):
    chunks = _chunks(100_000)
    card = OverlayCard("n", content_for(chunks))
    assert card.content.title == "100,000 chunks"
    assert len(card.visible_rows()) == 4 and card.pages() == 25_000
    card.set_page(24_999)
    assert card.visible_rows()[-1][1].text == "text number 99999"
    table = view_for(chunks)
    qtbot.addWidget(table)
    assert isinstance(table, RecordTable) and table.proxy.rowCount() == 100_000
    table.filter.setText("number 4242")
    assert table.proxy.rowCount() == 11  # 4242 and 42420-42429
    table.filter.setText("NUMBER 99999")
    assert table.proxy.rowCount() == 1


def test_a_prompt_card_tells_its_size_and_blocks():
    evidence = [ScoredChunk(chunk=c, score=1.0 - i / 10) for i, c in enumerate(_chunks(3))]
    prompt = Prompt(messages=[ChatMessage(role="user", content="Q")], evidence=evidence,
                    dropped=["c7", "c9"], token_estimate=1234)
    content = content_for({"prompt": prompt}["prompt"], "prompt")
    assert content is not None and content.kind == "prompt"
    assert content.title == "Prompt · ≈1,234 tokens · 3 blocks (2 dropped for the budget)"
    assert [[cell.text for cell in row] for row in content.rows(1, 5)] == [["[2]", "c1"],
                                                                            ["[3]", "c2"]]


def test_rank_moves_show_direction():
    assert rank_move(1, 4) == ("#4 ↑3", rank_move(1, 4)[1])
    assert rank_move(5, 2)[0] == "#2 ↓3"
    assert rank_move(3, 3)[0] == "#3 ="
    assert rank_move(3, None)[0] == "–"
    fused = [ScoredChunk(chunk=c, score=1.0, rank=i + 1, retriever="fused",
                         sources={"bm25": SourceRank(retriever="bm25", rank=i + 3, score=2.0)})
             for i, c in enumerate(_chunks(3))]
    content = content_for(fused)
    assert [c.text for c in content.header][3] == "bm25"
    assert content.rows(0, 1)[0][3].text == "#3 ↑2"
    plain = [ScoredChunk(chunk=c, score=1.0, rank=i + 1, retriever="bm25",
                         sources={"bm25": SourceRank(retriever="bm25", rank=i + 1, score=1.0)})
             for i, c in enumerate(_chunks(3))]
    assert len(content_for(plain).header) == 3  # no "moved" columns for a plain ranking


def test_plain_words_for_a_reranker_and_a_skip():
    before = [ScoredChunk(chunk=c, score=1.0, rank=i + 1) for i, c in enumerate(_chunks(20))]
    visit = NodeVisit(node_id="rerank", type_id="rerank.x", status="done", duration_s=0.2,
                      inputs={"chunks": summarize(before), "query": summarize("q")},
                      outputs={"results": summarize(before[:5])})
    sentence = describe_visit(visit, "Reranker")
    assert sentence.startswith("Reranker looked again at 20 passages and kept the best 5")
    skipped = NodeVisit(node_id="web", type_id="x", status="skipped",
                        skip_reason="input 'query' is inactive")
    assert describe_visit(skipped) == "web was skipped (input 'query' is inactive)."


def test_report_formats():
    assert node_metrics({"nodes": {"fuse.results": {"ndcg@10": 0.5, "note": "x"}}}) == {
        "fuse": {"ndcg@10": 0.5}}
    assert node_metrics({"nodes": [{"node": "bm25.results", "metrics": {"recall@100": 1}}]}) == {
        "bm25": {"recall@100": 1.0}}
    assert node_metrics({"nodes": {"a.hits": {"mrr": 0.25}}}) == {"a": {"hits: mrr": 0.25}}
    assert node_metrics({"other": 1}) == {}


def test_reads_the_evaluation_command_report(tmp_path):
    from modrag_studio.evaluation.report import DatasetSource, EvalReport
    from modrag_studio.ui.evaluate.metrics import load_report

    report = EvalReport(graph_name="g", graph_sha256="x",
                        source=DatasetSource("d", split="train", qrels_sha256="y", queries=3),
                        hit_k=10,
                        outputs={"bm25.results": {"ndcg@10": 0.61, "recall@100": 0.9}})
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    metrics, raw = load_report(path)
    assert metrics == {"bm25": {"ndcg@10": 0.61, "recall@100": 0.9}}
    assert raw["graph"]["name"] == "g"


def test_a_yes_no_output_is_told_in_words_not_as_true() -> None:
    from modrag_studio.engine.run.trace import NodeVisit, ValueSummary
    from modrag_studio.reporting.narrate import describe_visit

    visit = NodeVisit(node_id="rerank", type_id="rerank.embedding", status="done",
                      outputs={"reranked": ValueSummary(type="bool", preview=["True"]),
                               "fell_back": ValueSummary(type="bool", preview=["False"])})
    sentence = describe_visit(visit, "Reranker")
    assert "reranked: yes" in sentence and "fell back: no" in sentence
    assert "True" not in sentence
