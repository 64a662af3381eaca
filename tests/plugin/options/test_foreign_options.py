"""pytest-benchmark's and pytest-codspeed's options (issue 47, items 1 and 4): accepted on the
command line and in the ini's ``addopts`` (neither plugin is installed here, so this plugin
declares them), each mapped onto this plugin's settings.

The suites count rounds and compare a function with a much slower one; no figure is judged
against the wall clock.
"""

from __future__ import annotations

import json
import platform
import re
import textwrap

import pytest

from pytest_benchsdk._engine.rounds import KEPT_ROUNDS

SUITE = textwrap.dedent(
    """
    import pytest


    def work(n=200):
        return sum(range(n))


    def test_sum(benchmark):
        assert benchmark(work) == 19900


    @pytest.mark.parametrize("n", [10, 20])
    def test_param(benchmark, n):
        benchmark(work, n)


    def test_plain():
        assert True
    """
)

#: Short rounds: the sessions stay quick.
QUICK = ("--benchmark-max-time=0.02", "-p", "no:randomly", "-p", "no:cacheprovider")


def _machine() -> str:
    return "-".join(
        (
            platform.system(),
            platform.python_implementation(),
            ".".join(platform.python_version_tuple()[:2]),
            platform.architecture()[0],
        )
    )


def test_an_ini_addopts_with_benchmark_options_collects_and_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_b=SUITE)
    pytester.makeini(
        "[pytest]\naddopts = --benchmark-sort=fullname --benchmark-warmup=true "
        "--benchmark-warmup-iterations=5 --benchmark-group-by=fullname\n"
    )
    collected = pytester.runpytest_inprocess("--collect-only", "-q", *QUICK)
    assert collected.ret == pytest.ExitCode.OK
    assert "unrecognized arguments" not in collected.stderr.str()
    plain = pytester.runpytest_inprocess(*QUICK)
    plain.assert_outcomes(passed=4)
    measured = pytester.runpytest_inprocess("--bench", "--bench-no-store", *QUICK)
    measured.assert_outcomes(passed=4)
    out = measured.stdout.str()
    # --benchmark-group-by=fullname: each test is a benchmark of its own.
    assert "[by:test_b.py::test_sum]" in out
    assert "[by:test_b.py::test_param[10]]" in out


