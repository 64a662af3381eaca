"""The results store's connection: opening the SQLite file, transactions, errors, JSON columns.

Private to :mod:`pytest_benchsdk.store`, which re-exports :class:`StoreError` and
:class:`UnknownRunError`. :class:`StoreConnection` knows nothing of the tables except that
:func:`~pytest_benchsdk.store._schema.migrate` creates them; the queries live in
:mod:`pytest_benchsdk.store._results` and :mod:`pytest_benchsdk.store._outbox`. See
:mod:`pytest_benchsdk.store` for the concurrency rules and the schema.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_benchsdk._base.clock import iso_utc
from pytest_benchsdk._base.files import creation_problem
from pytest_benchsdk._base.js import js_json
from pytest_benchsdk.store._schema import SCHEMA_VERSION, SchemaTooNewError, migrate

__all__ = [
    "BUSY_TIMEOUT_S",
    "JSON",
    "StoreConnection",
    "StoreCorruptError",
    "StoreError",
    "StoreReadOnlyError",
    "UnknownRunError",
    "corruption",
    "dump_json",
    "load_json",
    "now_iso",
    "require_run",
]

#: Seconds a writer waits for another process's write lock before giving up.
BUSY_TIMEOUT_S = 30.0

JSON = Any
"""Any JSON-serialisable value (dicts, lists, str, int, float, bool, None)."""


class StoreError(Exception):
    """The results store cannot be opened or used (message names the file and what to do)."""


class StoreReadOnlyError(StoreError):
    """The store file, or its directory, cannot be written: a session cannot use it, the read
    commands open it with ``ResultStore(path, read_only=True)``."""


class StoreCorruptError(StoreError):
    """The store file is damaged: SQLite finds it malformed (found when it is opened, or by
    the first statement that meets the damage). Nothing more is written to it; the message
    says how to check it and how to salvage what can be read into a new file."""

    def __init__(self, path: str | os.PathLike[str], detail: str) -> None:
        self.path = Path(path)
        self.detail = detail
        super().__init__(damaged_line(self.path, detail))

    def __reduce__(self) -> tuple[type[StoreCorruptError], tuple[Path, str]]:
        return type(self), (self.path, self.detail)


def damaged_line(path: Path, detail: str) -> str:
    """The one line every part of the project says about a damaged store (the session, each
    CLI command): what is wrong and what to do."""
    store = shlex.quote(str(path))
    return (
        f"the results store {path} is damaged (SQLite: {detail}): nothing more is written to "
        f"it. See what is wrong with `pytest-benchsdk --store {store} store check`; salvage "
        f"what can be read into a new file with `pytest-benchsdk --store {store} store "
        "recover -o NEW.sqlite3`"
    )


#: SQLite's primary result codes for a damaged file: SQLITE_CORRUPT and SQLITE_NOTADB.
_DAMAGE_CODES = frozenset({11, 26})


def corruption(exc: BaseException) -> str | None:
    """SQLite's message when ``exc`` says the database file is damaged, else None."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    text = str(exc)
    # sqlite_errorcode: Python 3.11+; the messages are SQLite's own for these codes.
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _DAMAGE_CODES:
        return text
    if "malformed" in text or "not a database" in text:
        return text
    return None


#: A store up to this size (with its -wal file) is checked whole when it is opened: SQLite's
#: quick_check reads every page, about 0.1 s per 100 MiB from the page cache. A larger one has
#: every table but the records and the log lines checked; those are checked as they are read
#: (the first statement that meets the damage).
FULL_CHECK_BYTES = 64 * 1024 * 1024
_LARGE_TABLES = ("records", "log_lines")


def _store_bytes(path: Path) -> int:
    total = 0
    for name in (path, Path(f"{path}-wal")):
        with contextlib.suppress(OSError):
            total += name.stat().st_size
    return total


