"""A key that the run scores, judges or compares on and that no passing iteration measured
fails the session with one line naming it and the closest measured key; every score empty
ranks nobody (issue 46, part 3)."""

from __future__ import annotations

import pytest

from helpers.sessions import bench, read_json

SCORED_TYPO = bench(
    'participants=[Participant("a"), Participant("b")], iterations=4, scoring='
    '{"metrics": [{"key": "throughput_rps", "unit": "rps", "ceiling": 1000,'
    ' "higherIsBetter": True, "weights": {"median": 1.0, "p95": 0, "p99": 0}}]}',
    """
    @define_task
    def task(measure):
        measure(througput_rps=100.0)
    """,
)


def test_a_scored_key_nobody_measured_fails_with_one_line_and_the_closest_key(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_typo=SCORED_TYPO)
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:randomly",
        "--bench-json",
        "o.json",
        "--bench-markdown",
        "o.md",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.assert_outcomes(passed=8, errors=1)
    out = result.stdout.str()
    line = (
        "scoring on throughput_rps: no participant measured throughput_rps (did you mean "
        "througput_rps?); the keys there are: latency_ms, "
    )
    assert out.count(f"ERROR {line}") == 1, out
    assert f"ERROR benchsdk - demo: {line[:40]}" in out, out
    # The misspelling is said once, not again as a warning per participant.
    assert "unmeasured-metric" not in out
    # Every score is empty: nobody is ranked, tied or said to keep a rank.
    result.stdout.fnmatch_lines(
        [
            "    #  participant  success  throughput_rps * score*",
            # No interval, no "keeps rank": the rows end at the (upstream) score.
            "    -  a            100%     - * 0.00",
            "    -  b            100%     - * 0.00",
            "    (- : no participant measured a scored metric, nothing to rank)",
        ]
    )
    assert "2=" not in out
    assert (
        "no participant measured a scored metric, nothing to rank"
        in (pytester.path / "o.md").read_text()
    )
    (entry,) = read_json(pytester.path / "o.json")["benchmarks"]
    assert [e["rank"] for e in entry["result"]["scores"]["ranking"]] == [None, None]
    assert entry["result"]["status"]["state"] == "failed"


def test_participants_whose_iterations_all_failed_are_an_ordinary_failure(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_fails=bench(
            'participants=[Participant("a")], iterations=2, scoring='
            '{"metrics": [{"key": "value", "unit": "ms", "ceiling": 100,'
            ' "weights": {"median": 1.0, "p95": 0, "p99": 0}}]}',
            """
            @define_task
            def task(measure):
                raise RuntimeError("down")
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2)
    assert "no participant measured" not in result.stdout.str()


def test_a_compare_on_key_nobody_measured_is_one_usage_error_with_the_closest_key(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_typo=SCORED_TYPO.replace("throughput_rps", "througput_rps"))
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:randomly",
        "--bench-compare",
        "--bench-compare-on=througput_rsp",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    out = result.stdout.str()
    line = (
        "ERROR demo: --bench-compare-on: no participant measured througput_rsp (did you mean "
        "througput_rps?); the keys there are: latency_ms, "
    )
    assert out.count(line) == 1, out


def test_a_threshold_on_a_scored_key_nobody_measured_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_typo=SCORED_TYPO)
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:randomly",
        "--bench-threshold",
        "throughput_rps: median > 10",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    out = result.stdout.str()
    # One line for the key, naming both what scores and what judges it.
    assert out.count("ERROR demo: scoring on throughput_rps, threshold on throughput_rps: ") == 1
    assert "(did you mean througput_rps?)" in out


def test_a_compare_on_key_one_edit_from_a_known_one_is_said_before_anything_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_typo=SCORED_TYPO.replace("throughput_rps", "througput_rps"))
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "-p",
        "no:randomly",
        "--bench-compare",
        "--bench-compare-on=cpu_msx",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    out = result.stdout.str()
    early = (
        "benchsdk: --bench-compare-on: cpu_msx is no key the benchmarks declare or the runner "
        "records (did you mean cpu_ms?)"
    )
    # Before the items' progress line, and again, as the failure, at the end.
    assert early in out.split("bench_typo.py ")[0], out
    assert (
        out.count(
            "ERROR demo: --bench-compare-on: no participant measured cpu_msx (did you mean cpu_ms?)"
        )
        == 1
    )
