"""Chat model, Generate and Chat nodes, alone and inside graphs run by the executor."""

from __future__ import annotations

import pytest

from modrag_nodes.llm.client import LLMSpec
from modrag_nodes.llm.nodes import ChatModel, ChatModelParams, Generate, GenerateParams
from modrag_studio.composition import default_registry
from modrag_studio.engine import Executor
from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.engine.core.datatypes import Answer, Chunk, Prompt, Query, ScoredChunk
from modrag_studio.engine.core.errors import NodeConfigError
from modrag_studio.engine.core.node import CancelToken
from modrag_studio.engine.run.hooks import RunHook
from tests.engine.helpers import edge, graph, node
from tests.llm.helpers import Recorder, user
from tests.llm.ollama_fixture_server import CANNED_PREFIX


def test_nodes_are_registered_in_generation():
    registry = default_registry()
    for type_id in ("llm.model", "llm.generate", "llm.chat"):
        assert registry.get(type_id).category == "Generation"
    described = registry.get("llm.generate").describe()
    assert [p["name"] for p in described["inputs"]] == ["prompt", "llm", "query"]
    assert described["outputs"][0]["name"] == "answer"


def test_chat_model_builds_the_spec():
    params = ChatModelParams(backend="ollama", model="qwen2.5:0.5b", host=" gpu:11434 ",
                             temperature=0.2, max_tokens=64, context_length=4096, seed=None,
                             timeout_s=9, retries=1, system_prompt="Be brief.")
    spec = ChatModel().run(Recorder().context("m", "llm.model"), params)["llm"]
    assert spec == LLMSpec(backend="ollama", model="qwen2.5:0.5b", host="gpu:11434",
                           temperature=0.2, max_tokens=64, context_length=4096, seed=None,
                           timeout_s=9, retries=1, system="Be brief.",
                           extra={"repetition_penalty": 1.15})
    assert ChatModelParams().backend == "embedded"
    embedded = ChatModel().run(Recorder().context("m", "llm.model"),
                               ChatModelParams(repetition_penalty=1.0))["llm"]
    # the embedded engine's prompt prefix; lookup decoding only when asked (slower idle)
    assert embedded.extra == {"reuse_prefix": True}
    drafted = ChatModel().run(Recorder().context("m", "llm.model"),
                              ChatModelParams(repetition_penalty=1.0,
                                              lookup_decoding=True))["llm"]
    assert drafted.extra == {"reuse_prefix": True, "lookup_decoding": True}
    plain = ChatModel().run(Recorder().context("m", "llm.model"),
                            ChatModelParams(repetition_penalty=1.0, reuse_prefix=False))["llm"]
    assert plain.extra == {}


def test_chat_model_rejects_unknown_backend_naming_the_param():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"backend\n.*unknown LLM backend 'gpt'"):
        ChatModelParams(backend="gpt")
    params = ChatModelParams.model_construct(backend="gpt")  # unregistered after validation
    with pytest.raises(NodeConfigError, match="param backend: unknown LLM backend 'gpt'"):
        ChatModel().run(Recorder().context(), params)


def _prompt() -> Prompt:
    chunk = Chunk(chunk_id="doc1#0", doc_id="doc1", text="The river Lenn flows north.")
    evidence = [ScoredChunk(chunk=chunk, score=0.8, rank=1)]
    return Prompt(messages=user("Where does the river flow? [doc1]"), evidence=evidence)


def test_generate_streams_and_keeps_the_evidence(ollama_server):
    rec = Recorder()
    spec = LLMSpec(backend="ollama", model="fixture-llm", host=ollama_server.host)
    ctx = rec.context()
    answer = Generate().run(ctx, GenerateParams(), prompt=_prompt(), llm=spec,
                            query=Query(text="Where does the river flow?"))["answer"]
    assert isinstance(answer, Answer)
    assert answer.text.startswith(CANNED_PREFIX) and answer.text == "".join(rec.tokens).strip()
    assert [e.chunk_id for e in answer.evidence] == ["doc1#0"]
    assert answer.query == "Where does the river flow?"
    assert answer.model == "ollama:fixture-llm"
    assert ctx.details["completion_tokens"] == len(rec.tokens)
    assert ctx.details["prompt_tokens"] > 0
    assert ctx.details["time_to_first_token_s"] is not None


def test_generate_without_streaming_sends_nothing_to_the_canvas(ollama_server):
    rec = Recorder()
    spec = LLMSpec(backend="ollama", model="fixture-llm", host=ollama_server.host)
    answer = Generate().run(rec.context(), GenerateParams(stream=False), prompt=_prompt(),
                            llm=spec)["answer"]
    assert answer.text and rec.tokens == [] and answer.query == ""


def chat_graph(host: str, temperature: float = 0.0):
    return graph(
        [
            node("q", "graph.input", name="question"),
            node("model", "llm.model", backend="ollama", model="fixture-llm", host=host,
                 temperature=temperature),
            node("chat", "llm.chat"),
            node("out", "graph.output", name="answer"),
        ],
        [edge("q.value", "chat.text"), edge("model.llm", "chat.llm"),
         edge("chat.text", "out.value")],
        name=f"chat-{temperature}",
    )


def _visit(result, node_id):
    return next(v for v in result.trace.visits if v.node_id == node_id)


def test_graph_caches_greedy_answers_but_not_samples(ollama_server):
    executor = Executor(default_registry(), cache=NodeCache())
    greedy = chat_graph(ollama_server.host)
    first = executor.run(greedy, {"question": "Why is the sky blue?"})
    assert first.status == "ok"
    assert first.outputs["answer"].startswith(CANNED_PREFIX)
    details = _visit(first, "chat").details
    assert details["completion_tokens"] > 0 and details["model"] == "ollama:fixture-llm"
    assert _visit(executor.run(greedy, {"question": "Why is the sky blue?"}), "chat").cached

    sampled = chat_graph(ollama_server.host, temperature=0.7)
    executor.run(sampled, {"question": "Why is the sky blue?"})
    again = executor.run(sampled, {"question": "Why is the sky blue?"})
    assert not _visit(again, "chat").cached
    assert "sampling" in _visit(again, "chat").details["cache"]


class _CancelAfter(RunHook):
    def __init__(self, cancel: CancelToken, tokens: int) -> None:
        self.cancel, self.tokens, self.seen = cancel, tokens, []

    def on_node_stream(self, *, run_id: str, node_id: str, text: str) -> None:
        self.seen.append(text)
        if len(self.seen) >= self.tokens:
            self.cancel.cancel()


def test_graph_cancel_during_generation(ollama_server):
    ollama_server.token_delay_s = 0.02
    cancel = CancelToken()
    hook = _CancelAfter(cancel, 3)
    result = Executor(default_registry(), cache=NodeCache()).run(chat_graph(ollama_server.host),
                                            {"question": "Tell me everything."},
                                            hooks=[hook], cancel=cancel)
    assert result.status == "cancelled"
    assert _visit(result, "chat").status == "cancelled"
    assert len(hook.seen) == 3
    assert "answer" not in result.outputs


def test_graph_reports_an_unreachable_ollama(ollama_server):
    from tests.llm.ollama_fixture_server import free_port

    doc = chat_graph(f"127.0.0.1:{free_port()}")
    doc.nodes[1].params["retries"] = 0
    result = Executor(default_registry(), cache=NodeCache()).run(doc, {"question": "hi"})
    assert result.status == "failed"
    error = _visit(result, "chat").error
    assert error is not None and "Ollama is not reachable at" in error.message
