"""Runs a client asks ``modrag serve`` to record (``?record=true``): off unless the operator
allows it (``--allow-record``), kept in the server's own history, never the user's, each
client within its own budget."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.redact import scrub
from modrag_studio.engine.history.store import RunHistory
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.pins import graph_key

log = logging.getLogger(__name__)

SERVED_HISTORY = "served-history"  # beside the node cache; the user's own is "history"
RECORDING_OFF = ("recording is off on this server: its operator allows it with "
                 "`modrag serve --allow-record`")


class ServedHistory:
    """The server's own run history (``<cache dir>/served-history`` unless given): each
    client (by address) keeps at most ``runs_per_client`` runs and ``bytes_per_client``
    bytes of it, its oldest runs going first, so a client evicts only its own runs; the
    history's own limits (``$MODRAG_HISTORY_RUNS``, ``$MODRAG_HISTORY_MB``) still hold."""

    def __init__(self, doc: GraphDocument, root: Path, *, runs_per_client: int,
                 bytes_per_client: int) -> None:
        if runs_per_client < 1 or bytes_per_client < 1024 * 1024:
            raise ValueError("a client's recording budget (--record-runs-per-client, "
                             "--record-mb-per-client) must be at least 1 run and 1 MB")
        self.doc = doc
        self.key = graph_key(doc)
        self.history = RunHistory(root)  # limits that cannot be used: refused at start
        self.runs_per_client = runs_per_client
        self.bytes_per_client = bytes_per_client

    def record(self, result: RunResult, inputs: dict[str, Any], client: str) -> str | None:
        """The run's id in the served history (None, logged, when it cannot be written)."""
        origin = f"server {client or '?'}"
        try:
            record = self.history.record(self.key, self.doc, inputs, result, origin=origin)
            self.history.prune(self.bytes_per_client, self.runs_per_client, origin=origin)
        except Exception as exc:
            log.warning("run %s not recorded in the served history: %s",
                        result.trace.run_id, scrub(str(exc)))
            return None
        return record.run_id
