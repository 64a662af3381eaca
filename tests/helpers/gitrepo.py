"""Real git repositories for A/B sessions (``--bench-ab``): commands, and the worktrees a
session left."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=root,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def ab_worktrees(root: Path) -> list[str]:
    """The repository's worktrees other than the main one."""
    listing = git(root, "worktree", "list", "--porcelain")
    paths = [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")]
    return [p for p in paths if Path(p).resolve() != root.resolve()]
