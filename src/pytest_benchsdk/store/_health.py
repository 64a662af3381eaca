"""A damaged results store: SQLite's integrity check, and salvage into a new file.

Private to :mod:`pytest_benchsdk.store`. :func:`check_store` runs SQLite's ``integrity_check``
on a store file (reading only); :func:`recover_store` copies what can still be read of a
damaged store into a NEW file, never in place: every table is read in rowid order, and where a
damaged page stops the read, the next readable row is searched for (doubling steps, then a
binary search back), so one bad page loses only the rows on it. The records that the
journals beside the store still hold (a session that found the store damaged keeps its
records there) are added, and a run whose own row is lost is rebuilt from its records (its
benchmark then reads ``unknown``). The damaged file, its ``-wal`` and its journals are left as
they were.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from pytest_benchsdk._base.files import partial_path, publish_new, remove_abandoned_partials
from pytest_benchsdk.store._connection import StoreError, corruption, dump_json, now_iso
from pytest_benchsdk.store._journal import JOURNAL_INFIX, journal_lines

__all__ = ["StoreCheck", "StoreRecovery", "check_store", "recover_store"]

#: The store's tables in the order they are copied (runs first: the others name them).
_TABLES = (
    "runs",
    "records",
    "log_lines",
    "scores",
    "run_analyses",
    "baselines",
    "outbox",
    "outbox_runs",
    "run_state",
)
#: Tables whose rows name a run (``run_id``): a run lost with its row is rebuilt for them.
_RUN_TABLES = ("records", "log_lines", "scores", "run_analyses", "outbox", "outbox_runs")


@attrs.frozen
class StoreCheck:
    """What :func:`check_store` found: ``problems`` is empty for a healthy store."""

    path: Path
    problems: tuple[str, ...]
    schema: int | None
    runs: int | None
    #: Journals beside the store (records not committed to it yet).
    journals: tuple[Path, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@attrs.frozen
class StoreRecovery:
    """What :func:`recover_store` copied: rows per table, the damaged parts it skipped per
    table, the records taken from journals and the runs rebuilt from their records."""

    source: Path
    target: Path
    copied: dict[str, int]
    damaged_parts: dict[str, int]
    journal_records: int
    journals: int
    rebuilt_runs: int
    #: Tables that could not be read at all (their message).
    unreadable: dict[str, str]
    #: The partial files a killed recover of the same target had left, removed first.
    abandoned: tuple[Path, ...] = ()


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened for reading only (with its ``-wal`` when its directory lets SQLite keep
    the ``-shm`` file beside it, else as an immutable file)."""
    if not path.is_file():
        raise StoreError(f"no results store at {path}")
    uri = path.resolve().as_uri()
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(uri + query, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}") from exc
        try:
            conn.execute("PRAGMA user_version").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            if query.endswith("immutable=1"):
                raise StoreError(f"cannot open {path}: {exc}") from exc
            continue
        except sqlite3.DatabaseError:
            return conn  # damaged from its first page on: the check says so
        except BaseException:
            conn.close()
            raise
        return conn
    raise AssertionError("unreachable")


def _journals(path: Path) -> tuple[Path, ...]:
    prefix = f"{path.name}{JOURNAL_INFIX}"
    try:
        names = os.listdir(path.parent)
    except OSError:
        return ()
    return tuple(sorted(path.parent / name for name in names if name.startswith(prefix)))


def check_store(path: Path, *, max_problems: int = 20) -> StoreCheck:
    """SQLite's ``integrity_check`` of the store at ``path`` (every page, every index), read
    only. Raises :class:`StoreError` when there is no file or it cannot be opened."""
    conn = _connect_read_only(path)
    schema = runs = None
    try:
        try:
            schema = int(conn.execute("PRAGMA user_version").fetchone()[0])
            found = [row[0] for row in conn.execute(f"PRAGMA integrity_check({max_problems})")]
            problems = tuple(text for text in found if text != "ok")
        except sqlite3.DatabaseError as exc:
            problems = (str(exc),)
        if not problems:
            with contextlib.suppress(sqlite3.DatabaseError):
                runs = int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    finally:
        conn.close()
    return StoreCheck(path, problems, schema, runs, _journals(path))


def _probe(src: sqlite3.Connection, table: str) -> Callable[[int], None]:
    sql = f'SELECT rowid FROM "{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1'

    def probe(rowid: int) -> None:
        src.execute(sql, (rowid,)).fetchall()  # raises where the pages are damaged

    return probe