def check_health(conn: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`StoreCorruptError` when SQLite's ``quick_check`` finds the open store
    damaged (the whole file, or all but its large tables; see :data:`FULL_CHECK_BYTES`).
    Reads only."""
    try:
        if _store_bytes(path) <= FULL_CHECK_BYTES:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
        elif sqlite3.sqlite_version_info >= (3, 33, 0):  # quick_check(TABLE) is 3.33's
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
                if row[0] not in _LARGE_TABLES
            ]
            problems = [
                row[0] for table in tables for row in conn.execute(f'PRAGMA quick_check("{table}")')
            ]
        else:
            return
    except sqlite3.DatabaseError as exc:
        detail = corruption(exc)
        if detail is None:
            raise
        raise StoreCorruptError(path, detail) from exc
    found = [
        line.strip()
        for text in problems
        if text != "ok"
        for line in str(text).splitlines()
        if line.strip() and not line.startswith("***")
    ]
    if found:
        raise StoreCorruptError(path, f"database disk image is malformed: {found[0]}")


class UnknownRunError(StoreError, KeyError):
    """No run with this local run id is in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown run"


def require_run(conn: sqlite3.Connection, run_id: str) -> None:
    """:class:`UnknownRunError` unless the store holds the run (inside a write transaction)."""
    if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
        raise UnknownRunError(f"no run {run_id!r} in the results store")


def now_iso() -> str:
    """The current time as stored in timestamp columns."""
    # Same shape as JS toISOString() and the records' timestamps: 2024-01-02T03:04:05.678Z.
    return iso_utc(time.time())


def dump_json(value: JSON) -> str:
    """The text stored in a JSON column for *value* (``"null"`` for ``None``)."""
    # js_json writes what JSON.stringify would (NaN → null), so stored text equals the wire text.
    return "null" if value is None else js_json(value)


def _not_plain_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _compact_encoder() -> Callable[[object], str]:
    """Plain JSON (strings, numbers, lists, dicts; no NaN) as compact text, at C speed: the C
    encoder made once. ``JSONEncoder.encode`` makes a new one on every call, half of what it
    costs for a record's few keys (2.6 of 5.2 µs). It keeps no circular-reference markers (a
    shared set would keep the marks a failed call leaves): a circular value, deep beyond
    recursion, is the ``ValueError`` the encoder's own check raises."""
    make = getattr(json.encoder, "c_make_encoder", None)  # (typeshed leaves it out)
    if make is None:  # no C accelerator (another Python): the standard encoder
        return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
    encode = make(
        None, _not_plain_json, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )

    def compact(value: object) -> str:
        try:
            return "".join(encode(value, 0))
        except RecursionError:
            raise ValueError("Circular reference detected") from None

    return compact


#: For the hot path, once or twice per record; what it refuses (NaN, a value that is not plain
#: JSON) goes to dump_json.
compact_json = _compact_encoder()


def load_json(text: str | None) -> JSON:
    """The value of a nullable JSON column (``None`` for SQL ``NULL``)."""
    return None if text is None else json.loads(text)


class _ForeignDatabase(Exception):
    """The file is an SQLite database of something else (message: why, for people)."""


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


_READ_ONLY = "it is read-only; make it writable or choose another path"


def _unusable_reason(path: Path) -> tuple[str, bool] | None:
    """Why *path* cannot be a writable store, as far as can be told before SQLite opens it
    (SQLite's own messages for these cases say little: "unable to open database file"), and
    whether the reason is only that it cannot be written."""
    if path.is_dir():
        return "it is a directory; give a file path (e.g. .benchmarks/benchsdk.sqlite3)", False
    if path.exists():
        if not path.is_file():
            return "it is not a regular file; give a file path", False
        if not os.access(path, os.R_OK):
            return "it cannot be read (permission denied)", False
        if not os.access(path, os.W_OK):
            return _READ_ONLY, True
        # SQLite keeps its -wal and -shm files next to the store.
        if not os.access(path.parent, os.W_OK | os.X_OK):
            return f"its directory {path.parent} is read-only; SQLite needs to write there", True
        return None
    problem = creation_problem(path)
    return None if problem is None else (problem, False)


#: The tables of schema version 1: a file with another schema is not a results store.
_OWN_TABLES = frozenset({"runs", "records", "log_lines", "scores", "outbox", "run_state"})


def _foreign_reason(conn: sqlite3.Connection) -> str | None:
    """Why an existing SQLite file is not a results store (None: it is one, or it is empty and
    may become one). Reads only, so a foreign database is left exactly as it was."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if version == 0 and not tables:
        return None  # a new (or empty) file: it becomes a store
    if version > SCHEMA_VERSION:
        return None  # migrate() says it is too new
    if tables >= _OWN_TABLES and version >= 1:
        return None
    shown = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
    return (
        f"it is an SQLite database of something else (tables: {shown or 'none'}), not a "
        "pytest-benchsdk results store; it was left unchanged. Choose another path "
        "(e.g. .benchmarks/benchsdk.sqlite3)"
    )


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
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        #: Set when a read-only store had to be read without its write-ahead log.
        self.read_only_note: str | None = None
        self.read_only = read_only
        #: SQLite's message once a statement found the file damaged: no write is tried then.
        self.damaged: str | None = None
        if read_only:
            self._conn = self._open_read_only(busy_timeout_s)
            return
        found = _unusable_reason(self.path)
        if found is not None:
            problem, only_read_only = found
            error = StoreReadOnlyError if only_read_only else StoreError
            raise error(f"cannot open results store {self.path}: {problem}")
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
        except StoreCorruptError:
            self._conn.close()
            raise
        except _ForeignDatabase as exc:
            self._conn.close()
            raise StoreError(f"cannot use results store {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            text = str(exc)
            if corruption(exc) is not None and "not a database" not in text:
                # (A file that is not a database at all is not a damaged store: below.)
                raise StoreCorruptError(self.path, text) from exc
            error = StoreError
            if "locked" in text or "busy" in text:
                hint = f"another process kept it locked for more than {busy_timeout_s:g} s"
            elif "readonly" in text or "read-only" in text:
                hint, error = _READ_ONLY, StoreReadOnlyError
            elif "disk is full" in text or "disk I/O" in text:
                hint = "no space left on the device? free some or choose another path"
            else:
                hint = "is it a pytest-benchsdk store? move it away or choose another path"
            raise error(f"cannot use results store {self.path}: {exc} ({hint})") from exc
        except BaseException:
            self._conn.close()
            raise

    def _setup_schema(self) -> None:
        # Look before writing anything: switching to WAL rewrites the file's header.
        foreign = _foreign_reason(self._conn)
        if foreign is not None:
            raise _ForeignDatabase(foreign)
        # Before the first write: a damaged file is never written to as if it were healthy.
        check_health(self._conn, self.path)
        self._conn.execute("PRAGMA journal_mode = WAL")
        migrate(self._conn)

    def _open_read_only(self, busy_timeout_s: float) -> sqlite3.Connection:
        """Open the file for reading only: nothing is created, migrated or written. A store in
        WAL mode whose directory cannot be written has no ``-shm`` file to share: it is then
        read as an immutable file, without what only its ``-wal`` file holds (said in
        :attr:`read_only_note`)."""
        if not self.path.is_file():
            raise StoreError(f"cannot open results store {self.path}: no such file")
        uri = self.path.resolve().as_uri()
        conn: sqlite3.Connection | None = None
        try:
            for query in ("?mode=ro", "?mode=ro&immutable=1"):
                try:
                    conn = sqlite3.connect(
                        uri + query,
                        uri=True,
                        timeout=busy_timeout_s,
                        isolation_level=None,
                        check_same_thread=False,
                    )
                    foreign = _foreign_reason(conn)
                except sqlite3.OperationalError:
                    if conn is not None:
                        conn.close()
                        conn = None
                    # A WAL store whose -shm file cannot be created: read it as immutable.
                    if query.endswith("immutable=1"):
                        raise
                    continue
                if foreign is not None:
                    raise _ForeignDatabase(foreign)
                if "immutable" in query:
                    wal = Path(f"{self.path}-wal")
                    if wal.exists() and wal.stat().st_size > 0:
                        self.read_only_note = (
                            f"{wal} holds writes not yet in {self.path.name}, and neither can "
                            "be written to merge them: the newest data may be missing; make "
                            "the directory writable to see it"
                        )
                break
            assert conn is not None
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            check_health(conn, self.path)
        except StoreCorruptError:
            if conn is not None:
                conn.close()
            raise
        except _ForeignDatabase as exc:
            if conn is not None:
                conn.close()
            raise StoreError(f"cannot use results store {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if corruption(exc) is not None and "not a database" not in str(exc):
                raise StoreCorruptError(self.path, str(exc)) from exc
            raise StoreError(
                f"cannot use results store {self.path}: {exc} (is it a pytest-benchsdk store?)"
            ) from exc
        if version != SCHEMA_VERSION:
            conn.close()
            if version > SCHEMA_VERSION:
                why = (
                    f"its schema version {version} is newer than this pytest-benchsdk "
                    f"understands ({SCHEMA_VERSION}); upgrade pytest-benchsdk"
                )
            elif version == 0:
                why = "it holds no results yet (an empty database)"
            else:
                why = (
                    f"it was written by an older pytest-benchsdk (schema {version}) and, being "
                    "read-only, cannot be upgraded; open it once with write access"
                )
            raise StoreError(f"cannot read results store {self.path}: {why}")
        return conn

    @property
    def lock(self) -> threading.RLock:
        """The lock every statement on this connection runs under (re-entrant)."""
        return self._lock

    def close(self) -> None:
        """Close the connection. Everything is already committed."""
        with self._lock:
            self._conn.close()

    def _refuse_if_damaged(self) -> None:
        if self.damaged is not None:
            raise StoreCorruptError(self.path, self.damaged)

    def _damage(self, exc: sqlite3.DatabaseError) -> None:
        """Raise :class:`StoreCorruptError` (and refuse every later write) when ``exc`` says
        the file is damaged; else return (the caller re-raises ``exc``)."""
        detail = corruption(exc)
        if detail is not None:
            self.damaged = detail
            raise StoreCorruptError(self.path, detail) from exc

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One committed write transaction, holding the thread lock and SQLite's write lock.

        ``durable``: the commit is on disk when this returns, also across an OS crash or a
        power cut (``synchronous = FULL`` for this commit: the WAL is synced, and with it every
        commit before). Other commits survive the process dying but not the OS.

        A store found damaged (:class:`StoreCorruptError`, by this write or an earlier
        statement) is not written to again."""
        with self._lock:
            self._refuse_if_damaged()
            try:
                if durable:
                    self._conn.execute("PRAGMA synchronous = FULL")
                try:
                    with self._transaction() as conn:
                        yield conn
                finally:
                    if durable:
                        with contextlib.suppress(sqlite3.Error):
                            self._conn.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.DatabaseError as exc:
                self._damage(exc)
                raise

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
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
            self._refuse_if_damaged()
            try:
                self._conn.execute(sql, params)
            except sqlite3.DatabaseError as exc:
                self._damage(exc)
                raise

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of one query, read under the thread lock (also once the store was found
        damaged: a read changes nothing, and what is not damaged can still be read)."""
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                self._damage(exc)
                raise
