"""``short``: a long text's preview flattens only its start, with the same result."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from modrag_studio.engine.core.formatting import short


def flat_then_cut(text: str, limit: int) -> str:
    """The definition: the whole text on one line, then cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@given(st.text(alphabet="ab \n\t\u3000", max_size=700), st.integers(min_value=2, max_value=120))
def test_short_equals_flattening_the_whole_text(text, limit):
    assert short(text, limit) == flat_then_cut(text, limit)


def test_a_start_of_spaces_is_not_cut_short():
    text = " " * 500 + "LP-07 is serviced every 500 operating hours"
    assert short(text, 20) == "LP-07 is serviced e…"
