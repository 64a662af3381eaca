"""Local results store: every run, record, log line and score in one SQLite file, plus an outbox.

The controller writes each record the moment it arrives, and every write commits before the call
returns, so a crash (even ``SIGKILL``) right after :meth:`ResultStore.add_record` loses nothing.
Platform traffic goes through the *outbox*: a durable queue of payloads the platform layer writes
before it sends them and marks sent after a 2xx, so what fails can be resubmitted later.

Concurrency: one :class:`ResultStore` may be used from several threads (pytest's main thread and
the platform sender thread) — a lock serialises them. Several processes may share one file
(sequential or simultaneous pytest runs): SQLite's WAL journal and a busy timeout serialise
writers. WAL needs a local file system (not NFS/SMB).

What is stored: run metadata (benchmark slug/name, file, resolved knobs, participants, config
snapshot, :class:`~pytest_benchsdk._runenv.RunEnvironment`), records and scores as their wire
(upstream camelCase) JSON, log lines, outbox payloads/responses and small per-run state values.
The store never redacts: callers must never pass secrets (API keys, tokens, Authorization
headers) in any argument, including outbox payloads, error texts and state values.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`):

* ``runs(id, run_id UNIQUE, benchmark_slug, benchmark_name, file, knobs, participants,
  config_snapshot, environment, dry_run, session_id, status, started_at, finished_at,
  platform_run_id, dashboard_url)`` — JSON columns hold compact JSON text.
* ``records(run_id, participant, task_index, status, wire, received_at)``, primary key
  ``(run_id, participant, task_index)``.
* ``log_lines(id, run_id, participant, line)``.
* ``scores(run_id, position, provider, wire)``, primary key ``(run_id, position)``.
* ``outbox(id, run_id, kind, key UNIQUE, payload, depends_on, state, attempts, last_error,
  response, created_at, updated_at, sent_at)``; ``state`` is one of :data:`OUTBOX_STATES`.
* ``run_state(run_id, key, value, updated_at)``, primary key ``(run_id, key)``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs

from ._clock import iso_utc
from ._jsfmt import js_json
from ._runenv import RunEnvironment
from ._storeschema import SCHEMA_VERSION, SchemaTooNewError, migrate
from .records import ParticipantRecords, TaskRecord
from .scoring import ScoreResult

__all__ = [
    "OUTBOX_STATES",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "OutboxEntry",
    "ResultStore",
    "StoreError",
    "StoredRun",
    "UnknownRunError",
]

#: Final statuses accepted by :meth:`ResultStore.finish_run`; a run in progress is ``"running"``.
RUN_STATUSES = ("passed", "failed", "interrupted")

#: Outbox entry states. ``pending``: never tried; ``failed``: tried, will be retried;
#: ``sent``: delivered (terminal); ``rejected``: permanently refused (terminal).
OUTBOX_STATES = ("pending", "failed", "sent", "rejected")

# Seconds a writer waits for another process's write lock before giving up.
_BUSY_TIMEOUT_S = 30.0

JSON = Any
"""Any JSON-serialisable value (dicts, lists, str, int, float, bool, None)."""


class StoreError(Exception):
    """The results store cannot be opened or used (message names the file and what to do)."""


class UnknownRunError(StoreError, KeyError):
    """No run with this local run id is in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown run"


@attrs.frozen
class StoredRun:
    """One run as kept in the store. ``status`` is ``"running"`` until :meth:`finish_run`."""

    run_id: str
    benchmark_slug: str
    benchmark_name: str
    file: str | None
    knobs: dict[str, JSON]
    participants: tuple[str, ...]
    config_snapshot: dict[str, JSON]
    environment: RunEnvironment
    dry_run: bool
    session_id: str | None
    status: str
    started_at: str
    finished_at: str | None
    platform_run_id: str | None
    dashboard_url: str | None
    record_count: int


@attrs.frozen
class OutboxEntry:
    """One queued platform payload. ``payload``/``response`` are decoded JSON."""

    id: int
    run_id: str
    kind: str
    key: str
    payload: JSON
    depends_on: str | None
    state: str
    attempts: int
    last_error: str | None
    response: JSON
    created_at: str
    sent_at: str | None


