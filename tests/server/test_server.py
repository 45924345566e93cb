import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from modrag_studio.server import ServerSettings
from tests.server.conftest import echo_graph, serve


def test_run_returns_outputs_and_optional_trace(client):
    response = client.post("/run", json={"question": "hello world"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["outputs"] == {"answer": "HELLO WORLD / calm"}
    assert body.get("trace") is None
    traced = client.post("/run", params={"trace": "true"},
                         json={"question": "a b", "tone": "warm"}).json()
    assert traced["outputs"]["answer"] == "A B / warm"
    assert [v["node_id"] for v in traced["trace"]["visits"]][-1] == "answer"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "question"),
        ({"question": 3}, "question"),
        ({"question": "x", "surprise": 1}, "surprise"),
        ({"question": "x" * 100_001}, None),
    ],
)
def test_bad_inputs_get_a_4xx_naming_the_field(client, payload, field):
    response = client.post("/run", json=payload)
    assert 400 <= response.status_code < 500
    if field is not None:
        assert field in json.dumps(response.json()["detail"])


def test_malformed_json_and_oversized_body(client):
    response = client.post("/run", content=b"{not json", headers={"content-type":
                                                                   "application/json"})
    assert response.status_code == 422
    big = client.post("/run", json={"question": "x" * 30_000})
    assert big.status_code == 413
    assert "request body over" in big.json()["detail"]


def test_an_oversized_chunked_body_gets_413(client):
    def chunks():  # no Content-Length: the size is known only while reading
        yield b'{"question": "'
        for _ in range(30):
            yield b"x" * 1000
        yield b'"}'

    big = client.post("/run", content=chunks(), headers={"content-type": "application/json"})
    assert big.status_code == 413
    assert "request body over 20000 bytes" in big.json()["detail"]
    small = client.post("/run", content=iter([b'{"question": ', b'"a b"}']),
                        headers={"content-type": "application/json"})
    assert small.status_code == 200 and small.json()["outputs"]["answer"] == "A B / calm"


def test_stream_events_arrive_in_order(client):
    events = []
    with client.stream("POST", "/run/stream", json={"question": "one two three"}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    names = [n for n, _ in events]
    assert names[-1] == "result"
    assert events[-1][1]["outputs"] == {"answer": "ONE TWO THREE / calm"}
    tokens = [d["text"] for n, d in events if n == "token"]
    assert tokens == ["ONE ", "TWO ", "THREE "]
    first_token = names.index("token")
    llm_start = next(i for i, (n, d) in enumerate(events)
                     if n == "node_started" and d["node_id"] == "llm")
    llm_end = next(i for i, (n, d) in enumerate(events)
                   if n == "node_finished" and d["node_id"] == "llm")
    assert llm_start < first_token < llm_end < len(events) - 1
    finished = [d["node_id"] for n, d in events if n == "node_finished"]
    assert finished.index("up") < finished.index("llm") < finished.index("answer")


def test_twenty_concurrent_requests_each_get_their_own_answer(client, server_url):
    questions = [f"question number {i}" for i in range(20)]

    def ask(question: str) -> dict:
        with httpx.Client(base_url=server_url, timeout=60) as http:
            return http.post("/run", params={"trace": "true"}, json={"question": question}).json()

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(ask, questions))
    for question, body in zip(questions, answers, strict=True):
        assert body["outputs"]["answer"] == f"{question.upper()} / calm"
        assert body["trace"]["inputs"]["question"] == question
    assert len({a["run_id"] for a in answers}) == 20


def test_graph_renderings_and_health(client):
    graph = client.get("/graph").json()
    assert graph["metadata"]["name"] == "echo_service"
    mermaid = client.get("/graph.mmd")
    assert mermaid.status_code == 200 and "flowchart" in mermaid.text
    svg = client.get("/graph.svg")
    assert svg.status_code in (200, 503)
    if svg.status_code == 200:
        assert svg.text.lstrip().startswith(("<?xml", "<svg"))
    health = client.get("/health").json()
    assert health["ok"] is True and health["graph"]["ok"] is True


