"""evidence.focus keeps each chunk's sentences about the question, and passes on what it
cannot judge."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from modrag_nodes.retrieval.focus import FocusEvidence, FocusParams, focus_texts
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Chunk, Query, ScoredChunk
from tests.sparse.helpers import make_ctx

ROOT = Path(__file__).resolve().parents[2]

PUMPS = ("## Pump intervals\n\n"
         "The coolant pump CP-12 is serviced every 3 months. The service includes an impeller "
         "check.\n\n"
         "The lubrication pump LP-07 is serviced every 500 operating hours. The inlet filter is "
         "cleaned.\n\n"
         "The hydraulic pump HP-03 is serviced every 6 months. The service includes an oil "
         "sample and a pressure test of HP-03.")
SITES = ("## Sites\n\nThe Eastbank Plant is the larger site. It runs the machining hall. "
         "CNC-A01 is located at the Eastbank Plant.")


def item(chunk_id: str, text: str, score: float, rank: int, kind: str = "rrf",
         **metadata: str) -> ScoredChunk:
    chunk = Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], text=text, start=10,
                  end=10 + len(text), metadata={"section": "s", **metadata})
    return ScoredChunk(chunk=chunk, score=score, rank=rank, score_kind=kind, retriever="fusion")


def run(question: str, evidence: list[ScoredChunk], **params) -> tuple[dict, dict]:
    ctx = make_ctx("focus", "evidence.focus")
    out = FocusEvidence().run(ctx, FocusParams(**params), query=Query(text=question),
                              evidence=evidence)
    return out, ctx.details


def test_a_chunk_keeps_its_heading_and_the_sentences_about_the_question():
    evidence = [item("pumps#1", PUMPS, 0.03, 1), item("sites#0", SITES, 0.02, 2)]
    question = "How often is the hydraulic pump HP-03 serviced?"
    out, details = run(question, evidence, follow=0)
    [pumps] = out["evidence"]
    # the other pumps' intervals share "pump" and "serviced"; their details share nothing
    assert pumps.chunk.text == (
        "## Pump intervals\n\nThe coolant pump CP-12 is serviced every 3 months.\n"
        "The lubrication pump LP-07 is serviced every 500 operating hours.\n"
        "The hydraulic pump HP-03 is serviced every 6 months. The service includes an oil "
        "sample and a pressure test of HP-03.")
    strict, _ = run(question, evidence, block_share=0.6, follow=0)
    assert strict["evidence"][0].chunk.text == (
        "## Pump intervals\nThe hydraulic pump HP-03 is serviced every 6 months.")
    assert [i.chunk_id for i in out["dropped"]] == ["sites#0"]
    # ids, offsets, scores and provenance are the chunk's own; only the text is cut
    assert (pumps.chunk_id, pumps.score, pumps.rank, pumps.retriever) == ("pumps#1", 0.03, 1,
                                                                          "fusion")
    assert (pumps.chunk.start, pumps.chunk.end) == (10, 10 + len(PUMPS))
    assert pumps.chunk.metadata == {"section": "s", "focus": {
        "kept_chars": len(pumps.chunk.text), "of_chars": len(PUMPS)}}
    assert evidence[0].chunk.text == PUMPS  # the input is not changed
    assert details["focused"] is True and details["chunks"]["sites#0"] == "dropped"
    assert details["chars_after"] < details["chars_before"]


def test_graph_facts_pass_unchanged_and_their_names_keep_the_second_hop():
    graph = item("kg:paths", "Knowledge graph facts:\nHT-2024-1107 covers HS-40.", 1.0, 0,
                 kind="graph", derived="knowledge graph")
    seal = item("parts#1", "The seal kit HS-40 is kept in the Hillcrest store, six at a time.",
                0.03, 1)
    contract = item("parts#2", "The contract HT-2024-1107 is signed with Kestrel Hydraulics.",
                    0.02, 2)
    question = "Who supplies the seal kit HS-40?"
    out, _ = run(question, [graph, seal, contract])
    assert [i.chunk_id for i in out["evidence"]] == ["kg:paths", "parts#1", "parts#2"]
    assert out["evidence"][0] is graph and out["evidence"][2].chunk.text == contract.chunk.text
    alone, _ = run(question, [graph, seal, contract], graph_terms=False)
    assert [i.chunk_id for i in alone["dropped"]] == ["parts#2"]


def test_a_document_chunk_found_by_graph_search_is_focused_like_any_other():
    # kg.search returns the chunks that support its edges with score_kind "graph"; only a
    # block a node wrote (metadata "derived") passes unchanged
    found = item("pumps#1", PUMPS, 0.9, 1, kind="graph")
    out, _ = run("How often is the hydraulic pump HP-03 serviced?", [found], follow=0,
                 block_share=0.6)
    assert out["evidence"][0].chunk.text == (
        "## Pump intervals\nThe hydraulic pump HP-03 is serviced every 6 months.")


def test_evidence_without_any_question_term_passes_unchanged():
    evidence = [item("pumps#1", PUMPS, 0.03, 1)]
    out, details = run("主轴为什么振动？", evidence)
    assert out["evidence"] == evidence and out["dropped"] == []
    assert details["focused"] is False and "question term" in details["reason"]


def test_chinese_sentences_are_focused_by_character_bigrams():
    text = ("## 保养周期\n\n空压机 AC-05 每个月保养一次。冷却泵 CP-12 每三个月保养一次。"
            "液压泵 HP-03 每六个月保养一次。")
    out, _ = run("空压机 AC-05 多久保养一次？", [item("zh#0", text, 0.03, 1)], block_share=0.5,
                 follow=0)
    assert out["evidence"][0].chunk.text == "## 保养周期\n\n空压机 AC-05 每个月保养一次。"


def test_the_sentence_after_a_kept_one_comes_with_it():
    text = ("Kahikatea is a conifer endemic to New Zealand. It reaches 55 metres. Its wood is "
            "odourless. Kahikatea grows in swamps.")
    question = "How tall does the kahikatea grow?"
    assert focus_texts(question, [text], follow=0) == [
        "Kahikatea is a conifer endemic to New Zealand.\nKahikatea grows in swamps."]
    assert focus_texts(question, [text], follow=1) == [
        "Kahikatea is a conifer endemic to New Zealand. It reaches 55 metres.\n"
        "Kahikatea grows in swamps."]


def test_a_sentence_end_inside_brackets_or_a_book_title_does_not_cut_it():
    text = ("《卡拉OK.LIVE！‧台北‧我》是张雨生发行的第六张国语专辑。专辑在台北录音。"
            "阿閦佛（「閦」音「触」；梵语），又名不动佛。")
    assert focus_texts("张雨生的第六张国语专辑是什么？", [text], follow=0) == [
        "《卡拉OK.LIVE！‧台北‧我》是张雨生发行的第六张国语专辑。"]
    assert focus_texts("阿閦佛又称之为什么？", [text], follow=0) == [
        "阿閦佛（「閦」音「触」；梵语），又名不动佛。"]


def test_a_key_term_the_evidence_holds_is_never_cut_out_of_it_entirely():
    from modrag_nodes.grounding.claims import Block, absent_terms

    question = "Which seal kit is fitted on the press PR-300?"
    texts = ["The press PR-300 has the seal kit HS-40. The seal kit HS-40 is kept in stock.",
             "CNC-A01 is fitted with the spindle bearing SKF-6205. It runs three shifts."]
    covered = focus_texts(question, texts, follow=0)
    uncovered = focus_texts(question, texts, follow=0, cover_key_terms=False)
    assert uncovered[1] == "" and covered[1] == "CNC-A01 is fitted with the spindle bearing " \
                                                "SKF-6205."

    def absent(blocks):
        return absent_terms(question, [Block.of(b) for b in blocks if b], blocks, [])

    assert absent(texts) == absent(covered) == [] and absent(uncovered) == ["fitted"]


def test_a_token_cap_keeps_the_best_sentences_first():
    texts = [PUMPS]
    question = "Which pumps are serviced, and how often is HP-03 serviced?"
    whole = focus_texts(question, texts, min_share=0.0, follow=0)
    capped = focus_texts(question, texts, min_share=0.0, max_tokens=15, follow=0)
    assert "LP-07" in whole[0] and "HP-03" in whole[0]
    assert "HP-03 is serviced every 6 months" in capped[0] and "LP-07" not in capped[0]


def test_an_unmatched_chunk_can_be_kept_whole():
    evidence = [item("pumps#1", PUMPS, 0.03, 1), item("sites#0", SITES, 0.02, 2)]
    out, _ = run("How often is HP-03 serviced?", evidence, drop_unmatched=False)
    assert [i.chunk_id for i in out["evidence"]] == ["pumps#1", "sites#0"]
    assert out["evidence"][1].chunk.text == SITES and out["dropped"] == []


def test_a_heading_on_the_line_before_its_text_is_a_piece_of_its_own():
    text = "## Parts supply\nThe contract HT-2024-0892 covers the spindle bearing SKF-6205."
    [kept] = focus_texts("Which contract covers SKF-6205?", [text])
    assert kept == text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([
    "The pump HP-03 is serviced every 6 months.", "CNC-A01 is located at the Eastbank Plant.",
    "## Sites", "The seal kit HS-40 is kept in the store.", "空压机 AC-05 每个月保养一次。",
    "The plant works in three shifts."]), min_size=1, max_size=8),
    st.sampled_from(["How often is HP-03 serviced?", "Where is CNC-A01?", "AC-05 多久保养？"]))
def test_focused_text_is_made_of_the_chunk_own_sentences_in_order(sentences, question):
    text = " ".join(sentences)
    result = focus_texts(question, [text], min_share=0.0)
    if result is None:
        return
    position = 0
    for line in result[0].splitlines():
        found = text.find(line, position)
        assert found >= 0, (line, text)
        position = found + len(line)


def test_the_node_is_registered_and_the_main_job_focuses_its_evidence():
    assert "evidence.focus" in default_registry()
    from modrag_studio.engine.core.document import load

    doc = load(ROOT / "sample_graphs" / "basic_rag.json")
    edges = {(e.source, e.target) for e in doc.edges}
    assert ("paths.evidence", "focus.evidence") in edges
    assert ("focus.evidence", "prompt.evidence") in edges


def test_a_comment_line_in_a_code_block_is_no_heading():
    config = ("```toml\nexclude = [\".git\", \".venv\"]\n\n# Same as Black.\nline-length = 88\n\n"
              "# Assume Python 3.11\ntarget-version = \"py311\"\n```")
    prose = ("## Configuration\n\nRuff can be configured through a `ruff.toml` file. Ruff "
             "reads its rules from the configuration.")
    focused = focus_texts("Which Python version does the default configuration assume?",
                          [prose, config], min_share=0.2, follow=1)
    assert "# Assume Python 3.11" in focused[1] and "py311" in focused[1]
    # a markdown heading outside a code block is still a heading: kept only before a sentence
    assert focused[0] == "" or focused[0].startswith("## Configuration")
