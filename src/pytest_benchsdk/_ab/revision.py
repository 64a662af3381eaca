"""Side A's code: a git revision checked out into a temporary worktree.

:func:`check_out` resolves the revision (``main``, ``origin/main``, ``HEAD~1``, a sha) in the
repository that holds the session's root, and adds a detached worktree for it in the system's
temporary folder, beside a lease file naming the process that owns it. :meth:`Worktree.remove`
takes it away again (the session does, also after Ctrl-C); a worktree whose owner is gone (the
session was killed) is removed by the next :func:`check_out` in the same repository, through
:func:`remove_abandoned`.

Every failure is an :class:`ABError` whose message says what to do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

__all__ = ["ABError", "Worktree", "check_out", "remove_abandoned", "repository_root"]

#: The prefix of every A/B worktree's folder (in the temporary folder); the worktree itself is
#: its ``tree`` subfolder, the lease its ``owner.json``.
PREFIX: Final = "benchsdk-ab-"


class ABError(Exception):
    """An A/B session cannot run as asked (the message says why and what to do)."""


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
        )
    except FileNotFoundError:
        raise ABError("--bench-ab needs git, and there is no `git` on PATH") from None


def tracked(repository: Path, folder: Path) -> bool:
    """Whether git tracks a file under ``folder`` (what a worktree of a revision has; an
    ignored virtualenv's folders are not)."""
    done = _git(["ls-files", "-z", "--", str(folder)], repository)
    return done.returncode == 0 and bool(done.stdout)


def repository_root(path: Path) -> Path:
    """The top folder of the git working tree holding ``path``."""
    done = _git(["rev-parse", "--show-toplevel"], path)
    if done.returncode != 0:
        raise ABError(
            f"--bench-ab compares with a git revision, and {path} is not in a git repository"
        )
    return Path(done.stdout.strip()).resolve()


@attrs.frozen
class Worktree:
    """A checked-out revision: ``path`` is its tree, ``revision`` what the user named,
    ``sha`` the commit."""

    repository: Path
    path: Path
    revision: str
    sha: str

    @property
    def label(self) -> str:
        """``main (1a2b3c4)``."""
        short = self.sha[:7]
        return short if self.revision.startswith(short) else f"{self.revision} ({short})"

    def relative(self, path: Path) -> Path:
        """``path`` (a working-tree path, resolved) relative to the repository; :class:`ABError`
        where it lies outside (the revision cannot have it)."""
        try:
            return path.relative_to(self.repository)
        except ValueError:
            raise ABError(
                f"--bench-ab: {path} is outside the git repository {self.repository}"
            ) from None

    def counterpart(self, path: Path) -> Path | None:
        """The working tree's file ``path`` as the revision has it; None where it lacks it."""
        there = self.path / self.relative(path)
        return there if there.is_file() else None

    def folder_for(self, cwd: Path) -> Path:
        """The worktree's folder for the working tree's ``cwd``: the same place, or the
        worktree's root where ``cwd`` lies outside the repository or the revision lacks it."""
        try:
            there = self.path / cwd.relative_to(self.repository)
        except ValueError:
            return self.path
        return there if there.is_dir() else self.path

    def run_setup(self, command: str) -> None:
        """Run ``--bench-ab-setup``'s command in the tree (a shell command; it must exit 0)."""
        try:
            done = subprocess.run(
                command,
                shell=True,
                cwd=self.path,
                capture_output=True,
                text=True,
                check=False,
                timeout=3600,
            )
        except subprocess.TimeoutExpired:
            raise ABError(f"--bench-ab-setup {command!r} did not finish within an hour") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise ABError(
                f"--bench-ab-setup {command!r} exited {done.returncode} in {self.path}:\n{tail}"
            )

    def remove(self) -> None:
        """Remove the worktree, its folder and git's note of it (idempotent)."""
        _git(["worktree", "remove", "--force", str(self.path)], self.repository)
        shutil.rmtree(self.path.parent, ignore_errors=True)
        _git(["worktree", "prune"], self.repository)


def check_out(repository: Path, revision: str) -> Worktree:
    """A detached worktree of ``revision``."""
    if not revision.strip() or revision.startswith("-"):
        raise ABError(f"--bench-ab: {revision!r} is not a git revision; name one: main, HEAD~1")
    done = _git(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], repository)
    if done.returncode != 0:
        raise ABError(
            f"--bench-ab: git cannot resolve {revision!r} to a commit in {repository} "
            "(a branch, tag or sha such as main, origin/main, HEAD~1; fetch it first if it is "
            "a remote's)"
        )
    sha = done.stdout.strip()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{sha[:12]}-"))
    (folder / "owner.json").write_text(
        json.dumps({"pid": os.getpid(), "repository": str(repository), "revision": revision}),
        encoding="utf-8",
    )
    tree = folder / "tree"
    added = _git(["worktree", "add", "--detach", str(tree), sha], repository)
    if added.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise ABError(
            f"--bench-ab: git could not check out {revision} into a worktree: "
            f"{added.stderr.strip() or added.stdout.strip()}"
        )
    return Worktree(repository=repository, path=tree, revision=revision, sha=sha)


def remove_abandoned(repository: Path) -> list[Path]:
    """Remove the A/B worktrees of ``repository`` whose owning process is gone; their paths."""
    removed: list[Path] = []
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        lease = folder / "owner.json"
        try:
            owner = json.loads(lease.read_text(encoding="utf-8"))
            pid = int(owner["pid"])
            if Path(owner["repository"]) != repository:
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(pid):
            continue
        Worktree(repository, folder / "tree", str(owner.get("revision", "")), "").remove()
        removed.append(folder / "tree")
    if removed:
        _git(["worktree", "prune"], repository)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
