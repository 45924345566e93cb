"""OpenAI-compatible servers: LM Studio, llama.cpp's server, vLLM, hosted APIs.

Chat through ``POST {base}/chat/completions`` (streamed as server-sent events), embeddings
through ``POST {base}/embeddings``, the model list through ``GET {base}/models``.

Base URL: ``spec.host``, else ``$OPENAI_BASE_URL``, else ``http://127.0.0.1:8080/v1``. The API
key never lives in a graph file: it is read from the environment variable named by
``extra["api_key_env"]`` (default ``OPENAI_API_KEY``) or from the file ``extra["api_key_file"]``;
a local server usually needs none. Connection failures are retried ``spec.retries`` times with
exponential backoff; timeouts, refused keys, unknown models and dropped streams are clear errors.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from modrag_nodes.llm.chat_types import ChatResult, LLMSpec
from modrag_nodes.llm.retry import retry_on_connect
from modrag_studio.engine.core.node import CancelToken, ChatMessage, ModragError, NodeConfigError
from modrag_studio.engine.core.redact import remember_secret, scrub

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class ServerUnreachable(ModragError):
    """No answer from the server after every retry."""


class ServerError(ModragError):
    """The server answered with an error, timed out or dropped the stream.

    ``partial_text`` holds what had streamed before the failure.
    """

    def __init__(self, message: str, partial_text: str = "") -> None:
        super().__init__(message)
        self.partial_text = partial_text


def base_url(host: str | None) -> str:
    """``host``, else ``$OPENAI_BASE_URL``, else the default; ``/v1`` added when missing."""
    url = (host or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url if url.rsplit("/", 1)[-1].startswith("v") else url + "/v1"


def key_destination(host: str | None) -> str:
    """The host (``name`` or ``name:port``) the API key is sent to for the ``host`` param."""
    from urllib.parse import urlsplit

    return urlsplit(base_url(host)).netloc.rsplit("@", 1)[-1].lower()


def api_key(key_env: str = DEFAULT_KEY_ENV, key_file: str = "") -> str | None:
    """The API key from the file ``key_file`` (first line) or the variable ``key_env``."""
    if key_file:
        path = Path(key_file).expanduser()
        try:
            key = path.read_text(encoding="utf-8").strip().splitlines()[0].strip() or None
        except (OSError, IndexError) as exc:
            raise NodeConfigError(f"param api_key_file: cannot read a key from {path} "
                                  f"({type(exc).__name__})") from None
        return remember_secret(key)  # never repeated by an error leaving the process
    return remember_secret(os.environ.get(key_env or DEFAULT_KEY_ENV) or None)


def _headers(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def _key_for(spec_extra: dict[str, Any]) -> str | None:
    return api_key(str(spec_extra.get("api_key_env") or DEFAULT_KEY_ENV),
                   str(spec_extra.get("api_key_file") or ""))


def with_retries(url: str, retries: int, backoff_s: float, cancel: CancelToken | None,
                 call: Callable[[], Any]) -> Any:
    """``call()``, retried on connection failures with exponential backoff."""
    return retry_on_connect(
        call, retries=retries, backoff_s=backoff_s, cancel=cancel,
        unreachable=lambda attempts: ServerUnreachable(
            f"the OpenAI-compatible server is not reachable at {url} (tried {attempts} "
            "times; start it or set the host param / OPENAI_BASE_URL)"))


def _http_error(url: str, response: Any, model: str, key_env: str) -> ModragError:
    try:
        body = response.json()
        detail = body.get("error", body)
        detail = detail.get("message", detail) if isinstance(detail, dict) else detail
    except Exception:
        detail = response.text[:300]
    detail = scrub(str(detail))  # a server may echo the key it refused
    if response.status_code in (401, 403):
        return NodeConfigError(
            f"the server at {url} refused the API key ({response.status_code}: {detail}); "
            f"set ${key_env} or param api_key_file")
    if response.status_code == 404 and model:
        return NodeConfigError(f"the server at {url} has no model '{model}' ({detail}); "
                               "pick one of its models (param model)")
    return ServerError(f"the server at {url} failed ({response.status_code}): {detail}")


def list_models(host: str | None = None, *, key_env: str = DEFAULT_KEY_ENV, key_file: str = "",
                timeout_s: float = 5.0) -> list[str]:
    """Model ids the server reports (``GET /models``)."""
    import httpx

    url = base_url(host)
    try:
        response = httpx.get(f"{url}/models", headers=_headers(api_key(key_env, key_file)),
                             timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise NodeConfigError(f"the OpenAI-compatible server is not reachable at {url} "
                              f"({type(exc).__name__}); start it or set the host param") from exc
    if response.status_code != 200:
        raise _http_error(url, response, "", key_env)
    return sorted(str(item.get("id")) for item in response.json().get("data", [])
                  if item.get("id"))


def check_model(host: str | None, model: str, *, key_env: str = DEFAULT_KEY_ENV,
                key_file: str = "") -> str:
    """A description when the server has ``model``; NodeConfigError naming what it has."""
    url = base_url(host)
    names = list_models(host, key_env=key_env, key_file=key_file)
    if model in names:
        return f"OpenAI-compatible server at {url} has model '{model}'"
    raise NodeConfigError(f"the server at {url} has no model '{model}'; models it has: "
                          f"{', '.join(names) or 'none'}")


def request_body(spec: LLMSpec, messages: list[ChatMessage]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": spec.model, "messages": [m.model_dump() for m in messages],
        "max_tokens": spec.max_tokens, "temperature": spec.temperature, "stream": True,
        "stream_options": {"include_usage": True},
    }
    if spec.seed is not None:
        body["seed"] = spec.seed
    if "top_p" in spec.extra:
        body["top_p"] = float(spec.extra["top_p"])
    return body


class OpenAIBackend:
    """``ChatBackend`` for any server speaking the OpenAI chat completions API."""

    def chat(self, spec: LLMSpec, messages: list[ChatMessage], *,
             on_token: Callable[[str], None] | None, cancel: CancelToken) -> ChatResult:
        import httpx

        url = base_url(spec.host)
        key_env = str(spec.extra.get("api_key_env") or DEFAULT_KEY_ENV)
        if not spec.model:
            names = list_models(spec.host, key_env=key_env,
                                key_file=str(spec.extra.get("api_key_file") or ""))
            raise NodeConfigError(f"param model is empty; the server at {url} has: "
                                  f"{', '.join(names) or 'no models'}")
        client = httpx.Client(timeout=httpx.Timeout(spec.timeout_s, connect=min(10.0,
                              spec.timeout_s)), headers=_headers(_key_for(spec.extra)))
        start = time.perf_counter()

        def open_stream() -> Any:
            request = client.build_request("POST", f"{url}/chat/completions",
                                           json=request_body(spec, messages))
            return client.send(request, stream=True)

        parts: list[str] = []
        try:
            response = with_retries(url, spec.retries, float(spec.extra.get("retry_backoff_s",
                                    0.5)), cancel, open_stream)
            try:
                if response.status_code != 200:
                    response.read()
                    raise _http_error(url, response, spec.model, key_env)
                return _consume(spec, url, _events(response), parts, start, on_token, cancel)
            finally:
                response.close()  # on cancel this stops the server generating
        except httpx.TimeoutException:
            raise ServerError(f"the server at {url} did not answer within "
                              f"timeout_s={spec.timeout_s:g} s", "".join(parts)) from None
        except (httpx.TransportError, json.JSONDecodeError) as exc:
            kept = f"; the {len(''.join(parts))} characters received are kept" if parts else ""
            raise ServerError(f"the server at {url} dropped the connection during generation "
                              f"({type(exc).__name__}: {exc}){kept}", "".join(parts)) from None
        finally:
            client.close()


def _events(response: Any) -> Iterator[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream, up to ``[DONE]``."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


def _consume(spec: LLMSpec, url: str, events: Iterator[dict[str, Any]], parts: list[str],
             start: float, on_token: Callable[[str], None] | None,
             cancel: CancelToken) -> ChatResult:
    first_at: float | None = None
    usage: dict[str, Any] = {}
    model, stopped, finished = spec.model, "stop", False
    for event in events:
        if "error" in event:
            detail = event["error"]
            if isinstance(detail, dict):
                detail = detail.get("message", detail)
            raise ServerError(f"the server at {url} failed during generation: {scrub(str(detail))}",
                              "".join(parts))
        model = event.get("model") or model
        usage = event.get("usage") or usage
        for choice in event.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece:
                first_at = first_at or time.perf_counter()
                parts.append(piece)
                if on_token is not None:
                    on_token(piece)
            if choice.get("finish_reason"):
                finished = True
                stopped = "length" if choice["finish_reason"] == "length" else "stop"
        if cancel.cancelled and not usage:
            stopped = "cancelled"
            break
    else:
        if not finished:
            raise ServerError(f"the server at {url} closed the stream before the answer "
                              "finished", "".join(parts))
    return ChatResult(
        text="".join(parts), model=f"openai:{model}",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or len(parts)),
        time_to_first_token_s=None if first_at is None else first_at - start,
        duration_s=time.perf_counter() - start, stopped=stopped,
    )


def embed_texts(host: str | None, model: str, texts: list[str], *, timeout_s: float = 120.0,
                key_env: str = DEFAULT_KEY_ENV, key_file: str = "",
                retries: int = 2) -> list[list[float]]:
    """Vectors for ``texts`` from ``POST /embeddings``, in the order of ``texts``."""
    import httpx

    url = base_url(host)
    headers = _headers(api_key(key_env, key_file))

    def post() -> Any:
        return httpx.post(f"{url}/embeddings", json={"model": model, "input": texts},
                          headers=headers, timeout=timeout_s)

    try:
        response = with_retries(url, retries, 0.5, None, post)
    except httpx.TimeoutException:
        raise ServerError(f"the server at {url} did not embed within {timeout_s:g} s") from None
    if response.status_code != 200:
        raise _http_error(url, response, model, key_env)
    rows = sorted(response.json().get("data", []), key=lambda row: row.get("index", 0))
    if len(rows) != len(texts):
        raise ServerError(f"the server at {url} returned {len(rows)} embeddings for "
                          f"{len(texts)} texts")
    return [row["embedding"] for row in rows]
