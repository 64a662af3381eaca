"""Side A's code, a git revision in a temporary worktree (``_ab/revision.py``), against a real
repository made here: which revision it resolves, where the working tree's files and folders
are in it, what it refuses and says, and that it leaves nothing behind. A/B sessions are in
``tests/plugin/ab/``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.gitrepo import ab_worktrees, git
from pytest_benchsdk._ab.revision import (
    PREFIX,
    ABError,
    Worktree,
    check_out,
    remove_abandoned,
    repository_root,
    tracked,
)
from pytest_benchsdk._ab.side_processes import compiled_files, import_folders, side_paths


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with two commits: the first has ``bench/bench_a.py`` and ``src/pkg``; the
    second adds ``bench/bench_new.py`` and ``tools/``. Worktrees go to this test's folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    root = tmp_path / "repo"
    (root / "bench").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "bench" / "bench_a.py").write_text("A = 1\n")
    (root / "src" / "pkg" / "__init__.py").write_text("")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    git(root, "tag", "v1")
    (root / "bench" / "bench_new.py").write_text("NEW = 1\n")
    (root / "tools").mkdir()
    (root / "tools" / "helper.py").write_text("")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "second")
    return root.resolve()


@pytest.fixture
def worktree(repository: Path) -> Iterator[Worktree]:
    checked = check_out(repository, "HEAD~1")
    yield checked
    checked.remove()


def test_a_revision_is_checked_out_detached_beside_its_lease(
    repository: Path, worktree: Worktree
) -> None:
    sha = git(repository, "rev-parse", "v1").strip()
    assert (worktree.revision, worktree.sha, worktree.repository) == ("HEAD~1", sha, repository)
    assert (worktree.path / "bench" / "bench_a.py").read_text() == "A = 1\n"
    assert not (worktree.path / "bench" / "bench_new.py").exists()
    assert worktree.path.parent.name.startswith(f"{PREFIX}{sha[:12]}-")
    lease = json.loads((worktree.path.parent / "owner.json").read_text())
    assert lease == {"pid": os.getpid(), "repository": str(repository), "revision": "HEAD~1"}
    assert [Path(p).resolve() for p in ab_worktrees(repository)] == [worktree.path.resolve()]
    assert worktree.label == f"HEAD~1 ({sha[:7]})"
    assert Worktree(repository, worktree.path, sha[:10], sha).label == sha[:7]


def test_removing_it_leaves_nothing_and_can_be_done_twice(
    repository: Path, worktree: Worktree
) -> None:
    worktree.remove()
    worktree.remove()
    assert not worktree.path.parent.exists()
    assert ab_worktrees(repository) == []


def test_the_working_trees_paths_are_found_in_the_revision(
    repository: Path, worktree: Worktree
) -> None:
    bench_a = repository / "bench" / "bench_a.py"
    assert worktree.relative(bench_a) == Path("bench/bench_a.py")
    assert worktree.counterpart(bench_a) == worktree.path / "bench" / "bench_a.py"
    # A file the revision lacks has no counterpart (the session says so, and runs B's file).
    assert worktree.counterpart(repository / "bench" / "bench_new.py") is None
    assert worktree.folder_for(repository / "bench") == worktree.path / "bench"
    # A folder the revision lacks, or one outside the repository: the worktree's root.
    assert worktree.folder_for(repository / "tools") == worktree.path
    assert worktree.folder_for(repository.parent) == worktree.path


def test_a_path_outside_the_repository_is_refused_with_where_it_is(
    repository: Path, worktree: Worktree
) -> None:
    outside = repository.parent / "bench_elsewhere.py"
    with pytest.raises(ABError) as refused:
        worktree.relative(outside)
    assert str(refused.value) == f"--bench-ab: {outside} is outside the git repository {repository}"
    with pytest.raises(ABError):
        worktree.counterpart(outside)


@pytest.mark.parametrize("revision", ["", "  ", "-x", "--all"])
def test_what_is_not_a_revision_is_refused_before_git_sees_it(
    repository: Path, revision: str
) -> None:
    with pytest.raises(ABError) as refused:
        check_out(repository, revision)
    assert str(refused.value) == (
        f"--bench-ab: {revision!r} is not a git revision; name one: main, HEAD~1"
    )


def test_a_revision_git_cannot_resolve_says_what_to_do(repository: Path) -> None:
    with pytest.raises(ABError) as refused:
        check_out(repository, "no-such-branch")
    assert str(refused.value) == (
        f"--bench-ab: git cannot resolve 'no-such-branch' to a commit in {repository} (a "
        "branch, tag or sha such as main, origin/main, HEAD~1; fetch it first if it is a "
        "remote's)"
    )
    # Nothing was left behind for it.
    assert list(Path(tempfile.gettempdir()).glob(f"{PREFIX}*")) == []


def test_a_worktree_git_cannot_add_is_reported_and_cleaned_up(
    repository: Path, worktree: Worktree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same folder name twice: mkdtemp is made to hand out the existing worktree's folder.
    monkeypatch.setattr(tempfile, "mkdtemp", lambda prefix: str(worktree.path.parent / "again"))
    (worktree.path.parent / "again" / "tree").mkdir(parents=True)
    (worktree.path.parent / "again" / "tree" / "occupied").write_text("")
    with pytest.raises(ABError) as refused:
        check_out(repository, "HEAD")
    assert str(refused.value).startswith(
        "--bench-ab: git could not check out HEAD into a worktree: "
    )
    assert not (worktree.path.parent / "again").exists()


def test_a_folder_outside_any_repository_is_said(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    with pytest.raises(ABError) as refused:
        repository_root(outside)
    assert str(refused.value) == (
        f"--bench-ab compares with a git revision, and {outside} is not in a git repository"
    )


def test_the_repository_root_of_a_folder_inside_it(repository: Path) -> None:
    assert repository_root(repository / "bench") == repository


def test_no_git_on_the_path_is_said(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repository / "nothing"))
    with pytest.raises(ABError, match="--bench-ab needs git, and there is no `git` on PATH"):
        repository_root(repository)


def test_a_setup_command_runs_in_the_tree_and_its_failure_says_how_it_ended(
    worktree: Worktree,
) -> None:
    worktree.run_setup("echo built > built.txt")
    assert (worktree.path / "built.txt").read_text().strip() == "built"
    with pytest.raises(ABError) as failed:
        worktree.run_setup("echo first; echo second >&2; exit 3")
    assert str(failed.value) == (
        f"--bench-ab-setup 'echo first; echo second >&2; exit 3' exited 3 in {worktree.path}:"
        "\nfirst\nsecond"
    )


def test_an_abandoned_worktree_of_this_repository_is_removed(repository: Path) -> None:
    left = check_out(repository, "v1")
    lease = left.path.parent / "owner.json"
    owner = json.loads(lease.read_text())
    lease.write_text(json.dumps({**owner, "pid": 2**22 + 1}))  # a process that is gone
    mine = check_out(repository, "HEAD")  # owned by this live process: kept
    try:
        assert remove_abandoned(repository) == [left.path]
        assert not left.path.parent.exists()
        assert [Path(p).resolve() for p in ab_worktrees(repository)] == [mine.path.resolve()]
    finally:
        mine.remove()


def test_what_git_tracks_is_a_sides_own_code(repository: Path) -> None:
    (repository / ".venv" / "lib").mkdir(parents=True)
    (repository / ".gitignore").write_text(".venv/\n")
    assert tracked(repository, repository / "tools")
    assert not tracked(repository, repository / ".venv")


def test_a_sides_import_path_puts_its_own_tree_first(repository: Path, worktree: Worktree) -> None:
    bench = repository / "bench"
    assert side_paths(repository, [bench], [Path("tools"), Path("missing")]) == [
        str(repository / "src"),
        str(repository),
        str(bench),
        str(repository / "tools"),
    ]
    # Side A: its own src/ and root; a folder only the working tree has is not added.
    assert side_paths(worktree.path, [worktree.path / "bench"], [Path("tools")]) == [
        str(worktree.path / "src"),
        str(worktree.path),
        str(worktree.path / "bench"),
    ]


def test_the_sessions_own_tracked_import_folders_are_each_sides(
    repository: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repository / ".venv" / "site").mkdir(parents=True)
    (repository / ".gitignore").write_text(".venv/\n")
    monkeypatch.setattr(
        "sys.path",
        [
            str(repository),
            str(repository / "tools"),
            str(repository / ".venv" / "site"),
            "/nowhere",
        ],
    )
    assert import_folders(repository) == [Path("tools")]


def test_compiled_modules_the_revision_would_lack_are_found(repository: Path) -> None:
    (repository / "src" / "pkg" / "_speed.so").write_text("")
    (repository / "pkg2").mkdir()
    (repository / "pkg2" / "__init__.py").write_text("")
    (repository / "pkg2" / "_fast.pyd").write_text("")
    (repository / "bench" / "notes.txt").write_text("")
    found = compiled_files([str(repository / "src"), str(repository)], repository)
    assert found == {"src/pkg/_speed.so", "pkg2/_fast.pyd"}
