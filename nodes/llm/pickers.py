"""Model pickers: the models a backend offers, for the properties panel's dropdowns.

Servers are asked with a short timeout (Ollama ``/api/tags``, OpenAI ``/v1/models``). A
``ModelListing`` carries the names and, when the server does not answer, why (naming the URL);
the model param always stays free text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from modrag_studio.engine.core.node import model_dir

log = logging.getLogger(__name__)

#: Params of a chat model node whose change means the list must be asked again.
CHAT_LISTING_SOURCES = ("backend", "host", "api_key_env", "api_key_file")
PICK_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ModelListing:
    """What a backend offers: ``models`` from ``source``; ``error`` when it did not answer."""

    models: list[str] = field(default_factory=list)
    source: str = ""
    error: str = ""

    def summary(self) -> str:
        """One line for the panel: how many models came from where, or the error."""
        if self.error:
            return f"{self.error}; type the model name"
        if not self.models:
            return f"{self.source} reports no models; type the model name"
        return f"{len(self.models)} model(s) from {self.source}"


def embedded_models() -> list[str]:
    """The embedded models usable here: SmolLM2 (packaged), Qwen when its parts or its
    assembled file are present, and any other ``.gguf`` file in the model folder (by path)."""
    from modrag_nodes.llm import qwen_model
    from modrag_nodes.llm.embedded import DEFAULT_MODEL

    names = [DEFAULT_MODEL]
    if qwen_installed():
        names.append(qwen_model.FILE_NAME.removesuffix("-q4_k_m.gguf"))
    folder = model_dir()
    if folder.is_dir():
        names += sorted(str(path) for path in folder.glob("*.gguf")
                        if path.name != qwen_model.FILE_NAME)
    return names


def qwen_installed() -> bool:
    """Whether Qwen2.5-Coder-1.5B can run here: all its parts installed, or assembled."""
    from modrag_nodes.llm import qwen_model

    return not qwen_model.find_parts()[1] or qwen_model.default_target().is_file()


def best_embedded_model() -> str:
    """The strongest embedded chat model installed here: Qwen2.5-Coder-1.5B when its parts
    (or its assembled file) are present, else the packaged SmolLM2-135M."""
    from modrag_nodes.llm import qwen_model
    from modrag_nodes.llm.embedded import DEFAULT_MODEL

    if qwen_installed():
        return qwen_model.FILE_NAME.removesuffix("-q4_k_m.gguf")
    return DEFAULT_MODEL


def list_chat_models(backend: str, host: str = "", *, key_env: str = "OPENAI_API_KEY",
                     key_file: str = "", timeout_s: float = PICK_TIMEOUT_S) -> ModelListing:
    """The chat models ``backend`` offers; never raises (the error is in the listing)."""
    if backend == "embedded":
        return _listed(embedded_models, "the embedded models installed here")
    if backend == "ollama":
        return ollama_listing(host, timeout_s)
    if backend == "openai":
        return openai_listing(host, key_env, key_file, timeout_s)
    return ModelListing(error=f"unknown backend '{backend}'")


def chat_models(backend: str, host: str = "", *, key_env: str = "OPENAI_API_KEY",
                key_file: str = "", timeout_s: float = PICK_TIMEOUT_S) -> list[str]:
    """Chat model names ``backend`` offers (empty when the server does not answer)."""
    listing = list_chat_models(backend, host, key_env=key_env, key_file=key_file,
                               timeout_s=timeout_s)
    if listing.error:
        log.info("no model list: %s", listing.error)
    return listing.models


def ollama_models(host: str = "", timeout_s: float = PICK_TIMEOUT_S) -> list[str]:
    from modrag_nodes.llm.ollama_backend import list_models, make_client, resolve_host

    client = make_client(resolve_host(host or None), timeout_s)
    try:
        return list_models(client)
    finally:
        client.close()


def ollama_listing(host: str, timeout_s: float) -> ModelListing:
    from modrag_nodes.llm.ollama_backend import resolve_host

    url = resolve_host(host.strip() or None)
    return _listed(lambda: ollama_models(url, timeout_s), f"Ollama at {url}",
                   f"Ollama did not answer at {url}")


def openai_listing(host: str, key_env: str, key_file: str, timeout_s: float) -> ModelListing:
    from modrag_nodes.llm.openai_backend import base_url, list_models

    url = base_url(host.strip() or None)
    return _listed(lambda: list_models(url, key_env=key_env, key_file=key_file,
                                       timeout_s=timeout_s),
                   f"the server at {url}", f"no model list from {url}")


def _listed(call: Callable[[], list[str]], source: str, failure: str = "") -> ModelListing:
    """Run ``call``; an exception becomes the listing's error (naming the URL)."""
    try:
        return ModelListing(list(call()), source)
    except Exception as exc:  # a picker never fails the panel: say why there is no list
        from modrag_studio.engine.core.node import ModragError

        if isinstance(exc, ModragError):  # our own message already names the URL
            return ModelListing(source=source, error=str(exc).split("\n", 1)[0])
        return ModelListing(source=source, error=f"{failure} ({type(exc).__name__})")
