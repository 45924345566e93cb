"""Pre-flight answers for chat models: which runtime, which file, ready or why not.

Nothing is loaded, downloaded or assembled here; the Qwen parts are only looked up.
"""

from __future__ import annotations

from modrag_studio.engine.core.node import NodeConfigError


def embedded_health(model: str, engine: str = "auto", threads: int = 0) -> str:
    """One line on the embedded model: runtime, threads and file; NodeConfigError when it
    cannot run here (parts missing, damaged file, runtime not installed)."""
    from modrag_nodes.llm import qwen_model, xllamacpp_runtime
    from modrag_nodes.llm.embedded import DEFAULT_MODEL, pick_engine, resolve_model

    if qwen_model.is_alias(model):
        state = qwen_model.state()
        if state.missing:
            raise NodeConfigError(state.describe())
        path = state.target
        where = state.describe()
    else:
        path = resolve_model(model)
        where = f"embedded model {model.strip() or DEFAULT_MODEL} at {path}"
    runtime = pick_engine(path, engine)
    if runtime == "xllamacpp":
        if not xllamacpp_runtime.available():
            raise NodeConfigError(
                f"{where}; engine 'xllamacpp' is not installed "
                "(pip install xllamacpp==2026.10.11549) or set engine to 'transformers'")
        count, batch = xllamacpp_runtime.thread_counts(threads)
        return (f"{where}; runtime llama.cpp (xllamacpp), "
                f"{xllamacpp_runtime.describe_threads(count, batch)}")
    return f"{where}; runtime transformers"
