"""Generation end to end on the real embedded model (the packaged SmolLM2-135M): the
pipeline runs, and every question it keeps verifies against the graph's own chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modrag_nodes.generation.fact_match import fact_found
from modrag_nodes.llm.client import LLMSpec
from modrag_studio.composition import default_registry
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.run.executor import Executor
from modrag_studio.evaluation.evalset import question_from_dict
from modrag_studio.evaluation.generation import GenerationConfig, generate_evalset
from modrag_studio.evaluation.generation.corpus import find_chunk_source, graph_chunks
from tests.evaluation.test_evalset_generate import DOCS
from tests.tiny_rag import tiny_rag_graph

pytestmark = pytest.mark.slow


def test_smollm2_generates_rows_that_all_verify(tmp_path: Path):
    pytest.importorskip("modrag_nodes.llm.embedded").packaged_gguf()
    data = tiny_rag_graph(tmp_path, DOCS, backend="embedded")
    doc = GraphDocument.model_validate_json(json.dumps(data))
    executor = Executor(default_registry())
    config = GenerationConfig(n=3, llm=LLMSpec(backend="embedded", model="SmolLM2-135M-Instruct"),
                              types=["single", "unanswerable"], dense=False, max_attempts=6,
                              seed=5)
    result = generate_evalset(doc, {}, config, executor=executor)
    report = result.report
    assert report.total.generated == len(result.candidates) > 0
    assert report.total.kept == len(result.questions)
    assert report.total.generated == report.total.kept + sum(report.total.rejected.values())
    chunks = {c.chunk_id: c for c in graph_chunks(doc, executor, {},
                                                  find_chunk_source(doc, executor.registry))}
    for row in result.questions:
        question_from_dict(row.to_dict())  # the evaluation-set format
        assert "model:embedded:SmolLM2-135M-Instruct" in row.tags
        if not row.answerable:
            assert row.expected_facts == []
            continue
        ids = row.expected_evidence.to_dict()["chunk_ids"]
        assert ids and all(i in chunks for i in ids)
        for (fact,) in row.expected_facts:
            assert any(fact_found(fact, chunks[i].text) for i in ids)
            assert not fact_found(fact, row.question)
    for cand in result.candidates:  # every call's outcome is recorded, with its reply
        assert cand.reply.strip() or cand.verdict.reason == "unreadable_reply"
