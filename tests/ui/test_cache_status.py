"""The status bar shows the disk cache's size."""

import pytest

from modrag_studio.engine.cache.node_cache import NodeCache
from modrag_studio.ui.shell.cache_status import CacheSizeLabel

pytestmark = pytest.mark.ui


def test_status_bar_shows_the_cache_size(main_window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("MODRAG_CACHE_DIR", str(tmp_path))
    cache = NodeCache(disk_dir=tmp_path)
    cache.put("cd" * 32, {"value": "x" * 3_000_000})
    label = main_window.findChild(CacheSizeLabel, "cacheSize")
    label.refresh()
    qtbot.waitUntil(lambda: label.text().startswith("Cache 2.9 MB"), timeout=5000)
    assert "1 stored node result" in label.toolTip()
    main_window.grab().save("/tmp/i19_cache_status.png")
