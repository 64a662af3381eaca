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
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import attrs

from .._runenv import RunEnvironment
from ..records import ParticipantRecords, TaskRecord
from ..scoring import ScoreResult
from ._connection import JSON, StoreError, UnknownRunError, _dumps, _now
from ._outbox import OUTBOX_STATES, OutboxEntry, OutboxMixin
from ._schema import SCHEMA_VERSION

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


_RUN_COLUMNS = (
    "run_id, benchmark_slug, benchmark_name, file, knobs, participants, config_snapshot, "
    "environment, dry_run, session_id, status, started_at, finished_at, platform_run_id, "
    "dashboard_url, (SELECT COUNT(*) FROM records r WHERE r.run_id = runs.run_id)"
)


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


class ResultStore(OutboxMixin):
    """The local results store in one SQLite file (created with its parent directory).

    Every method commits before it returns. Use as a context manager or call :meth:`close`.
    Raises :class:`StoreError` when the file cannot be opened, is not a results store, or was
    written by a newer version; :class:`UnknownRunError` for an unknown run id.

    Opening the file and the transactions come from
    :class:`~pytest_benchsdk.store._connection.StoreConnection`, the outbox and per-run state
    methods from :class:`~pytest_benchsdk.store._outbox.OutboxMixin`; this class adds runs,
    records, log lines and scores.
    """

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