def _now() -> str:
    # Same shape as JS toISOString() and the records' timestamps: 2024-01-02T03:04:05.678Z.
    return iso_utc(time.time())


def _dumps(value: JSON) -> str:
    # js_json writes what JSON.stringify would (NaN → null), so stored text equals the wire text.
    return "null" if value is None else js_json(value)


def _loads(text: str | None) -> JSON:
    return None if text is None else json.loads(text)


_RUN_COLUMNS = (
    "run_id, benchmark_slug, benchmark_name, file, knobs, participants, config_snapshot, "
    "environment, dry_run, session_id, status, started_at, finished_at, platform_run_id, "
    "dashboard_url, (SELECT COUNT(*) FROM records r WHERE r.run_id = runs.run_id)"
)

_OUTBOX_COLUMNS = (
    "id, run_id, kind, key, payload, depends_on, state, attempts, last_error, response, "
    "created_at, sent_at"
)


def _retry_while_locked(action: Callable[[], None], timeout_s: float) -> None:
    """Run *action*, retrying while another process holds a lock, for up to *timeout_s*.

    Switching a new file to WAL needs an exclusive lock and SQLite reports ``database is
    locked`` at once, without waiting on the busy timeout, when two processes open a new file
    together; this waits for it instead.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "locked" not in message and "busy" not in message:
                raise
            if time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _run_from_row(row: Sequence[Any]) -> StoredRun:
    return StoredRun(
        run_id=row[0],
        benchmark_slug=row[1],
        benchmark_name=row[2],
        file=row[3],
        knobs=json.loads(row[4]),
        participants=tuple(json.loads(row[5])),
        config_snapshot=json.loads(row[6]),
        environment=RunEnvironment.from_dict(json.loads(row[7])),
        dry_run=bool(row[8]),
        session_id=row[9],
        status=row[10],
        started_at=row[11],
        finished_at=row[12],
        platform_run_id=row[13],
        dashboard_url=row[14],
        record_count=int(row[15]),
    )


def _outbox_from_row(row: Sequence[Any]) -> OutboxEntry:
    return OutboxEntry(
        id=row[0],
        run_id=row[1],
        kind=row[2],
        key=row[3],
        payload=_loads(row[4]),
        depends_on=row[5],
        state=row[6],
        attempts=row[7],
        last_error=row[8],
        response=_loads(row[9]),
        created_at=row[10],
        sent_at=row[11],
    )


class ResultStore:
    """The local results store in one SQLite file (created with its parent directory).

    Every method commits before it returns. Use as a context manager or call :meth:`close`.
    Raises :class:`StoreError` when the file cannot be opened, is not a results store, or was
    written by a newer version; :class:`UnknownRunError` for an unknown run id.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = _BUSY_TIMEOUT_S):
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: autocommit; multi-statement writes use explicit
            # BEGIN IMMEDIATE so no write ever waits in an implicit, still-open transaction.
            self._conn = sqlite3.connect(
                self.path,
                timeout=busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open results store {self.path}: {exc}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            # NORMAL under WAL: a committed write survives the pytest process dying (SIGKILL,
            # OOM, Ctrl-C) because it is in the WAL file; only an OS crash or power loss can
            # drop the last commits. FULL would add an fsync per record (~0.7 ms here), which
            # dominated short iterations.
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            _retry_while_locked(self._setup_schema, busy_timeout_s)
        except SchemaTooNewError as exc:
            self._conn.close()
            raise StoreError(f"{self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            hint = (
                f"another process kept it locked for more than {busy_timeout_s:g} s"
                if "locked" in str(exc) or "busy" in str(exc)
                else "is it a pytest-benchsdk store? move it away or choose another path"
            )
            raise StoreError(f"cannot use results store {self.path}: {exc} ({hint})") from exc
        except BaseException:
            self._conn.close()
            raise

    def _setup_schema(self) -> None:
        self._conn.execute("PRAGMA journal_mode = WAL")
        migrate(self._conn)

    # --- plumbing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection. Everything is already committed."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r})"

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One committed write transaction, holding the thread lock and SQLite's write lock."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @staticmethod
    def _require_run(conn: sqlite3.Connection, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
            raise UnknownRunError(f"no run {run_id!r} in the results store")

    # --- runs -----------------------------------------------------------------------------------

    def begin_run(
        self,
        *,
        benchmark_slug: str,
        benchmark_name: str,
        file: str | None,
        knobs: Mapping[str, JSON],
        participants: Sequence[str],
        config_snapshot: Mapping[str, JSON],
        environment: RunEnvironment,
        dry_run: bool,
        session_id: str | None = None,
    ) -> str:
        """Record a new run (status ``"running"``) and return its local run id (uuid4 hex).

        *participants* is the run's declared order, used by :meth:`participant_records`.
        """
        run_id = uuid.uuid4().hex
        with self._write() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, benchmark_slug, benchmark_name, file, knobs, "
                "participants, config_snapshot, environment, dry_run, session_id, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    benchmark_slug,
                    benchmark_name,
                    file,
                    _dumps(dict(knobs)),
                    _dumps(list(participants)),
                    _dumps(dict(config_snapshot)),
                    _dumps(environment.to_dict()),
                    int(dry_run),
                    session_id,
                    _now(),
                ),
            )
        return run_id

    def finish_run(self, run_id: str, status: str) -> None:
        """Set the final status (one of :data:`RUN_STATUSES`) and the finish time."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, got {status!r}")
        self._update_run(run_id, "status = ?, finished_at = ?", (status, _now()))

    def set_platform_run(
        self, run_id: str, platform_run_id: str, dashboard_url: str | None
    ) -> None:
        """Remember the platform's run id and dashboard URL for a local run."""
        self._update_run(
            run_id, "platform_run_id = ?, dashboard_url = ?", (platform_run_id, dashboard_url)
        )

    def _update_run(self, run_id: str, assignments: str, params: tuple[Any, ...]) -> None:
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE runs SET {assignments} WHERE run_id = ?", (*params, run_id)
            )
            if cursor.rowcount == 0:
                raise UnknownRunError(f"no run {run_id!r} in the results store")

    def get_run(self, run_id: str) -> StoredRun:
        """The run with this local id (:class:`UnknownRunError` if there is none)."""
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise UnknownRunError(f"no run {run_id!r} in the results store")
        return _run_from_row(rows[0])

    def list_runs(self, limit: int = 20, benchmark_slug: str | None = None) -> list[StoredRun]:
        """Up to *limit* runs, newest first, optionally of one benchmark only."""
        where, params = (
            ("WHERE benchmark_slug = ?", [benchmark_slug]) if benchmark_slug else ("", [])
        )
        rows = self._read(
            f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [_run_from_row(row) for row in rows]

    # --- records, logs, scores ------------------------------------------------------------------

    def add_record(
        self,
        run_id: str,
        participant: str,
        record: TaskRecord,
        log_lines: Sequence[str] = (),
    ) -> None:
        """Store a task record (its wire JSON), and the iteration's log lines if given, in one
        transaction; committed when this returns.

        Idempotent on ``(run_id, participant, record.task_index)``: a re-delivered record
        replaces the earlier one (its log lines are appended again).
        """
        if isinstance(log_lines, str):
            raise TypeError("log_lines must be a sequence of strings, not one string")
        wire = _dumps(record.to_wire())
        with self._write() as conn:
            self._require_run(conn, run_id)
            conn.execute(
                "INSERT INTO records (run_id, participant, task_index, status, wire, received_at) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id, participant, task_index) DO UPDATE SET "
                "status = excluded.status, wire = excluded.wire, "
                "received_at = excluded.received_at",
                (run_id, participant, record.task_index, record.status, wire, _now()),
            )
            if log_lines:
                conn.executemany(
                    "INSERT INTO log_lines (run_id, participant, line) VALUES (?, ?, ?)",
                    [(run_id, participant, line) for line in log_lines],
                )

    def participant_records(self, run_id: str) -> list[ParticipantRecords]:
        """Records per participant, each participant's records by task index.

        Participants come in the run's declared order (each one present, possibly with no
        records), then any undeclared participant that has records, in order of first arrival.
        """
        by_participant: dict[str, list[tuple[int, str]]] = {
            name: [] for name in self.get_run(run_id).participants
        }
        rows = self._read(
            "SELECT participant, task_index, wire FROM records WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        for name, task_index, wire in rows:
            by_participant.setdefault(name, []).append((task_index, wire))
        return [
            ParticipantRecords(
                name, tuple(TaskRecord.from_wire(json.loads(wire)) for _, wire in sorted(recs))
            )
            for name, recs in by_participant.items()
        ]

    def add_log_lines(self, run_id: str, participant: str, lines: Sequence[str]) -> None:
        """Append formatted log lines of one participant (kept in the order given)."""
        if isinstance(lines, str):
            raise TypeError("lines must be a sequence of strings, not one string")
        with self._write() as conn:
            self._require_run(conn, run_id)
            conn.executemany(
                "INSERT INTO log_lines (run_id, participant, line) VALUES (?, ?, ?)",
                [(run_id, participant, line) for line in lines],
            )

    def log_lines(self, run_id: str, participant: str) -> list[str]:
        """All log lines of one participant in a run, in the order they were added."""
        rows = self._read(
            "SELECT line FROM log_lines WHERE run_id = ? AND participant = ? ORDER BY id",
            (run_id, participant),
        )
        return [row[0] for row in rows]

    def save_scores(self, run_id: str, results: Sequence[ScoreResult]) -> None:
        """Store a run's score results (wire JSON), replacing any saved before, order kept."""
        with self._write() as conn:
            self._require_run(conn, run_id)
            conn.execute("DELETE FROM scores WHERE run_id = ?", (run_id,))
            conn.executemany(
                "INSERT INTO scores (run_id, position, provider, wire) VALUES (?, ?, ?, ?)",
                [
                    (run_id, position, result.provider, _dumps(result.to_wire()))
                    for position, result in enumerate(results)
                ],
            )

    def scores(self, run_id: str) -> list[ScoreResult]:
        """The run's saved score results in the order saved (empty if never scored)."""
        rows = self._read("SELECT wire FROM scores WHERE run_id = ? ORDER BY position", (run_id,))
        return [ScoreResult.from_wire(json.loads(row[0])) for row in rows]

    # --- outbox ---------------------------------------------------------------------------------

    def outbox_put(
        self,
        run_id: str,
        kind: str,
        key: str,
        payload: JSON,
        *,
        depends_on: str | None = None,
    ) -> int:
        """Queue a payload (state ``pending``) and return its entry id.

        Idempotent on *key* (unique in the whole store, so include the run id in it): a second
        put with an existing key changes nothing and returns the existing entry's id.
        *depends_on* is the key of an entry that must be sent first (see
        :meth:`outbox_pending`).
        """
        payload_text = _dumps(payload)
        with self._write() as conn:
            existing = conn.execute("SELECT id FROM outbox WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                return int(existing[0])
            self._require_run(conn, run_id)
            now = _now()
            cursor = conn.execute(
                "INSERT INTO outbox (run_id, kind, key, payload, depends_on, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, kind, key, payload_text, depends_on, now, now),
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def outbox_get(self, key: str) -> OutboxEntry | None:
        """The entry with this key, or ``None``."""
        rows = self._read(f"SELECT {_OUTBOX_COLUMNS} FROM outbox WHERE key = ?", (key,))
        return _outbox_from_row(rows[0]) if rows else None

    def outbox_pending(
        self, run_id: str | None = None, *, ready_only: bool = False
    ) -> list[OutboxEntry]:
        """Entries still to deliver (``pending`` or ``failed``), in insertion order.

        With *ready_only*, entries whose ``depends_on`` entry is not ``sent`` yet (or does not
        exist) are left out.
        """
        sql = f"SELECT {_OUTBOX_COLUMNS} FROM outbox o WHERE state IN ('pending', 'failed')"
        params: list[Any] = []
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        if ready_only:
            sql += (
                " AND (depends_on IS NULL OR EXISTS (SELECT 1 FROM outbox d "
                "WHERE d.key = o.depends_on AND d.state = 'sent'))"
            )
        return [_outbox_from_row(row) for row in self._read(sql + " ORDER BY id", params)]

    def outbox_mark_sent(self, entry_id: int, response: JSON | None = None) -> None:
        """Mark an entry delivered (terminal), keeping the decoded *response*; counts an attempt."""
        now = _now()
        with self._write() as conn:
            self._entry_state(conn, entry_id)
            conn.execute(
                "UPDATE outbox SET state = 'sent', attempts = attempts + 1, response = ?, "
                "sent_at = ?, updated_at = ? WHERE id = ?",
                (_dumps(response), now, now, entry_id),
            )

    def outbox_mark_failed(self, entry_id: int, error: str, *, permanent: bool = False) -> None:
        """Record a failed attempt: state ``failed`` (retried later) or, if *permanent*,
        ``rejected``. *error* must not contain secrets. An entry already ``sent`` is left alone
        (a late failure report from a racing sender never undoes a delivery).
        """
        with self._write() as conn:
            if self._entry_state(conn, entry_id) == "sent":
                return
            conn.execute(
                "UPDATE outbox SET state = ?, attempts = attempts + 1, last_error = ?, "
                "updated_at = ? WHERE id = ?",
                ("rejected" if permanent else "failed", error, _now(), entry_id),
            )

    @staticmethod
    def _entry_state(conn: sqlite3.Connection, entry_id: int) -> str:
        row = conn.execute("SELECT state FROM outbox WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise KeyError(f"no outbox entry {entry_id} in the results store")
        return str(row[0])

    def outbox_counts(self, run_id: str | None = None) -> dict[str, int]:
        """Number of entries per state; every state of :data:`OUTBOX_STATES` is present."""
        sql = "SELECT state, COUNT(*) FROM outbox"
        params: list[Any] = []
        if run_id is not None:
            sql += " WHERE run_id = ?"
            params.append(run_id)
        counts = dict.fromkeys(OUTBOX_STATES, 0)
        counts.update(dict(self._read(sql + " GROUP BY state", params)))
        return counts

    def outbox_runs_with_pending(self) -> list[str]:
        """Local run ids with entries still to deliver, oldest first."""
        rows = self._read(
            "SELECT run_id FROM outbox WHERE state IN ('pending', 'failed') "
            "GROUP BY run_id ORDER BY MIN(id)"
        )
        return [row[0] for row in rows]

    # --- per-run state --------------------------------------------------------------------------

    def state_get(self, run_id: str, key: str, default: JSON = None) -> JSON:
        """A value saved with :meth:`state_set`, or *default*."""
        rows = self._read("SELECT value FROM run_state WHERE run_id = ? AND key = ?", (run_id, key))
        return json.loads(rows[0][0]) if rows else default

    def state_set(self, run_id: str, key: str, value: JSON) -> None:
        """Save a small JSON value for a run (platform ids, worker ids, attempt ids…)."""
        with self._write() as conn:
            self._require_run(conn, run_id)
            self._state_put(conn, run_id, key, value)

    def state_increment(self, run_id: str, key: str, by: int = 1) -> int:
        """Atomically add *by* to an integer value (missing counts as 0); return the new value.

        Safe across threads and processes: use it for sequence numbers.
        """
        with self._write() as conn:
            self._require_run(conn, run_id)
            row = conn.execute(
                "SELECT value FROM run_state WHERE run_id = ? AND key = ?", (run_id, key)
            ).fetchone()
            current = 0 if row is None else json.loads(row[0])
            if not isinstance(current, int) or isinstance(current, bool):
                raise TypeError(f"state {key!r} of run {run_id!r} is not an integer: {current!r}")
            value = current + by
            self._state_put(conn, run_id, key, value)
            return value

    def state_items(self, run_id: str) -> dict[str, JSON]:
        """Every state value of a run."""
        rows = self._read(
            "SELECT key, value FROM run_state WHERE run_id = ? ORDER BY key", (run_id,)
        )
        return {key: json.loads(value) for key, value in rows}

    @staticmethod
    def _state_put(conn: sqlite3.Connection, run_id: str, key: str, value: JSON) -> None:
        conn.execute(
            "INSERT INTO run_state (run_id, key, value, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            (run_id, key, _dumps(value), _now()),
        )
