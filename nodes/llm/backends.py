"""The built-in chat backends: ``embedded`` (in-process model), ``ollama`` and ``openai``
(any OpenAI-compatible server); ``client`` registers them when first asked for a backend.

Importing this module is cheap: each backend imports its heavy libraries when first used.
"""

from __future__ import annotations

from modrag_nodes.llm.chat_types import ChatBackend


def _embedded() -> ChatBackend:
    from modrag_nodes.llm.embedded import EmbeddedBackend

    return EmbeddedBackend()


def _ollama() -> ChatBackend:
    from modrag_nodes.llm.ollama_backend import OllamaBackend

    return OllamaBackend()


def _openai() -> ChatBackend:
    from modrag_nodes.llm.openai_backend import OpenAIBackend

    return OpenAIBackend()


BUILTIN_BACKENDS = {"embedded": _embedded, "ollama": _ollama, "openai": _openai}
