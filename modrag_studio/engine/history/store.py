"""The run history: recorded runs of each graph, stored beside the node cache.

``<cache dir>/history/index.sqlite`` lists the runs (what the History panel shows: question,
outcome, variant, graph hash, duration, answer), so listing a thousand runs reads one small
table; ``runs/<id>.run`` holds each run in full (the graph document as it ran, the trace, and
node values small enough to keep), a signed pickle with the node cache's per-user key. A run
file is written to a temp file and renamed into place before its row is committed; sqlite
(WAL, a busy timeout) keeps two processes recording at once safe.

Bounds: ``$MODRAG_HISTORY_RUNS`` runs per graph (default 2000) and ``$MODRAG_HISTORY_MB`` on
disk (default a quarter of the node cache's ``$MODRAG_CACHE_DISK_MB``, at least 16 MB), the
index and the temp files of writes under way included; the oldest runs go first, a graph's
baseline run last. A limit below 1 is refused. The index is private (0600) like the run
files; a damaged one is a HistoryError that ``clear()`` (``modrag cache clear``) resets.
``modrag cache`` lists, prunes and clears them.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modrag_studio.engine.cache.node_cache import TEMP_SUFFIX, allocated, approx_size, stable_hash
from modrag_studio.engine.cache.signing import dump_signed, load_signed
from modrag_studio.engine.core.document import GraphDocument, from_json_dict, to_json_dict
from modrag_studio.engine.core.errors import ModragError
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.paths import PATH_WORDS, cache_home
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.history import disk
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.engine.run.trace import Trace

if TYPE_CHECKING:
    import sqlite3

RUNS_ENV, SIZE_ENV = disk.RUNS_ENV, disk.SIZE_ENV
MAX_VALUE_BYTES = 512 * 1024  # a node value larger than this (an index) is not kept
QUESTION_NAMES = ("question", "query", "q", "prompt", "text")
_FORMAT = "modrag-run-1"
_COLUMNS = ("run_id", "graph", "started_at", "duration_s", "status", "question", "variant",
            "graph_hash", "answer", "inputs", "conversation", "turn", "origin", "size")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, graph TEXT NOT NULL, started_at REAL NOT NULL,
    duration_s REAL NOT NULL, status TEXT NOT NULL, question TEXT NOT NULL,
    variant TEXT NOT NULL, graph_hash TEXT NOT NULL, answer TEXT NOT NULL,
    inputs TEXT NOT NULL, conversation TEXT NOT NULL, turn INTEGER NOT NULL,
    origin TEXT NOT NULL, size INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_graph ON runs (graph, started_at);
CREATE INDEX IF NOT EXISTS runs_by_conversation ON runs (conversation, turn);
CREATE TABLE IF NOT EXISTS baselines (graph TEXT PRIMARY KEY, run_id TEXT NOT NULL);
"""
# what a row's texts take in the index; an index with no rows takes about this much
_ROW_BYTES = " + ".join(f"length(CAST(r.{name} AS BLOB))" for name in (
    "run_id", "graph", "question", "variant", "answer", "inputs", "conversation", "origin"))
_EMPTY_INDEX_BYTES = 64 * 1024


class HistoryError(ModragError):
    """A recorded run cannot be read (missing or damaged file), or the index is damaged."""


