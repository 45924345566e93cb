"""Many runs at once, in threads and through the server: every answer and trace is its own
request's, and the shared cache stays consistent (one key, one value)."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from modrag_studio.engine import Executor, GraphDocument, NodeCache
from modrag_studio.engine.run.trace import summarize
from modrag_studio.server import ServerSettings
from tests.hardening.helpers import ROOT, registry
from tests.server.conftest import echo_graph, serve

CORPUS = str(ROOT / "resources" / "sample_corpus")
QUESTIONS = ["pump service interval", "CNC vibration cause", "mentoring programme",
             "contract renewal", "IT helpdesk hours", "company overview"]


def text_graph(name: str, separator: str, sleep_s: float) -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": name},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "up", "type": "text.upper"},
            {"id": "wait", "type": "debug.sleep", "params": {"seconds": sleep_s, "steps": 2}},
            {"id": "join", "type": "text.concat", "params": {"separator": separator}},
            {"id": "answer", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [{"from": "q.value", "to": "up.text"}, {"from": "up.text", "to": "wait.value"},
                  {"from": "wait.value", "to": "join.texts"},
                  {"from": "q.value", "to": "join.texts"},
                  {"from": "join.text", "to": "answer.value"}],
    })


def bm25_graph() -> GraphDocument:
    return GraphDocument.model_validate({
        "metadata": {"name": "bm25-concurrency"},
        "nodes": [
            {"id": "q", "type": "graph.input", "params": {"name": "question"}},
            {"id": "load", "type": "load.files", "params": {"glob": "en_*.md", "path": CORPUS}},
            {"id": "split", "type": "split.recursive", "params": {"chunk_size": 300}},
            {"id": "index", "type": "bm25.index", "params": {}},
            {"id": "search", "type": "retrieve.bm25", "params": {"top_k": 4}},
            {"id": "answer", "type": "graph.output", "params": {"name": "answer"}},
        ],
        "edges": [{"from": "load.documents", "to": "split.documents"},
                  {"from": "split.chunks", "to": "index.chunks"},
                  {"from": "index.index", "to": "search.index"},
                  {"from": "q.value", "to": "search.query"},
                  {"from": "search.results", "to": "answer.value"}],
    })


def _ids(results) -> list[str]:
    return [r.chunk.chunk_id for r in results]


def test_many_threaded_runs_of_different_and_same_graphs(tmp_path):
    cache_dir = tmp_path / "cache"
    graphs = {"a": text_graph("graph-a", " | ", 0.02), "b": text_graph("graph-b", " + ", 0.01),
              "bm25": bm25_graph()}
    alone = Executor(registry(), NodeCache())
    expected_bm25 = {q: _ids(alone.run(graphs["bm25"], {"question": q}).outputs["answer"])
                     for q in QUESTIONS}
    rng = random.Random(11)
    jobs = [(rng.choice(list(graphs)), rng.choice(QUESTIONS) + ("" if i % 3 else f" #{i}"))
            for i in range(60)]
    jobs += [("bm25", QUESTIONS[0])] * 10 + [("a", "same question")] * 10  # the same, at once
    key_values: dict[str, str] = {}

    def record(result) -> None:
        for visit in result.trace.visits:
            outputs = result.node_outputs.get((visit.node_id, visit.iteration))
            if visit.cache_key and outputs:
                seen = json.dumps({p: summarize(v) for p, v in outputs.items()},
                                  sort_keys=True, default=str)
                assert key_values.setdefault(visit.cache_key, seen) == seen, visit.node_id

    for round_ in range(2):  # the second round reads what the first one cached on disk
        executor = Executor(registry(), NodeCache(cache_dir))

        def run(job: tuple[str, str], executor: Executor = executor):
            name, question = job
            return name, question, executor.run(graphs[name], {"question": question})

        with ThreadPoolExecutor(max_workers=8) as pool:
            outcomes = list(pool.map(run, jobs))
        run_ids = [result.trace.run_id for _, _, result in outcomes]
        assert len(set(run_ids)) == len(run_ids)
        for name, question, result in outcomes:
            assert result.ok, (name, [v.error for v in result.trace.visits if v.error])
            assert result.trace.inputs == {"question": question}
            assert result.trace.graph_name == graphs[name].metadata.name
            assert result.output_of("q", "value") == question
            if name == "bm25":
                assert _ids(result.outputs["answer"]) == expected_bm25[question.split(" #")[0]]
            else:
                sep = " | " if name == "a" else " + "
                assert result.outputs["answer"] == f"{question.upper()}{sep}{question}"
            record(result)
        if round_ == 1:
            cached = sum(v.cached for _, _, r in outcomes for v in r.trace.visits)
            assert cached > 0
    reader = NodeCache(cache_dir)
    for entry in Path(cache_dir).rglob("results/*/*.pkl"):
        assert reader.get(entry.stem) is not None
    assert reader.warnings == []


def test_many_concurrent_server_requests_get_their_own_answers_and_traces(tmp_path):
    settings = ServerSettings(cache_dir=tmp_path / "server-cache", max_concurrent_runs=6)
    with serve(echo_graph(delay_s=0.005), settings) as url:
        questions = [f"question {i} about {QUESTIONS[i % len(QUESTIONS)]}" for i in range(40)]
        questions += ["the very same question"] * 10

        def ask(args: tuple[int, str]) -> tuple[str, str, dict]:
            i, question = args
            tone = f"tone{i % 4}"
            with httpx.Client(base_url=url, timeout=120) as http:
                if i % 5 == 0:
                    return question, tone, _stream(http, question, tone)
                reply = http.post("/run", params={"trace": "true"},
                                  json={"question": question, "tone": tone})
                assert reply.status_code == 200, reply.text
                return question, tone, reply.json()

        with ThreadPoolExecutor(max_workers=12) as pool:
            answers = list(pool.map(ask, enumerate(questions)))
    run_ids = [body["run_id"] for _, _, body in answers]
    assert len(set(run_ids)) == len(run_ids)
    for question, tone, body in answers:
        assert body["status"] == "ok", body
        assert body["outputs"]["answer"] == f"{question.upper()} / {tone}"
        assert body["trace"]["inputs"] == {"question": question, "tone": tone}
        assert body["trace"]["run_id"] == body["run_id"]
        if "tokens" in body:
            assert "".join(body["tokens"]).split() == question.upper().split()


def _stream(http: httpx.Client, question: str, tone: str) -> dict:
    tokens: list[str] = []
    result: dict = {}
    with http.stream("POST", "/run/stream", params={"trace": "true"},
                     json={"question": question, "tone": tone}) as response:
        assert response.status_code == 200
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if event == "token":
                    tokens.append(data["text"])
                elif event == "result":
                    result = data
    result["tokens"] = tokens
    return result
