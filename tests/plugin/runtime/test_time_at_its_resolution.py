"""Time at the resolution it has (issue 30, parts 2 and 3), as a user's session shows it:
nanoseconds in the summary, the ``timer-floor`` warning, calibrated ``calls=`` steps.

The figures on the floor are given, not timed: the task returns its latency and steps (what a
record rounded to 0.001 ms, or a 152 ns step, looks like), so nothing depends on the machine.
"""

from __future__ import annotations

import re

import pytest

from helpers.sessions import bench, read_json

FLOORED = bench(
    'participants=[Participant("p1")], iterations=20',
    """
    from pytest_benchsdk import TaskResult


    @define_task
    def task(task_index):
        # A 152 ns task and two steps: one in nanoseconds, one as 0.001 ms rounding made it.
        return TaskResult(
            latency_ms=0.000152,
            steps=[
                {"name": "join", "status": "success", "latencyMs": 0.000152},
                {"name": "old", "status": "success", "latencyMs": 0.001},
            ],
        )
    """,
)


def test_nanoseconds_read_as_such_and_the_floor_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_floor=FLOORED)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "-v", "--bench-json", str(out)
    )
    result.assert_outcomes(passed=20)
    text = result.stdout.str()
    assert re.search(r"p1\s+20/20\s+152/152/152 ns", text), text
    assert re.search(r"join\s+152/152/152 ns\s+20", text), text
    assert re.search(r"old\s+1\.00/1\.00/1\.00 µs\s+20", text), text
    flat = " ".join(text.split())
    # One line for the code, naming its participant (not "1 participants"), then each finding.
    assert "warning [timer-floor] p1 (latency_ms, step join, step old): the median is 152 ns" in (
        flat
    ), flat
    assert "p1 (latency_ms): the median is 152 ns, under 2.00 µs" in flat
    assert "p1 (step join): the median is 152 ns" in flat
    assert 'step(name, fn, calls="auto")' in flat
    # The record keeps the nanoseconds (JSON: upstream's milliseconds, more decimals).
    (run,) = read_json(out)["benchmarks"]
    record = run["participants"][0]["records"][0]
    assert record["latencyMs"] == 0.000152
    codes = {(w["code"], tuple(w["metrics"])) for w in run["warnings"]}
    assert ("timer-floor", ("step join",)) in codes
    assert ("timer-floor", ("latency_ms",)) in codes


CALIBRATED = bench(
    'participants=[Participant("p1")], iterations=6',
    """
    ITEMS = [str(i) for i in range(10)]


    @define_task
    def task(step):
        value = step("join", lambda: ",".join(ITEMS), calls=50)
        assert value == "0,1,2,3,4,5,6,7,8,9"
        step("auto", lambda: ",".join(ITEMS), calls="auto", min_time_ms=0.2)
    """,
)


def test_a_calibrated_step_records_its_calls_and_is_not_on_the_floor(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_cal=CALIBRATED)
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "--bench-json", str(out))
    result.assert_outcomes(passed=6)
    assert "timer-floor" not in result.stdout.str()
    (run,) = read_json(out)["benchmarks"]
    for record in run["participants"][0]["records"]:
        join, auto = record["steps"]
        assert join["data"]["calls"] == 50
        assert join["latencyMs"] == pytest.approx(join["data"]["loop_ms"] / 50, rel=1e-3)
        # autorange's counts: 1, 2, 5, 10, 20, 50 …
        assert re.fullmatch(r"[125]0*", str(auto["data"]["calls"]))
        calls = auto["data"]["calls"]
        assert auto["latencyMs"] == pytest.approx(auto["data"]["loop_ms"] / calls, rel=1e-3)


def test_the_with_form_says_it_cannot_be_looped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        bench_with=bench(
            'participants=[Participant("p1")], iterations=1',
            """
            @define_task
            def task(step):
                with step("parse", calls="auto"):
                    pass
            """,
        )
    )
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(['*TypeError: step "parse" calls= times a function in a loop*'])