def _damaged(exc: Exception) -> bool:
    """Whether sqlite says the file is not a database or is corrupt (not: busy, locked)."""
    import sqlite3

    return isinstance(exc, sqlite3.DatabaseError) and (
        not isinstance(exc, sqlite3.OperationalError)
        or getattr(exc, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB"))


@dataclass(frozen=True)
class RunRecord:
    """One row of the history: what the list shows, without the run's values."""

    run_id: str
    graph: str
    started_at: float
    duration_s: float
    status: str
    question: str
    variant: str
    graph_hash: str
    answer: str
    inputs: dict[str, Any] = field(default_factory=dict)
    conversation: str = ""
    turn: int = 0
    origin: str = ""  # studio, cli, server, playground
    size: int = 0


@dataclass
class StoredRun:
    """A recorded run in full: its row, the graph as it ran and the run's result."""

    record: RunRecord
    doc: GraphDocument
    result: RunResult


def graph_hash(doc: GraphDocument) -> str:
    """The graph's identity for the history: nodes, params and wires (not the layout)."""
    data = to_json_dict(doc)
    return stable_hash({k: v for k, v in data.items() if k not in ("layout", "metadata")})[:16]


def question_of(inputs: Mapping[str, Any], doc: GraphDocument | None = None,
                registry: NodeRegistry | None = None) -> str:
    """The run's question: the input named question/query/... as given, else its default in
    ``doc`` (a run on the default question; read with ``registry``), else the first text
    input that is not a path."""
    defaults = {port.name: port.default for port in graph_interface(doc, registry).inputs} \
        if doc is not None and registry is not None else {}
    for source in (inputs, defaults):
        for name in QUESTION_NAMES:
            if isinstance(source.get(name), str) and source[name].strip():
                return source[name]
    merged = {**defaults, **{k: v for k, v in inputs.items() if v not in ("", None)}}
    return next((v for k, v in merged.items()
                 if isinstance(v, str) and v.strip() and not PATH_WORDS.search(k)), "")


def answer_of(outputs: Mapping[str, Any]) -> str:
    """The run's answer as text: the ``answer`` output (else the first) by its ``text``."""
    value = outputs.get("answer", next(iter(outputs.values()), None))
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    return value if isinstance(value, str) else "" if value is None else repr(value)[:2000]


def _kept(values: Mapping[str, Any]) -> dict[str, Any]:
    """The values small and picklable enough to keep; the others named, not kept."""
    kept: dict[str, Any] = {}
    for port, value in values.items():
        try:
            if approx_size(value) > MAX_VALUE_BYTES:
                raise ValueError("too large")
            if len(pickle.dumps(value, protocol=5)) > MAX_VALUE_BYTES:
                raise ValueError("too large")
            kept[port] = value
        except Exception as exc:
            kept[port] = f"<not kept in the run history: {exc}>"
    return kept


class RunHistory:
    """The history under ``root`` (default ``<cache dir>/history``)."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *,
                 max_runs: int | None = None, max_bytes: int | None = None) -> None:
        self.root = Path(root) if root is not None else cache_home() / "history"
        env_runs, env_bytes = disk.history_limits()
        self.max_runs = env_runs if max_runs is None else max_runs
        self.max_bytes = env_bytes if max_bytes is None else max_bytes
        self._ready = False
        self.was_reset = False  # clear() found the index damaged and reset the history

    # storage ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        import sqlite3  # imported on first use: not at the studio's start-up

        index = disk.private_index(self.root)
        conn = sqlite3.connect(index, timeout=30)
        try:
            if not self._ready:
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")  # a new index only
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                self._ready = True
            with conn:
                yield conn
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            raise HistoryError(
                f"the run history index {index} is damaged ({exc}); `modrag cache clear` "
                "resets the history (its recorded runs are lost)") from None
        finally:
            conn.close()

    def _path(self, run_id: str) -> Path:
        return self.root / "runs" / f"{run_id}.run"

    # recording --------------------------------------------------------------------------
    def record(self, graph: str, doc: GraphDocument, inputs: Mapping[str, Any],
               result: RunResult, *, variant: str | None = None, origin: str = "studio",
               conversation: str = "", turn: int = 0,
               registry: NodeRegistry | None = None) -> RunRecord:
        """Store ``result`` (the run of ``doc`` on ``inputs``) under ``graph`` (a
        ``pins.graph_key``), then keep the history within its bounds (``registry``: the
        node types of the run, when its result does not carry them)."""
        trace = result.trace
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        plain_inputs = {k: v if isinstance(v, str | int | float | bool) or v is None
                        else repr(v) for k, v in inputs.items()}
        payload = {"format": _FORMAT, "run_id": run_id, "doc": to_json_dict(doc),
                   "trace": trace.model_dump(mode="json"),
                   "outputs": _kept(result.shared_outputs),
                   "node_outputs": {k: _kept(v) for k, v in result.node_outputs.items()},
                   "node_inputs": {k: _kept(v) for k, v in result.node_inputs.items()}}
        size = self._write(run_id, payload)
        record = RunRecord(run_id, graph, trace.started_at or time.time(), trace.duration_s,
                           trace.status, question_of(inputs, doc, result.registry or registry),
                           variant or "", graph_hash(doc),
                           answer_of(result.shared_outputs), plain_inputs, conversation, turn,
                           origin, size)
        try:
            with self._db() as db:
                db.execute(f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES "
                           f"({', '.join('?' * len(_COLUMNS))})", self._row(record))
        except Exception:
            self._path(run_id).unlink(missing_ok=True)
            raise
        self.prune()
        return record

    def _write(self, run_id: str, payload: dict[str, Any]) -> int:
        path = self._path(run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                dump_signed(payload, fh)
                fh.flush()
                size = allocated(os.fstat(fh.fileno()))
            os.replace(tmp, path)
            return size
        finally:
            Path(tmp).unlink(missing_ok=True)

    @staticmethod
    def _row(record: RunRecord) -> tuple[Any, ...]:
        values = dict(record.__dict__)
        values["inputs"] = json.dumps(record.inputs, ensure_ascii=False, default=repr)
        return tuple(values[name] for name in _COLUMNS)

    @staticmethod
    def _record(row: tuple[Any, ...]) -> RunRecord:
        values = dict(zip(_COLUMNS, row, strict=True))
        values["inputs"] = json.loads(values["inputs"])
        return RunRecord(**values)

    # reading ----------------------------------------------------------------------------
    def runs(self, graph: str | None = None, *, text: str = "", status: str | None = None,
             variant: str | None = None, conversation: str | None = None,
             limit: int | None = None) -> list[RunRecord]:
        """Recorded runs, newest first; ``text`` matches the question (case-insensitive),
        ``variant`` "" the base."""
        where, args = [], []
        for column, value in (("graph", graph), ("status", status), ("variant", variant),
                              ("conversation", conversation)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if text:
            where.append("question LIKE ? ESCAPE '\\'")
            escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            args.append(f"%{escaped}%")
        sql = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._db() as db:
            return [self._record(row) for row in db.execute(sql, args)]

    def get(self, run_id: str) -> RunRecord | None:
        with self._db() as db:
            row = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id = ?",
                             (run_id,)).fetchone()
        return self._record(row) if row else None

    def load(self, run_id: str, registry: Any = None) -> StoredRun:
        """The run in full; HistoryError naming the run when it is gone or damaged."""
        record = self.get(run_id)
        if record is None:
            raise HistoryError(f"run {run_id} is not in the history (pruned or cleared)")
        try:
            data = load_signed(self._path(run_id))
            if not isinstance(data, dict) or data.get("format") != _FORMAT \
                    or data.get("run_id") != run_id:
                raise ValueError("the file does not hold this run")
        except Exception as exc:
            raise HistoryError(f"run {run_id} cannot be read: {exc}") from None
        doc = from_json_dict(data["doc"], source=f"run {run_id}")
        result = RunResult(trace=Trace.model_validate(data["trace"]),
                           node_inputs=data["node_inputs"], node_outputs=data["node_outputs"],
                           registry=registry)
        result.outputs = data["outputs"]
        return StoredRun(record, doc, result)

    def graphs(self) -> list[tuple[str, int]]:
        """(graph, runs) of every graph with recorded runs."""
        with self._db() as db:
            return list(db.execute("SELECT graph, COUNT(*) FROM runs GROUP BY graph "
                                   "ORDER BY graph"))

    def usage(self) -> tuple[int, int]:
        """(bytes on disk, runs) of the whole history: run files, the index and temp files."""
        with self._db() as db:
            size, count = db.execute("SELECT COALESCE(SUM(size), 0), COUNT(*) FROM runs") \
                .fetchone()
        temps = sum(size for _, size, _ in disk.temp_files(self.root))
        return int(size) + disk.index_bytes(self.root) + temps, int(count)  # once closed

    # baselines --------------------------------------------------------------------------
    def set_baseline(self, graph: str, run_id: str | None) -> None:
        with self._db() as db:
            if run_id is None:
                db.execute("DELETE FROM baselines WHERE graph = ?", (graph,))
            else:
                db.execute("INSERT OR REPLACE INTO baselines VALUES (?, ?)", (graph, run_id))

    def baseline(self, graph: str) -> RunRecord | None:
        with self._db() as db:
            row = db.execute("SELECT run_id FROM baselines WHERE graph = ?", (graph,)).fetchone()
        return self.get(row[0]) if row else None

    # bounds -----------------------------------------------------------------------------
    def prune(self, max_bytes: int | None = None, max_runs: int | None = None, *,
              origin: str | None = None) -> tuple[int, int]:
        """Drop the oldest runs (a baseline last) until each graph has at most ``max_runs``
        and the history takes at most ``max_bytes`` (its index and the temp files of writes
        under way included; those of killed writes go first); returns (runs removed, bytes
        freed). With ``origin``, only the runs of that origin count and go (a per-client
        budget: one client's runs never evict another's)."""
        max_bytes = self.max_bytes if max_bytes is None else max_bytes
        max_runs = self.max_runs if max_runs is None else max_runs
        removed = 0
        freed = 0 if origin is not None else disk.remove_temp_files(self.root, stale_only=True)
        self._compact()
        for _ in range(4):  # the index shrinks by about each run's share: measure again
            runs, size = self._prune_pass(max_bytes, max_runs, origin)
            removed, freed = removed + runs, freed + size
            if not runs or origin is not None or self.usage()[0] <= max_bytes:
                break
        return removed, freed

    def _prune_pass(self, max_bytes: int, max_runs: int, origin: str | None
                    ) -> tuple[int, int]:
        doomed: list[tuple[str, int]] = []
        index = disk.index_bytes(self.root)  # before a connection adds its shared memory
        with self._db() as db:
            where, args = ("WHERE r.origin = ?", (origin,)) if origin is not None else ("", ())
            rows = list(db.execute(
                f"SELECT r.run_id, r.graph, r.size, b.run_id IS NOT NULL, {_ROW_BYTES} "
                f"FROM runs r LEFT JOIN baselines b ON b.run_id = r.run_id {where} "
                "ORDER BY r.started_at DESC, r.rowid DESC", args))
            # each run's share of the index: its texts' part of what the rows take
            base = 0 if origin is not None else min(index, _EMPTY_INDEX_BYTES) + sum(
                size for _, size, _ in disk.temp_files(self.root))
            held = max(0, index - _EMPTY_INDEX_BYTES)
            texts = sum(row[4] for row in rows) or 1
            kept: dict[str, int] = {}
            for _, graph, _, is_base, _ in rows:  # a baseline takes its place first
                kept[graph] = kept.get(graph, 0) + bool(is_base)
            survivors = []
            for run_id, graph, size, is_base, text in rows:  # newest first: oldest over go
                size += held * text // texts
                kept[graph] += not is_base
                if kept[graph] > max_runs and not is_base:
                    doomed.append((run_id, size))
                else:
                    survivors.append((run_id, size, is_base))
            total = base + sum(size for _, size, _ in survivors)
            for run_id, size, _base in sorted(reversed(survivors), key=lambda r: r[2]):
                if total <= max_bytes:
                    break
                doomed.append((run_id, size))
                total -= size
            db.executemany("DELETE FROM runs WHERE run_id = ?", [(r,) for r, _ in doomed])
            db.execute("DELETE FROM baselines WHERE run_id NOT IN (SELECT run_id FROM runs)")
        for run_id, _ in doomed:
            self._path(run_id).unlink(missing_ok=True)
        if doomed:
            self._compact()
        return len(doomed), sum(size for _, size in doomed)

    def _compact(self) -> None:
        """Give the pages of deleted rows back to the disk and fold the WAL into the index,
        so the index takes what its rows need."""
        with self._db() as db:
            pages, free, mode = (db.execute(f"PRAGMA {name}").fetchone()[0]
                                 for name in ("page_count", "freelist_count", "auto_vacuum"))
        if free and mode == 2:
            with self._db() as db:
                db.execute("PRAGMA incremental_vacuum")
        elif free * 4 > pages:  # an index made before auto-vacuum: once, then incremental
            with self._db() as db:
                db.isolation_level = None
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                db.execute("VACUUM")
        with self._db() as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def clear(self, graph: str | None = None) -> tuple[int, int]:
        """Delete every run (of ``graph`` when given); returns (runs, bytes) removed. Without
        ``graph`` a damaged index is reset: the index and every run file go."""
        try:
            with self._db() as db:
                where, args = ("WHERE graph = ?", (graph,)) if graph is not None else ("", ())
                rows = list(db.execute(f"SELECT run_id, size FROM runs {where}", args))
                db.execute(f"DELETE FROM runs {where}", args)
                db.execute("DELETE FROM baselines WHERE run_id NOT IN "
                           "(SELECT run_id FROM runs)")
        except HistoryError:
            if graph is not None:
                raise
            self._ready, self.was_reset = False, True
            return 0, disk.remove_all(self.root)
        for run_id, _ in rows:
            self._path(run_id).unlink(missing_ok=True)
        freed = 0 if graph is not None else disk.remove_temp_files(self.root, stale_only=False)
        if rows:
            self._compact()
        return len(rows), freed + sum(size for _, size in rows)
