"""The results store's connection: opening the SQLite file, transactions, errors, JSON columns.

Private to :mod:`pytest_benchsdk.store`, which re-exports :class:`StoreError` and
:class:`UnknownRunError`. :class:`StoreConnection` knows nothing of the tables except that
:func:`~pytest_benchsdk.store._schema.migrate` creates them; the queries live in
:mod:`pytest_benchsdk.store._results`. See :mod:`pytest_benchsdk.store` for the concurrency
rules and the schema.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._clock import iso_utc
from .._files import creation_problem
from .._js import js_json
from ._schema import SchemaTooNewError, migrate

__all__ = [
    "BUSY_TIMEOUT_S",
    "JSON",
    "StoreConnection",
    "StoreError",
    "UnknownRunError",
    "dump_json",
    "load_json",
    "now_iso",
]

#: Seconds a writer waits for another process's write lock before giving up.
BUSY_TIMEOUT_S = 30.0

JSON = Any
"""Any JSON-serialisable value (dicts, lists, str, int, float, bool, None)."""


class StoreError(Exception):
    """The results store cannot be opened or used (message names the file and what to do)."""


class UnknownRunError(StoreError, KeyError):
    """No run with this local run id is in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown run"


def now_iso() -> str:
    """The current time as stored in timestamp columns."""
    # Same shape as JS toISOString() and the records' timestamps: 2024-01-02T03:04:05.678Z.
    return iso_utc(time.time())


def dump_json(value: JSON) -> str:
    """The text stored in a JSON column for *value* (``"null"`` for ``None``)."""
    # js_json writes what JSON.stringify would (NaN → null), so stored text equals the wire text.
    return "null" if value is None else js_json(value)


def load_json(text: str | None) -> JSON:
    """The value of a nullable JSON column (``None`` for SQL ``NULL``)."""
    return None if text is None else json.loads(text)


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


#: Permissions of a store file and of the directories the store creates: owner only, since
#: records and log lines can hold anything a task logs.
FILE_MODE = 0o600
DIR_MODE = 0o700


def _unusable_reason(path: Path) -> str | None:
    """Why *path* cannot be a writable store, as far as can be told before SQLite opens it
    (SQLite's own messages for these cases say little: "unable to open database file")."""
    if path.is_dir():
        return "it is a directory; give a file path (e.g. .benchmarks/benchsdk.sqlite3)"
    if path.exists():
        if not path.is_file():
            return "it is not a regular file; give a file path"
        if not os.access(path, os.R_OK | os.W_OK):
            return "it is read-only; make it writable or choose another path"
        # SQLite keeps its -wal and -shm files next to the store.
        if not os.access(path.parent, os.W_OK | os.X_OK):
            return f"its directory {path.parent} is read-only; SQLite needs to write there"
        return None
    return creation_problem(path)


def _create_private(path: Path) -> None:
    """Create the store's missing directories (0o700) and the file itself (0o600), so that
    SQLite (which gives its -wal and -shm files the store's permissions) never creates
    them readable by others. Existing directories and files are left as they are."""
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile: it is theirs to keep
        os.chmod(directory, DIR_MODE)  # whatever the umask
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


class StoreConnection:
    """One SQLite connection to a results store file, shared by threads under a lock.

    Held by :class:`pytest_benchsdk.store.ResultStore`: opens (and creates or migrates) the
    file, and gives its methods committed write transactions (:meth:`write`) and locked reads
    (:meth:`read`). Raises :class:`StoreError` when the file cannot be opened, is not a results
    store, or was written by a newer version.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_s: float = BUSY_TIMEOUT_S
    ) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        problem = _unusable_reason(self.path)
        if problem is not None:
            raise StoreError(f"cannot open results store {self.path}: {problem}")
        try:
            _create_private(self.path)
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
            text = str(exc)
            if "locked" in text or "busy" in text:
                hint = f"another process kept it locked for more than {busy_timeout_s:g} s"
            elif "readonly" in text or "read-only" in text:
                hint = "it is read-only; make it writable or choose another path"
            elif "disk is full" in text or "disk I/O" in text:
                hint = "no space left on the device? free some or choose another path"
            else:
                hint = "is it a pytest-benchsdk store? move it away or choose another path"
            raise StoreError(f"cannot use results store {self.path}: {exc} ({hint})") from exc
        except BaseException:
            self._conn.close()
            raise

    def _setup_schema(self) -> None:
        self._conn.execute("PRAGMA journal_mode = WAL")
        migrate(self._conn)

    def close(self) -> None:
        """Close the connection. Everything is already committed."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One committed write transaction, holding the thread lock and SQLite's write lock."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                # SQLite rolls back by itself on some errors (SQLITE_FULL, SQLITE_IOERR):
                # a second ROLLBACK would replace the real error by "no transaction is active".
                if self._conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) leaves the transaction open: end it, or every
                # later write would fail with "cannot start a transaction within a transaction".
                if self._conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One write statement as its own transaction (SQLite's autocommit): committed when
        this returns, with a quarter of the statements of :meth:`write` (no BEGIN/COMMIT).
        A failed statement leaves no transaction open."""
        with self._lock:
            self._conn.execute(sql, params)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of one query, read under the thread lock."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()
