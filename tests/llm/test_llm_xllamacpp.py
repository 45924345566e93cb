"""The embedded backend on llama.cpp (xllamacpp) with the packaged SmolLM2-135M-Instruct."""

from __future__ import annotations

import contextvars
import threading
import time

import pytest

from modrag_nodes.llm import embedded, xllamacpp_runtime
from modrag_nodes.llm.client import LLMSpec, chat
from modrag_studio.engine.core.errors import NodeConfigError, RunCancelled
from modrag_studio.engine.core.resources import Resources
from tests.llm.helpers import Recorder, user

pytestmark = pytest.mark.skipif(not xllamacpp_runtime.available(),
                                reason="xllamacpp is not installed")

LONG = "Tell a long story about a dragon."
FAST = {"engine": "xllamacpp", "threads": 1}


def spec(**changes) -> LLMSpec:
    return LLMSpec(**{"max_tokens": 6, "extra": dict(FAST), **changes})


def test_auto_picks_llama_cpp_for_gguf_files():
    path = embedded.packaged_gguf()
    assert embedded.pick_engine(path) == "xllamacpp"
    assert embedded.pick_engine(path, "transformers") == "transformers"
    with pytest.raises(NodeConfigError, match="param engine"):
        embedded.pick_engine(path, "vllm")


def test_streams_and_counts_tokens_exactly():
    rec = Recorder()
    result = chat(spec(), user(LONG), ctx=rec.context())
    assert rec.tokens and "".join(rec.tokens) == result.text
    # cut at max_tokens: the server's count, one streamed piece per token
    assert result.stopped == "length"
    assert result.completion_tokens == 6 == len(rec.tokens)
    assert result.prompt_tokens > len(LONG.split())  # the chat template's tokens are counted
    assert result.model == "embedded:SmolLM2-135M-Instruct.Q4_1"
    assert 0 < result.time_to_first_token_s <= result.duration_s


def test_one_engine_per_model_and_load_time_reported_once():
    chat(spec(max_tokens=1), user("hi"))
    engine = xllamacpp_runtime.load_engine(embedded.packaged_gguf(), threads=1)
    assert engine.reported and engine.load_time_s > 0 and engine.threads == 1
    again = chat(spec(max_tokens=1), user("hi"))
    assert again.load_time_s is None
    assert xllamacpp_runtime.load_engine(embedded.packaged_gguf(), threads=1) is engine


def test_greedy_is_repeatable_and_thread_safe():
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(chat(spec(), user(LONG)).text))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 2 and results[0] == results[1] != ""


def test_cancel_stops_between_tokens():
    rec = Recorder(cancel_after=2)
    with pytest.raises(RunCancelled):
        chat(spec(max_tokens=40), user(LONG), ctx=rec.context())
    assert len(rec.tokens) == 2
    rec = Recorder(cancel_after=1)
    result = chat(spec(max_tokens=40), user(LONG), ctx=rec.context(), raise_on_cancel=False)
    assert result.stopped == "cancelled" and result.completion_tokens == 1
    assert result.text == "".join(rec.tokens)


def test_failing_stream_consumer_stops_generation_and_raises():
    calls: list[str] = []

    def broken(piece: str) -> None:
        calls.append(piece)
        raise ValueError("display went away")

    engine = xllamacpp_runtime.load_engine(embedded.packaged_gguf(), threads=1)
    from modrag_studio.engine.core.node import CancelToken

    with pytest.raises(ValueError, match="display went away"):
        xllamacpp_runtime.chat(engine, spec(max_tokens=20), user(LONG), on_token=broken,
                               cancel=CancelToken())
    assert len(calls) == 1


def test_default_threads_fit_the_machine(monkeypatch):
    """Decode leaves one CPU free (at most 4); the prompt is processed on all (at most 8)."""
    for cpus, decode, batch in [(16, 4, 8), (4, 3, 4), (2, 1, 2), (1, 1, 1)]:
        monkeypatch.setattr(xllamacpp_runtime, "usable_cpus", lambda cpus=cpus: cpus)
        assert xllamacpp_runtime.default_threads() == decode
        assert xllamacpp_runtime.default_batch_threads() == batch
        assert xllamacpp_runtime.thread_counts(0) == (decode, batch)
    assert xllamacpp_runtime.thread_counts(3) == (3, 3)  # the param sets both
    assert xllamacpp_runtime.describe_threads(1, 2) == "1 thread, 2 for the prompt"
    assert xllamacpp_runtime.describe_threads(3, 3) == "3 threads"


