"""Public benchmark suites' shapes, run unchanged with their projects' own command lines
(issue 47, "Done when"): cattrs (pytest-benchmark's options in the ini's ``addopts``, save then
compare), markdown-it-py (a conftest implementing pytest-benchmark's hooks, ``bench_*.py``
test modules, CI's options and JSON for github-action-benchmark) and yarl (written for
pytest-codspeed, ``--numprocesses=auto`` in ``addopts``, CI's ``--codspeed``). The shapes are
copies in ``shapes/`` (see its README), not the projects; ``benchmarks/side_by_side.py`` runs
the projects themselves.

Green, measured, and the JSON readable by github-action-benchmark's reader and by
``pytest-benchmark compare`` (when its CLI is at hand).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers.pytest_benchmark import extract_pytest_result, pytest_benchmark_cli

SHAPES = Path(__file__).resolve().parent / "shapes"


def _shape(pytester: pytest.Pytester, name: str) -> Path:
    shutil.copytree(SHAPES / name, pytester.path, dirs_exist_ok=True)
    return pytester.path


def _readable(path: Path, tests: list[str]) -> dict[str, Any]:
    """A pytest-benchmark JSON file as github-action-benchmark and pytest-benchmark read it:
    one series per test, named by its ``fullname``."""
    text = path.read_text()
    entries = extract_pytest_result(text)
    assert sorted(e["name"] for e in entries) == sorted(tests)
    assert all(e["value"] > 0 and e["unit"] == "iter/sec" for e in entries)
    try:
        cli = pytest_benchmark_cli()
    except pytest.skip.Exception:
        cli = None
    if cli is not None:
        done = subprocess.run(
            [*cli, "compare", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=path.parent,
        )
        assert done.returncode == 0, done.stderr
        for test in tests:
            assert test.rpartition("::")[2] in done.stdout
    document: dict[str, Any] = json.loads(text)
    return document


# -- cattrs: pytest-benchmark's options in addopts ------------------------------------------

CATTRS_TESTS = [
    f"bench/test_primitives.py::test_unstructure_{kind}[{codec}]"
    for kind in ("ints", "strs")
    for codec in ("json", "repr")
]


def test_cattrs_shape_saves_then_compares(pytester: pytest.Pytester) -> None:
    if int(pytest.__version__.split(".")[0]) < 9:
        pytest.skip("the shape's config is pytest 9's [tool.pytest] table")
    where = _shape(pytester, "addopts")
    # `just bench`
    saved = pytester.runpytest_inprocess("bench", "--benchmark-save", "base")
    assert saved.ret == 0, saved.stdout.str()
    saved.assert_outcomes(passed=4)
    (base,) = where.glob(".benchmarks/*/0001_base.json")
    document = _readable(base, CATTRS_TESTS)
    assert all(b["stats"]["rounds"] >= 1 for b in document["benchmarks"])
    # `just bench-cmp`
    compared = pytester.runpytest_inprocess("bench", "--benchmark-compare")
    assert compared.ret == 0, compared.stdout.str()
    compared.assert_outcomes(passed=4)
    assert "0001_base" in compared.stdout.str()


# -- markdown-it-py: its conftest's hooks, bench_*.py modules, CI's options and JSON ---------

MDIT_TESTS = [
    f"benchmarking/bench_packages.py::test_{name}" for name in ("html", "json", "textwrap")
]


def test_markdown_it_shape_runs_its_bench_modules(pytester: pytest.Pytester) -> None:
    """tox's commands without CI's options: the conftest loads, the ``bench_*.py`` modules
    are test modules, and a file named on the command line is measured."""
    _shape(pytester, "hooks")
    packages = pytester.runpytest_inprocess(
        "benchmarking/bench_packages.py", "--bench-export", "pytest-benchmark:out.json"
    )
    assert packages.ret == 0, packages.stdout.str()
    packages.assert_outcomes(passed=3, skipped=1)
    document = _readable(pytester.path / "out.json", MDIT_TESTS)
    assert document["machine_info"]["shape"]["conftest"] == "benchmarking"
    assert {b["extra_info"]["version"] for b in document["benchmarks"]} >= {"stdlib"}
    core = pytester.runpytest_inprocess("benchmarking/bench_core.py")
    assert core.ret == 0, core.stdout.str()
    core.assert_outcomes(passed=1)


def test_markdown_it_shape_runs_its_ci_command(pytester: pytest.Pytester) -> None:
    where = _shape(pytester, "hooks")
    result = pytester.runpytest_inprocess(
        "benchmarking/bench_packages.py",
        "--benchmark-min-rounds", "20",
        "--benchmark-json", "bench-packages.json",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3, skipped=1)
    document = _readable(where / "bench-packages.json", MDIT_TESTS)
    assert document["machine_info"]["shape"]["conftest"] == "benchmarking"
    for bench in document["benchmarks"]:
        assert bench["group"] == "packages"
        assert bench["stats"]["rounds"] >= 20, bench["fullname"]


# -- yarl: written for pytest-codspeed, --numprocesses=auto in addopts -----------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        pytest.param([], id="ci-command"),
        pytest.param(["-n", "0"], id="with-n-0"),
    ],
)
def test_yarl_shape_runs_its_ci_command(pytester: pytest.Pytester, extra: list[str]) -> None:
    _shape(pytester, "codspeed")
    result = pytester.runpytest_subprocess("-vvvvv", "--codspeed", *extra)
    out = result.stdout.str()
    assert result.ret == 0, out + result.stderr.str()
    # Measured: each benchmark (the fixture's and the marker's) has its row of rounds.
    for name in ("test_url_split", "test_url_port", "test_url_host"):
        assert re.search(rf"^\s+{name}\s+1/1\s+[\d,]+ × \d+", out, re.MULTILINE), name
    # -vvvvv: a PASSED line holds one figure at most, never a record's JSON.
    assert not [line for line in out.splitlines() if "PASSED" in line and '{"' in line]
    # Its addopts' --numprocesses=auto: measured in the workers, and the group says so.
    assert ("side by side" in out) is (not extra), out
