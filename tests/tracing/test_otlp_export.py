"""Trace export over OTLP (``--otlp``) against a real receiver: Arize Phoenix's local server
started on 127.0.0.1, then queried over its REST API for the spans, their kinds, parent/child
structure and retrieval attributes; and with nothing listening: the run ends promptly, one
warning."""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.request

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the optional otel extra is not installed")
pytest.importorskip("openinference.semconv", reason="the optional otel extra is not installed")

from modrag_nodes.llm.client import ChatResult, register_backend, unregister_backend  # noqa: E402
from modrag_studio.cli import main  # noqa: E402
from tests.tiny_rag import tiny_rag_graph  # noqa: E402
from tests.tracing import phoenix_server  # noqa: E402

DOCS = {
    "maint.md": "# Pumps\n\nThe lubrication pump LP-07 is serviced every 500 operating hours.\n",
    "canteen.md": "# Canteen\n\nThe canteen opens at 06:00 and closes at 22:00.\n",
    "press.md": "# Press\n\nThe hydraulic press PR-300 stands at the Hillcrest Plant.\n",
}
SECRET = "every 500 operating hours"  # document text: exported only with --otlp-content


class Scripted:
    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        reply = "LP-07 is serviced every 500 hours [1]."
        if on_token is not None:
            for word in reply.split(" "):
                on_token(word + " ")
        return ChatResult(text=reply, model="scripted-7b", prompt_tokens=42,
                          completion_tokens=len(reply.split()), time_to_first_token_s=0.01)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix():
    server = phoenix_server.start()
    if server is None:
        pytest.skip("Arize Phoenix's venv is missing: scripts/test.sh creates .venv-phoenix")
    try:
        yield server.wait_ready()
    finally:
        phoenix_server.stop()


@pytest.fixture
def graph(tmp_path):
    register_backend("test-otlp", Scripted)
    doc = tiny_rag_graph(tmp_path, DOCS, backend="test-otlp", top_k=2)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    yield path
    unregister_backend("test-otlp")


def _run(graph, *extra: str) -> int:
    return main(["run", str(graph), "-q", "--input", "question=How often is LP-07 serviced?",
                 "--cache-dir", str(graph.parent / "cache"), *extra])


def _spans(base: str, project: str, expected: int) -> list[dict]:
    deadline = time.monotonic() + 20
    while True:
        try:
            spans = _get(f"{base}/v1/projects/{project}/spans?limit=1000")["data"]
        except OSError:
            spans = []
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.3)


def _by_name(spans: list[dict]) -> dict[str, dict]:
    return {s["name"]: s for s in spans}


def _flat(attributes: dict, prefix: str = "") -> dict:
    """Phoenix may hand attributes back nested; compare them flat."""
    out = {}
    for key, value in attributes.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for n, item in enumerate(value):
                out.update(_flat(item, f"{name}.{n}."))
        else:
            out[name] = value
    return out


def test_a_run_is_a_span_tree_in_phoenix(phoenix, graph, monkeypatch):
    monkeypatch.setenv("OTEL_SERVICE_NAME", "modrag-test-plain")
    assert _run(graph, "--otlp", phoenix) == 0
    spans = _spans(phoenix, "modrag-test-plain", 12)
    named = _by_name(spans)
    root = named["tiny"]
    assert root["parent_id"] is None and root["span_kind"] == "CHAIN"
    children = [s for s in spans if s is not root]
    assert len(children) == 11  # one per node visit
    assert {s["parent_id"] for s in children} == {root["context"]["span_id"]}
    assert {s["context"]["trace_id"] for s in spans} == {root["context"]["trace_id"]}
    assert named["retrieve"]["span_kind"] == "RETRIEVER"
    assert named["generate"]["span_kind"] == "LLM"
    assert named["split"]["span_kind"] == "CHAIN"

    retrieve = _flat(named["retrieve"]["attributes"])
    assert retrieve["retrieval.documents.0.document.id"].startswith("maint.md")
    assert retrieve["retrieval.documents.0.document.score"] > 0
    assert retrieve["retrieval.documents.0.document.metadata.doc_id"] == "maint.md"
    assert retrieve["modrag.status"] == "done"
    assert not any(k.endswith("document.content") for k in retrieve)  # content is off

    generate = _flat(named["generate"]["attributes"])
    assert generate["llm.model_name"] == "scripted-7b"
    assert generate["gen_ai.response.model"] == "scripted-7b"
    assert generate["llm.token_count.prompt"] == 42
    assert generate["gen_ai.usage.input_tokens"] == 42
    assert generate["modrag.llm.time_to_first_token_s"] == pytest.approx(0.01)
    assert generate["llm.input_messages.0.message.role"] in ("system", "user")
    assert not any(k.endswith("message.content") for k in generate)
    assert SECRET not in json.dumps(spans)


def test_content_switch_and_cached_visits(phoenix, graph, monkeypatch):
    assert _run(graph) == 0  # fills the cache, exports nothing (no endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "modrag-test-content")
    assert _run(graph, "--otlp", phoenix, "--otlp-content") == 0
    spans = _spans(phoenix, "modrag-test-content", 12)
    named = _by_name(spans)
    retrieve = _flat(named["retrieve"]["attributes"])
    assert SECRET in retrieve["retrieval.documents.0.document.content"]
    assert retrieve["modrag.cached"] is True and retrieve["modrag.status"] == "cached"
    assert "cache_reason" in json.dumps(retrieve) and retrieve["modrag.cache_reason"]
    generate = _flat(named["generate"]["attributes"])
    assert any("LP-07" in str(v) for k, v in generate.items() if k.endswith("message.content"))
    assert "How often is LP-07" in _flat(named["tiny"]["attributes"])["input.value"]


def test_no_receiver_never_blocks_and_warns_once(graph, monkeypatch, caplog):
    port = _free_port()  # nothing listens there
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    caplog.set_level(logging.WARNING)
    started = time.monotonic()
    for _ in range(3):
        assert _run(graph) == 0
    assert time.monotonic() - started < 15
    ours = [r for r in caplog.records if r.name == "modrag_studio.run_tracing"]
    assert len(ours) == 3  # one per command (one pipeline each), none per batch or span
    assert f"127.0.0.1:{port}" in ours[0].getMessage()
    noise = [r for r in caplog.records if r.name.startswith("opentelemetry")]
    assert noise == []


def test_expected_evidence_puts_the_attribution_verdict_on_the_run_span(graph):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    got: list[bytes] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            got.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{receiver.server_address[1]}"
        assert _run(graph, "--otlp", url, "--expect", "doc:canteen.md") == 0
    finally:
        receiver.shutdown()
    spans = [s for body in got for r in ExportTraceServiceRequest.FromString(body).resource_spans
             for ss in r.scope_spans for s in ss.spans]
    root = next(s for s in spans if not s.parent_span_id)
    attrs = {a.key: a.value for a in root.attributes}
    assert attrs["modrag.attribution.verdict"].string_value.startswith("Lost at retrieve")
    assert attrs["modrag.attribution.first_loss"].string_value == "retrieve"
    assert [v.string_value for v in attrs["modrag.attribution.expected"].array_value.values] == [
        "doc:canteen.md"]
