"""Damaged store files for the tests of issue 32's item 1: random bytes written over a real
store's pages, its header page (and the schema on it) left intact."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

__all__ = ["PAGE", "damage", "digest"]

#: SQLite's page size in the stores the project writes.
PAGE = 4096


def damage(
    path: Path, *, length: int = 16 * PAGE, start: int | None = None, seed: int = 32
) -> None:
    """Random bytes (seeded) over ``length`` bytes of ``path`` from ``start`` (default: the
    middle page), on page boundaries."""
    if start is None:
        start = (path.stat().st_size // 2) // PAGE * PAGE
    with open(path, "r+b") as file:
        file.seek(start)
        file.write(random.Random(seed).randbytes(length))


def digest(path: Path) -> str:
    """The file's bytes, as a hash: what a test compares to show nothing was written."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
