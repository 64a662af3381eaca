"""A group of benchmarked tests whose missing tests were skipped is not partial (issue 47,
item 6): a ``skipif`` test and one calling ``pytest.skip`` are listed as skipped, with their
reasons, and not counted as planned; a test that was planned and did not run (``-x``) still
makes its group interrupted, one that never called the fixture still makes it partial, and a
bench file's participant skipped for its environment variables leaves its run passed, as
upstream filters it out before the run.

The suites count nothing against the clock.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from helpers.sessions import bench, read_json, store_path, stored_runs
from pytest_benchsdk.results import stored_status, stored_summary
from pytest_benchsdk.store import ResultStore

SUITE = textwrap.dedent(
    """
    import pytest

    pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)


    def test_measured(benchmark):
        benchmark(str.upper, "a")


    @pytest.mark.skipif(True, reason="not on this machine")
    def test_skipif(benchmark):
        benchmark(str.lower, "A")


    def test_skips_itself(benchmark):
        pytest.skip("needs a GPU")
        benchmark(str.lower, "A")


    @pytest.fixture
    def database():
        pytest.skip("no database")


    def test_skipped_fixture(benchmark, database):
        benchmark(str.lower, "A")


    def test_also_measured(benchmark):
        benchmark(str.title, "a b")
    """
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "--bench", *args)


def _benchmark(pytester: pytest.Pytester) -> dict[str, Any]:
    (benchmark,) = read_json(pytester.path / "run.json")["benchmarks"]
    return benchmark


def test_skipped_tests_leave_their_group_passed_and_are_listed_as_skipped(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = _run(pytester, "--bench-json=run.json", "--bench-markdown=run.md")
    result.assert_outcomes(passed=2, skipped=3)
    text = result.stdout.str()
    assert "status: passed\n" in text, text
    assert "partial" not in text
    assert "left a record" not in text  # no "2/5 benchmarked tests left a record"
    result.stdout.fnmatch_lines_random(
        [
            "  Skipped test_skipif: not on this machine",
            "  Skipped test_skips_itself: needs a GPU",
            "  Skipped test_skipped_fixture: no database",
        ]
    )
    # Not ranked among the measured tests as "skipped" rows: listed once, below.
    assert not [line for line in text.splitlines() if line.rstrip().endswith(" skipped")]

    benchmark = _benchmark(pytester)
    assert benchmark["status"] == {
        "state": "passed",
        "reasons": [],
        "planned": 2,
        "ran": 2,
        "complete": True,
        "unit": "tests",
    }
    assert {entry["name"]: entry["reason"] for entry in benchmark["skipped"]} == {
        "test_skipif": "not on this machine",
        "test_skips_itself": "needs a GPU",
        "test_skipped_fixture": "no database",
    }
    skipped = {p["name"]: p["skipped"] for p in benchmark["result"]["participants"]}
    assert skipped["test_skipif"] == "not on this machine"
    assert skipped["test_measured"] is None
    markdown = (pytester.path / "run.md").read_text()
    assert "partial" not in markdown
    assert "_Skipped test_skips_itself: needs a GPU_" in markdown

    # The store keeps the run complete (a baseline by default) with its skipped tests.
    (run,) = stored_runs(store_path(pytester))
    with ResultStore(store_path(pytester)) as store:
        status = stored_status(store, run)
        summary = stored_summary(store, run)
    assert status.text() == "passed"
    assert status.incomplete is None
    assert {p.name for p in summary.participants if p.skipped} == {
        "test_skipif",
        "test_skips_itself",
        "test_skipped_fixture",
    }


def test_a_group_of_skipped_tests_alone_ran_nothing_and_passed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = _run(pytester, "-k", "skip")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(
        ["  Status: passed", "  No participant ran.", "  Skipped test_skipif: not on this machine"]
    )


def test_planned_tests_that_did_not_run_still_count(pytester: pytest.Pytester) -> None:
    """``-x`` stops the group before its last test: interrupted, the skipped test aside;
    a test that took the fixture and never called it leaves its group partial."""
    pytester.makepyfile(
        test_stopped=textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.benchmark(max_time=0.001, min_rounds=3)


            @pytest.mark.skipif(True, reason="never")
            def test_skipif(benchmark):
                benchmark(str.lower, "A")


            def test_first(benchmark):
                benchmark(str.upper, "a")


            def test_fails(benchmark):
                benchmark(int, "not a number")


            def test_never_runs(benchmark):
                benchmark(str.lower, "A")
            """
        ),
        test_uncalled=textwrap.dedent(
            """
            import pytest

            @pytest.mark.skipif(True, reason="never")
            def test_skipif(benchmark):
                benchmark(str.lower, "A")


            def test_measured(benchmark):
                benchmark(str.upper, "a")


            def test_uncalled(benchmark):
                pass
            """
        ),
    )
    stopped = _run(pytester, "-x", "test_stopped.py")
    stopped.assert_outcomes(passed=1, failed=1, skipped=1)
    stopped.stdout.fnmatch_lines(["*status: interrupted (2 of 3 tests ran)*"])

    uncalled = _run(pytester, "test_uncalled.py")
    uncalled.assert_outcomes(passed=2, skipped=1)
    uncalled.stdout.fnmatch_lines(
        [
            "*status: passed, partial",
            "  1/2 benchmarked tests left a record*",
        ]
    )


def test_a_participant_skipped_for_its_environment_leaves_its_run_passed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream filters such participants out before the run: not planned, not partial."""
    pytester.makepyfile(
        bench_env=bench(
            'participants=[Participant("here"), '
            'Participant("away", required_env_vars=["BENCHSDK_TEST_UNSET_VAR"])], iterations=2'
        )
    )
    monkeypatch.delenv("BENCHSDK_TEST_UNSET_VAR", raising=False)
    result = _run(pytester, "--bench-dry-run")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        ["*status: passed", "*Skipped away: missing BENCHSDK_TEST_UNSET_VAR"]
    )
