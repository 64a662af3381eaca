"""A session that fails with every item passed says so on pytest's last line (issue 33)."""

from __future__ import annotations

import pytest

from helpers.sessions import SCORING, bench

#: 30 iterations of a value that $SLOWDOWN scales (seeded per task index).
SCALED = bench(
    'participants=[Participant("p1")], iterations=30',
    """
    import os, random

    @define_task
    def task(participant, task_index, measure):
        rng = random.Random(task_index)
        measure(value=20.0 * float(os.environ.get("SLOWDOWN", "1")) * rng.lognormvariate(0, 0.05))
    """,
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-p", "no:randomly", *args)


def test_a_regression_that_fails_the_session_is_counted_on_the_last_line_in_red(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SCALED)
    assert _run(pytester).ret == 0
    monkeypatch.setenv("SLOWDOWN", "1.5")
    result = _run(
        pytester,
        "--bench-compare",
        "--bench-compare-on=value",
        "--bench-compare-fail",
        "--color=yes",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    regressions = out.count("ERROR regressed (--bench-compare-fail)")
    assert regressions >= 1, out
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 30
    assert outcomes.get("errors", outcomes.get("error")) == regressions, out
    last = result.stdout.lines[-1]
    assert "30 passed" in last, last
    assert "error" in last, last
    assert "\x1b[31m" in last, f"the last line is not red: {last!r}"
    # The short summary names each failure: what it is and what failed it.
    result.stdout.fnmatch_lines(
        ["*ERROR* benchsdk - regressed (--bench-compare-fail): demo: p1 value median: *"]
    )


def test_warnings_as_errors_are_counted(pytester: pytest.Pytester) -> None:
    # `value` is scored, so the hygiene checks judge it (not the machine's latency): its first
    # iteration is a first-outlier in every session.
    pytester.makepyfile(
        bench_x=bench(
            f'participants=[Participant("p1")], iterations=20, scoring={SCORING}',
            """
            @define_task
            def task(task_index, measure):
                measure(value=500.0 if task_index == 0 else 10.0 + task_index % 3)
            """,
        )
    )
    result = _run(pytester, "--bench-warnings=error")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    warnings = result.stdout.str().count("ERROR run warning (--bench-warnings=error)")
    assert warnings >= 1
    result.assert_outcomes(passed=20, errors=warnings)
    result.stdout.fnmatch_lines(
        [
            "ERROR run warning (--bench-warnings=error): demo: [[]first-outlier[]] p1 (value): *",
            "*ERROR benchsdk - run warning (--bench-warnings=error): demo: *",
        ]
    )


def test_a_session_that_passes_counts_no_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=SCALED)
    assert _run(pytester).ret == 0
    result = _run(pytester, "--bench-compare", "--bench-compare-on=value", "--bench-compare-fail")
    assert result.ret == 0
    result.assert_outcomes(passed=30)
