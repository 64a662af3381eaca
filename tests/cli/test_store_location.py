"""Where ``pytest-benchsdk`` finds the results store: the ``bench_store`` of the ini file pytest
would use (pytest.ini, pyproject.toml, tox.ini, setup.cfg, found from the current directory
upwards), relative to that file's directory as the plugin resolves it; ``--store`` before or
after any command wins. Real ini files, a real pytest session, the CLI's entry point
(``cli.main``) in this process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.sessions import bench, stored_runs

BENCH = bench(slug="located")

#: Each file pytest reads its options from, with ``bench_store`` set in it.
INI_FILES = {
    "pytest.ini": "[pytest]\nbench_store = results/b.sqlite3\n",
    "pyproject.toml": '[tool.pytest.ini_options]\nbench_store = "results/b.sqlite3"\n',
    "tox.ini": "[tox]\nenvlist = py\n\n[pytest]\nbench_store = results/b.sqlite3\n",
    "setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\nbench_store = results/b.sqlite3\n",
}


def _run(
    *args: str | os.PathLike[str], cwd: Path, module: str = "pytest_benchsdk"
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` in ``cwd``; the store CLI as ``cli.main`` in this process."""
    if module == "pytest_benchsdk":
        return cli(*args, cwd=cwd)
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def session_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store written by a real pytest session whose pytest.ini names it (relative), started
    from a subdirectory: the plugin resolves it against the ini file's directory."""
    project = tmp_path_factory.mktemp("session")
    (project / "pytest.ini").write_text(INI_FILES["pytest.ini"])
    (project / "bench_located.py").write_text(BENCH)
    (project / "sub").mkdir()
    done = _run(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:randomly",
        "..",
        cwd=project / "sub",
        module="pytest",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    store = project / "results" / "b.sqlite3"
    assert [run.benchmark_slug for run in stored_runs(store)] == ["located"]
    return store


@pytest.mark.slow
@pytest.mark.parametrize("ini_name", sorted(INI_FILES))
def test_runs_reads_bench_store_of_the_ini_file_from_a_subdirectory(
    tmp_path: Path, session_store: Path, ini_name: str
) -> None:
    (tmp_path / ini_name).write_text(INI_FILES[ini_name])
    (tmp_path / "results").mkdir()
    shutil.copyfile(session_store, tmp_path / "results" / "b.sqlite3")
    deeper = tmp_path / "a" / "b"
    deeper.mkdir(parents=True)
    done = _run("runs", cwd=deeper)
    assert done.returncode == 0, done.stderr
    assert "located" in done.stdout
    # Without the store the message names the path and where it came from.
    (tmp_path / "results" / "b.sqlite3").unlink()
    done = _run("runs", cwd=deeper)
    assert done.returncode == 2
    assert f"no results store at {tmp_path / 'results' / 'b.sqlite3'}" in done.stderr
    assert f"bench_store in {tmp_path / ini_name}" in done.stderr


def test_the_first_file_pytest_takes_wins_files_without_pytest_options_are_passed_over(
    tmp_path: Path, session_store: Path
) -> None:
    """As pytest: a tox.ini without [pytest] and a pyproject.toml without [tool.pytest…] in
    the current directory do not count; the parent's setup.cfg does."""
    (tmp_path / "setup.cfg").write_text(INI_FILES["setup.cfg"])
    (tmp_path / "results").mkdir()
    shutil.copyfile(session_store, tmp_path / "results" / "b.sqlite3")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "tox.ini").write_text("[tox]\nenvlist = py\n")
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')
    done = _run("runs", cwd=inner)
    assert done.returncode == 0, done.stderr
    assert "located" in done.stdout
    # A pytest.ini nearer, without bench_store: the default under ITS directory.
    (inner / "pytest.ini").write_text("[pytest]\n")
    done = _run("runs", cwd=inner)
    assert done.returncode == 2
    assert f"no results store at {inner / '.benchmarks' / 'benchsdk.sqlite3'}" in done.stderr


def test_store_before_or_after_the_command_wins_over_the_ini(
    tmp_path: Path, session_store: Path
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nbench_store = missing.sqlite3\n")
    shutil.copyfile(session_store, tmp_path / "given.sqlite3")
    run_id = stored_runs(tmp_path / "given.sqlite3")[0].run_id
    for args in (
        ["--store", "given.sqlite3", "runs"],
        ["--store=given.sqlite3", "runs"],
        ["runs", "--store", "given.sqlite3"],
        ["--store", "missing.sqlite3", "runs", "--store", "given.sqlite3"],
        ["--store", "given.sqlite3", "show", run_id[:8]],
        ["show", run_id[:8], "--store", "given.sqlite3"],
        ["--store", "given.sqlite3", "history", "located"],
        ["history", "--store", "given.sqlite3"],
        ["--store", "given.sqlite3", "store", "check"],
        ["store", "check", "--store", "given.sqlite3"],
        ["baseline", "set", "main", run_id[:8], "--store", "given.sqlite3"],
    ):
        done = _run(*args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        assert "located" in done.stdout or "given.sqlite3: ok" in done.stdout, (args, done.stdout)
    done = _run("--store", cwd=tmp_path)
    assert done.returncode == 2
    assert "--store: expected one argument" in done.stderr


def test_store_before_init_run_and_platform_as_a_shell_alias_puts_it(tmp_path: Path) -> None:
    alias = ["--store", "alias.sqlite3"]
    done = _run(*alias, "init", "project", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "project" / "bench_example.py").is_file()
    done = _run(*alias, "platform", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Usage: pytest-benchsdk platform" in done.stdout
    (tmp_path / "bench_located.py").write_text(BENCH)
    done = _run(*alias, "run", "bench_located.py", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [run.benchmark_slug for run in stored_runs(tmp_path / "alias.sqlite3")] == ["located"]
    # One after the file (as before) is the more specific and wins.
    done = _run(
        *alias, "run", "bench_located.py", "--store", "after.sqlite3", "--dry-run", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert len(stored_runs(tmp_path / "after.sqlite3")) == 1
    assert len(stored_runs(tmp_path / "alias.sqlite3")) == 1


def test_the_run_command_stores_where_the_ini_says(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(INI_FILES["pyproject.toml"])
    (tmp_path / "bench_located.py").write_text(BENCH)
    done = _run("run", "bench_located.py", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(stored_runs(tmp_path / "results" / "b.sqlite3")) == 1
    assert not (tmp_path / ".benchmarks").exists()
    done = _run("runs", cwd=tmp_path)
    assert "located" in done.stdout