_MAX_ROWID = 2**63 - 1


def _next_readable(probe: Callable[[int], None], after: int) -> int | None:
    """The smallest rowid above ``after`` from which the table reads again (None: nothing
    after ``after`` can be read): doubling steps until a read works, then back by halves."""
    step = 1
    while True:
        candidate = after + step
        if candidate > _MAX_ROWID:
            return None
        try:
            probe(candidate)
        except sqlite3.DatabaseError:
            step *= 2
            continue
        break
    failing, readable = after, candidate
    while readable - failing > 1:
        middle = (failing + readable) // 2
        try:
            probe(middle)
        except sqlite3.DatabaseError:
            failing = middle
        else:
            readable = middle
    return readable


def _salvage(
    src: sqlite3.Connection, table: str, columns: Sequence[str]
) -> tuple[Iterator[tuple[Any, ...]], list[int]]:
    """The table's readable rows as ``(rowid, *columns)`` in rowid order, and (filled while
    they are read) one entry per damaged part skipped."""
    skipped: list[int] = []
    names = ", ".join(f'"{name}"' for name in columns)
    sql = f'SELECT rowid, {names} FROM "{table}" WHERE rowid >= ? ORDER BY rowid'
    probe = _probe(src, table)

    def rows() -> Iterator[tuple[Any, ...]]:
        start = -_MAX_ROWID - 1
        while True:
            last: int | None = None
            try:
                for row in src.execute(sql, (start,)):
                    last = row[0]
                    yield row
                return
            except sqlite3.DatabaseError as exc:
                if corruption(exc) is None:
                    raise
            skipped.append(start)
            resume = last + 1 if last is not None else start
            following = _next_readable(probe, resume)
            if following is None:
                return
            start = following

    return rows(), skipped


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, bool]]:
    """``(name, is the rowid's alias)`` of each column."""
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    keys = [row for row in info if row[5]]
    alias = keys[0][1] if len(keys) == 1 and str(keys[0][2]).upper() == "INTEGER" else None
    return [(row[1], row[1] == alias) for row in info]


def _rebuild_runs(out: sqlite3.Connection) -> int:
    """A run row for every run id the other tables name but ``runs`` lacks (its row was on a
    damaged page): benchmark ``unknown``, its participants from its records, ``interrupted``."""
    missing: list[str] = []
    for table in _RUN_TABLES:
        missing.extend(
            row[0]
            for row in out.execute(
                f'SELECT DISTINCT run_id FROM "{table}" WHERE run_id NOT IN '
                "(SELECT run_id FROM runs)"
            )
        )
    missing = list(dict.fromkeys(missing))
    for run_id in missing:
        participants = [
            row[0]
            for row in out.execute(
                "SELECT participant FROM records WHERE run_id = ? GROUP BY participant "
                "ORDER BY MIN(rowid)",
                (run_id,),
            )
        ]
        started = out.execute(
            "SELECT MIN(received_at), MAX(received_at) FROM records WHERE run_id = ?", (run_id,)
        ).fetchone()
        out.execute(
            "INSERT INTO runs (run_id, benchmark_slug, benchmark_name, knobs, participants, "
            "config_snapshot, environment, dry_run, status, started_at, finished_at) "
            "VALUES (?, 'unknown', ?, '{}', ?, '{}', '{}', 0, 'interrupted', ?, ?)",
            (
                run_id,
                "(recovered: the run's own row could not be read)",
                dump_json(participants),
                started[0] or now_iso(),
                started[1],
            ),
        )
    return len(missing)


_UPSERT_RECORD = (
    "INSERT INTO records (run_id, participant, task_index, status, wire, received_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, participant, task_index) DO UPDATE SET "
    "status = excluded.status, wire = excluded.wire, received_at = excluded.received_at"
)


def _take_journals(out: sqlite3.Connection, journals: Sequence[Path]) -> int:
    """Add the records the journals hold (read only: they stay beside the damaged store)."""
    count = 0
    for path in journals:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for run_id, participant, task_index, status, wire, received_at, logs in journal_lines(data):
            held = out.execute(
                "SELECT wire FROM records WHERE run_id = ? AND participant = ? AND task_index = ?",
                (run_id, participant, task_index),
            ).fetchone()
            if held is not None and held[0] == wire:
                continue
            out.execute(
                _UPSERT_RECORD, (run_id, participant, task_index, status, wire, received_at)
            )
            out.executemany(
                "INSERT INTO log_lines (run_id, participant, line) VALUES (?, ?, ?)",
                [(run_id, participant, text) for text in logs],
            )
            count += 1
    return count


