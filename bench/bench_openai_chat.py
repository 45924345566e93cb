"""`modrag serve`'s OpenAI-compatible route asked by the official `openai` client on loopback.

Two parts:

* ``--clients N`` (default 20): N streamed chat requests at once, ``--rounds`` times, against a
  fast graph (the tests' grounded chat graph: BM25 -> prompt -> a scripted model streaming its
  words -> parser -> grounding check). Each reply must stream, end with ``[DONE]``, carry the
  LP-07 answer with its ``[1]`` source line, the cited passage and the "grounded" verdict;
  anything else counts as an error. Prints errors and time to first token / to the end.
* ``--graph FILE``: ``modrag serve FILE`` (the real command, default node cache) asked the
  question of ``--question`` streamed, then a rephrased one not streamed; prints each answer,
  its citations, the verdict, the time to the first streamed token and the totals.

Run: .venv/bin/python bench/bench_openai_chat.py [--clients 20] [--rounds 3]
     .venv/bin/python bench/bench_openai_chat.py --graph sample_graphs/basic_rag.json
Loopback only; bounded in time and count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai

ROOT = Path(__file__).resolve().parent.parent
FAST_SERVER = """
import sys, tempfile, uvicorn
from pathlib import Path
sys.path.insert(0, {root!r})
from modrag_nodes.llm.client import register_backend
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.server import ServerSettings, create_app
from modrag_studio.server.protocol import HeaderTimeoutProtocol
from tests.server.conftest import make_registry
from tests.server.openai_helpers import BACKEND, StreamingScripted, grounded_chat_graph
register_backend(BACKEND, StreamingScripted)
folder = Path(tempfile.mkdtemp())
doc = GraphDocument.model_validate(grounded_chat_graph(folder))
app = create_app(doc, ServerSettings(cache_dir=folder / "cache"), registry=make_registry())
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", http=HeaderTimeoutProtocol)
"""
FAST_MODEL = "plant chat"


def wait_until_up(url: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.time() > deadline or server.poll() is not None:
            raise SystemExit("server did not start")
        time.sleep(0.5)


async def streamed(client: openai.AsyncOpenAI, model: str, question: str) -> dict:
    """One streamed request: its text, the final delta's extra fields and timings."""
    started = time.perf_counter()
    first = None
    parts: list[str] = []
    last = None
    chunks = 0
    stream = await client.chat.completions.create(
        model=model, stream=True, messages=[{"role": "user", "content": question}])
    async for chunk in stream:
        chunks += 1
        delta = chunk.choices[0].delta
        if delta.content:
            first = first if first is not None else time.perf_counter() - started
            parts.append(delta.content)
        if chunk.choices[0].finish_reason is not None:
            last = chunk
    extra = last.choices[0].delta.model_extra if last is not None else {}
    return {"text": "".join(parts), "first_s": first, "total_s": time.perf_counter() - started,
            "chunks": chunks, "citations": extra.get("citations") or [],
            "grounding": extra.get("grounding") or {},
            "finish": last.choices[0].finish_reason if last is not None else None}


def fast_reply_ok(reply: dict) -> str:
    """'' when a fast-graph reply is right, else what is wrong with it."""
    if reply["finish"] != "stop":
        return "no stop"
    if "every 500 operating hours [1]" not in reply["text"] or \
            "[1] maint.md" not in reply["text"]:
        return f"wrong text {reply['text'][:80]!r}"
    if not reply["citations"] or "500 operating hours" not in reply["citations"][0]["text"]:
        return "no cited passage"
    if reply["grounding"].get("verdict") != "grounded":
        return f"verdict {reply['grounding'].get('verdict')}"
    return "" if reply["chunks"] > 3 else "not streamed"


async def load(url: str, clients: int, rounds: int) -> None:
    errors: list[str] = []
    firsts: list[float] = []
    totals: list[float] = []
    http = httpx.AsyncClient(limits=httpx.Limits(max_connections=clients), timeout=120)
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="none", max_retries=0,
                                http_client=http)
    started = time.perf_counter()
    for round_no in range(rounds):
        questions = [f"How often is LP-07 serviced? (client {i}, round {round_no})"
                     for i in range(clients)]
        results = await asyncio.gather(*(streamed(client, FAST_MODEL, q) for q in questions),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                errors.append(f"{type(result).__name__}: {result}")
                continue
            wrong = fast_reply_ok(result)
            if wrong:
                errors.append(wrong)
                continue
            firsts.append(result["first_s"])
            totals.append(result["total_s"])
    wall = time.perf_counter() - started
    await client.close()
    requests = clients * rounds
    print(f"concurrent streamed clients={clients} rounds={rounds} requests={requests} "
          f"errors={len(errors)} wall={wall:.1f} s")
    if firsts:
        ordered = sorted(firsts)
        print(f"time to first token ms: p50 {statistics.median(firsts) * 1000:.0f}  "
              f"p95 {ordered[int(0.95 * (len(ordered) - 1))] * 1000:.0f}  "
              f"max {ordered[-1] * 1000:.0f}")
        print(f"time to [DONE] ms:      p50 {statistics.median(totals) * 1000:.0f}  "
              f"max {max(totals) * 1000:.0f}")
    if errors:
        print("first errors:", errors[:5])


def show(label: str, text: str, citations: list, grounding: dict, first: float | None,
         total: float) -> None:
    print(f"== {label} ==")
    print(text)
    for cite in citations:
        print(f"citation [{cite['ref']}] {cite['doc_id']} ({cite['chunk_id']}): "
              f"{' '.join(cite['text'].split())[:160]}")
    print(f"grounding: {grounding.get('verdict')} ({grounding.get('reason')}), "
          f"attempts {grounding.get('attempts')}")
    if first is not None:
        print(f"time to first streamed token: {first:.1f} s")
    print(f"total: {total:.1f} s")


def real(graph: str, port: int, question: str, rephrased: str) -> None:
    command = [str(ROOT / ".venv/bin/modrag"), "serve", graph, "--port", str(port),
               "--log-level", "warning", "--run-timeout", "1200"]
    server = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, server, timeout=900)
        client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0,
                               timeout=1500)
        (model,) = [m.id for m in client.models.list()]
        print(f"GET /v1/models: {model}")
        reply = asyncio.run(streamed(openai.AsyncOpenAI(
            base_url=url + "/v1", api_key="none", max_retries=0, timeout=1500), model,
            question))
        show(f"streamed: {question}", reply["text"], reply["citations"], reply["grounding"],
             reply["first_s"], reply["total_s"])
        started = time.perf_counter()
        whole = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": rephrased}])
        message = whole.choices[0].message.model_extra
        show(f"not streamed: {rephrased}", whole.choices[0].message.content,
             message.get("citations") or [], message.get("grounding") or {}, None,
             time.perf_counter() - started)
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--graph", help="serve this graph with `modrag serve` instead")
    parser.add_argument("--question", default="How often is the lubrication pump LP-07 "
                                               "serviced?")
    parser.add_argument("--rephrased", default="How often is lubrication pump LP-07 "
                                                "serviced?")
    parser.add_argument("--port", type=int, default=8777)
    args = parser.parse_args()
    if args.graph:
        real(args.graph, args.port, args.question, args.rephrased)
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-c", FAST_SERVER.format(
        root=str(ROOT), port=args.port)], env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{args.port}"
    try:
        wait_until_up(url, server, timeout=180)
        asyncio.run(load(url, min(args.clients, 200), min(args.rounds, 20)))
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
