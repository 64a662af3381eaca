"""The store CLI on a damaged store (issue 32, item 1): every command says the same one line
(what is wrong, what to do) instead of a traceback, exit status 2; ``store check`` runs
SQLite's integrity check, ``store recover`` copies what can be read into a new file. The
store is a real session's, with random bytes over the middle of the file."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.damage import PAGE, damage, digest
from helpers.sessions import bench, store_path, stored_runs
from pytest_benchsdk.cli import main
from pytest_benchsdk.store import _connection

BENCH = bench(
    'participants=[Participant("p1"), Participant("p2")], iterations=300',
    """
    @define_task
    def task(task_index, measure, log):
        log("line " + "x" * 200)
        measure(value=10 + task_index % 7)
    """,
)


@pytest.fixture
def damaged(pytester: pytest.Pytester) -> tuple[Path, str]:
    """A store written by a real session, then damaged; and the run's id."""
    pytester.makepyfile(bench_x=BENCH)
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q")
    assert result.ret == 0, result.stdout.str()
    path = store_path(pytester)
    (run,) = stored_runs(path)
    # A third of its pages: the records' among them, wherever they lie.
    damage(path, length=48 * PAGE)
    return path, run.run_id


def _commands(path: Path, run_id: str, out: Path) -> list[list[str]]:
    return [
        ["runs"],
        ["show", run_id],
        ["export", run_id],
        ["export", run_id, "--format", "csv"],
        ["export", run_id, "--format", "gab"],
        ["report", "-o", str(out / "report.html")],
        ["history"],
        ["compare", run_id, run_id],
        ["baseline", "list"],
        ["baseline", "set", "main", run_id],
        ["merge", str(path), "-o", str(out / "merged.sqlite3")],
    ]


def _line(path: Path) -> str:
    return (
        f"pytest-benchsdk: error: the results store {path} is damaged (SQLite: *): nothing "
        f"more is written to it. See what is wrong with `pytest-benchsdk --store {path} store "
        f"check`; salvage what can be read into a new file with `pytest-benchsdk --store "
        f"{path} store recover -o NEW.sqlite3`"
    )


@pytest.mark.slow
@pytest.mark.parametrize("found", ["at-open", "by-a-read"])
def test_every_command_says_the_same_line_of_a_damaged_store(
    damaged: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    found: str,
) -> None:
    path, run_id = damaged
    commands = _commands(path, run_id, tmp_path)
    if found == "by-a-read":
        # As for a store larger than the check at open reads whole: its records and log
        # lines are checked by the reads that meet them (the commands that read records).
        monkeypatch.setattr(_connection, "FULL_CHECK_BYTES", 0)
        commands = [args for args in commands if args[0] in ("export", "merge")]
    before = digest(path)
    for args in commands:
        code = main(["--store", str(path), *args])
        captured = capsys.readouterr()
        assert code == 2, (args, captured)
        lines = captured.err.splitlines()
        assert len(lines) == 1, (args, captured.err)
        assert fnmatch.fnmatch(lines[0], _line(path)), (args, lines)
        assert digest(path) == before, args


@pytest.mark.slow
def test_a_command_in_its_own_process_prints_no_traceback(damaged: tuple[Path, str]) -> None:
    path, run_id = damaged
    done = subprocess.run(
        [sys.executable, "-m", "pytest_benchsdk", "--store", str(path), "show", run_id],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"pytest-benchsdk: error: the results store {path} is damaged")


@pytest.mark.slow
def test_store_check_and_recover(
    damaged: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = damaged
    before = digest(path)
    assert main(["--store", str(path), "store", "check"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: damaged (SQLite's integrity check):\n  ")
    assert out.endswith(
        "Nothing more is written to it. Copy what can be read of it into a new file:\n"
        f"  pytest-benchsdk --store {path} store recover -o NEW.sqlite3\n"
    )
    new = tmp_path / "new.sqlite3"
    assert main(["--store", str(path), "store", "recover", "-o", str(new)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"Recovered what could be read of {path} into {new} ({path} is left as it was):\n"
        "  runs: 1 row(s)\n  records: "
    )
    assert "damaged part(s) could not be read" in out
    assert (
        f"Use it: pytest-benchsdk --store {new} runs, or pytest --bench --bench-store {new}." in out
    )
    assert digest(path) == before
    # The new file is a healthy store every command reads, and a session writes to.
    assert main(["--store", str(new), "store", "check"]) == 0
    assert capsys.readouterr().out.startswith(f"{new}: ok (SQLite's integrity check found")
    assert main(["--store", str(new), "show", run_id]) == 0
    assert "Demo (demo)" in capsys.readouterr().out
    # Never in place, never over a file.
    for target in (path, new):
        assert main(["--store", str(path), "store", "recover", "-o", str(target)]) == 2
        assert "recover" in capsys.readouterr().err
    assert digest(path) == before
    assert main(["--store", str(tmp_path / "none.sqlite3"), "store", "check"]) == 2
    assert "no results store at" in capsys.readouterr().err


@pytest.mark.slow
def test_store_check_of_a_healthy_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench())
    assert pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-q").ret == 0
    done = subprocess.run(
        [sys.executable, "-m", "pytest_benchsdk", "store", "check"],
        capture_output=True,
        text=True,
        cwd=pytester.path,
        check=False,
        timeout=120,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        ".benchmarks/benchsdk.sqlite3: ok (SQLite's integrity check found no problem; "
        f"schema {_connection.SCHEMA_VERSION}, 1 run(s))\n"
    )
