"""``pytest-benchsdk init [DIR]``: the starter project runs as written (a real pytest session runs
the command its GitHub Actions workflow runs), and no existing file is ever overwritten."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_benchsdk import cli

WORKFLOW = Path(".github/workflows/benchmarks.yml")


def _init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(["init", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _workflow_command(project: Path) -> list[str]:
    """The ``pytest …`` command of the workflow's folded ``run: >`` step."""
    text = (project / WORKFLOW).read_text()
    found = re.search(r"- run: >\n((?:          .*\n)+)", text)
    assert found, text
    return shlex.split(" ".join(line.strip() for line in found.group(1).splitlines()))


@pytest.mark.slow
def test_the_scaffolded_project_runs_as_its_workflow_runs_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = tmp_path / "bench-project"
    status, out, err = _init(capsys, str(project))
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"wrote {project / 'bench_example.py'}",
        f"wrote {project / 'pytest.ini'}",
        f"wrote {project / WORKFLOW}",
        f"next: cd {project} && pytest --bench --bench-dry-run",
    ]
    command = _workflow_command(project)
    assert command[:3] == ["pytest", "--bench", "--bench-dry-run"]
    assert "--bench-html" in command
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHMARKS_PLATFORM")}
    done = subprocess.run(
        [sys.executable, "-m", *command, "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # 2 participants x (3 cold + 10 warm) iterations and 2 thresholds each, per phase.
    assert re.search(r"\b34 passed\b", done.stdout), done.stdout
    assert "Scores:" in done.stdout
    assert (project / "bench-report.html").stat().st_size > 10_000
    summary = (project / "bench-summary.md").read_text()
    assert "json" in summary
    assert "pickle" in summary
    # pytest.ini alone makes a bare `pytest` collect the benchmark.
    bare = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert "bench_example.py::task[json-cold-0]" in bare.stdout


def test_existing_files_are_never_overwritten(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "bench_example.py").write_text("# mine\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / WORKFLOW).write_text("# my workflow\n")
    status, out, err = _init(capsys, str(tmp_path))
    assert (status, out) == (2, "")
    assert err == (
        f"pytest-benchsdk init: error: refusing to overwrite {tmp_path / 'bench_example.py'}, "
        f"{tmp_path / WORKFLOW}; remove or rename it, or choose another directory\n"
    )
    assert (tmp_path / "bench_example.py").read_text() == "# mine\n"
    assert not (tmp_path / "pytest.ini").exists()


def test_an_existing_pytest_configuration_gets_the_lines_to_add(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    status, out, _ = _init(capsys, str(tmp_path))
    assert status == 0
    assert not (tmp_path / "pytest.ini").exists()
    assert (tmp_path / "pyproject.toml").read_text() == '[project]\nname = "mine"\n'
    assert f"{tmp_path / 'pyproject.toml'} already configures pytest; add these lines" in out
    assert '[tool.pytest.ini_options]\nbench = true\nbench_files = ["bench_*.py"]\n' in out
    (tmp_path / "bench_example.py").unlink()
    (tmp_path / "setup.cfg").write_text("[metadata]\n")
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / WORKFLOW).unlink()
    status, out, _ = _init(capsys, str(tmp_path))
    assert "[tool:pytest]\n" in out


def test_the_current_directory_by_default_and_bad_targets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status, out, _ = _init(capsys)
    assert status == 0
    assert out.splitlines()[-1] == "next: pytest --bench --bench-dry-run"
    assert (tmp_path / "bench_example.py").is_file()
    (tmp_path / "a-file").write_text("")
    status, _, err = _init(capsys, "a-file")
    assert (status, err) == (
        2,
        "pytest-benchsdk init: error: a-file exists and is not a directory\n",
    )
    status, out, _ = _init(capsys, "--help")
    assert status == 0
    assert out.startswith("usage: pytest-benchsdk init [-h] [DIR]")