def _fold_wal(path: Path) -> None:
    """Make ``path`` hold everything on its own: its write-ahead log checkpointed into it
    and emptied (SQLite removes it when the last connection closes; this makes sure)."""
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    for side in (wal, Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            side.unlink()


def recover_store(source: Path, target: Path) -> StoreRecovery:
    """Copy what can be read of the store at ``source`` (and of the journals beside it) into
    the new store ``target``; ``source`` is only read. Raises :class:`StoreError` when
    ``target`` exists (or is ``source``), when there is no ``source``, and when not even its
    list of tables can be read.

    The copy is made in a partial file beside ``target`` and moved there when it is whole and
    checked: ``target`` never exists half-made, also when the command is killed (the next
    recover removes what a killed one left: :attr:`StoreRecovery.abandoned`)."""
    from pytest_benchsdk.store._results import ResultStore

    wal = Path(f"{target}-wal")
    if target.exists() or (wal.exists() and wal.stat().st_size > 0):
        same = source.exists() and target.exists() and os.path.samefile(source, target)
        raise StoreError(
            f"{target} is the damaged store itself: recover never writes in place; give a "
            "new file's path"
            if same
            else f"{target} exists: recover writes a new file only; give a path that does not exist"
        )
    abandoned = tuple(remove_abandoned_partials(target))
    final_target = target
    target = partial_path(final_target)
    src = _connect_read_only(source)
    created = False
    try:
        try:
            present = {
                row[0] for row in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot read the list of tables of {source} ({exc}): nothing can be salvaged "
                "by this command; the sqlite3 shell's .recover may get more back"
            ) from exc
        # The schema, the file's permissions (owner only) and WAL: as any new store.
        ResultStore(target).close()
        created = True
        out = sqlite3.connect(target, isolation_level=None)
        try:
            copied: dict[str, int] = {}
            damaged: dict[str, int] = {}
            unreadable: dict[str, str] = {}
            out.execute("BEGIN IMMEDIATE")
            for table in _TABLES:
                if table not in present:
                    continue
                try:
                    source_columns = {name for name, _ in _columns(src, table)}
                except sqlite3.DatabaseError as exc:
                    unreadable[table] = str(exc)
                    continue
                wanted = [(n, a) for n, a in _columns(out, table) if n in source_columns]
                names = [name for name, _ in wanted]
                has_alias = any(alias for _, alias in wanted)
                columns = names if has_alias else ["rowid", *names]
                marks = ", ".join("?" for _ in columns)
                insert = f'INSERT OR IGNORE INTO "{table}" ({", ".join(columns)}) VALUES ({marks})'
                rows, skipped = _salvage(src, table, names)
                count = 0
                try:
                    for row in rows:
                        values = row[1:] if has_alias else row
                        count += out.execute(insert, values).rowcount
                except sqlite3.DatabaseError as exc:
                    unreadable[table] = str(exc)
                copied[table] = count
                if skipped:
                    damaged[table] = len(skipped)
            journals = _journals(source)
            from_journals = _take_journals(out, journals)
            rebuilt = _rebuild_runs(out)
            out.execute("COMMIT")
        except BaseException:
            if out.in_transaction:
                out.execute("ROLLBACK")
            raise
        finally:
            out.close()
    except BaseException:
        if created:  # no half-made store is left behind
            for leftover in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
                with contextlib.suppress(OSError):
                    leftover.unlink()
        raise
    finally:
        src.close()
    try:
        # The copy is checked as any store is when it is opened; runs a killed session left
        # running are marked interrupted now. Closing it folds its WAL into the file.
        ResultStore(target).close()
        _fold_wal(target)
        publish_new(target, final_target)
    except BaseException as exc:
        for leftover in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
            with contextlib.suppress(OSError):
                leftover.unlink()
        if isinstance(exc, FileExistsError):
            raise StoreError(
                f"{final_target} was created by something else while recover ran: nothing "
                "was written there; give a path that does not exist"
            ) from None
        raise
    return StoreRecovery(
        source=source,
        target=final_target,
        copied=copied,
        damaged_parts=damaged,
        journal_records=from_journals,
        journals=len(journals),
        rebuilt_runs=rebuilt,
        unreadable=unreadable,
        abandoned=abandoned,
    )
