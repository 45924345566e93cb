"""The run features state what they need from the window; a renamed attribute fails loudly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from modrag_studio.ui.canvas.protocols import RunCanvas, StudioWindow, missing_members, require
from modrag_studio.ui.shell.run_features import RunFeatures

pytestmark = pytest.mark.ui


def test_the_main_window_satisfies_the_protocols(main_window):
    assert missing_members(main_window, StudioWindow) == []
    assert missing_members(main_window.canvas, RunCanvas) == []
    assert isinstance(main_window.features.run, RunFeatures)


def _window_like(main_window, **renamed: str) -> SimpleNamespace:
    names = ["registry", "settings", "editor", "run_toolbar", "menus", "docks", "statusBar"]
    fake = SimpleNamespace(**{n: getattr(main_window, n) for n in names})
    canvas = SimpleNamespace(**{n: getattr(main_window.canvas, n)  # every member it declares
                                for n in missing_members(SimpleNamespace(), RunCanvas)})
    fake.canvas = canvas
    for old, new in renamed.items():
        owner = canvas if old.startswith("canvas.") else fake
        key = old.removeprefix("canvas.")
        setattr(owner, new, getattr(owner, key))
        delattr(owner, key)
    return fake


def test_a_renamed_attribute_is_named_in_the_error(main_window):
    require(_window_like(main_window), StudioWindow, "window")  # complete: no error
    with pytest.raises(TypeError, match=r"lacks what it needs: run_toolbar$"):
        require(_window_like(main_window, run_toolbar="toolbar"), StudioWindow, "window")
    with pytest.raises(TypeError, match=r"canvas\.set_node_caption"):
        require(_window_like(main_window, **{"canvas.set_node_caption": "caption"}),
                StudioWindow, "window")
    with pytest.raises(TypeError, match="the window given to the run features"):
        RunFeatures(_window_like(main_window, docks="panels"), main_window.controller)
