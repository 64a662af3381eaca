"""File-system checks shared by the options (``--bench-json``) and the results store, and which
paths are bench files (the plugin asks before it loads anything else).

A leaf: it imports nothing of the package.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["creation_problem", "is_bench_path"]


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


def is_bench_path(path: Path, patterns: Iterable[str]) -> bool:
    """Whether ``path`` matches one of the ``bench_files`` globs (basename or full path)."""
    for pattern in patterns:
        target = str(path) if "/" in pattern or "\\" in pattern else path.name
        if fnmatch.fnmatch(target, pattern) or (
            "/" in pattern and fnmatch.fnmatch(str(path), f"*/{pattern}")
        ):
            return True
    return False
