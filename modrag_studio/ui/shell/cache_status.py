"""The result cache's size in the studio's status bar (measured off the GUI thread)."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QMainWindow

from modrag_studio.engine.cache.node_cache import (
    DEFAULT_DISK_MB,
    DISK_ENV,
    disk_usage,
    limit_from_env,
)
from modrag_studio.engine.core.paths import cache_home
from modrag_studio.ui.jobs.background import BackgroundJob

REFRESH_MS = 30_000


class CacheSizeLabel(QLabel):
    """'Cache 12.3 MB / 4096 MB' on the right of the status bar; refreshed every 30 s."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setObjectName("cacheSize")
        self.limit = limit_from_env(DISK_ENV, DEFAULT_DISK_MB)
        self.setText("Cache …")
        self.job = BackgroundJob("modrag-cache-size", self)
        self.timer = QTimer(self, interval=REFRESH_MS, timeout=self.refresh)
        self.timer.start()
        window.statusBar().addPermanentWidget(self)
        self.refresh()

    def refresh(self) -> None:
        if self.job.busy:
            return
        folder = cache_home()
        self.job.start(lambda _task: disk_usage(folder), self._show)

    def _show(self, usage: tuple[int, int] | None, error: Exception | None) -> None:
        mb = 1024 * 1024
        if usage is None:  # the folder could not be read: ``error`` says why
            self.setToolTip(f"{cache_home()}: {error}")
            self.setText("Cache ?")
            return
        used, entries = usage
        if used < 0:
            self.setText("Cache ?")
            return
        self.setText(f"Cache {used / mb:.1f} MB / {self.limit / mb:.0f} MB")
        self.setMinimumWidth(self.sizeHint().width())  # else the status bar may cut it short
        self.setToolTip(f"{entries} stored node result(s) in {cache_home()}; "
                        "'modrag cache prune|clear' frees space")
