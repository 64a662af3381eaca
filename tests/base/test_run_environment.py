"""Run environment: upstream trigger rules, git fallbacks, wire forms."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from pytest_benchsdk._base.runenv import (
    RunEnvironment,
    Trigger,
    collect_run_environment,
    node_arch,
    node_platform,
    resolve_trigger,
)

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    assert GIT is not None
    out = subprocess.run(
        [GIT, *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "feature/x")
    (repo / "f.txt").write_text("x")
    _git(repo, "add", "f.txt")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


# --- trigger: upstream §3.9 rules and §9.3 runner.test.ts cases ---------------------------------


def test_trigger_schedule_event() -> None:
    trigger = resolve_trigger({"GITHUB_EVENT_NAME": "schedule"})
    assert trigger.to_wire() == {"source": "schedule", "event": "schedule"}
    assert trigger.source == "schedule"


def test_trigger_platform_retrigger() -> None:
    trigger = resolve_trigger(
        {
            "BENCH_TRIGGER_SOURCE": "platform-retrigger",
            "BENCH_TRIGGER_REQUESTED_BY": "acme",
            "BENCH_TRIGGER_REQUEST_ID": "req-1",
            "GITHUB_EVENT_NAME": "workflow_dispatch",
        }
    )
    assert trigger.to_wire() == {
        "source": "platform-retrigger",
        "event": "workflow_dispatch",
        "requestedBy": "acme",
        "requestId": "req-1",
    }


def test_trigger_blanks_are_manual() -> None:
    trigger = resolve_trigger(
        {"GITHUB_EVENT_NAME": "  ", "BENCH_TRIGGER_SOURCE": "", "BENCH_TRIGGER_REQUEST_ID": " "}
    )
    assert trigger.to_wire() == {"source": "manual"}
    assert trigger == Trigger("manual")


def test_trigger_nothing_set_is_manual() -> None:
    assert resolve_trigger({}).to_wire() == {"source": "manual"}


def test_trigger_values_are_trimmed_like_javascript() -> None:
    trigger = resolve_trigger(
        {
            "BENCH_TRIGGER_SOURCE": "\ufeff api \n",
            "BENCH_TRIGGER_REQUESTED_BY": "\u00a0bob\u3000",
            # JS trim() keeps U+001F and U+0085; Python's strip() would remove them.
            "BENCH_TRIGGER_REQUEST_ID": "\x1fid\x85",
            "GITHUB_EVENT_NAME": "\tpush\r",
        }
    )
    assert trigger == Trigger("api", "push", "bob", "\x1fid\x85")


def test_trigger_source_falls_back_to_event() -> None:
    trigger = resolve_trigger({"GITHUB_EVENT_NAME": " push ", "BENCH_TRIGGER_SOURCE": " "})
    assert trigger.to_wire() == {"source": "push", "event": "push"}


def test_trigger_wire_round_trip() -> None:
    trigger = Trigger("platform-retrigger", "workflow_dispatch", "acme", "req-1")
    assert Trigger.from_wire(trigger.to_wire()) == trigger


# --- git sha / ref --------------------------------------------------------------------------------


def test_github_variables_win_over_git(tmp_path: Path) -> None:
    env = collect_run_environment(
        {"GITHUB_SHA": "abc123", "GITHUB_REF_NAME": "main", "GITHUB_REF": "refs/heads/main"},
        tmp_path,
    )
    assert env.git_sha == "abc123"
    assert env.git_ref == "main"


def test_github_ref_when_ref_name_missing(tmp_path: Path) -> None:
    env = collect_run_environment(
        {"GITHUB_SHA": "abc", "GITHUB_REF": "refs/pull/7/merge", "PATH": ""}, tmp_path
    )
    assert env.git_ref == "refs/pull/7/merge"


@needs_git
def test_git_fallback_in_a_repository(git_repo: Path) -> None:
    env = collect_run_environment({"PATH": os.environ.get("PATH", "")}, git_repo)
    assert env.git_sha == _git(git_repo, "rev-parse", "HEAD")
    assert env.git_sha is not None
    assert len(env.git_sha) == 40
    assert env.git_ref == "feature/x"


@needs_git
def test_git_fallback_from_a_subdirectory(git_repo: Path) -> None:
    sub = git_repo / "a" / "b"
    sub.mkdir(parents=True)
    env = collect_run_environment({"PATH": os.environ.get("PATH", "")}, sub)
    assert env.git_ref == "feature/x"


@needs_git
def test_empty_github_variables_fall_back_to_git(git_repo: Path) -> None:
    env = collect_run_environment(
        {"GITHUB_SHA": "", "GITHUB_REF_NAME": "", "GITHUB_REF": "", "PATH": os.environ["PATH"]},
        git_repo,
    )
    assert env.git_sha == _git(git_repo, "rev-parse", "HEAD")
    assert env.git_ref == "feature/x"


@needs_git
def test_detached_head_ref_is_head_like_upstream(git_repo: Path) -> None:
    _git(git_repo, "checkout", "-q", "--detach")
    env = collect_run_environment({"PATH": os.environ["PATH"]}, git_repo)
    assert env.git_ref == "HEAD"


@needs_git
def test_not_a_repository_gives_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    # git inherits the process environment; stop it from finding a repository above tmp_path.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    env = collect_run_environment({"PATH": os.environ["PATH"]}, plain)
    assert env.git_sha is None
    assert env.git_ref is None


@needs_git
def test_repository_without_commits_gives_none(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    _git(repo, "init", "-q")
    env = collect_run_environment({"PATH": os.environ["PATH"]}, repo)
    assert env.git_sha is None
    assert env.git_ref is None


@needs_git
def test_git_missing_from_path_gives_none(git_repo: Path, tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = collect_run_environment({"PATH": str(empty_bin)}, git_repo)
    assert env.git_sha is None
    assert env.git_ref is None


def test_missing_directory_gives_none(tmp_path: Path) -> None:
    env = collect_run_environment({"PATH": os.environ.get("PATH", "")}, tmp_path / "nope")
    assert env.git_sha is None
    assert env.git_ref is None


# --- interpreter / machine ------------------------------------------------------------------------


def test_interpreter_and_machine_fields(tmp_path: Path) -> None:
    env = collect_run_environment({"GITHUB_SHA": "s", "GITHUB_REF": "r"}, tmp_path)
    assert env.python_version == platform.python_version()
    assert env.python_version.count(".") == 2
    assert env.implementation == platform.python_implementation()
    assert env.machine == platform.machine()
    assert env.platform == node_platform(sys.platform)
    if sys.platform.startswith("linux"):
        assert env.platform == "linux"
    if platform.machine() in ("x86_64", "AMD64") and sys.maxsize > 2**32:
        assert env.arch == "x64"


@pytest.mark.parametrize(
    ("machine", "bits", "arch"),
    [
        ("x86_64", 64, "x64"),
        ("AMD64", 64, "x64"),
        ("aarch64", 64, "arm64"),
        ("arm64", 64, "arm64"),
        ("i686", 32, "ia32"),
        ("x86_64", 32, "ia32"),
        ("armv7l", 32, "arm"),
        ("ppc64le", 64, "ppc64"),
        ("s390x", 64, "s390x"),
        ("riscv64", 64, "riscv64"),
        ("loongarch64", 64, "loong64"),
        ("Sparc64", 64, "sparc64"),
        ("", 64, "unknown"),
    ],
)
def test_node_arch(machine: str, bits: int, arch: str) -> None:
    assert node_arch(machine, bits) == arch


@pytest.mark.parametrize(
    ("sys_platform", "expected"),
    [
        ("linux", "linux"),
        ("darwin", "darwin"),
        ("win32", "win32"),
        ("freebsd13", "freebsd"),
        ("sunos5", "sunos"),
        ("aix7", "aix"),
        ("cygwin", "cygwin"),
    ],
)
def test_node_platform(sys_platform: str, expected: str) -> None:
    assert node_platform(sys_platform) == expected


# --- wire forms -----------------------------------------------------------------------------------


def _env(**changes: object) -> RunEnvironment:
    base = RunEnvironment(
        git_sha="abc",
        git_ref="main",
        trigger=Trigger("schedule", "schedule"),
        python_version="3.11.7",
        implementation="CPython",
        platform="linux",
        arch="x64",
        machine="x86_64",
        hostname="box",
    )
    return attrs.evolve(base, **changes)  # type: ignore[arg-type]


def test_summary_run_block() -> None:
    assert _env().to_wire() == {
        "gitSha": "abc",
        "gitRef": "main",
        "triggeredBy": "schedule",
        "nodeVersion": "python-3.11.7",
        "platform": "linux",
        "arch": "x64",
        "pythonVersion": "3.11.7",
        "pythonImplementation": "CPython",
    }
    assert _env().trigger_to_wire() == {"source": "schedule", "event": "schedule"}


def test_summary_run_block_omits_unknown_git() -> None:
    wire = _env(git_sha=None, git_ref=None).to_wire()
    assert "gitSha" not in wire
    assert "gitRef" not in wire
    assert wire["triggeredBy"] == "schedule"


def test_dict_round_trip() -> None:
    env = _env(hostname=None, git_ref=None)
    assert RunEnvironment.from_dict(env.to_dict()) == env
    assert _env().to_dict()["trigger"] == {"source": "schedule", "event": "schedule"}


def test_only_documented_variables_are_read(tmp_path: Path) -> None:
    class Spy(dict[str, str]):
        seen: set[str]

        def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
            self.seen.add(key)
            return super().get(key, default)

        def __getitem__(self, key: str) -> str:
            self.seen.add(key)
            return super().__getitem__(key)

    spy = Spy(SECRET_API_KEY="bp_secret", PATH="")
    spy.seen = set()
    env = collect_run_environment(spy, tmp_path)
    assert spy.seen <= {
        "GITHUB_SHA",
        "GITHUB_REF_NAME",
        "GITHUB_REF",
        "GITHUB_EVENT_NAME",
        "BENCH_TRIGGER_SOURCE",
        "BENCH_TRIGGER_REQUESTED_BY",
        "BENCH_TRIGGER_REQUEST_ID",
        "PATH",
    }
    assert "bp_secret" not in repr(env.to_dict())
