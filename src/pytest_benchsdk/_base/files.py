"""File-system checks shared by the options (``--bench-json``) and the results store, which
paths are bench files (the plugin asks before it loads anything else), and writing a file whole
or not at all.

Every whole-or-nothing writer (output files, exports, the HTML report, credentials, a
recovered store) writes to a *partial file* beside its target, ``.NAME.<pid>-<random>.partial``,
and moves it in place when it is whole. A writer killed on the way (SIGKILL, a power cut)
cannot remove its partial file: the next writer of the same target removes those whose
process is gone (:func:`remove_abandoned_partials`).

A leaf: it imports nothing of the package.
"""

from __future__ import annotations

import fnmatch
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "creation_problem",
    "is_bench_path",
    "partial_path",
    "publish_new",
    "remove_abandoned_partials",
    "write_atomically",
]

#: What SQLite keeps beside a database file (a recovered store is written as a partial file).
_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def creation_problem(path: Path) -> str | None:
    """Why a file that does not exist yet cannot be created at *path* (None when it can, as
    far as can be told without writing): its nearest existing parent is not a directory, or
    cannot be written. Creates nothing."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create its directory: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write in {parent} (permission denied or read-only)"
    return None


def partial_path(path: Path) -> Path:
    """Where a whole-or-nothing writer of ``path`` writes first: beside it, hidden, named after
    the writing process, one per writer (two processes refreshing the same login at once must
    not write into, or move, each other's half-written file)."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")


def _process_is_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs (asked with signal 0, which delivers nothing). Where
    that cannot be asked (not POSIX: Windows would take it as Ctrl-C), never."""
    if pid == os.getpid() or os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it runs
        return False
    return False


def remove_abandoned_partials(path: Path) -> list[Path]:
    """Remove the partial files of ``path`` (and a partial store's ``-wal``/``-shm``) whose
    writing process is gone: what a killed writer left. A live process's partial file (a
    writer at work now) is left alone. Returns what was removed."""
    pattern = re.compile(
        rf"\.{re.escape(path.name)}\.(\d+)-[0-9a-f]+\.partial(" + "|".join(_SIDE_FILES) + ")"
    )
    removed: list[Path] = []
    try:
        candidates = [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
    except OSError:  # no directory yet, or not readable: nothing of ours is there
        return removed
    for candidate in sorted(candidates):
        match = pattern.fullmatch(candidate.name)
        if match is None or not _process_is_gone(int(match.group(1))):
            continue
        try:
            candidate.unlink()
        except FileNotFoundError:  # another writer removed it first
            continue
        except OSError:  # not ours to remove (permissions): it stays, as before
            continue
        removed.append(candidate)
    return removed


def publish_new(partial: Path, path: Path) -> None:
    """Move the finished ``partial`` to ``path``, which must not exist: never over a file
    (:class:`FileExistsError` if one appeared meanwhile; ``partial`` is then left)."""
    try:
        os.link(partial, path)  # fails if path exists: no window to clobber a file
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links
        if path.exists():
            raise FileExistsError(path) from None
        os.replace(partial, path)
        return
    partial.unlink()


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the whole new one,
    never a fragment: written next to it (``.NAME.<pid>-<random>.partial``), flushed to disk,
    then moved in place. On any failure (a full disk, a file-size limit, Ctrl-C) the partial
    file is removed, the old file stays as it was, and the error goes on to the caller; the
    partial files of earlier writers that were killed are removed first. ``mode`` (e.g.
    ``0o600`` for credentials) is the new file's mode from its creation on, whatever the
    umask, so no other user can read it even for a moment."""
    remove_abandoned_partials(path)
    partial = partial_path(path)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        fd = os.open(partial, flags, 0o666 if mode is None else mode)
        if mode is not None:
            os.fchmod(fd, mode)  # the umask may have taken bits away; never adds any
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def is_bench_path(path: Path, patterns: Iterable[str]) -> bool:
    """Whether ``path`` matches one of the ``bench_files`` globs (basename or full path)."""
    for pattern in patterns:
        target = str(path) if "/" in pattern or "\\" in pattern else path.name
        if fnmatch.fnmatch(target, pattern) or (
            "/" in pattern and fnmatch.fnmatch(str(path), f"*/{pattern}")
        ):
            return True
    return False
