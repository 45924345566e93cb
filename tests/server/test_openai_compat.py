"""``modrag serve``'s OpenAI-compatible routes, asked by the official ``openai`` client on a
real loopback server: the answer with its citation and grounding verdict, streamed and not,
the history input, and the same key, Host, body and queue rules as ``/run``."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator

import httpx
import pytest

openai = pytest.importorskip("openai")

from modrag_nodes.llm.client import register_backend, unregister_backend  # noqa: E402
from modrag_studio.engine.core.document import GraphDocument  # noqa: E402
from modrag_studio.server import ServerSettings  # noqa: E402
from tests.server.conftest import serve  # noqa: E402
from tests.server.openai_helpers import (  # noqa: E402
    BACKEND,
    GOOD,
    StreamingScripted,
    grounded_chat_graph,
)

MODEL = "plant chat"
QUESTION = "How often is LP-07 serviced?"
KEY = "test-key-123"


@pytest.fixture(scope="module")
def backend() -> Iterator[StreamingScripted]:
    scripted = StreamingScripted()
    register_backend(BACKEND, lambda: scripted)
    yield scripted
    unregister_backend(BACKEND)


@pytest.fixture(scope="module")
def served(backend, tmp_path_factory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("chat")
    doc = GraphDocument.model_validate(grounded_chat_graph(folder))
    settings = ServerSettings(cache_dir=folder / "cache", api_key=KEY, max_body_bytes=20_000,
                              max_concurrent_runs=1, max_queued_runs=0)
    with serve(doc, settings) as url:
        yield url


@pytest.fixture
def client(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served}/v1", api_key=KEY, max_retries=0, timeout=60)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_models_name_the_graph(client):
    assert [m.id for m in client.models.list()] == [MODEL]


def test_the_answer_comes_with_its_citation_and_verdict(client):
    reply = client.chat.completions.create(model=MODEL, messages=ask(QUESTION))
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "stop" and message.role == "assistant"
    assert message.content == f"{GOOD}\n\n[1] maint.md (maint.md#0)"
    (cited,) = message.citations
    assert cited["ref"] == "1" and cited["source"] == "maint.md"
    assert "every 500 operating hours" in cited["text"]
    assert message.grounding["verdict"] == "grounded"
    assert {c["claim"] for c in message.grounding["claims"]} == {"LP-07", "500"}


def test_a_stream_sends_the_tokens_then_the_sources_and_done(client):
    fresh = "When is LP-07 serviced?"  # not answered before: no node cache hit
    chunks = list(client.chat.completions.create(model=MODEL, messages=ask(fresh),
                                                 stream=True))
    deltas = [c.choices[0].delta for c in chunks]
    assert deltas[0].role == "assistant"
    words = [d.content for d in deltas if d.content]
    assert words[:3] == ["LP-07 ", "is ", "serviced "]  # the model's tokens, one by one
    assert "".join(words).split() == f"{GOOD}\n\n[1] maint.md (maint.md#0)".split()
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert deltas[-1].citations[0]["chunk_id"] == "maint.md#0"
    assert deltas[-1].grounding["verdict"] == "grounded"


def test_a_rejected_draft_is_said_and_the_refusal_follows(client):
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=ask("How often is LP-07 serviced, wrongly?"), stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.count("(The check sent this draft back: the answer says 700") == 2
    assert text.endswith("The documents do not mention 700.")
    grounding = chunks[-1].choices[0].delta.grounding
    assert grounding["verdict"] == "refused" and grounding["attempts"] == 2
    whole = client.chat.completions.create(model=MODEL,
                                           messages=ask("How often is LP-07 serviced, wrongly?"))
    assert whole.choices[0].message.content == "The documents do not mention 700."


def test_earlier_turns_reach_the_history_input(client, backend):
    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": "Which pump is at the plant?"},
                {"role": "assistant", "content": "The pump LP-07 (remembered)."},
                {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    client.chat.completions.create(model=MODEL, messages=messages)
    sent = [m.content for m in backend.seen[-1]]
    assert "The pump LP-07 (remembered)." in sent and "Which pump is at the plant?" in sent
    assert "be brief" not in "\n".join(sent)  # the graph's own prompt, not the client's


def test_wrong_requests_get_openai_errors(client):
    with pytest.raises(openai.NotFoundError, match="serves the model 'plant chat'"):
        client.chat.completions.create(model="gpt-4o", messages=ask(QUESTION))
    with pytest.raises(openai.BadRequestError, match="no user message"):
        client.chat.completions.create(model=MODEL,
                                       messages=[{"role": "system", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model=MODEL, messages=[])
    with pytest.raises(openai.InternalServerError, match="the scripted model exploded"):
        client.chat.completions.create(model=MODEL, messages=ask("explode"))
    with pytest.raises(openai.APIError, match="the scripted model exploded"):
        list(client.chat.completions.create(model=MODEL, messages=ask("explode"), stream=True))


def test_the_key_host_and_body_rules_of_run_apply(served):
    wrong = openai.OpenAI(base_url=f"{served}/v1", api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    body = {"model": MODEL, "messages": ask(QUESTION)}
    assert httpx.post(f"{served}/v1/chat/completions", json=body).status_code == 401
    keyed = httpx.post(f"{served}/v1/chat/completions", json=body,
                       headers={"X-API-Key": KEY}, timeout=60)
    assert keyed.status_code == 200 and "[1]" in keyed.json()["choices"][0]["message"]["content"]
    assert httpx.get(f"{served}/v1/models", headers={"X-API-Key": KEY,
                                                     "Host": "evil.example"}).status_code == 421
    big = {"model": MODEL, "messages": ask("x" * 30_000)}
    assert httpx.post(f"{served}/v1/chat/completions", json=big,
                      headers={"X-API-Key": KEY}).status_code == 413


def test_a_full_queue_is_busy_like_run(client, served):
    started = threading.Event()
    finished: list[str] = []

    def slow() -> None:
        stream = client.chat.completions.create(model=MODEL, stream=True,
                                                messages=ask("LP-07 slowly"))
        for chunk in stream:
            if chunk.choices[0].delta.content:
                started.set()
        finished.append("done")

    worker = threading.Thread(target=slow)
    worker.start()
    assert started.wait(30)
    with pytest.raises(openai.InternalServerError, match="server busy") as busy:
        client.chat.completions.create(model=MODEL, messages=ask(QUESTION))
    assert busy.value.status_code == 503
    ran = httpx.post(f"{served}/run", json={"question": QUESTION}, headers={"X-API-Key": KEY})
    assert ran.status_code == 503  # one queue for both protocols
    worker.join(60)
    assert finished == ["done"]


def test_a_draft_the_parser_trimmed_is_not_sent_twice():
    from modrag_studio.server.openai_compat import ChatStream, Reply

    def streamed_text(draft: str, answer: str) -> str:
        out = ChatStream("chatcmpl-x", MODEL)
        parts = [out.token(word) for word in re.findall(r"\S+\s*", draft)]
        parts += out.finish(Reply(answer, "\n\n[2] a.md", [], None))
        deltas = [json.loads(p[6:]) for p in parts if p != b"data: [DONE]\n\n"]
        return "".join(d["choices"][0]["delta"].get("content") or "" for d in deltas)

    trimmed = "LP-07 is serviced every 500 operating hours. [2]"
    assert streamed_text(f"<{trimmed[:-4]} > [2]", trimmed) == \
        f"<{trimmed[:-4]} > [2]\n\n[2] a.md"
    assert streamed_text("LP-07 is serviced every 5 months [2]", trimmed) == \
        f"LP-07 is serviced every 5 months [2]\n\n{trimmed}\n\n[2] a.md"
