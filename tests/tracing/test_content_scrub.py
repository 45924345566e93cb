"""With content export off, no span carries the run's question: not in an attribute, not in
a node's warning, error or the run's failure."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")

from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from modrag_studio.composition import default_registry  # noqa: E402
from modrag_studio.engine import Executor  # noqa: E402
from modrag_studio.run_tracing.export import SpanWorker  # noqa: E402
from modrag_studio.run_tracing.spans import SpanBuilder, SpanHook  # noqa: E402
from tests.evaluation.tune_helpers import bm25_graph, write_stemming_corpus  # noqa: E402

# no word in them: BM25 warns, naming the query ("the query '?!' has no token ...")
QUESTIONS = ["?!‽ ¿¡ …", "?!"]


def _exported_text(tmp_path, question: str, content: bool) -> str:
    exporter = InMemorySpanExporter()
    worker = SpanWorker(SpanBuilder(Resource.create({"service.name": "t"}), content=content),
                        exporter, delay_s=30)
    executor = Executor(default_registry(), hooks=[SpanHook(worker.submit)])
    corpus = tmp_path / "docs"
    if not corpus.exists():
        write_stemming_corpus(corpus, count=5)
    result = executor.run(bm25_graph(), {"corpus": str(corpus), "query": question})
    assert any("has no token" in w for v in result.trace.visits for w in v.warnings), [
        (v.node_id, v.status, v.warnings, v.error) for v in result.trace.visits]
    assert worker.flush(10)
    worker.shutdown(5)
    parts = []
    for span in exporter.get_finished_spans():
        parts += [span.name, repr(dict(span.attributes or {})), span.status.description or ""]
        parts += [repr(dict(event.attributes or {})) for event in span.events]
    return "\n".join(parts)


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_question_inside_a_warning_is_not_exported_without_content(tmp_path, question):
    assert question in _exported_text(tmp_path, question, content=True)  # the warning has it
    exported = _exported_text(tmp_path, question, content=False)
    assert "has no token" in exported  # the warning is still there
    assert question not in exported
