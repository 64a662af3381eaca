"""File-system checks shared by the options (``--bench-json``) and the results store, which
paths are bench files (the plugin asks before it loads anything else), and writing an output
file whole or not at all.

A leaf: it imports nothing of the package.
"""

from __future__ import annotations

import fnmatch
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

__all__ = ["creation_problem", "is_bench_path", "write_atomically"]


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


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the whole new one,
    never a fragment: written next to it (``.NAME.<pid>-<random>.partial``), flushed to disk,
    then moved in place. On any failure (a full disk, a file-size limit, Ctrl-C) the partial file is
    removed, the old file stays as it was, and the error goes on to the caller. ``mode``
    (e.g. ``0o600`` for credentials) is the new file's mode from its creation on, whatever
    the umask, so no other user can read it even for a moment."""
    # One partial file per writer: two processes refreshing the same login at once must not
    # write into (or move) each other's half-written file.
    partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
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