def test_usable_cpus_follow_the_affinity_mask(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert xllamacpp_runtime.usable_cpus() == 3
    monkeypatch.delattr("os.sched_getaffinity", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert xllamacpp_runtime.usable_cpus() == 6


def test_the_engine_loads_plain_weights_without_the_memory_fitting_probe(monkeypatch):
    import xllamacpp

    seen = []

    class Server:  # records the params llama.cpp would get; loads nothing
        def __init__(self, params):
            seen.append(params)

        def handle_metrics(self):
            return {}

    monkeypatch.setattr(xllamacpp, "Server", Server)
    engine = xllamacpp_runtime.start_engine(embedded.packaged_gguf(), 1, 4096, 2)
    [params] = seen
    # bench/bench_llm_threads_isa.py --layouts repacked plain: plain weights load in less than
    # half the time and process a RAG prompt 1.2x as fast on the AVX2 wheel
    assert params.no_extra_bufts is True and params.fit_params is False
    assert params.warmup is False and params.n_ctx == 4096 == engine.n_ctx
    assert (params.cpuparams.n_threads, params.cpuparams_batch.n_threads) == (1, 2)


def test_reuse_prefix_reads_a_shared_prefix_from_the_kv_cache_and_repeats_its_sequence():
    """With reuse_prefix the second prompt, which extends the first, re-reads only what it
    adds. Its greedy text may differ from a fresh run's (llama.cpp's matrix kernels tile a
    batch by its length, so a prefix read in another split rounds differently), but the same
    sequence of calls gives the same texts; a call without reuse_prefix reads its whole
    prompt and leaves the slot as a fresh run would."""
    first = "Here is a list of colours: red, green, blue, yellow, purple, orange. " * 4
    second = first + "Which colour comes first in the list?"
    reuse = spec(max_tokens=12, extra={**FAST, "reuse_prefix": True})
    fresh = chat(spec(max_tokens=12), user(second))
    assert fresh.cached_prompt_tokens == 0
    assert chat(spec(max_tokens=12), user(second)).text == fresh.text != ""
    texts = []
    for _ in range(2):
        chat(spec(max_tokens=12), user(first))  # the slot now holds a fresh read of `first`
        again = chat(reuse, user(second))
        assert again.cached_prompt_tokens >= fresh.prompt_tokens // 2
        assert again.prompt_tokens == fresh.prompt_tokens
        texts.append(again.text)
    assert texts[0] == texts[1] != ""
    assert xllamacpp_runtime.request_for(spec(), user("hi"))["cache_prompt"] is False
    assert xllamacpp_runtime.request_for(reuse, user("hi"))["cache_prompt"] is True


def test_concurrent_runs_get_an_engine_with_a_slot_each_that_serves_them_together():
    """An evaluation asking two questions at once (``Resources.concurrent(2)``) gets an
    engine with two slots, each with the whole context; the two requests are served
    together (each has its first token before either ends: with one slot the second waits
    for the first to end). A single run afterwards keeps that engine; a one-slot engine
    held before is loaded again with two."""
    resources = Resources()
    path = embedded.packaged_gguf()
    try:
        single = xllamacpp_runtime.load_engine(path, threads=1, resources=resources)
        assert single.slots == 1
        with resources.concurrent(2):
            engine = xllamacpp_runtime.load_engine(path, threads=1, resources=resources)
            assert engine is not single and engine.slots == 2
            assert engine.n_ctx == 2 * xllamacpp_runtime.MIN_CONTEXT
            windows: list[tuple[float, float, float]] = []

            def ask() -> None:
                start = time.perf_counter()
                result = chat(spec(max_tokens=32), user(LONG), resources=resources)
                assert result.completion_tokens == 32
                windows.append((start, start + result.time_to_first_token_s,
                                start + result.duration_s))

            threads = [threading.Thread(target=contextvars.copy_context().run, args=(ask,))
                       for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len(windows) == 2
            assert max(first for _, first, _ in windows) < min(end for *_, end in windows)
        assert xllamacpp_runtime.load_engine(path, threads=1, resources=resources) is engine
    finally:
        resources.unload()


def test_lookup_decoding_drafts_from_the_prompt_and_only_with_one_slot():
    """With lookup_decoding the engine drafts the tokens that followed the last two tokens
    earlier in the context and checks them in one batch; copying a sentence from the prompt
    accepts drafts. Without it nothing is drafted; with several slots lookup is off."""
    sentence = "The lubrication pump LP-07 is serviced every 500 operating hours at Eastbank."
    ask = user(f"Repeat this sentence exactly, nothing else: {sentence}")
    resources = Resources()
    try:
        plain = chat(spec(max_tokens=24), ask, resources=resources)
        lookup = chat(spec(max_tokens=24, extra={**FAST, "lookup_decoding": True}), ask,
                      resources=resources)
        assert plain.drafted_tokens == 0 and "drafted_tokens" not in plain.trace_details()
        assert 0 < lookup.accepted_tokens <= lookup.drafted_tokens
        assert lookup.trace_details()["accepted_tokens"] == lookup.accepted_tokens
        assert lookup.completion_tokens == plain.completion_tokens
        assert lookup.text == plain.text  # a sentence copied from the prompt
        engine = xllamacpp_runtime.load_engine(embedded.packaged_gguf(), threads=1,
                                               lookup=True, resources=resources)
        assert engine.lookup and engine.slots == 1
        with resources.concurrent(2):
            both = xllamacpp_runtime.load_engine(embedded.packaged_gguf(), threads=1,
                                                 lookup=True, resources=resources)
            assert both.slots == 2 and not both.lookup
        # alone again: the one-slot engine with lookup is loaded again
        again = xllamacpp_runtime.load_engine(embedded.packaged_gguf(), threads=1,
                                              lookup=True, resources=resources)
        assert again.lookup and again.slots == 1
    finally:
        resources.unload()
