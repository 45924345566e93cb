"""The result cache's size in the studio's status bar (measured off the GUI thread)."""

from __future__ import annotations

import contextlib
import threading

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QMainWindow

from modrag_studio.engine.cache.node_cache import (
    DEFAULT_DISK_MB,
    DISK_ENV,
    disk_usage,
    limit_from_env,
)
from modrag_studio.engine.core.paths import cache_home

REFRESH_MS = 30_000


class CacheSizeLabel(QLabel):
    """'Cache 12.3 MB / 4096 MB' on the right of the status bar; refreshed every 30 s."""

    measured = Signal(int, int)

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setObjectName("cacheSize")
        self.limit = limit_from_env(DISK_ENV, DEFAULT_DISK_MB)
        self.setText("Cache …")
        self.measured.connect(self._show)
        self._busy = False
        self.timer = QTimer(self, interval=REFRESH_MS, timeout=self.refresh)
        self.timer.start()
        window.statusBar().addPermanentWidget(self)
        self.refresh()

    def refresh(self) -> None:
        if self._busy:
            return
        self._busy = True
        folder = cache_home()

        def work() -> None:
            try:
                used, entries = disk_usage(folder)
            except OSError:
                used, entries = -1, 0
            with contextlib.suppress(RuntimeError):  # the window may be gone
                self.measured.emit(used, entries)

        threading.Thread(target=work, name="modrag-cache-size", daemon=True).start()

    def _show(self, used: int, entries: int) -> None:
        self._busy = False
        mb = 1024 * 1024
        if used < 0:
            self.setText("Cache ?")
            return
        self.setText(f"Cache {used / mb:.1f} MB / {self.limit / mb:.0f} MB")
        self.setMinimumWidth(self.sizeHint().width())  # else the status bar may cut it short
        self.setToolTip(f"{entries} stored node result(s) in {cache_home()}; "
                        "'modrag cache prune|clear' frees space")
