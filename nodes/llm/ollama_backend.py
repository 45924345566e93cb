"""The Ollama chat backend, through the official ``ollama`` Python client.

Host: ``spec.host``, else ``$OLLAMA_HOST``, else 127.0.0.1:11434. Connection failures are
retried with exponential backoff (``spec.retries`` times, first delay
``spec.extra["retry_backoff_s"]``, default 0.5 s), then fail with "Ollama is not reachable at
<host>". A model the server lacks fails with the list of models it has.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from modrag_nodes.llm.chat_types import ChatResult, LLMSpec
from modrag_nodes.llm.retry import retry_on_connect
from modrag_studio.engine.core.node import CancelToken, ChatMessage, ModragError, NodeConfigError
from modrag_studio.engine.core.redact import scrub

DEFAULT_HOST = "127.0.0.1:11434"


class OllamaUnreachable(ModragError):
    """No answer from the Ollama server after every retry."""


class OllamaError(ModragError):
    """The server answered with an error, timed out or dropped the connection.

    ``partial_text`` holds what had streamed before the failure (``chat`` notes it in the trace).
    """

    def __init__(self, message: str, partial_text: str = "") -> None:
        super().__init__(message)
        self.partial_text = partial_text


def resolve_host(host: str | None) -> str:
    """``host``, else ``$OLLAMA_HOST``, else the default, as a full URL."""
    from ollama._client import _parse_host

    return _parse_host(host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST)


def options_for(spec: LLMSpec) -> dict[str, Any]:
    """Ollama ``options`` from a spec (temperature, num_predict, num_ctx, seed, extras)."""
    options: dict[str, Any] = {
        "temperature": spec.temperature,
        "num_predict": spec.max_tokens,
        "num_ctx": spec.context_length,
    }
    if spec.seed is not None:
        options["seed"] = spec.seed
    if "repetition_penalty" in spec.extra:
        options["repeat_penalty"] = spec.extra["repetition_penalty"]
    options.update(spec.extra.get("options", {}))
    return options


def with_retries(spec: LLMSpec, host: str, cancel: CancelToken, call: Callable[[], Any]) -> Any:
    """``call()``, retried on connection failures with exponential backoff."""
    return retry_on_connect(
        call, retries=spec.retries, backoff_s=float(spec.extra.get("retry_backoff_s", 0.5)),
        cancel=cancel, unreachable=lambda attempts: OllamaUnreachable(
            f"Ollama is not reachable at {host} (tried {attempts} times; start it with "
            "'ollama serve' or set the host param / OLLAMA_HOST)"))


def list_models(client: Any) -> list[str]:
    """Model names the server has (``/api/tags``)."""
    return sorted(m.model for m in client.list().models if m.model)


def missing_model_error(client: Any, host: str, model: str) -> NodeConfigError:
    try:
        names = list_models(client)
    except Exception as exc:  # the server answered once; say what we could not list
        return NodeConfigError(f"Ollama at {host} has no model '{model}' "
                               f"(listing failed: {scrub(str(exc))})")
    return no_model_error(host, model, names)


def no_model_error(host: str, model: str, names: list[str],
                   what: str = "model") -> NodeConfigError:
    """The server at ``host``, which has ``names``, lacks ``model``."""
    have = ", ".join(names) if names else "none"
    return NodeConfigError(
        f"Ollama at {host} has no {what} '{model}'; models it has: {have} "
        f"(pull one with 'ollama pull {model or 'NAME'}' or set the model param)"
    )


def check_model(host: str | None, model: str, *, timeout_s: float = 5.0,
                what: str = "model") -> str:
    """Ask the Ollama server at ``host`` whether it has ``model`` (``name`` means
    ``name:latest``); a description when it does, NodeConfigError naming the host or the
    models it has when not."""
    import httpx

    url = resolve_host(host)
    client = make_client(url, timeout_s)
    try:
        names = list_models(client)
    except (httpx.HTTPError, ConnectionError) as exc:
        raise NodeConfigError(
            f"Ollama is not reachable at {url} ({type(exc).__name__}); start it with "
            "'ollama serve' or set the host param / OLLAMA_HOST"
        ) from exc
    wanted = {model, f"{model}:latest"} if ":" not in model else {model}
    if wanted & set(names):
        return f"Ollama at {url} has {what} '{model}'"
    raise no_model_error(url, model, names, what)


def make_client(host: str, timeout_s: float) -> Any:
    import ollama

    return ollama.Client(host=host, timeout=timeout_s)


class OllamaBackend:
    """``ChatBackend`` talking to an Ollama server."""

    def chat(self, spec: LLMSpec, messages: list[ChatMessage], *,
             on_token: Callable[[str], None] | None, cancel: CancelToken) -> ChatResult:
        import httpx
        import ollama

        host = resolve_host(spec.host)
        client = make_client(host, spec.timeout_s)
        if not spec.model:
            names = with_retries(spec, host, cancel, lambda: list_models(client))
            client.close()
            raise NodeConfigError(
                f"param model is empty; Ollama at {host} has: {', '.join(names) or 'no models'}"
            )
        payload = [m.model_dump() for m in messages]
        start = time.perf_counter()

        def open_stream() -> tuple[Iterator[Any], Any]:
            stream = client.chat(model=spec.model, messages=payload, stream=True,
                                 options=options_for(spec))
            return stream, next(stream)  # the request is sent on the first read

        try:
            stream, first = with_retries(spec, host, cancel, open_stream)
            return _consume(spec, host, stream, first, start, on_token, cancel)
        except ollama.ResponseError as exc:
            if exc.status_code == 404 or "not found" in str(exc.error).lower():
                raise missing_model_error(client, host, spec.model) from None
            raise OllamaError(f"Ollama at {host} failed: {scrub(str(exc.error))}") from None
        except httpx.TimeoutException:
            raise OllamaError(
                f"Ollama at {host} did not answer within timeout_s={spec.timeout_s:g} s"
            ) from None
        except (httpx.TransportError, StopIteration, json.JSONDecodeError) as exc:
            partial = getattr(exc, "partial_text", "")
            kept = f"; the {len(partial)} characters received are kept" if partial else ""
            raise OllamaError(
                f"Ollama at {host} dropped the connection during generation "
                f"({type(exc).__name__}: {exc}){kept}", partial
            ) from None
        finally:
            client.close()


def _consume(spec: LLMSpec, host: str, stream: Iterator[Any], first: Any, start: float,
             on_token: Callable[[str], None] | None, cancel: CancelToken) -> ChatResult:
    parts: list[str] = []
    first_at: float | None = None
    last, stopped = first, "stop"
    chunk: Any = first
    while True:
        piece = chunk.message.content if chunk.message is not None else ""
        if piece:
            if first_at is None:
                first_at = time.perf_counter()
            parts.append(piece)
            if on_token is not None:
                on_token(piece)
        last = chunk
        if chunk.done:
            stopped = "length" if chunk.done_reason == "length" else "stop"
            break
        if cancel.cancelled:
            stopped = "cancelled"
            break
        try:
            chunk = next(stream, None)
        except Exception as exc:
            exc.partial_text = "".join(parts)  # type: ignore[attr-defined]
            raise
        if chunk is None:
            raise OllamaError(f"Ollama at {host} closed the stream before its final message",
                              "".join(parts))
    if stopped == "cancelled" and hasattr(stream, "close"):
        stream.close()  # closes the HTTP response: the server stops generating
    completion = last.eval_count if last.done and last.eval_count is not None else len(parts)
    return ChatResult(
        text="".join(parts), model=f"ollama:{last.model or spec.model}",
        prompt_tokens=int(last.prompt_eval_count or 0) if last.done else 0,
        completion_tokens=int(completion),
        time_to_first_token_s=None if first_at is None else first_at - start,
        duration_s=time.perf_counter() - start, stopped=stopped,
    )
