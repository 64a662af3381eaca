"""The results store's outbox (queued platform payloads) and small per-run state values.

Private to :mod:`pytest_benchsdk.store`: :class:`OutboxMixin` holds the ``outbox`` and
``run_state`` table methods of :class:`~pytest_benchsdk.store.ResultStore`, which re-exports
:data:`OUTBOX_STATES` and :class:`OutboxEntry`. Both tables are the platform layer's
bookkeeping, apart from the run results themselves.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import attrs

from ._connection import JSON, StoreConnection, _dumps, _loads, _now

__all__ = ["OUTBOX_STATES", "OutboxEntry", "OutboxMixin"]

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


# Public as pytest_benchsdk.store.OutboxEntry: keep that name in the class's repr and pickles.
OutboxEntry.__module__ = "pytest_benchsdk.store"

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
        payload=_loads(row[4]),
        depends_on=row[5],
        state=row[6],
        attempts=row[7],
        last_error=row[8],
        response=_loads(row[9]),
        created_at=row[10],
        sent_at=row[11],
    )


class OutboxMixin(StoreConnection):
    """The outbox and per-run state methods of :class:`~pytest_benchsdk.store.ResultStore`."""

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
