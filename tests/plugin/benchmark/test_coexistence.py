"""With pytest-benchmark and pytest-codspeed installed (both are in the test extra, really
loaded by every session below), one setting makes the ``benchmark`` fixture and marker this
plugin's and switches the others off (issue 47, item 5); without it the session names that one
step. The suite sets ``BENCHSDK_BENCHMARK_FIXTURE=benchsdk`` for every inner session
(tests/conftest.py): the tests of the default delete it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.sessions import read_json

#: A suite written for pytest-benchmark, checking whose fixture it gets.
SUITE = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.002, min_rounds=3)


    def test_join(benchmark):
        print("FIXTURE", type(benchmark).__module__)
        assert benchmark(",".join, ["a", "b"]) == "a,b"


    def test_upper(benchmark):
        benchmark("ab".upper)
    """
)
#: pytest-benchmark's own options, and pytest-codspeed's, as a project's ini holds them.
THEIR_ADDOPTS = (
    "--benchmark-sort=fullname --benchmark-warmup=true --benchmark-warmup-iterations=5 "
    "--benchmark-group-by=fullname --codspeed-max-rounds=5"
)
BOTH = "pytest-benchmark and pytest-codspeed"


def _measured(path: Path) -> list[str]:
    """The tests with a successful record each in a ``--bench-json`` file, whichever runs
    (groups) they are in."""
    return sorted(
        p["participant"]
        for run in read_json(path)["benchmarks"]
        for p in run["participants"]
        if [r["status"] for r in p["records"]] == ["success"]
    )


def _advice(packages: str) -> str:
    return (
        f"benchsdk: the benchmark fixture and marker are left to {packages} (active); to "
        "measure them with pytest-benchsdk, set bench_benchmark_fixture = benchsdk in the ini, "
        f"or --bench-benchmark-fixture=benchsdk (this switches {packages} off for the session)"
    )


@pytest.mark.parametrize(
    ("blocked", "packages"),
    [
        ((), BOTH),
        (("-p", "no:codspeed"), "pytest-benchmark"),
        (("-p", "no:benchmark"), "pytest-codspeed"),
    ],
)
@pytest.mark.parametrize("quiet", [False, True])
def test_without_the_setting_the_session_names_the_one_step(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    blocked: tuple[str, ...],
    packages: str,
    quiet: bool,
) -> None:
    monkeypatch.delenv("BENCHSDK_BENCHMARK_FIXTURE")
    # (pytest-benchmark measures nothing in an xdist worker, and warns: this test may run in one.)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    args = ["-p", "no:cacheprovider", *blocked, *(["-q"] if quiet else [])]
    result = pytester.runpytest_inprocess(*args)
    text = result.stdout.str()
    # One line, naming whichever of the two are active, and nothing of -p no:<plugin>.
    assert text.count(_advice(packages)) == 1, text
    assert "-p no:" not in text
    if packages == "pytest-benchmark":
        # The fixture is pytest-benchmark's: it measures, and prints its table.
        result.assert_outcomes(passed=2)
        assert "Name (time in" in text


@pytest.mark.parametrize("where", ["ini", "option", "env"])
def test_the_setting_makes_the_fixture_this_plugins_and_switches_the_others_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.delenv("BENCHSDK_BENCHMARK_FIXTURE")
    pytester.makepyfile(test_suite=SUITE)
    ini = "bench_benchmark_fixture = benchsdk\n" if where == "ini" else ""
    pytester.makeini(f"[pytest]\naddopts = {THEIR_ADDOPTS}\n{ini}")
    args = ["-p", "no:cacheprovider", "-s", "--bench", "--bench-no-store", "--bench-json=out.json"]
    if where == "option":
        args.append("--bench-benchmark-fixture=benchsdk")
    if where == "env":
        monkeypatch.setenv("BENCHSDK_BENCHMARK_FIXTURE", "benchsdk")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "FIXTURE pytest_benchsdk._plugin.benchmark.fixture" in text
    # Measured here: a record per test in --bench-json.
    assert _measured(pytester.path / "out.json") == ["test_join", "test_upper"]
    # Nothing of theirs acts: no header of theirs, no table of pytest-benchmark's.
    assert "codspeed:" not in text
    assert not re.search(r"^benchmark: \d", text, re.M), text
    assert "Name (time in" not in text
    assert "benchsdk: the benchmark fixture and marker are left to" not in text


