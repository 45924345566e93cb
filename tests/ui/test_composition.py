"""The studio is composed in one place: features as typed fields, explicit run and save chains,
and no feature reaching into the window by name."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from modrag_studio.engine.core.document import save
from modrag_studio.ui.shell.composition import StudioFeatures

pytestmark = pytest.mark.ui
UI = Path(__file__).resolve().parents[2] / "modrag_studio" / "ui"


def test_every_feature_is_built_once_and_the_chains_are_lists(main_window):
    features = main_window.features
    assert [f.name for f in dataclasses.fields(StudioFeatures)][:3] == [
        "run", "evidence_debugger", "preflight"]
    assert all(getattr(features, f.name) is not None for f in dataclasses.fields(features))
    assert features.run.controller is main_window.controller
    assert main_window.controller.guards == [features.trust_prompt]
    assert main_window.after_save == [features.trust_prompt]


def test_a_guard_that_refuses_stops_the_run_and_saves_reach_every_step(main_window,
                                                                        tmp_path):
    asked, saved = [], []

    class Refuse:
        def allows(self, request) -> bool:
            asked.append(request.doc)
            return False

    class Remember:
        def saved(self, path: Path) -> None:
            saved.append(path)

    main_window.controller.guards.append(Refuse())
    main_window.after_save.append(Remember())
    assert main_window.controller.run(main_window.editor.document()) is False
    assert not main_window.controller.busy and len(asked) == 1
    path = tmp_path / "mine.json"
    save(main_window.editor.document(), path)
    assert main_window.save_to(path) and saved == [path]


def test_no_feature_is_installed_onto_the_window_or_probed_on_it():
    found = []
    patterns = (r"def install_", r"(getattr|hasattr)\((self\.)?window",
                r"^\s*window\.[a-z_]+ = ")
    for path in sorted(UI.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(re.search(p, line) for p in patterns):
                found.append(f"{path.relative_to(UI)}:{number}: {line.strip()}")
    assert found == []
