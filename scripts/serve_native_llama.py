"""Serve a GGUF model over the OpenAI API with a llama.cpp built for this CPU (opt-in).

Run it with the Python of an environment that has ``llama-cpp-python[server]`` compiled with
``-DGGML_NATIVE=ON`` (see docs/llm-backends.md, "A llama.cpp built for this CPU"); it takes
the arguments of ``python -m llama_cpp.server``. The weights are loaded plain, not repacked
into the CPU's extra buffer types: on an AVX-512 CPU the plain weights processed Qwen's RAG
prompt 1.5x as fast as the repacked ones (``bench/bench_llm_threads_isa.py --layouts
repacked plain``). A request that names no repeat penalty gets 1.0, as from llama.cpp's own
server. A graph then uses it through the Chat model node's ``openai`` backend.

    ~/venv-native/bin/python scripts/serve_native_llama.py --host 127.0.0.1 --port 8080 \
        --model ~/.cache/modrag-studio/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        --model_alias qwen2.5-coder-1.5b-instruct --n_ctx 4096 --n_threads 1 --n_threads_batch 2
"""

from __future__ import annotations

import sys


def load_plain_weights() -> None:
    """Make every model llama-cpp-python loads start from params without the repacking."""
    import llama_cpp.llama_cpp as low_level

    defaults = low_level.llama_model_default_params
    if getattr(defaults, "plain_weights", False):
        return

    def plain_params():  # noqa: ANN202 - a ctypes struct
        params = defaults()
        params.use_extra_bufts = False
        return params

    plain_params.plain_weights = True
    low_level.llama_model_default_params = plain_params


def greedy_like_llama_cpp() -> None:
    """Requests that name no repeat penalty get 1.0, as llama.cpp's own server (and the
    embedded engine) gives them; llama-cpp-python's server defaults to 1.1, which changes a
    greedy answer (a penalised token is often an identifier the evidence repeats)."""
    from llama_cpp.server import types

    for request in (types.CreateCompletionRequest, types.CreateChatCompletionRequest):
        request.model_fields["repeat_penalty"].default = 1.0
        request.model_rebuild(force=True)


def main() -> None:
    try:
        load_plain_weights()
        greedy_like_llama_cpp()
        from llama_cpp.server.__main__ import main as serve
    except ImportError as exc:
        raise SystemExit(f"this Python has no llama-cpp-python[server] ({exc}); see "
                         "docs/llm-backends.md, 'A llama.cpp built for this CPU'") from exc
    sys.argv[0] = "llama_cpp.server"
    serve()


if __name__ == "__main__":
    main()
