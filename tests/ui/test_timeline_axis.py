"""The timeline's time axis keeps its labels apart in a narrow dock."""

from __future__ import annotations

import pytest

from modrag_studio.ui.run.timeline import TICK_W, axis_step, nice_step

pytestmark = pytest.mark.ui


@pytest.mark.parametrize("plot", [180, 400, 900])
def test_labels_are_at_least_a_label_width_apart_and_more_than_one(plot):
    span = 2.9  # seconds: "0 ms 500 ms1.00 s …" ran together in a 420 px dock
    step = axis_step(span, plot)
    assert plot * step / span >= TICK_W * 0.9  # pixels between two labels
    assert span / step >= 1
    assert step >= nice_step(span)  # never denser than the old six ticks
