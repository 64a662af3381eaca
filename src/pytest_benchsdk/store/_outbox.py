"""The results store's outbox: the durable queue of platform payloads, and each outbox run's
platform target and delivery lease.

Private to :mod:`pytest_benchsdk.store`, which re-exports every name in ``__all__`` here.
:class:`OutboxQueries` holds the outbox's queries; :class:`~pytest_benchsdk.store.ResultStore`
inherits them (its ``outbox_*`` methods and :meth:`~OutboxQueries.undelivered_records`) and
provides the two ways in they use: a write transaction and a read, each after the grouped
records are committed (an outbox batch never names a record the store does not hold). The
platform layer writes a payload here before it sends it and marks it sent after a 2xx; what
fails stays to be resubmitted. See :mod:`pytest_benchsdk.store` for the schema
(``outbox``, ``outbox_runs``) and the concurrency rules.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import attrs

from pytest_benchsdk.store._connection import JSON, dump_json, load_json, now_iso, require_run

__all__ = ["OUTBOX_STATES", "OutboxEntry", "OutboxQueries", "OutboxTarget"]


#: Outbox entry states. ``pending``: never tried; ``failed``: tried, will be retried;
#: ``sent``: delivered (terminal); ``rejected``: permanently refused (terminal).
OUTBOX_STATES = ("pending", "failed", "sent", "rejected")


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


@attrs.frozen
class OutboxTarget:
    """The platform an outbox run is reported to (``url``: the API base; ``org``: the org slug
    or id when known) and who holds its delivery lease (``lease_holder``, ``None`` if free).
    """

    run_id: str
    url: str | None
    org: str | None
    lease_holder: str | None


def _holder_alive(holder: str, expires: float | None, now: float) -> bool:
    """Whether a lease holder may still be delivering: on this host, while its process lives
    (a killed holder frees the lease at once); elsewhere, until the lease expires."""
    host, _, rest = holder.partition("|")
    pid_text = rest.partition("|")[0]
    if host == socket.gethostname() and pid_text.isdigit():
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        except OSError:
            return expires is not None and expires > now
        return True
    return expires is not None and expires > now


_OUTBOX_COLUMNS = (
    "id, run_id, kind, key, payload, depends_on, state, attempts, last_error, response, "
    "created_at, sent_at"
)


def _outbox_from_row(row: Sequence[Any]) -> OutboxEntry:
    return OutboxEntry(
        id=row[0],
        run_id=row[1],
        kind=row[2],
        key=row[3],
        payload=load_json(row[4]),
        depends_on=row[5],
        state=row[6],
        attempts=row[7],
        last_error=row[8],
        response=load_json(row[9]),
        created_at=row[10],
        sent_at=row[11],
    )


class OutboxQueries:
    """The outbox's queries, as :class:`~pytest_benchsdk.store.ResultStore` methods: every one
    commits before it returns; the queue's writes and the lease's are synced to disk."""

    # What the store provides: a write transaction (``durable``: ``synchronous = FULL``) and a
    # read, each after the grouped records are committed.
    _write: Callable[..., AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[Any]]

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
        payload_text = dump_json(payload)
        with self._write(durable=True) as conn:
            existing = conn.execute("SELECT id FROM outbox WHERE key = ?", (key,)).fetchone()
            if existing is not None:
                return int(existing[0])
            require_run(conn, run_id)
            now = now_iso()
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
        now = now_iso()
        with self._write(durable=True) as conn:
            self._entry_state(conn, entry_id)
            conn.execute(
                "UPDATE outbox SET state = 'sent', attempts = attempts + 1, response = ?, "
                "sent_at = ?, updated_at = ? WHERE id = ?",
                (dump_json(response), now, now, entry_id),
            )

    def outbox_mark_failed(self, entry_id: int, error: str, *, permanent: bool = False) -> None:
        """Record a failed attempt: state ``failed`` (retried later) or, if *permanent*,
        ``rejected``. *error* must not contain secrets. An entry already ``sent`` is left alone
        (a late failure report from a racing sender never undoes a delivery).
        """
        with self._write(durable=True) as conn:
            if self._entry_state(conn, entry_id) == "sent":
                return
            conn.execute(
                "UPDATE outbox SET state = ?, attempts = attempts + 1, last_error = ?, "
                "updated_at = ? WHERE id = ?",
                ("rejected" if permanent else "failed", error, now_iso(), entry_id),
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

    def outbox_entries(self, run_id: str, state: str | None = None) -> list[OutboxEntry]:
        """Every entry of a run (optionally only those in *state*), in insertion order.

        ``outbox_entries(run_id, "rejected")`` shows what the platform refused and why
        (``last_error``); :meth:`outbox_reset` makes it sendable again.
        """
        sql = f"SELECT {_OUTBOX_COLUMNS} FROM outbox WHERE run_id = ?"
        params: list[Any] = [run_id]
        if state is not None:
            sql += " AND state = ?"
            params.append(state)
        return [_outbox_from_row(row) for row in self._read(sql + " ORDER BY id", params)]

    def outbox_reset(self, run_id: str | None = None, states: Sequence[str] = ("rejected",)) -> int:
        """Put entries in *states* (default: ``rejected``) back to ``pending`` so the next
        delivery or ``--bench-resubmit`` sends them again; returns how many. Their
        ``last_error`` is kept until the next attempt.
        """
        wanted = [s for s in states if s in OUTBOX_STATES]
        if not wanted:
            return 0
        marks = ", ".join("?" for _ in wanted)
        sql = f"UPDATE outbox SET state = 'pending', updated_at = ? WHERE state IN ({marks})"
        params: list[Any] = [now_iso(), *wanted]
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        with self._write(durable=True) as conn:
            return int(conn.execute(sql, params).rowcount)

    def outbox_runs_with_rejected(self) -> list[str]:
        """Local run ids with entries the platform rejected, oldest first."""
        rows = self._read(
            "SELECT run_id FROM outbox WHERE state = 'rejected' GROUP BY run_id ORDER BY MIN(id)"
        )
        return [row[0] for row in rows]

    def outbox_unfinished_runs(self) -> list[str]:
        """Runs reported through the outbox (they have a ``<run>/run`` entry) with a participant
        whose lifecycle was never closed: it has records or a ``claim`` entry but no
        ``<run>/finish/<participant>`` entry (the session ended without finishing it, e.g.
        killed). Oldest first.
        """
        # Every lookup goes through an index: the records' primary key, the outbox's unique key.
        rows = self._read(
            "SELECT u.run_id FROM ("
            " SELECT r.run_id AS run_id"
            " FROM (SELECT DISTINCT run_id, participant FROM records) r"
            " WHERE EXISTS (SELECT 1 FROM outbox o WHERE o.key = r.run_id || '/run')"
            " AND NOT EXISTS (SELECT 1 FROM outbox f"
            "  WHERE f.key = r.run_id || '/finish/' || r.participant)"
            " UNION"
            " SELECT c.run_id AS run_id FROM outbox c WHERE c.kind = 'claim'"
            " AND NOT EXISTS (SELECT 1 FROM outbox f"
            "  WHERE f.key = replace(c.key, '/claim/', '/finish/'))"
            ") u JOIN runs ON runs.run_id = u.run_id GROUP BY u.run_id ORDER BY MIN(runs.id)"
        )
        return [row[0] for row in rows]

    def outbox_reported_runs(self) -> list[str]:
        """Runs reported through the outbox (they have a ``<run>/run`` entry), oldest first."""
        rows = self._read(
            "SELECT o.run_id FROM outbox o JOIN runs ON runs.run_id = o.run_id "
            "WHERE o.kind = 'run' AND o.key = o.run_id || '/run' ORDER BY runs.id"
        )
        return [row[0] for row in rows]

    def undelivered_records(self, run_id: str) -> dict[str, list[int]]:
        """The task indexes of the run's stored records (warm-up ones left out) that no
        delivered (``sent``) ``events`` entry carries, per participant; empty when the
        platform has every one of them."""
        try:
            rows = self._read(
                "SELECT json_extract(o.payload, '$.participant'), "
                "json_extract(j.value, '$.taskIndex') "
                "FROM outbox o, json_each(o.payload, '$.records') j "
                "WHERE o.run_id = ? AND o.kind = 'events' AND o.state = 'sent'",
                (run_id,),
            )
        except sqlite3.OperationalError:  # an SQLite without JSON functions: read the payloads
            rows = [
                (entry.payload.get("participant"), record.get("taskIndex"))
                for entry in self.outbox_entries(run_id, "sent")
                if entry.kind == "events" and isinstance(entry.payload, dict)
                for record in entry.payload.get("records") or ()
                if isinstance(record, dict)
            ]
        delivered = {(name, index) for name, index in rows}
        missing: dict[str, list[int]] = {}
        for name, index in self._read(
            "SELECT participant, task_index FROM records WHERE run_id = ? AND task_index >= 0 "
            "ORDER BY participant, task_index",
            (run_id,),
        ):
            if (name, index) not in delivered:
                missing.setdefault(name, []).append(index)
        return missing

    # --- outbox runs: platform target and delivery lease ----------------------------------------

    def outbox_target(self, run_id: str) -> OutboxTarget | None:
        """The platform recorded for a run's outbox, or ``None`` (never recorded: a store
        written before schema version 2, or a run not reported)."""
        rows = self._read(
            "SELECT platform_url, platform_org, lease_holder, lease_expires FROM outbox_runs "
            "WHERE run_id = ?",
            (run_id,),
        )
        if not rows:
            return None
        url, org, holder, expires = rows[0]
        if holder is not None and not _holder_alive(holder, expires, time.time()):
            holder = None
        return OutboxTarget(run_id, url, org, holder)

    def outbox_set_target(self, run_id: str, url: str, org: str | None) -> None:
        """Record the platform (API base URL, org slug or id) a run's outbox is sent to."""
        with self._write(durable=True) as conn:
            require_run(conn, run_id)
            conn.execute(
                "INSERT INTO outbox_runs (run_id, platform_url, platform_org, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
                "platform_url = excluded.platform_url, platform_org = excluded.platform_org, "
                "updated_at = excluded.updated_at",
                (run_id, url, org, now_iso()),
            )

    def outbox_lease(self, run_id: str, holder: str, ttl_s: float = 60.0) -> str | None:
        """Take (or renew) the delivery lease of a run for *holder* (``<host>|<pid>|<token>``);
        ``None`` when it is ours now, else the id of the live holder.

        A holder on this host keeps the lease while its process lives; one on another host
        until *ttl_s* after its last renewal. Only the lease holder delivers a run's outbox.
        """
        now = time.time()
        with self._write() as conn:
            require_run(conn, run_id)
            row = conn.execute(
                "SELECT lease_holder, lease_expires FROM outbox_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None:
                current, expires = row
                if current not in (None, holder) and _holder_alive(current, expires, now):
                    return str(current)
            conn.execute(
                "INSERT INTO outbox_runs (run_id, lease_holder, lease_expires, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
                "lease_holder = excluded.lease_holder, lease_expires = excluded.lease_expires, "
                "updated_at = excluded.updated_at",
                (run_id, holder, now + ttl_s, now_iso()),
            )
        return None

    def outbox_release(self, run_id: str, holder: str) -> None:
        """Give the delivery lease of a run back (only if *holder* holds it)."""
        with self._write() as conn:
            conn.execute(
                "UPDATE outbox_runs SET lease_holder = NULL, lease_expires = NULL, "
                "updated_at = ? WHERE run_id = ? AND lease_holder = ?",
                (now_iso(), run_id, holder),
            )
