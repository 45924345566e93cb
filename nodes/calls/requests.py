"""What identifies a model call: its canonical request and key, and how a missed request is
told (the closest recorded request and a unified diff of the two).

A chat request is the messages the backend receives (the spec's system message included), the
backend and model names and the options that change the answer. Options that only say where or
how fast the model runs (host, timeout, retries, threads, the API key's variable) are left out,
so a cassette recorded on one machine replays on another.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])(?=\S)")
#: ``LLMSpec.extra`` keys that do not change an answer: where the key is read, CPU threads.
MACHINE_ONLY_EXTRA = frozenset({"api_key_env", "api_key_file", "threads"})


def chat_request(spec: Any, messages: Iterable[Any]) -> dict[str, Any]:
    """The canonical request of one chat call (``spec``: an ``LLMSpec``)."""
    extra = {k: v for k, v in sorted(spec.extra.items()) if k not in MACHINE_ONLY_EXTRA}
    return {
        "kind": "chat",
        "model": {"backend": spec.backend, "name": spec.model},
        "options": {"temperature": spec.temperature, "max_tokens": spec.max_tokens,
                    "context_length": spec.context_length, "seed": spec.seed, **extra},
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }


def embed_request(spec: Any, texts: list[str], role: str) -> dict[str, Any]:
    """The canonical request of one embedder call (``spec``: an ``EmbedderSpec``)."""
    return {
        "kind": "embed",
        "model": {"backend": spec.kind, "name": spec.model},
        "options": {"role": role, "normalize": spec.normalize,
                    "query_prefix": spec.query_prefix, "passage_prefix": spec.passage_prefix},
        "texts": [str(t) for t in texts],
    }


def request_key(request: dict[str, Any]) -> str:
    """A short stable hash of the canonical request (key order and spacing never matter)."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def request_lines(request: dict[str, Any]) -> list[str]:
    """The request as lines a person can diff: the model and options, then each message (or
    text) with its role, its content one sentence a line (a changed word marks its sentence,
    not a whole paragraph)."""
    lines = [f"kind: {request.get('kind')}",
             f"model: {json.dumps(request.get('model'), sort_keys=True)}",
             f"options: {json.dumps(request.get('options'), sort_keys=True)}"]
    for number, message in enumerate(request.get("messages", []), 1):
        lines.append(f"--- message {number} ({message.get('role')}) ---")
        content = str(message.get("content", ""))
        lines.extend(part for line in content.splitlines() or [""]
                     for part in _SENTENCE_END.split(line))
    for number, text in enumerate(request.get("texts", []), 1):
        lines.append(f"text {number}: {text}")
    return lines


def closest(request: dict[str, Any],
            recorded: Iterable[dict[str, Any]]) -> tuple[int, dict[str, Any]] | None:
    """The position and request of the recorded call most like ``request`` (same kind first),
    or None when nothing is recorded."""
    mine = "\n".join(request_lines(request))
    best: tuple[float, int, dict[str, Any]] | None = None
    for position, other in enumerate(recorded):
        same_kind = other.get("kind") == request.get("kind")
        ratio = difflib.SequenceMatcher(None, mine, "\n".join(request_lines(other)),
                                        autojunk=False).ratio()
        score = ratio + (1.0 if same_kind else 0.0)
        if best is None or score > best[0]:
            best = (score, position, other)
    return None if best is None else (best[1], best[2])


def request_diff(recorded: dict[str, Any], request: dict[str, Any], *,
                 context: int = 2) -> str:
    """A unified diff from the recorded request to the one asked for."""
    return "\n".join(difflib.unified_diff(request_lines(recorded), request_lines(request),
                                          "recorded", "requested", n=context, lineterm=""))