def test_openapi_schema_comes_from_the_graph(client):
    schema = client.get("/openapi.json").json()
    inputs = schema["components"]["schemas"]["EchoServiceInputs"]
    assert inputs["required"] == ["question"]
    assert inputs["properties"]["question"]["description"] == "what to ask"
    assert inputs["properties"]["tone"]["default"] == "calm"
    assert "answer" in schema["components"]["schemas"]["EchoServiceOutputs"]["properties"]


def test_api_key_required_when_configured(tmp_path):
    settings = ServerSettings(api_key="s3cret", cache_dir=tmp_path)
    with serve(echo_graph(), settings) as url, httpx.Client(base_url=url) as http:
        assert http.post("/run", json={"question": "x"}).status_code == 401
        assert http.get("/health").status_code == 401
        wrong = http.post("/run", json={"question": "x"}, headers={"X-API-Key": "nope"})
        assert wrong.status_code == 401
        ok = http.post("/run", json={"question": "x"}, headers={"X-API-Key": "s3cret"})
        assert ok.status_code == 200
        bearer = http.post("/run", json={"question": "y"},
                           headers={"Authorization": "Bearer s3cret"})
        assert bearer.json()["outputs"]["answer"] == "Y / calm"


def test_run_time_limit_cancels_the_run(tmp_path):
    settings = ServerSettings(run_timeout_s=0.3, cache_dir=tmp_path)
    with serve(echo_graph(delay_s=0.5), settings) as url, httpx.Client(base_url=url) as http:
        body = http.post("/run", json={"question": "a b c d e f"}, timeout=30).json()
    assert body["status"] == "cancelled"
    assert any("time limit" in e["message"] for e in body["errors"])


def test_serve_refuses_public_bind_without_key(tmp_path, monkeypatch, capsys):
    import uvicorn

    from modrag_studio.cli import main
    from modrag_studio.engine.core.document import GraphDocument, save

    monkeypatch.delenv("MODRAG_API_KEY", raising=False)
    path = tmp_path / "g.json"
    save(GraphDocument.model_validate({  # valid with the built-in nodes: only the key is missing
        "metadata": {"name": "public"},
        "nodes": [{"id": "q", "type": "graph.input", "params": {"name": "question"}},
                  {"id": "up", "type": "text.upper"},
                  {"id": "answer", "type": "graph.output", "params": {"name": "answer"}}],
        "edges": [{"from": "q.value", "to": "up.text"},
                  {"from": "up.text", "to": "answer.value"}]}), path)
    started: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, **kw: started.append(host))
    assert main(["serve", str(path), "--host", "0.0.0.0"]) == 2
    assert "binding to 0.0.0.0 needs an API key" in capsys.readouterr().err
    assert started == []
    monkeypatch.setenv("MODRAG_API_KEY", "s3cret")  # the same command with a key starts
    assert main(["serve", str(path), "--host", "0.0.0.0"]) == 0
    assert started == ["0.0.0.0"]


def test_a_run_is_recorded_in_the_history_only_on_request(tmp_path):
    from modrag_studio.engine.history.store import RunHistory

    settings = ServerSettings(cache_dir=tmp_path, allow_record=True)
    with serve(echo_graph(), settings) as url, httpx.Client(base_url=url) as http:
        plain = http.post("/run", json={"question": "not kept"}).json()
        kept = http.post("/run", params={"record": "true"}, json={"question": "kept"}).json()
    assert plain["recorded"] is None
    runs = RunHistory(tmp_path / "served-history").runs()
    assert [(r.run_id, r.question, r.origin, r.answer) for r in runs] == [
        (kept["recorded"], "kept", "server 127.0.0.1", "KEPT / calm")]


def test_a_streamed_run_is_recorded_on_request(tmp_path):
    from modrag_studio.engine.history.store import RunHistory

    settings = ServerSettings(cache_dir=tmp_path, allow_record=True)
    with serve(echo_graph(), settings) as url, httpx.Client(base_url=url, timeout=30) as http, \
            http.stream("POST", "/run/stream", params={"record": "true"},
                        json={"question": "streamed"}) as response:
        text = "".join(response.iter_text())
    result = json.loads(text.split("event: result\ndata: ", 1)[1].split("\n", 1)[0])
    runs = RunHistory(tmp_path / "served-history").runs()
    assert [(r.run_id, r.question) for r in runs] == [(result["recorded"], "streamed")]
