"""Smart ingest: analysis rules, quality checks, fallbacks, report and trace notes."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from modrag_nodes.ingest.analysis import analyze_text, check_chunks, choose_plan, combine
from modrag_nodes.ingest.contracts import IngestPlan
from modrag_nodes.ingest.smart_ingest import (
    CheckParams,
    QualityCheck,
    SmartIngest,
    SmartParams,
    smart_ingest,
    smart_split,
)
from modrag_studio.engine.core.datatypes import Chunk, Document
from modrag_studio.engine.core.node import CancelToken, NodeContext
from tests.ingest.helpers import MARKDOWN
from tests.ingest.helpers import SHORT_SECTIONS_MD as SHORT_SECTIONS

PROSE = " ".join(f"Sentence number {i} talks about rivers and the sea at some length."
                 for i in range(60))
LISTS = "Shopping:\n" + "\n".join(f"- item {i} to buy" for i in range(40)) + "\n"
CODE = ("Some intro text for the example below.\n\n```\nprint('a')\n```\n\nMore text after "
        "the code, explaining it.\n")


def doc(doc_id: str, text: str) -> Document:
    return Document(doc_id=doc_id, text=text, source=f"{doc_id}.md")


def ctx() -> NodeContext:
    return NodeContext(node_id="smart", type_id="ingest.smart", iteration=0,
                       cancel=CancelToken(), on_progress=lambda f, m: None,
                       on_stream=lambda t: None, logger=logging.getLogger("test"),
                       work_dir=Path("."), run_inputs={})


def test_analysis_counts_structure_markers():
    a = analyze_text("md", MARKDOWN + "\n| a | b |\n| c | d |\n\n```\ncode\n```\n")
    assert a.headings == 4 and a.table_rows == 2 and a.code_blocks == 1
    assert a.headings_per_1k == pytest.approx(4 * 1000 / a.chars)
    assert a.paragraphs >= 8 and 0 < a.avg_paragraph_chars < 200
    assert a.newline_density > 10
    assert analyze_text("l", LISTS).list_items == 40
    assert analyze_text("zh", "第一句话讲猫 cat").cjk_ratio == pytest.approx(6 / 9)
    total = combine([analyze_text("a", MARKDOWN), analyze_text("b", PROSE)])
    assert total.chars == len(MARKDOWN) + len(PROSE) and total.headings == 4


@pytest.mark.parametrize(("text", "strategy"), [
    (MARKDOWN, "markdown"), (PROSE, "sentence"), (LISTS, "recursive"), (CODE, "recursive"),
    ("A paragraph of plain text.\n\nAnother paragraph of text.\n\nA third one.\n", "recursive"),
])
def test_rules_pick_a_strategy(text, strategy):
    plan = choose_plan(analyze_text("d", text))
    assert plan.strategy == strategy
    assert strategy not in plan.fallbacks and len(plan.fallbacks) == 3
    assert plan.reason and 300 <= plan.chunk_size <= 2000 and plan.chunk_size % 50 == 0


def test_chunk_size_follows_paragraphs_and_halves_for_cjk():
    long_paragraphs = "\n\n".join("word " * 120 for _ in range(5))  # 600-char paragraphs
    assert choose_plan(analyze_text("d", long_paragraphs)).chunk_size == 1800
    chinese = "\n\n".join("这是一个很长的中文段落。" * 50 for _ in range(5))  # 600 chars each
    plan = choose_plan(analyze_text("zh", chinese))
    assert plan.chunk_size == 900 and "CJK" in plan.reason
    # no paragraph breaks at all: the target size (halved for CJK text)
    assert choose_plan(analyze_text("p", PROSE)).chunk_size == 1000
    assert choose_plan(analyze_text("zh", "这是一个很长的中文句子。" * 400)).chunk_size == 500


def test_quality_checks():
    def chunks(*texts):
        return [Chunk(chunk_id=str(i), doc_id="d", text=t, start=0, end=len(t))
                for i, t in enumerate(texts)]

    assert check_chunks([], "fixed", 100).failed_checks == ["no chunks"]
    empty = check_chunks(chunks("x" * 100, "---", "x" * 100), "fixed", 100)
    assert empty.failed_checks == ["empty-chunk ratio 0.33 > 0.10"]
    assert "average length 10 < 50" in check_chunks(chunks("x" * 10), "fixed", 100).failed_checks
    assert check_chunks(chunks("x" * 10), "fixed", 100, text_chars=10).passed  # short text
    assert not check_chunks(chunks("x" * 4000), "fixed", 100).passed
    assert check_chunks(chunks("x" * 4000), "fixed", 100, max_avg_chars=5000).passed


def test_fallback_when_the_chosen_strategy_fails():
    params = SmartParams(min_avg_chars=200)  # markdown's one-section chunks are too short
    chunks, record = smart_split(doc("short", SHORT_SECTIONS), params)
    assert [t.strategy for t in record.tried] == ["markdown", "recursive"]
    assert not record.tried[0].passed and record.tried[0].failed_checks[0].startswith("average")
    assert record.tried[1].passed and record.strategy == "recursive"
    assert "falling back to recursive" in record.reason
    assert all(c.metadata["strategy"] == "recursive" for c in chunks)
    assert all(SHORT_SECTIONS[c.start:c.end] == c.text for c in chunks)


def test_when_nothing_passes_the_attempt_with_fewest_failures_is_kept():
    chunks, report = smart_ingest([doc("p", PROSE)], SmartParams(min_avg_chars=3000,
                                                                 max_avg_chars=3000))
    record = report.documents[0]
    assert len(record.tried) == 4 and not any(t.passed for t in record.tried)
    assert record.strategy == "sentence" and "no strategy passed" in record.reason
    assert chunks and report.warnings


def test_short_document_passes():
    chunks, report = smart_ingest([doc("tiny", "Hello there.")], SmartParams())
    assert [c.text for c in chunks] == ["Hello there."]
    assert report.documents[0].tried[0].passed


def test_node_reports_and_notes_the_choice():
    context = ctx()
    docs = [doc("md", MARKDOWN), doc("prose", PROSE), doc("short", SHORT_SECTIONS)]
    out = SmartIngest().run(context, SmartParams(min_avg_chars=100), docs)
    report = out["report"]
    assert report.strategies == {"sentence": 1, "recursive": 2}  # both markdown docs fell back
    assert report.fallbacks_used == 2 and report.chunks == len(out["chunks"])
    assert context.details["strategies"] == report.strategies
    assert [d["doc_id"] for d in context.details["documents"]] == ["md", "prose", "short"]
    assert context.details["documents"][2]["tried"] == ["markdown", "recursive"]
    single = ctx()
    SmartIngest().run(single, SmartParams(), [doc("md", MARKDOWN)])
    assert single.details["strategy"] == "markdown" and single.details["tried"] == ["markdown"]
    assert "headings" in single.details["reason"]


def test_quality_check_routes_and_falls_back():
    plan = IngestPlan(strategy="markdown", chunk_size=300, fallbacks=["recursive"])
    good = [Chunk(chunk_id="d#0", doc_id="d", text="x" * 120, start=0, end=120)]
    bad = [Chunk(chunk_id="d#0", doc_id="d", text="x" * 20, start=0, end=20),
           Chunk(chunk_id="d#1", doc_id="d", text="y" * 20, start=500, end=520)]
    node = QualityCheck()
    passed = node.run(ctx(), CheckParams(), good, plan)
    assert set(passed) == {"passed", "plan"} and passed["plan"].tried[0].passed
    failed = node.run(ctx(), CheckParams(), bad, plan)
    assert set(failed) == {"failed"}
    nxt = failed["failed"]
    assert nxt.strategy == "recursive" and nxt.fallbacks == [] and nxt.tried[0].strategy == \
        "markdown"
    last = ctx()
    forced = node.run(last, CheckParams(), bad, nxt)  # no fallback left: passes with a warning
    assert set(forced) == {"passed", "plan"} and last.warnings
    assert [t.strategy for t in forced["plan"].tried] == ["markdown", "recursive"]