def test_min_rounds_and_json_on_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_b=SUITE)
    result = pytester.runpytest_inprocess(
        "--benchmark-min-rounds", "20", "--benchmark-json", "out.json", "--bench-no-store", *QUICK
    )
    result.assert_outcomes(passed=4)
    document = json.loads((pytester.path / "out.json").read_text())
    assert set(document) >= {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    assert len(document["benchmarks"]) == 3
    for entry in document["benchmarks"]:
        assert {"group", "name", "fullname", "params", "param", "extra_info", "options"} <= set(
            entry
        )
        stats = entry["stats"]
        assert stats["rounds"] >= 20
        # Every round up to KEPT_ROUNDS, else every k-th (a quiet machine fits more rounds in
        # the max time than a busy one).
        assert len(stats["data"]) == min(stats["rounds"], KEPT_ROUNDS)
        assert entry["options"]["min_rounds"] == 20


def test_the_marker_wins_over_the_session_rounds_settings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.benchmark(min_rounds=7, max_time=0)
        def test_marked(benchmark):
            benchmark(sum, range(10))

        def test_unmarked(benchmark):
            benchmark(sum, range(10))
        """
    )
    result = pytester.runpytest_inprocess(
        "--bench-rounds-min=25",
        "--bench-rounds-max-time=0",
        "--bench-export=pytest-benchmark:out.json",
        "--bench-no-store",
        *QUICK,
    )
    result.assert_outcomes(passed=2)
    rounds = {
        e["name"]: e["stats"]["rounds"]
        for e in json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    }
    assert rounds == {"test_marked": 7, "test_unmarked": 25}


def test_ini_rounds_settings_and_codspeed_max_rounds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_b=SUITE)
    pytester.makeini("[pytest]\nbench_rounds_min = 12\n")
    result = pytester.runpytest_inprocess(
        "--codspeed",
        "--codspeed-max-rounds=3",
        "--benchmark-json=out.json",
        "--bench-no-store",
        *QUICK,
    )
    result.assert_outcomes(passed=3, deselected=1)  # as pytest-codspeed: the benchmarks only
    assert "benchmarks" in result.stdout.str()  # --codspeed is --bench
    document = json.loads((pytester.path / "out.json").read_text())
    assert {e["stats"]["rounds"] for e in document["benchmarks"]} == {3}


def test_codspeed_warmup_time_is_the_warm_ups_limit(pytester: pytest.Pytester) -> None:
    # pytest-codspeed warms up for --codspeed-warmup-time seconds; pytest-benchmark's warm-up
    # (--bench-rounds-warmup) for up to max_time, then warmup_iterations: the setting carries
    # the time, so a 0.1 s warm-up is not a 1 s one (issue 47, side by side on yarl).
    pytester.makepyfile(
        test_w="""
        def test_settings(benchmark):
            benchmark(int)
            print("SETTINGS", benchmark.settings.warmup, benchmark.settings.warmup_time)
        """
    )
    result = pytester.runpytest_inprocess(
        "--codspeed", "--codspeed-warmup-time=0.1", "--bench-no-store", "-s", *QUICK
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SETTINGS True 0.1*"])
    plain = pytester.runpytest_inprocess("--bench", "--bench-rounds-warmup=on", "-s", *QUICK)
    plain.stdout.fnmatch_lines(["*SETTINGS True None*"])


SPEED = textwrap.dedent(
    """
    import os

    N = int(os.environ.get("WORK_N", "100"))

    def test_work(benchmark):
        benchmark(sum, range(N))
    """
)


def test_save_then_compare_through_pytest_benchmarks_storage(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_s=SPEED)
    saved = pytester.runpytest_inprocess("--benchmark-save", "base", *QUICK)
    saved.assert_outcomes(passed=1)
    path = pytester.path / ".benchmarks" / _machine() / "0001_base.json"
    assert path.is_file(), saved.stdout.str()
    document = json.loads(path.read_text())
    assert [e["fullname"] for e in document["benchmarks"]] == ["test_s.py::test_work"]
    assert "data" not in document["benchmarks"][0]["stats"]  # without --benchmark-save-data
    saved.stdout.fnmatch_lines([f"Saved benchmark data in: {path}"])
    # The gate passes (a second more per call would fail it), against the file found by its
    # number.
    same = pytester.runpytest_inprocess(
        "--benchmark-compare=0001", "--benchmark-compare-fail=mean:1", *QUICK
    )
    same.assert_outcomes(passed=1)
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["*Compared with 0001_base.json (pytest-benchmark*"])
    # 1000 times the work: min:5% fails the session; the bare flag finds the newest file.
    monkeypatch.setenv("WORK_N", "100000")
    slower = pytester.runpytest_inprocess(
        "--benchmark-compare", "--benchmark-compare-fail=min:5%", *QUICK
    )
    assert slower.ret == pytest.ExitCode.TESTS_FAILED, slower.stdout.str()
    slower.stdout.fnmatch_lines(["*Compared with 0001_base.json*", "*min:5%*"])
    # The next save is numbered after it, and the store keeps the baseline name too.
    again = pytester.runpytest_inprocess(
        "--benchmark-save", "next", "--benchmark-save-data", *QUICK
    )
    again.assert_outcomes(passed=1)
    second = pytester.path / ".benchmarks" / _machine() / "0002_next.json"
    assert "data" in json.loads(second.read_text())["benchmarks"][0]["stats"]
    by_name = pytester.runpytest_inprocess("--bench-compare=base", *QUICK)
    by_name.stdout.fnmatch_lines(["*Compared with baseline base*"])


def test_storage_elsewhere_and_autosave(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s=SPEED)
    result = pytester.runpytest_inprocess(
        "--benchmark-autosave", "--benchmark-storage=file://saved", *QUICK
    )
    result.assert_outcomes(passed=1)
    files = list((pytester.path / "saved" / _machine()).glob("0001_*.json"))
    assert len(files) == 1, result.stdout.str()
    # pytest-benchmark's name: <commit>_<UTC date>_<time> (no git here: "unversioned").
    assert files[0].name.startswith("0001_unversioned_")
    missing = pytester.runpytest_inprocess(
        "--benchmark-compare=0007", "--benchmark-storage=file://saved", *QUICK
    )
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--benchmark-compare=0007: no saved run matches*0001_*"])


def test_a_gate_without_a_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s=SPEED)
    result = pytester.runpytest_inprocess("--benchmark-compare-fail=min:5%", *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark-compare-fail requires a baseline*"])


@pytest.mark.parametrize(
    ("args", "passed", "deselected"),
    [
        (("--benchmark-only",), 3, 1),
        (("--benchmark-skip",), 1, 3),
        (("--benchmark-skip", "--bench"), 1, 3),
        (("--benchmark-only", "--benchmark-skip"), 3, 1),
    ],
)
def test_only_and_skip_select(
    pytester: pytest.Pytester, args: tuple[str, ...], passed: int, deselected: int
) -> None:
    pytester.makepyfile(test_b=SUITE)
    result = pytester.runpytest_inprocess(*args, "--bench-no-store", *QUICK)
    result.assert_outcomes(passed=passed, deselected=deselected)


def test_disable_calls_each_function_once_and_keeps_no_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_d="""
        CALLS = []

        def test_once(benchmark):
            benchmark(CALLS.append, 1)
            assert len(CALLS) == 1
        """
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--benchmark-disable", "--benchmark-json=out.json", *QUICK
    )
    result.assert_outcomes(passed=1)
    assert "Results stored" not in result.stdout.str()
    assert not (pytester.path / "out.json").exists()
    # --benchmark-enable undoes it (and is --bench).
    enabled = pytester.runpytest_inprocess(
        "--benchmark-disable", "--benchmark-enable", "--bench-no-store", *QUICK
    )
    enabled.assert_outcomes(failed=1)  # measured: many calls
    refused = pytester.runpytest_inprocess("--benchmark-disable", "--benchmark-only", *QUICK)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR


def test_elasticsearch_storage_and_netrc_say_they_have_no_meaning(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_s=SPEED)
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-no-store",
        "--benchmark-storage=elasticsearch+https://user:secret@host:9200/bench",
        "--benchmark-netrc",
        *QUICK,
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["benchsdk: --benchmark-netrc ~/.netrc: *no meaning here*"])
    result.stdout.fnmatch_lines(
        [
            "benchsdk: --benchmark-storage elasticsearch+https://*: pytest-benchmark's "
            "Elasticsearch storage has no meaning here*--bench-store*",
        ]
    )
    assert "secret" not in out


def test_the_table_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_b=SUITE)
    result = pytester.runpytest_inprocess(
        "--benchmark-columns=min,outliers,rounds",
        "--benchmark-sort=fullname",
        "--benchmark-time-unit=ns",
        "--benchmark-name=long",
        "--bench-no-store",
        *QUICK,
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*participant*min*outliers*rounds*",
            "*test_b.py::test_param[[]10[]]*ns*;*",
            "*test_b.py::test_param[[]20[]]*ns*;*",
        ]
    )


def test_cprofile(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s=SPEED)
    result = pytester.runpytest_inprocess(
        "--benchmark-cprofile=cumtime",
        "--benchmark-cprofile-top=2",
        "--benchmark-cprofile-dump=prof/run",
        "--benchmark-json=out.json",
        "--benchmark-verbose",
        "--bench-no-store",
        *QUICK,
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*cProfile of test_s.py::test_work (time in s):", "*ncalls*"])
    entry = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]
    assert len(entry["cprofile"]) == 2
    assert set(entry["cprofile"][0]) >= {"ncalls", "tottime", "cumtime", "function_name"}
    assert (pytester.path / "prof" / "run-test_work.prof").is_file()


#: A session as where neither pytest-benchmark nor pytest-codspeed is installed.
NOT_INSTALLED = ("-p", "no:benchmark", "-p", "no:codspeed")


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("--benchmark-sort=bogus", "argument --benchmark-sort: Unacceptable value: 'bogus'*"),
        ("--benchmark-min-rounds=0", "argument --benchmark-min-rounds: must be at least 1*"),
        ("--benchmark-min-time=soon", "argument --benchmark-min-time: Invalid decimal value*"),
        ("--benchmark-timer=clock", "argument --benchmark-timer: must be in dotted form*"),
        ("--benchmark-warmup=maybe", "argument --benchmark-warmup: expected auto, on or off*"),
        ("--benchmark-columns=min,bogus", "argument --benchmark-columns: Invalid column*"),
        ("--benchmark-compare-fail=min", "argument --benchmark-compare-fail: Could not parse*"),
        ("--benchmark-save=a/b", "argument --benchmark-save: Must not contain*"),
        ("--benchmark-cprofile-loops=0", "argument --benchmark-cprofile-loops: Invalid value*"),
        ("--benchmark-calibration-precision=x", "argument --benchmark-calibration-*: expected*"),
        ("--benchmark-time-unit=h", "argument --benchmark-time-unit: invalid choice*"),
        ("--codspeed-mode=fast", "argument --codspeed-mode: invalid choice*"),
        ("--codspeed-max-time=x", "argument --codspeed-max-time: expected a number*"),
        ("--benchmark-group-by=color", "*--benchmark-group-by=color: unsupported grouping*"),
        ("--bench-rounds-min=0", "*--bench-rounds-min*"),
        ("--bench-rounds-warmup=maybe", "*--bench-rounds-warmup expects on or off*"),
        ("--bench-rounds-timer=time.nothing", "*--bench-rounds-timer: cannot load timer*"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_flag(
    pytester: pytest.Pytester, arg: str, message: str
) -> None:
    pytester.makepyfile(test_s=SPEED)
    # This plugin's declarations, as where neither plugin is installed (the test extra has both:
    # with them active, their own parsers would answer).
    result = pytester.runpytest_inprocess(arg, "--bench", *QUICK, *NOT_INSTALLED)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


@pytest.mark.parametrize("switched_off", [False, True])
def test_the_options_are_left_to_an_installed_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, switched_off: bool
) -> None:
    """Where pytest-benchmark and pytest-codspeed are installed (the test extra) they declare
    their options themselves, whichever plugin registers first: no "conflicting option
    string"; and their options still parse where the session switches them off."""
    if not switched_off:
        monkeypatch.delenv("BENCHSDK_BENCHMARK_FIXTURE")
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # (it would warn)
    pytester.makepyfile(test_p="def test_p():\n    pass\n")
    result = pytester.runpytest_inprocess(
        "--benchmark-skip", "--benchmark-columns=min,max", "--codspeed-max-rounds=5",
        "-p", "no:randomly", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=1)


def test_a_group_by_fullname_save_is_a_baseline_and_its_unknown_tails_are_not_compared(
    pytester: pytest.Pytester,
) -> None:
    # Grouped by fullname each test is its own benchmark, not its module's: the saved file's
    # tests are still found by fullname. Saved without data, the file has a five-number summary
    # whose "p95" would be its maximum: no tail row.
    pytester.makepyfile(test_s=SUITE)
    grouped = ("--benchmark-group-by=fullname", *QUICK)
    saved = pytester.runpytest_inprocess("--benchmark-save", "base", *grouped)
    saved.assert_outcomes(passed=4)
    compared = pytester.runpytest_inprocess(
        "--benchmark-compare", "--benchmark-compare-fail=mean:1", *grouped
    )
    text = compared.stdout.str()
    assert compared.ret == pytest.ExitCode.OK, text
    assert "has no test of benchmark" not in text
    assert text.count("Compared with 0001_base.json (pytest-benchmark") == 3, text
    assert "its p95 and p99 are not known" in text
    assert not re.search(r"time_ms +p95", text), text


def test_codspeed_runs_only_the_benchmarks_as_pytest_codspeed_does(
    pytester: pytest.Pytester,
) -> None:
    # A CI job running `pytest --codspeed` runs the benchmarks, not the whole test suite.
    pytester.makepyfile(test_s=SUITE)
    result = pytester.runpytest_inprocess("--codspeed", *QUICK)
    result.assert_outcomes(passed=3, deselected=1)
    assert "test_plain" not in result.stdout.str()
