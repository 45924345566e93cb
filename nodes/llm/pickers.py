"""Model pickers: the models a backend offers, for the properties panel's dropdowns.

Servers are asked with a short timeout (Ollama ``/api/tags``, OpenAI ``/v1/models``); an
unreachable server gives an empty list (the model param stays free text).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def embedded_models() -> list[str]:
    """The packaged models usable here: SmolLM2 always, Qwen when its parts are installed."""
    from modrag_nodes.llm import qwen_model
    from modrag_nodes.llm.embedded import DEFAULT_MODEL

    names = [DEFAULT_MODEL]
    if not qwen_model.find_parts()[1]:
        names.append(qwen_model.FILE_NAME.removesuffix("-q4_k_m.gguf"))
    return names


def chat_models(backend: str, host: str = "", *, key_env: str = "OPENAI_API_KEY",
                key_file: str = "", timeout_s: float = 3.0) -> list[str]:
    """Chat model names ``backend`` offers (empty when the server does not answer)."""
    try:
        if backend == "embedded":
            return embedded_models()
        if backend == "ollama":
            return ollama_models(host, timeout_s)
        if backend == "openai":
            from modrag_nodes.llm.openai_backend import list_models

            return list_models(host or None, key_env=key_env, key_file=key_file,
                               timeout_s=timeout_s)
    except Exception as exc:  # a picker never fails the panel
        log.info("no model list from %s at %s: %s", backend, host or "default host", exc)
    return []


def ollama_models(host: str = "", timeout_s: float = 3.0) -> list[str]:
    from modrag_nodes.llm.ollama_backend import list_models, make_client, resolve_host

    client = make_client(resolve_host(host or None), timeout_s)
    try:
        return list_models(client)
    finally:
        client.close()
