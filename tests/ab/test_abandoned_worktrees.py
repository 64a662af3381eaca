"""Which leftover A/B worktrees a session removes: only its own repository's, of a process that
is gone (the real sessions are in ``tests/plugin/test_ab_sessions.py``; this is the rule, on
folders built here)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from pytest_benchsdk._ab.revision import PREFIX, remove_abandoned


def test_another_repositorys_worktree_and_an_unreadable_lease_are_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    repository = tmp_path / "repo"
    repository.mkdir()
    other = tmp_path / f"{PREFIX}other"
    (other / "tree").mkdir(parents=True)
    dead = 2**22 + 1  # above the largest pid Linux allows: no such process
    lease = {"pid": dead, "repository": str(tmp_path / "elsewhere"), "revision": "HEAD"}
    (other / "owner.json").write_text(json.dumps(lease))
    unreadable = tmp_path / f"{PREFIX}unreadable"
    (unreadable / "tree").mkdir(parents=True)
    (unreadable / "owner.json").write_text("{not json")
    assert remove_abandoned(repository) == []
    assert (other / "tree").is_dir()
    assert (unreadable / "tree").is_dir()
