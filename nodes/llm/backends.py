"""Registers the built-in chat backends: ``embedded`` (in-process model), ``ollama`` and
``openai`` (any OpenAI-compatible server).

Importing this module is cheap: each backend imports its heavy libraries when first used.
"""

from __future__ import annotations

from modrag_nodes.llm.client import ChatBackend, register_backend


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

for _name, _factory in BUILTIN_BACKENDS.items():
    register_backend(_name, _factory)
