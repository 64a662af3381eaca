"""Grouped record commits behind a kill-safe journal.

Private to :mod:`pytest_benchsdk.store`. Committing each record on its own costs ~20 µs (the
largest cost per iteration of a fast benchmark); a :class:`RecordJournal` lets
:class:`~pytest_benchsdk.store.ResultStore` commit records in groups instead, without ever
holding an accepted record only in memory: each record is appended (one ``write(2)``) to a
journal file beside the store before :meth:`ResultStore.add_record` returns, and the journal
is emptied once its group is committed. A process killed in between (SIGKILL, OOM) leaves the
journal behind; the next writable open of the store (a session, ``--bench-resubmit``, the
store CLI) commits what it holds (:func:`replay_journals`). The write is in the kernel once it
returns, so a dead process loses nothing; like the store's own ``synchronous = NORMAL``
commits, an OS crash may drop the newest records.

A live session holds an exclusive ``flock`` on its journal (released by the kernel when the
process dies, however it dies): a journal whose lock can be taken belongs to no one and is
replayed; a locked one is another session's and is left alone. Without ``fcntl`` (Windows) no
journal is made and each record commits on its own, as before.

A journal line is ``[run_id, participant, task_index, status, received_at, log_lines]`` as
JSON, a tab, and the record's stored JSON text as it is (JSON text holds no raw tab or line
break, and writing it inside the line's JSON would escape every quote of it again: the
earlier ``[run_id, participant, task_index, status, wire, received_at, log_lines]`` lines are
still replayed). A torn last line (its record's JSON cut short) is skipped. Replaying a line
whose record the store already holds unchanged does nothing, so a journal replayed twice (or
one whose group was committed just before the kill) adds nothing twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_benchsdk.store._connection import compact_json, now_iso

if sys.platform != "win32":
    import fcntl

__all__ = [
    "JOURNAL_INFIX",
    "GroupTimer",
    "RecordJournal",
    "RecordRow",
    "journal_lines",
    "replay_journals",
]

#: A journal's name: the store file's name, this infix, a random token.
JOURNAL_INFIX: Final = "-journal-"
#: A group commits once it holds this many records, or this many bytes of journal, or when
#: this many seconds have passed since the last commit (so a slow run commits every record at
#: once, as before, and a fast one in groups). A commit costs about a millisecond whatever
#: its size (most of it the pages it writes to the WAL again, and their checkpoints): at
#: 20,000 no-op iterations, groups of 0.05 s took 0.26-0.39 s of commits, these 0.15 s.
GROUP_RECORDS: Final = 2048
GROUP_BYTES: Final = 512 * 1024
GROUP_SECONDS: Final = 0.2

#: ``(run_id, participant, task_index, status, wire, received_at)`` and the log lines.
RecordRow = tuple[str, str, int, str, str, str]


class RecordJournal:
    """The records of one :class:`ResultStore` accepted but not yet committed: in memory (for
    the group commit) and in the journal file (for the next open, if this process dies)."""

    def __init__(self, store_path: Path, fd: int, path: Path) -> None:
        self.store_path = store_path
        self.path = path
        self._fd = fd
        self.rows: list[RecordRow] = []
        #: Run ids known to be in the store (checked once each).
        self.runs: set[str] = set()
        self.logs: list[tuple[str, str, str]] = []
        self._bytes = 0
        self._committed_at = -GROUP_SECONDS  # the first record commits at once

    @classmethod
    def open(cls, store_path: Path) -> RecordJournal | None:
        """A new, locked journal beside ``store_path``; None where journals cannot be kept
        (no ``fcntl``, or the directory refuses the file: records then commit one by one)."""
        if sys.platform == "win32":
            return None
        path = store_path.with_name(f"{store_path.name}{JOURNAL_INFIX}{uuid.uuid4().hex[:16]}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return cls(store_path, fd, path)

    def append(self, row: RecordRow, log_lines: Sequence[str]) -> bool:
        """Journal one record (in the kernel when this returns); whether its group is due."""
        run_id, participant, task_index, status, wire, received_at = row
        head = compact_json([run_id, participant, task_index, status, received_at, list(log_lines)])
        data = f"{head}\t{wire}\n".encode("utf-8", "surrogatepass")
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError:
            # A full disk, say: no torn line is left behind for a replay to skip, and the
            # caller commits the record (and the group) to the store directly instead.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._bytes)
            raise
        self.rows.append(row)
        if log_lines:
            self.logs.extend((run_id, participant, text) for text in log_lines)
        self._bytes += len(data)
        return (
            len(self.rows) >= GROUP_RECORDS
            or self._bytes >= GROUP_BYTES
            or time.monotonic() - self._committed_at >= GROUP_SECONDS
        )

    def hold(self, row: RecordRow, log_lines: Sequence[str]) -> None:
        """Keep a record in memory only (its journal line could not be written), for the
        group commit that follows at once."""
        self.rows.append(row)
        if log_lines:
            self.logs.extend((row[0], row[1], text) for text in log_lines)

    def committed(self) -> None:
        """The group is in the store: empty the journal."""
        os.ftruncate(self._fd, 0)
        self.rows.clear()
        self.logs.clear()
        self._bytes = 0
        self._committed_at = time.monotonic()

    def close(self, *, keep: bool) -> None:
        """Release the journal; ``keep``: leave the file (records not committed) for the next
        open of the store to replay."""
        if self._fd < 0:
            return  # closed already (a second close must not close a reused descriptor)
        if not keep:
            with contextlib.suppress(OSError):
                self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1


def _orphans(store_path: Path) -> list[Path]:
    prefix = f"{store_path.name}{JOURNAL_INFIX}"
    try:
        names = os.listdir(store_path.parent)
    except OSError:
        return []
    return sorted(store_path.parent / name for name in names if name.startswith(prefix))


def journal_lines(data: bytes) -> list[list[Any]]:
    """The journal's lines as ``[run_id, participant, task_index, status, wire, received_at,
    log_lines]``; a torn last line (its ``add_record`` never returned) is left out."""
    out = []
    for raw in data.split(b"\n"):
        try:
            # (A kill can cut a line inside a character: decoding fails like parsing.)
            head, tab, wire = raw.decode("utf-8", "surrogatepass").partition("\t")
            line = json.loads(head)
            if tab:
                json.loads(wire)  # whole, not cut short by the kill
        except ValueError:
            continue
        if not isinstance(line, list):
            continue
        if tab and len(line) == 6:
            out.append([*line[:4], wire, *line[4:]])
        elif not tab and len(line) == 7:
            out.append(line)
    return out


def replay_journals(
    store_path: Path,
    write: Callable[[Callable[[sqlite3.Connection], None]], None],
    upsert: str,
    log_insert: str,
) -> int:
    """Commit what dead sessions' journals beside ``store_path`` hold, then remove them;
    ``write`` runs a function in one write transaction. Returns the records replayed."""
    if sys.platform == "win32":
        return 0
    replayed = 0
    for path in _orphans(store_path):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue  # gone meanwhile: replayed by another process
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live session's journal
            with open(fd, "rb", closefd=False) as file:
                lines = journal_lines(file.read())
            replayed += _replay(lines, write, upsert, log_insert)
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)
    return replayed


def _replay(
    lines: list[list[Any]],
    write: Callable[[Callable[[sqlite3.Connection], None]], None],
    upsert: str,
    log_insert: str,
) -> int:
    count = 0
    runs: set[str] = set()

    def apply(conn: sqlite3.Connection) -> None:
        nonlocal count
        for run_id, participant, task_index, status, wire, received_at, logs in lines:
            runs.add(run_id)
            held = conn.execute(
                "SELECT wire FROM records WHERE run_id = ? AND participant = ? AND task_index = ?",
                (run_id, participant, task_index),
            ).fetchone()
            if held is not None and held[0] == wire:
                continue  # committed before the kill
            known = conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if known is None:
                continue  # the run was deleted since
            conn.execute(upsert, (run_id, participant, task_index, status, wire, received_at))
            conn.executemany(log_insert, [(run_id, participant, text) for text in logs])
            count += 1
        # A journal is left behind only by a session that did not end well (killed, or its
        # store failed, as on a full disk, before it could write the status): a run it left
        # `running` did not finish, and says so now.
        for run_id in sorted(runs):
            conn.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = ? "
                "WHERE run_id = ? AND status = 'running'",
                (now_iso(), run_id),
            )

    write(apply)
    return count


class GroupTimer:
    """Commits a quiet group :data:`GROUP_SECONDS` after it was armed, on one thread per store
    that waits between groups (a ``threading.Timer`` per group started a thread for every
    fifty-odd records: a fifth of a millisecond each)."""

    def __init__(self, commit: Callable[[], None]) -> None:
        self._commit = commit
        self._wake = threading.Condition()
        self._due: float | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="benchsdk-store-group", daemon=True)
        self._thread.start()

    def arm(self) -> None:
        """Commit within :data:`GROUP_SECONDS` from now, unless already armed (earlier)."""
        with self._wake:
            if self._due is None:
                # Read at call time: tests hold a group open by raising it.
                self._due = time.monotonic() + GROUP_SECONDS
                self._wake.notify()

    def close(self) -> None:
        """Stop the thread (what is still grouped is the store's to commit)."""
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while not self._closed:
                if self._due is None:
                    self._wake.wait()
                    continue
                delay = self._due - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                self._due = None
                # Never commit holding the condition: add_record arms it under the store's
                # lock, which the commit takes.
                self._wake.release()
                try:
                    self._commit()
                finally:
                    self._wake.acquire()
