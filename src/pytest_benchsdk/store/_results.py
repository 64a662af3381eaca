"""The results store's :class:`ResultStore` and the rows it returns.

Private to :mod:`pytest_benchsdk.store`, which re-exports every name in ``__all__`` here.
:class:`ResultStore` holds one :class:`~pytest_benchsdk.store._connection.StoreConnection` and runs
the queries of runs, records, log lines, scores and analyses (the results themselves), named
baselines and per-run state values; the outbox's queries it inherits from
:class:`~pytest_benchsdk.store._outbox.OutboxQueries` (:mod:`._outbox`). See
:mod:`pytest_benchsdk.store` for the concurrency rules and the schema.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

import attrs

from pytest_benchsdk._analysis.scoring import ScoreResult
from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk.records import ParticipantRecords, TaskRecord
from pytest_benchsdk.store._connection import (
    BUSY_TIMEOUT_S,
    JSON,
    StoreConnection,
    StoreCorruptError,
    UnknownRunError,
    compact_json,
    dump_json,
    now_iso,
    require_run,
)
from pytest_benchsdk.store._journal import GroupTimer, RecordJournal, replay_journals
from pytest_benchsdk.store._outbox import OutboxQueries
from pytest_benchsdk.store._owner import current_owner, owner_gone

__all__ = [
    "RUN_STATUSES",
    "NamedBaseline",
    "ResultStore",
    "StoredRun",
]

#: Final statuses accepted by :meth:`ResultStore.finish_run`; a run in progress is ``"running"``.
RUN_STATUSES = ("passed", "failed", "interrupted")


@attrs.frozen
class StoredRun:
    """One run as kept in the store. ``status`` is ``"running"`` until :meth:`finish_run`
    (or until a later open of the store finds its ``session_id``'s process gone: then
    ``"interrupted"``)."""

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
    #: Measured records (warm-up records, with negative task indices, are not counted).
    record_count: int
    #: The ``--bench-run-key`` the run was started with (schema 4; ``None`` before).
    run_key: str | None = None


_RUN_COLUMNS = (
    "run_id, benchmark_slug, benchmark_name, file, knobs, participants, config_snapshot, "
    "environment, dry_run, session_id, status, started_at, finished_at, platform_run_id, "
    "dashboard_url, (SELECT COUNT(*) FROM records r WHERE r.run_id = runs.run_id "
    "AND r.task_index >= 0), run_key"
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
        run_key=row[16],
    )


@attrs.frozen
class NamedBaseline:
    """A baseline name (``--bench-save NAME``): the run it stands for among the runs of one
    benchmark, and when it was last set."""

    name: str
    benchmark_slug: str
    run_id: str
    updated_at: str


def _record_json(record: TaskRecord, wire: Mapping[str, JSON] | None = None) -> str:
    """The record's wire JSON as :func:`dump_json` writes it, at C speed (once per iteration).

    ``wire``: the record's wire form when the caller has it already (no ``to_wire()`` then).
    Wire keys are strings (measures are converted with ``String(key)``; ``from_wire`` rejects
    other keys), so the C encoder writes the same text, unless a value is NaN or infinite
    (written as null) or not plain JSON: :func:`dump_json` writes those records."""
    if wire is None:
        wire = record.to_wire()
    try:
        return compact_json(wire)
    except (ValueError, TypeError):
        return dump_json(wire)


_INSERT_LOG_LINE = "INSERT INTO log_lines (run_id, participant, line) VALUES (?, ?, ?)"

#: Stores one record; a re-delivered one replaces the earlier.
_UPSERT_RECORD = (
    "INSERT INTO records (run_id, participant, task_index, status, wire, received_at) "
    "VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id, participant, task_index) DO UPDATE SET "
    "status = excluded.status, wire = excluded.wire, received_at = excluded.received_at"
)


class ResultStore(OutboxQueries):
    """The local results store in one SQLite file (created with its parent directory).

    Every method commits before it returns; with ``group_records=True``, :meth:`add_record`
    journals its record instead and commits it with a group (see there). Use as a context
    manager or call :meth:`close`.
    Raises :class:`StoreError` when the file cannot be opened, is not a results store, or was
    written by a newer version; :class:`UnknownRunError` for an unknown run id.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        read_only: bool = False,
        group_records: bool = False,
    ) -> None:
        self._db = StoreConnection(path, busy_timeout_s=busy_timeout_s, read_only=read_only)
        self.path = self._db.path
        self._journal: RecordJournal | None = None
        # Commits a group that no later record completes (the benchmark went quiet), so other
        # readers of the store see every record within GROUP_SECONDS of its journal line.
        self._group_timer: GroupTimer | None = None
        #: Runs this open found ``running`` with their process gone, and marked
        #: ``interrupted`` (:meth:`abandoned_lines` says so).
        self.abandoned: tuple[StoredRun, ...] = ()
        if read_only:
            return
        try:
            # Records a killed session had journalled but not committed yet.
            replay_journals(self.path, self._in_transaction, _UPSERT_RECORD, _INSERT_LOG_LINE)
            # Runs whose session was killed before it could say how they ended.
            self.abandoned = self._interrupt_abandoned_runs()
            if group_records:
                self._journal = RecordJournal.open(self.path)
        except BaseException:
            self._db.close()
            raise

    @property
    def read_only(self) -> bool:
        """Opened with ``read_only=True``: nothing was or will be written (every write method
        raises). For reading stores on a read-only file or directory."""
        return self._db.read_only

    @property
    def damaged(self) -> str | None:
        """SQLite's message once a statement found the file damaged (every write then raises
        :class:`StoreCorruptError`; grouped records stay in the journal), else ``None``."""
        return self._db.damaged

    @property
    def journal_path(self) -> os.PathLike[str] | None:
        """The file that journals the records not committed yet (``group_records=True``)."""
        return self._journal.path if self._journal is not None else None

    def abandoned_lines(self) -> list[str]:
        """One line per run this open marked ``interrupted`` (:attr:`abandoned`)."""
        return [
            f"run {run.run_id} ({run.benchmark_slug}) was left running by a session that is "
            f"gone: marked interrupted, with the {run.record_count} record(s) it holds"
            for run in self.abandoned
        ]

    @property
    def read_only_note(self) -> str | None:
        """Why a read-only store may not show its newest data (its ``-wal`` file could not be
        read), or ``None``."""
        return self._db.read_only_note

    def close(self) -> None:
        """Commit the records still grouped and close the connection. When that commit fails
        (a full disk), the records stay in the journal for the next open of the store."""
        timer = self._group_timer
        if timer is not None:
            timer.close()
        journal = self._journal
        if journal is not None:
            if self._db.damaged is None:
                with contextlib.suppress(Exception):  # then it stays for the next open
                    self._commit_group(journal)
            if self._journal is journal:  # (a commit that failed but for damage closed it)
                # Records a damaged store could not take stay in the journal, for
                # `pytest-benchsdk store recover`.
                journal.close(keep=bool(journal.rows))
            self._journal = None
        self._db.close()

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

    # --- connection -----------------------------------------------------------------------------

    def _write(self, *, durable: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        # Grouped records first: whatever is written or read next sees every record accepted
        # before it (an outbox batch never names a record the store does not hold).
        self.commit_records()
        return self._db.write(durable=durable)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self.commit_records()
        return self._db.read(sql, params)

    def _in_transaction(self, apply: Callable[[sqlite3.Connection], None]) -> None:
        with self._db.write() as conn:
            apply(conn)

    def _arm_group_timer(self) -> None:
        timer = self._group_timer
        if timer is None:
            timer = self._group_timer = GroupTimer(self._commit_on_timer)
        timer.arm()

    def _commit_on_timer(self) -> None:
        # A failure (a full disk) leaves the group in its journal and stops grouping (see
        # _commit_group); the session meets the error on its next write.
        with self._db.lock, contextlib.suppress(Exception):
            self.commit_records()

    def commit_records(self) -> None:
        """Commit the records :meth:`add_record` grouped (with ``group_records=True``) now;
        every other method does this first."""
        journal = self._journal
        if journal is not None and journal.rows:
            self._commit_group(journal)

    def _commit_group(self, journal: RecordJournal) -> None:
        with self._db.lock:
            if not journal.rows:
                return
            try:
                with self._db.write() as conn:
                    conn.executemany(_UPSERT_RECORD, journal.rows)
                    if journal.logs:
                        conn.executemany(_INSERT_LOG_LINE, journal.logs)
            except StoreCorruptError:
                # The journal stays open (and locked): it keeps this group and every record
                # still to come, as the store takes no more writes.
                raise
            except BaseException:
                # A full disk, say: the group stays in its journal for the next open of the
                # store, and the writes still to come (the run's status) no longer wait on it.
                if self._journal is journal:
                    self._journal = None
                journal.close(keep=True)
                raise
            journal.committed()

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
        run_key: str | None = None,
    ) -> str:
        """Record a new run (status ``"running"``) and return its local run id (uuid4 hex).

        *participants* is the run's declared order, used by :meth:`participant_records`;
        *run_key* the ``--bench-run-key`` it was started with. *session_id* defaults to this
        process (``host|pid|start|boot|pidns``): once that process is gone, the next writable
        open of the store marks the run ``interrupted`` if it is still ``running``.
        """
        if session_id is None:
            session_id = current_owner()
        run_id = uuid.uuid4().hex
        with self._write() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, benchmark_slug, benchmark_name, file, knobs, "
                "participants, config_snapshot, environment, dry_run, session_id, started_at, "
                "run_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    benchmark_slug,
                    benchmark_name,
                    file,
                    dump_json(dict(knobs)),
                    dump_json(list(participants)),
                    dump_json(dict(config_snapshot)),
                    dump_json(environment.to_dict()),
                    int(dry_run),
                    session_id,
                    now_iso(),
                    run_key,
                ),
            )
        return run_id

    def _interrupt_abandoned_runs(self) -> tuple[StoredRun, ...]:
        """Mark ``interrupted`` every run still ``running`` whose process is certainly gone
        (killed before its session could say how the run ended); their records stay. A run
        of a live session, here or in another process, container or host, is left alone."""
        rows = self._db.read("SELECT run_id, session_id FROM runs WHERE status = 'running'")
        gone = [run_id for run_id, owner in rows if owner_gone(owner)]
        if not gone:
            return ()
        with self._db.write() as conn:
            for run_id in gone:
                # It ended when its last record came, as far as the store can tell.
                conn.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = COALESCE("
                    "(SELECT MAX(received_at) FROM records WHERE records.run_id = runs.run_id),"
                    " started_at) WHERE run_id = ? AND status = 'running'",
                    (run_id,),
                )
        return tuple(self.get_run(run_id) for run_id in gone)

    def finish_run(self, run_id: str, status: str) -> None:
        """Set the final status (one of :data:`RUN_STATUSES`) and the finish time."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, got {status!r}")
        self._update_run(run_id, "status = ?, finished_at = ?", (status, now_iso()))

    def set_platform_run(
        self, run_id: str, platform_run_id: str, dashboard_url: str | None
    ) -> None:
        """Remember the platform's run id and dashboard URL for a local run."""
        self._update_run(
            run_id, "platform_run_id = ?, dashboard_url = ?", (platform_run_id, dashboard_url)
        )

    def declare_participants(
        self,
        run_id: str,
        participants: Sequence[str],
        *,
        knobs: Mapping[str, JSON],
        config_snapshot: Mapping[str, JSON],
    ) -> None:
        """A running run's participants (declared order), knobs and config snapshot, as
        they are now: a group of benchmarked tests learns its tests as they report.

        Grouped records are left to their group (one write per test would undo it): they
        belong to participants declared before them, and a run's row is read with them."""
        params = (
            dump_json(list(participants)),
            dump_json(dict(knobs)),
            dump_json(dict(config_snapshot)),
            run_id,
        )
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE runs SET participants = ?, knobs = ?, config_snapshot = ? WHERE run_id = ?",
                params,
            )
            if cursor.rowcount == 0:
                raise UnknownRunError(f"no run {run_id!r} in the results store")

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

    def put_run(self, run: StoredRun) -> None:
        """Store *run* under its own ``run_id`` with all its metadata (status, times, run key
        …), replacing the metadata of a run with that id if there is one (its records, log
        lines, scores and analyses stay). ``record_count`` is ignored: it is counted.

        For copying and merging stores (``pytest-benchsdk merge``); a session uses
        :meth:`begin_run`."""
        values = (
            run.benchmark_slug,
            run.benchmark_name,
            run.file,
            dump_json(dict(run.knobs)),
            dump_json(list(run.participants)),
            dump_json(dict(run.config_snapshot)),
            dump_json(run.environment.to_dict()),
            int(run.dry_run),
            run.session_id,
            run.status,
            run.started_at,
            run.finished_at,
            run.platform_run_id,
            run.dashboard_url,
            run.run_key,
        )
        with self._write() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, benchmark_slug, benchmark_name, file, knobs, "
                "participants, config_snapshot, environment, dry_run, session_id, status, "
                "started_at, finished_at, platform_run_id, dashboard_url, run_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET benchmark_slug = excluded.benchmark_slug, "
                "benchmark_name = excluded.benchmark_name, file = excluded.file, "
                "knobs = excluded.knobs, participants = excluded.participants, "
                "config_snapshot = excluded.config_snapshot, environment = excluded.environment, "
                "dry_run = excluded.dry_run, session_id = excluded.session_id, "
                "status = excluded.status, started_at = excluded.started_at, "
                "finished_at = excluded.finished_at, platform_run_id = excluded.platform_run_id, "
                "dashboard_url = excluded.dashboard_url, run_key = excluded.run_key",
                (run.run_id, *values),
            )

    # --- records, logs, scores ------------------------------------------------------------------

    def add_record(
        self,
        run_id: str,
        participant: str,
        record: TaskRecord,
        log_lines: Sequence[str] = (),
        *,
        wire: Mapping[str, JSON] | None = None,
    ) -> None:
        """Store a task record (its wire JSON), and the iteration's log lines if given, in one
        transaction; committed when this returns. ``wire``: the record's wire form, when the
        caller has it already (it must be ``record.to_wire()``).

        With ``group_records=True`` the record is journalled when this returns (a process
        killed now loses nothing: the next open of the store commits it) and committed with
        its group: at once after a quiet spell, else within 0.2 s, 2,048 records or 512
        KiB, and before any other read or write of this store.

        Idempotent on ``(run_id, participant, record.task_index)``: a re-delivered record
        replaces the earlier one (its log lines are appended again).
        """
        if isinstance(log_lines, str):
            raise TypeError("log_lines must be a sequence of strings, not one string")
        row = (
            run_id,
            participant,
            record.task_index,
            record.status,
            _record_json(record, wire),
            now_iso(),
        )
        journal = self._journal
        if journal is not None and self._db.damaged is not None:
            # Nothing is written to a damaged store: the journal keeps the record (and the
            # store refuses a run it cannot name, as a commit would).
            with self._db.lock:
                journal.append(row, log_lines)
            return
        try:
            if journal is not None:
                with self._db.lock:
                    if run_id not in journal.runs:
                        # Checked now: a group commit must not fail on one bad row.
                        if not self._db.read("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
                            raise UnknownRunError(f"no run {run_id!r} in the results store")
                        journal.runs.add(run_id)
                    try:
                        due = journal.append(row, log_lines)
                    except OSError:
                        # The journal cannot grow (a full disk): the record goes to the store
                        # with its group now, which empties the journal and frees its space
                        # for what the session still writes (the run's status). If that
                        # commit fails too, the error reaches the caller as it did before.
                        journal.hold(row, log_lines)
                        due = True
                    if due:
                        self._commit_group(journal)
                    else:
                        self._arm_group_timer()
                return
            if not log_lines:
                # The usual case, once per iteration: one statement, its own transaction.
                self._db.execute(_UPSERT_RECORD, row)
                return
            with self._write() as conn:
                conn.execute(_UPSERT_RECORD, row)
                conn.executemany(
                    _INSERT_LOG_LINE, [(run_id, participant, line) for line in log_lines]
                )
        except sqlite3.IntegrityError as exc:
            # records.run_id and log_lines.run_id reference runs (foreign keys are on).
            if "FOREIGN KEY" in str(exc):
                raise UnknownRunError(f"no run {run_id!r} in the results store") from None
            raise

    def participant_records(self, run_id: str) -> list[ParticipantRecords]:
        """Records per participant, each participant's records by task index.

        Participants come in the run's declared order (each one present, possibly with no
        records), then any undeclared participant that has records, in order of first arrival.
        """
        by_participant: dict[str, list[tuple[int, str]]] = {
            name: [] for name in self.get_run(run_id).participants
        }
        rows = self._read(
            "SELECT participant, task_index, wire FROM records WHERE run_id = ? "
            "AND task_index >= 0 ORDER BY rowid",
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

    def warmup_records(self, run_id: str) -> list[ParticipantRecords]:
        """The run's warm-up records (negative task indices), per participant in order of
        first arrival, each by task index. :meth:`participant_records` leaves them out."""
        rows = self._read(
            "SELECT participant, task_index, wire FROM records WHERE run_id = ? "
            "AND task_index < 0 ORDER BY rowid",
            (run_id,),
        )
        by_participant: dict[str, list[tuple[int, str]]] = {}
        for name, task_index, wire in rows:
            by_participant.setdefault(name, []).append((task_index, wire))
        return [
            ParticipantRecords(
                name,
                tuple(
                    TaskRecord.from_wire(json.loads(wire), warmup=True) for _, wire in sorted(recs)
                ),
            )
            for name, recs in by_participant.items()
        ]

    def add_log_lines(self, run_id: str, participant: str, lines: Sequence[str]) -> None:
        """Append formatted log lines of one participant (kept in the order given)."""
        if isinstance(lines, str):
            raise TypeError("lines must be a sequence of strings, not one string")
        with self._write() as conn:
            require_run(conn, run_id)
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

    def record_wires(self, run_id: str) -> list[tuple[str, dict[str, JSON]]]:
        """Every record of a run, warm-up ones included, as ``(participant, wire dict)`` in
        the order they arrived (the stored JSON as it is, for copying)."""
        self._require_known(run_id)
        rows = self._read(
            "SELECT participant, wire FROM records WHERE run_id = ? ORDER BY rowid", (run_id,)
        )
        return [(name, json.loads(wire)) for name, wire in rows]

    def all_log_lines(self, run_id: str) -> dict[str, list[str]]:
        """Every log line of a run per participant (participants in order of their first line,
        lines in the order they were added)."""
        rows = self._read(
            "SELECT participant, line FROM log_lines WHERE run_id = ? ORDER BY id", (run_id,)
        )
        lines: dict[str, list[str]] = {}
        for participant, line in rows:
            lines.setdefault(participant, []).append(line)
        return lines

    def replace_records(
        self,
        run_id: str,
        records: Sequence[tuple[str, Mapping[str, JSON]]],
        log_lines: Mapping[str, Sequence[str]],
    ) -> None:
        """Make *records* (``(participant, wire dict)``, warm-up ones with negative
        ``taskIndex`` included) and *log_lines* (per participant) the run's whole content, in
        one transaction: what the run held before is deleted. A record per ``(participant,
        taskIndex)``: a later one replaces an earlier one. Writing the same content twice
        leaves the same run (for merging stores)."""
        rows = []
        for participant, wire in records:
            task_index, status = wire.get("taskIndex"), wire.get("status")
            if not isinstance(task_index, int) or isinstance(task_index, bool):
                raise ValueError(f"a record of {participant!r} has no integer taskIndex")
            if not isinstance(status, str):
                raise ValueError(f"a record of {participant!r} has no status")
            rows.append((run_id, participant, task_index, status, dump_json(dict(wire)), now_iso()))
        with self._write() as conn:
            require_run(conn, run_id)
            conn.execute("DELETE FROM records WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM log_lines WHERE run_id = ?", (run_id,))
            conn.executemany(_UPSERT_RECORD, rows)
            conn.executemany(
                "INSERT INTO log_lines (run_id, participant, line) VALUES (?, ?, ?)",
                [(run_id, name, line) for name, lines in log_lines.items() for line in lines],
            )

    def _require_known(self, run_id: str) -> None:
        if not self._read("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
            raise UnknownRunError(f"no run {run_id!r} in the results store")

    def save_scores(self, run_id: str, results: Sequence[ScoreResult]) -> None:
        """Store a run's score results (wire JSON), replacing any saved before, order kept."""
        with self._write() as conn:
            require_run(conn, run_id)
            conn.execute("DELETE FROM scores WHERE run_id = ?", (run_id,))
            conn.executemany(
                "INSERT INTO scores (run_id, position, provider, wire) VALUES (?, ?, ?, ?)",
                [
                    (run_id, position, result.provider, dump_json(result.to_wire()))
                    for position, result in enumerate(results)
                ],
            )

    def scores(self, run_id: str) -> list[ScoreResult]:
        """The run's saved score results in the order saved (empty if never scored)."""
        rows = self._read("SELECT wire FROM scores WHERE run_id = ? ORDER BY position", (run_id,))
        return [ScoreResult.from_wire(json.loads(row[0])) for row in rows]

    def save_analysis(self, run_id: str, kind: str, body: JSON) -> None:
        """Store one analysis of a run (``kind``: ``comparison``, ``uncertainty``,
        ``warnings`` …) as JSON, replacing the one saved before."""
        with self._write() as conn:
            require_run(conn, run_id)
            conn.execute(
                "INSERT INTO run_analyses (run_id, kind, body, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run_id, kind) DO UPDATE SET body = excluded.body, "
                "updated_at = excluded.updated_at",
                (run_id, kind, dump_json(body), now_iso()),
            )

    def analysis(self, run_id: str, kind: str) -> JSON:
        """The analysis ``kind`` saved for the run, or ``None``."""
        rows = self._read(
            "SELECT body FROM run_analyses WHERE run_id = ? AND kind = ?", (run_id, kind)
        )
        return json.loads(rows[0][0]) if rows else None

    def analyses(self, run_id: str) -> dict[str, JSON]:
        """Every analysis saved for the run, by kind."""
        rows = self._read(
            "SELECT kind, body FROM run_analyses WHERE run_id = ? ORDER BY kind", (run_id,)
        )
        return {kind: json.loads(body) for kind, body in rows}

    def delete_analysis(self, run_id: str, kind: str) -> None:
        """Forget the analysis ``kind`` of a run (nothing happens if there is none)."""
        with self._write() as conn:
            conn.execute("DELETE FROM run_analyses WHERE run_id = ? AND kind = ?", (run_id, kind))

    # --- named baselines ------------------------------------------------------------------------

    def set_baseline(self, name: str, run_id: str) -> str | None:
        """Let ``name`` stand for the run ``run_id`` among its benchmark's runs (a name is per
        benchmark: ``main`` can name one run of each). Returns the run id it named before, if
        any (:class:`UnknownRunError` for an unknown run)."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT benchmark_slug FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in the results store")
            slug = row[0]
            before = conn.execute(
                "SELECT run_id FROM baselines WHERE name = ? AND benchmark_slug = ?", (name, slug)
            ).fetchone()
            conn.execute(
                "INSERT INTO baselines (name, benchmark_slug, run_id, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (name, benchmark_slug) DO UPDATE SET "
                "run_id = excluded.run_id, updated_at = excluded.updated_at",
                (name, slug, run_id, now_iso()),
            )
        return None if before is None else str(before[0])

    def baselines(
        self, name: str | None = None, benchmark_slug: str | None = None
    ) -> list[NamedBaseline]:
        """The baseline names, by name then benchmark (optionally one name, one benchmark)."""
        clauses, params = [], []
        if name is not None:
            clauses.append("name = ?")
            params.append(name)
        if benchmark_slug is not None:
            clauses.append("benchmark_slug = ?")
            params.append(benchmark_slug)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._read(
            "SELECT name, benchmark_slug, run_id, updated_at FROM baselines "
            f"{where} ORDER BY name, benchmark_slug",
            params,
        )
        return [NamedBaseline(*row) for row in rows]

    def delete_baseline(self, name: str, benchmark_slug: str | None = None) -> int:
        """Forget the name (of one benchmark, or of every benchmark); returns how many went."""
        with self._write() as conn:
            if benchmark_slug is None:
                cursor = conn.execute("DELETE FROM baselines WHERE name = ?", (name,))
            else:
                cursor = conn.execute(
                    "DELETE FROM baselines WHERE name = ? AND benchmark_slug = ?",
                    (name, benchmark_slug),
                )
            return int(cursor.rowcount)

    # --- per-run state --------------------------------------------------------------------------

    def state_get(self, run_id: str, key: str, default: JSON = None) -> JSON:
        """A value saved with :meth:`state_set`, or *default*."""
        rows = self._read("SELECT value FROM run_state WHERE run_id = ? AND key = ?", (run_id, key))
        return json.loads(rows[0][0]) if rows else default

    def state_set(self, run_id: str, key: str, value: JSON) -> None:
        """Save a small JSON value for a run (platform ids, worker ids, attempt ids…)."""
        with self._write(durable=True) as conn:
            require_run(conn, run_id)
            self._state_put(conn, run_id, key, value)

    def state_increment(self, run_id: str, key: str, by: int = 1) -> int:
        """Atomically add *by* to an integer value (missing counts as 0); return the new value.

        Safe across threads and processes: use it for sequence numbers.
        """
        with self._write(durable=True) as conn:
            require_run(conn, run_id)
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
            (run_id, key, dump_json(value), now_iso()),
        )
