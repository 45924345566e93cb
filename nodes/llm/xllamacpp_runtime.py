"""GGUF models on llama.cpp through ``xllamacpp`` (a prebuilt binding: no compiler needed).

One ``xllamacpp.Server`` per (model file, thread count) per process, shared by every node and
run; the server is thread-safe and uses the chat template stored in the GGUF file. Answers
stream to a callback as OpenAI-style chunks; the callback returning True stops generation, so
a cancelled run stops between two tokens. Token counts come from the server's ``usage``.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modrag_nodes.llm.chat_types import ChatResult, LLMSpec
from modrag_studio.engine.core.node import (
    CancelToken,
    ChatMessage,
    ModragError,
    NodeConfigError,
    Resources,
    given_or_process,
)

MIN_CONTEXT = 4096  # one engine serves every node; a smaller context_length still fits
MAX_SLOTS = 8  # requests one engine serves together, however many runs share it
# Prompt-lookup decoding: after each token, the last LOOKUP_NGRAM tokens are looked up earlier
# in the prompt and answer, and the LOOKUP_DRAFT tokens that followed them there are checked
# in one batch (llama.cpp's ngram-simple). A RAG answer copies names and numbers from its
# evidence. bench/bench_generation_modes.py (16 basic_rag prompts, Qwen, 1 decode thread):
# 523 tokens decoded in 115.5 s plain, 83.0 s with 2 / 5, 16 of 16 answers the same;
# llama.cpp's default 12 / 48 drafted too rarely and changed one answer of 8.
LOOKUP_NGRAM, LOOKUP_DRAFT = 2, 5


def available() -> bool:
    """Whether ``xllamacpp`` is installed (checked without importing it)."""
    return importlib.util.find_spec("xllamacpp") is not None


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads() -> int:
    """Decode threads when the param is 0: one CPU left free, at most 4.

    Decoding runs hundreds of small ops per token and llama.cpp's threads wait for each other
    after every op, so a thread another process takes stalls every token. Measured on 2 cores
    (``bench/bench_llm_threads_isa.py``: Qwen2.5-Coder-1.5B, 734-token RAG prompt, 64 greedy
    tokens, medians of 3 rounds): quiet, 2 threads decode 1.58x as fast as 1 (21.8 against
    13.8 tokens/s); beside one CPU-bound process, 0.48x (6.1 against 12.7); on a busier machine
    24 SmolLM2 tokens took 195-280 s on 2 threads against 12-17 s on 1. A 1.6x gain against
    a 2x loss (more on busier machines): decoding leaves one CPU free. Decode is bound by
    memory bandwidth, so the cap of 4 costs little on larger machines (not measured here).
    """
    return max(1, min(4, usable_cpus() - 1))


def default_batch_threads() -> int:
    """Prompt-processing threads when the param is 0: every usable CPU, at most 8.

    Prompt processing is compute-bound, in chunks large enough that a descheduled thread
    costs little. Same bench, 2 cores: quiet, 2 threads process the prompt 1.79x as fast as 1
    (60.4 against 33.7 tokens/s); beside one CPU-bound process, still 1.11x. For a RAG prompt
    it is most of the time: 734 tokens at 33.7 tokens/s are 22 s before the first token, the
    64 tokens after it 5 s. With this split (2 for the prompt, 1 for decoding) the 734+64
    tokens took 18 s instead of 26 s on the quiet machine (2 threads for both: 15 s) and 27 s
    instead of 30 s beside the busy process (2 threads for both: 33 s). The cap of 8 is not
    measured here.
    """
    return max(1, min(8, usable_cpus()))


@dataclass
class Engine:
    """A loaded llama.cpp server for one model file."""

    path: Path
    server: Any
    n_ctx: int
    threads: int  # decode
    batch_threads: int  # prompt processing
    load_time_s: float
    reported: bool = False
    slots: int = 1  # requests served together, each with n_ctx / slots of context
    lookup: bool = False  # prompt-lookup decoding

    @property
    def name(self) -> str:
        return self.path.name.removesuffix(".gguf")


_RELOAD_LOCK = threading.Lock()


def load_engine(path: Path, *, threads: int = 0, context_length: int = MIN_CONTEXT,
                lookup: bool = False, resources: Resources | None = None) -> Engine:
    """The engine for ``path``, kept in ``resources`` (the run's; the process's when None).
    ``threads`` > 0 sets decode and prompt-processing threads; 0 uses ``default_threads``
    and ``default_batch_threads``.
    ``lookup``: prompt-lookup decoding (``LOOKUP_NGRAM``) when it has one slot.

    It has a slot (a request served at once, with ``context_length`` of context) for every
    run the resources serve at once (``Resources.concurrent``: an answer evaluation asking
    several questions together), and lookup decoding only with one slot (drafts checked in
    the batch of several slots slowed it: 119 s against 112 s for 16 prompts on 2 slots). It
    is loaded again when it has fewer slots or less context than asked, or, asked for one
    slot, not the lookup setting asked.
    """
    count, batch = thread_counts(threads)
    key = (str(path), count, batch, lookup)
    resources = given_or_process(resources)
    per_slot = max(MIN_CONTEXT, context_length)
    slots = max(1, min(MAX_SLOTS, resources.concurrent_runs))

    def load() -> Engine:
        return start_engine(path, count, per_slot * slots, batch, parallel=slots,
                            lookup=lookup and slots == 1)

    name = f"{path.name} (llama.cpp, {describe_threads(count, batch)})"
    def unfit(engine: Engine) -> bool:  # too few slots, too little context, no lookup alone
        return (engine.slots < slots or engine.n_ctx // engine.slots < context_length
                or (slots == 1 and engine.lookup != lookup))

    engine = resources.model("chat model", key, load, name=name)  # size: what loading took
    if unfit(engine):
        with _RELOAD_LOCK:
            engine = resources.peek("chat model", key) or engine
            if unfit(engine):
                resources.drop("chat model", key)
                engine = resources.model("chat model", key, load, name=name)
    return engine


def thread_counts(threads: int = 0) -> tuple[int, int]:
    """(decode threads, prompt-processing threads) for the ``threads`` param."""
    if threads > 0:
        return threads, threads
    return default_threads(), default_batch_threads()


def describe_threads(count: int, batch: int) -> str:
    """``"1 thread"``, ``"2 threads"`` or ``"1 thread, 2 for the prompt"``."""
    text = f"{count} thread{'s' if count != 1 else ''}"
    return text if batch == count else f"{text}, {batch} for the prompt"


def start_engine(path: Path, threads: int, n_ctx: int, batch_threads: int | None = None, *,
                 parallel: int = 1, lookup: bool = False) -> Engine:
    """A new llama.cpp server for ``path`` (not kept: ``load_engine`` keeps one per run's
    resources). ``parallel`` > 1 serves that many requests at once, each slot with
    ``n_ctx / parallel`` of context: their prompts and decode steps share one batch
    (``bench/bench_parallel_generation.py`` measures what that gives). ``lookup``:
    prompt-lookup decoding (``LOOKUP_NGRAM``)."""
    try:
        import xllamacpp as xlc
    except ImportError as exc:
        raise NodeConfigError(
            "embedded LLM: engine 'xllamacpp' needs the package xllamacpp "
            "(pip install xllamacpp==2026.10.11549) or set engine to 'transformers'"
        ) from exc
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = batch_threads or threads
    params.warmup = False
    # plain weights and no memory-fitting probe: on the AVX2 wheel, the weights repacked into
    # the CPU's extra buffer types loaded in 1.3-1.5 s and processed a 450-token RAG prompt
    # in 5.0 s; plain, 0.6 s and 4.0 s (bench/bench_llm_threads_isa.py --layouts repacked
    # plain). The kernels round differently: 46 of the 52 demo answers kept their text. The
    # fit probe sizes a model to a GPU's free memory; on the CPU it only costs load time.
    params.no_extra_bufts = True
    params.fit_params = False
    params.use_jinja = True  # the GGUF's own chat template, as transformers renders it
    params.verbosity = -1  # llama.cpp logs every request at info level on stderr otherwise
    params.endpoint_metrics = True  # the readiness probe below goes through the task queue
    if lookup:
        kind = xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE
        params.speculative.types = [kind]
        params.speculative.ngram_simple.size_n = LOOKUP_NGRAM
        params.speculative.ngram_simple.size_m = LOOKUP_DRAFT
    start = time.perf_counter()
    try:
        server = xlc.Server(params)
    except Exception as exc:
        raise NodeConfigError(f"embedded LLM: llama.cpp could not load {path}: {exc}") from exc
    _wait_until_serving(server)
    return Engine(path=path, server=server, n_ctx=n_ctx, threads=threads,
                  batch_threads=batch_threads or threads, load_time_s=time.perf_counter() - start,
                  slots=parallel, lookup=lookup)


def _wait_until_serving(server: Any) -> None:
    """Return once the server's task loop runs.

    ``Server`` starts its loop on a thread; freed before the loop has started (a model
    unloaded right after loading), its destructor's stop signal is lost and the join never
    returns. A metrics request is answered by that loop, so afterwards it is running.
    """
    server.handle_metrics()


class GenerationError(ModragError):
    """llama.cpp answered with an error."""


def request_for(spec: LLMSpec, messages: list[ChatMessage]) -> dict[str, Any]:
    """The OpenAI-style request body llama.cpp's server understands."""
    body: dict[str, Any] = {
        "messages": [m.model_dump() for m in messages],
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "seed": spec.seed if spec.seed is not None else int.from_bytes(os.urandom(4), "little"),
        "stream": True,
        "stream_options": {"include_usage": True},
        "cache_prompt": bool(spec.extra.get("reuse_prefix", False)),
    }
    if "repetition_penalty" in spec.extra:
        body["repeat_penalty"] = float(spec.extra["repetition_penalty"])
    if "top_p" in spec.extra:
        body["top_p"] = float(spec.extra["top_p"])
    return body