def test_their_fixtures_markers_and_hooks_are_gone(pytester: pytest.Pytester) -> None:
    # Switched off as -p no:benchmark -p no:codspeed would: pytest-benchmark's benchmark_weave
    # and pytest-codspeed's codspeed_benchmark fixtures are not there (pytest replays every
    # plugin registration to its fixture manager: the setting removes theirs), nor their
    # markers; the -v header says what was switched off.
    pytester.makepyfile(
        test_theirs=textwrap.dedent(
            """
            def test_weave(benchmark_weave):
                pass


            def test_codspeed(codspeed_benchmark):
                pass
            """
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "benchsdk: the benchmark fixture and marker are pytest-benchsdk's; pytest-benchmark "
            "and pytest-codspeed switched off for this session (bench_benchmark_fixture = "
            "benchsdk)",
            "*fixture 'benchmark_weave' not found",
            "*fixture 'codspeed_benchmark' not found",
        ]
    )
    markers = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--markers").stdout.str()
    assert "codspeed_benchmark" not in markers
    assert "pytest-benchmark's marker" in markers  # this plugin's line for `benchmark`


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("ini", "ERROR: bench_benchmark_fixture (ini): 'theirs' is not a choice; use one of "),
        ("env", "ERROR: BENCHSDK_BENCHMARK_FIXTURE (environment): 'theirs' is not a choice; "),
    ],
)
def test_a_value_that_is_no_choice_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str, message: str
) -> None:
    monkeypatch.delenv("BENCHSDK_BENCHMARK_FIXTURE")
    if where == "ini":
        pytester.makeini("[pytest]\nbench_benchmark_fixture = theirs\n")
    else:
        monkeypatch.setenv("BENCHSDK_BENCHMARK_FIXTURE", "theirs")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_the_option_wins_over_the_ini_and_the_ini_over_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # (as above)
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nbench_benchmark_fixture = auto\n")
    # The environment says benchsdk (tests/conftest.py), the ini auto: pytest-benchmark's.
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-s")
    assert "FIXTURE pytest_benchsdk" not in result.stdout.str()
    assert _advice(BOTH) in result.stdout.str()
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-s", "--bench-benchmark-fixture=benchsdk"
    )
    result.assert_outcomes(passed=2)
    assert "FIXTURE pytest_benchsdk" in result.stdout.str()


def test_a_codspeed_module_that_imports_its_type_runs_with_the_setting(
    pytester: pytest.Pytester,
) -> None:
    # pytest-codspeed stays installed (its module imports), its plugin is off: the fixture
    # and the marker alone (its convention: the whole body measured) are this plugin's.
    pytester.makepyfile(
        test_codspeed=textwrap.dedent(
            """
            from __future__ import annotations

            from typing import TYPE_CHECKING

            import pytest
            from pytest_codspeed import BenchmarkFixture

            if TYPE_CHECKING:
                from pytest_benchmark.fixture import BenchmarkFixture as Theirs


            @pytest.mark.benchmark(max_time=0.002, min_rounds=3)
            def test_fixture(benchmark: BenchmarkFixture) -> None:
                benchmark(sum, range(10))


            @pytest.mark.benchmark(max_time=0.002, min_rounds=3)
            def test_body() -> None:
                sum(range(10))


            def test_typed_for_checkers_only(benchmark: Theirs) -> None:
                benchmark(sum, range(10))
            """
        )
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--bench", "--bench-no-store", "--bench-json=out.json"
    )
    result.assert_outcomes(passed=3)
    measured = _measured(pytester.path / "out.json")
    assert measured == ["test_body", "test_fixture", "test_typed_for_checkers_only"]


@pytest.mark.slow
def test_the_exported_file_is_read_by_pytest_benchmark_compare(pytester: pytest.Pytester) -> None:
    # A session with both installed, this plugin's fixture: its pytest-benchmark export is
    # read by the real `pytest-benchmark compare`, and has the fields github-action-benchmark's
    # `pytest` reader maps.
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(f"[pytest]\naddopts = {THEIR_ADDOPTS}\n")
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--bench", "--bench-no-store",
        "--bench-export=pytest-benchmark:0001_out.json",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    path = pytester.path / "0001_out.json"
    for bench in json.loads(path.read_text())["benchmarks"]:
        stats = bench["stats"]
        assert bench["fullname"].startswith("test_suite.py::test_")
        assert min(stats["ops"], stats["mean"]) > 0
        assert stats["rounds"] >= 3
        assert stats["stddev"] >= 0
    done = subprocess.run(
        [sys.executable, "-m", "pytest_benchmark", "compare", str(path)],
        capture_output=True, text=True, timeout=120, check=False, cwd=pytester.path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in ("test_join", "test_upper"))


#: A project that spreads its tests with -n auto (its addopts, as pytest-codspeed suites do).
XDIST_INI = "[pytest]\naddopts = --numprocesses=auto --maxprocesses=2\n"


@pytest.mark.slow
def test_the_xdist_advice_works_where_addopts_hold_n_auto(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(XDIST_INI)
    base = ["-p", "no:cacheprovider", "--bench-no-store"]
    # Measured in the workers (as pytest-codspeed measures there); the note names -n 0.
    result = pytester.runpytest_subprocess(*base, "--bench", "--bench-json=side.json")
    result.assert_outcomes(passed=2)
    assert _measured(pytester.path / "side.json") == ["test_join", "test_upper"]
    line = next(line for line in result.stdout.lines if "side by side" in line)
    advised = re.search(r"\(pytest (--bench [^)]*)\)", line)
    assert advised is not None, line
    assert "-p no:xdist" not in line
    # The session it advises, run as written: no workers, the tests measured, no note.
    again = pytester.runpytest_subprocess(*base, *advised[1].split(), "--bench-json=out.json")
    again.assert_outcomes(passed=2)
    assert "side by side" not in again.stdout.str()
    assert _measured(pytester.path / "out.json") == ["test_join", "test_upper"]
    # What the advice used to say fails in such a project.
    refused = pytester.runpytest_subprocess(*base, "--bench", "-p", "no:xdist")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --numprocesses=auto" in refused.stderr.str()
