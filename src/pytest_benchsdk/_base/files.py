"""File-system checks shared by the options (``--bench-json``) and the results store.

A leaf: it imports nothing of the package.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["creation_problem"]


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