def chat(engine: Engine, spec: LLMSpec, messages: list[ChatMessage], *,
         on_token: Callable[[str], None] | None, cancel: CancelToken) -> ChatResult:
    """One streamed chat completion; stops between tokens when ``cancel`` is set."""
    state = _Stream(on_token, cancel)
    start = time.perf_counter()
    returned = engine.server.handle_chat_completions(request_for(spec, messages), state.take)
    if state.failure is not None:
        raise state.failure
    error = state.error or (returned.get("error") if isinstance(returned, dict) else None)
    if error:
        raise _error_for(error, spec, engine)
    usage = state.usage or {}
    text = "".join(state.parts)
    stopped = "cancelled" if state.cancelled else state.finish
    timings = state.timings or {}
    cached = timings.get("cache_n") or (
        usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return ChatResult(
        text=text, model=f"embedded:{engine.name}",
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        cached_prompt_tokens=int(cached),
        completion_tokens=int(usage.get("completion_tokens", state.pieces)),
        time_to_first_token_s=None if state.first_at is None else state.first_at - start,
        duration_s=time.perf_counter() - start, stopped=stopped,
        drafted_tokens=int(timings.get("draft_n") or 0),
        accepted_tokens=int(timings.get("draft_n_accepted") or 0),
    )


class _Stream:
    """Collects streamed chunks; its ``take`` is the callback given to llama.cpp."""

    def __init__(self, on_token: Callable[[str], None] | None, cancel: CancelToken) -> None:
        self.on_token, self.cancel = on_token, cancel
        self.parts: list[str] = []
        self.pieces = 0
        self.first_at: float | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None
        self.error: Any = None
        self.finish = "stop"
        self.cancelled = False
        self.failure: BaseException | None = None

    def take(self, chunk: Any) -> bool:
        """Handle one chunk; True asks llama.cpp to stop generating."""
        try:
            return self._take(chunk)
        except BaseException as exc:  # never let an exception cross into C++
            self.failure = exc
            return True

    def _take(self, chunk: Any) -> bool:
        if not isinstance(chunk, dict):
            return self.cancel.cancelled
        if "error" in chunk:
            self.error = chunk["error"]
            return True
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.timings = chunk["timings"]
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece:
                self.first_at = self.first_at or time.perf_counter()
                self.parts.append(piece)
                self.pieces += 1
                if self.on_token is not None:
                    self.on_token(piece)
            if choice.get("finish_reason"):
                self.finish = "length" if choice["finish_reason"] == "length" else "stop"
        if self.cancel.cancelled and self.usage is None:
            self.cancelled = True
            return True
        return False


def _error_for(error: Any, spec: LLMSpec, engine: Engine) -> ModragError:
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        return NodeConfigError(
            f"embedded LLM: the prompt has {error.get('n_prompt_tokens')} tokens but the "
            f"context is {error.get('n_ctx')} (context_length is {spec.context_length}); "
            "raise context_length or shorten the prompt"
        )
    message = error.get("message", error) if isinstance(error, dict) else error
    return GenerationError(f"embedded LLM {engine.name} (llama.cpp) failed: {message}")
