"""One call for every chat backend: ``chat(spec, messages, ctx=...)``.

Nodes that need a language model (generation, rewrite, routing, grading, self-check) take an
``LLMSpec`` on an input port (from a "Chat model" node) and call ``chat``. Backends register
by name; tests register a deterministic backend as a fixture.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from modrag_nodes.calls import cassette
from modrag_nodes.llm.chat_types import ChatBackend, ChatResult, LLMSpec
from modrag_studio.engine.core.node import (
    CancelToken,
    ChatMessage,
    NodeConfigError,
    NodeContext,
    Resources,
    RunCancelled,
    given_or_process,
)

_BACKENDS: dict[str, Callable[[], ChatBackend]] = {}
_INSTANCES: dict[str, ChatBackend] = {}
_LOCK = threading.Lock()


def register_backend(name: str, factory: Callable[[], ChatBackend]) -> None:
    """Make ``LLMSpec(backend=name)`` usable; ``factory`` is called once, lazily."""
    with _LOCK:
        _BACKENDS[name] = factory
        _INSTANCES.pop(name, None)


def unregister_backend(name: str) -> None:
    with _LOCK:
        _BACKENDS.pop(name, None)
        _INSTANCES.pop(name, None)


def backend_names() -> list[str]:
    _ensure_builtin_backends()
    return sorted(_BACKENDS)


def get_backend(name: str) -> ChatBackend:
    _ensure_builtin_backends()
    with _LOCK:
        if name not in _BACKENDS:
            known = ", ".join(sorted(_BACKENDS)) or "none"
            raise NodeConfigError(f"unknown LLM backend '{name}' (available: {known})")
        if name not in _INSTANCES:
            _INSTANCES[name] = _BACKENDS[name]()
        return _INSTANCES[name]


def chat(
    spec: LLMSpec,
    messages: list[ChatMessage],
    *,
    ctx: NodeContext | None = None,
    stream: bool = True,
    raise_on_cancel: bool = True,
    resources: Resources | None = None,
) -> ChatResult:
    """Run one chat completion; streamed tokens go to ``ctx.stream`` when ``stream``.

    ``spec.system`` is put first as a system message when ``messages`` have none. While a
    cassette is active (``modrag_nodes.calls.cassette``) the call is recorded, or answered
    from the file without building the backend. Backends stop
    between tokens when the run is cancelled and return ``stopped="cancelled"``; ``chat`` then
    raises ``RunCancelled`` (the executor marks the node cancelled) unless ``raise_on_cancel``
    is False, in which case the partial result is returned. A backend that keeps loaded
    models keeps them in ``ctx.resources`` (else ``resources``, else the process's).
    """
    on_token = ctx.stream if (ctx is not None and stream) else None
    cancel = ctx.cancel if ctx is not None else CancelToken()
    sent = with_system(spec, messages)

    held = ctx.resources if ctx is not None else given_or_process(resources)

    def live() -> ChatResult:
        backend = get_backend(spec.backend)
        extra = {"resources": held} if getattr(backend, "holds_models", False) else {}
        return backend.chat(spec, sent, on_token=on_token, cancel=cancel, **extra)

    try:
        if (tape := cassette.active("chat")) is not None:  # the backend is built only
            node = ctx.node_id if ctx is not None else ""  # when the call is made live
            result = tape.chat(spec, sent, live, result_type=ChatResult, node=node,
                               on_token=on_token)
        else:
            result = live()
    except Exception as exc:
        partial = getattr(exc, "partial_text", "")
        if partial and ctx is not None:  # what streamed before the failure stays in the trace
            ctx.note(partial_text=partial)
        raise
    if result.stopped == "cancelled" and raise_on_cancel:
        raise RunCancelled(
            f"generation cancelled after {result.completion_tokens} tokens ({result.model})"
        )
    return result


def with_system(spec: LLMSpec, messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with ``spec.system`` prepended when set and no system message is present."""
    if not spec.system or any(m.role == "system" for m in messages):
        return list(messages)
    return [ChatMessage(role="system", content=spec.system), *messages]


_builtin_loaded = False
_BUILTIN_LOCK = threading.Lock()


def _ensure_builtin_backends() -> None:
    """Register the built-in backends once (their modules import heavy libraries lazily);
    a backend a test or plug-in registered under the same name keeps its place. A thread
    arriving while another registers them waits until they are there (two questions asked
    at once found no backend otherwise)."""
    global _builtin_loaded
    if _builtin_loaded:
        return
    with _BUILTIN_LOCK:
        if _builtin_loaded:
            return
        from modrag_nodes.llm.backends import BUILTIN_BACKENDS

        with _LOCK:
            for name, factory in BUILTIN_BACKENDS.items():
                _BACKENDS.setdefault(name, factory)
        _builtin_loaded = True
