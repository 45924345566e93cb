"""Ids shortened to a width keep their stem's start and their chunk suffix."""

from __future__ import annotations

import pytest

from modrag_studio.ui.canvas.elide_id import elide_id, split_id

pytestmark = pytest.mark.ui


def fits_in(chars: int):
    return lambda text: len(text) <= chars


def test_split_id_finds_stem_extension_and_chunk_suffix():
    assert split_id("en_maintenance.md#3") == ("en_maintenance", ".md", "#3")
    assert split_id("en_maintenance.md") == ("en_maintenance", ".md", "")
    assert split_id("kg:retrieve") == ("kg:retrieve", "", "")
    assert split_id(".hidden") == (".hidden", "", "")


def test_a_narrow_column_keeps_the_name_start_and_the_chunk_number():
    text = "en_maintenance.md#3"
    assert elide_id(text, fits_in(40)) == text
    assert elide_id(text, fits_in(17)) == "en_maintenance…#3"   # the extension goes first
    assert elide_id(text, fits_in(11)) == "en_maint…#3"
    assert elide_id(text, fits_in(6)) == "en_…#3"
    assert elide_id(text, fits_in(5)) == "en…#3"
    for width in range(5, 20):  # never wider than the room, never Qt's "en…md"
        shown = elide_id(text, fits_in(width))
        assert len(shown) <= width
        assert shown.startswith("en") and shown.endswith("#3")


def test_a_document_id_keeps_its_stem_start_and_the_last_resort_is_the_ellipsis():
    assert elide_id("en_maintenance.md", fits_in(8)) == "en_main…"
    assert elide_id("en_maintenance.md#12", fits_in(4)) == "…#12"
    assert elide_id("en_maintenance.md#12", fits_in(2)) == "…"


def test_with_real_font_metrics(qapp):
    from PySide6.QtGui import QFont, QFontMetricsF

    metrics = QFontMetricsF(QFont())
    room = metrics.horizontalAdvance("en_mainte")
    shown = elide_id("en_maintenance.md#3", lambda t: metrics.horizontalAdvance(t) <= room)
    assert shown.endswith("…#3") and shown.startswith("en_")
    assert metrics.horizontalAdvance(shown) <= room
