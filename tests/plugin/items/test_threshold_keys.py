"""``--bench-threshold`` mistakes said all at once, and a misspelt key named (issue 33)."""

from __future__ import annotations

import pytest

from helpers.sessions import bench

MEASURES_VALUE = bench(
    'participants=[Participant("p1")], iterations=5',
    """
    @define_task
    def task(task_index, measure):
        measure(value=10.0 + task_index)
    """,
)


def test_every_bad_threshold_is_reported_not_only_the_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=MEASURES_VALUE)
    result = pytester.runpytest_inprocess(
        "--bench",
        "--bench-dry-run",
        "--bench-threshold",
        "value: p95 <",
        "--bench-threshold",
        "no colon here",
        "--bench-threshold",
        "value: p95 < 100",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--bench-threshold value:" in err, err
    assert '--bench-threshold expects "KEY: EXPR"' in err, err
    assert "no colon here" in err, err
    assert "value: p95 < 100" not in err, err


def test_a_misspelt_key_names_the_closest_one_and_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=MEASURES_VALUE)
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-threshold", "valeu: p95 < 100"
    )
    # The threshold item fails and says what the participant did measure.
    result.stdout.fnmatch_lines(
        [
            "*p1: valeu p95 has no samples (threshold < 100): p1 measured latency_ms, *value*; "
            "did you mean value?*"
        ]
    )
    # At the end, no participant measured the key: a usage error with the closest key.
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "ERROR demo: threshold on valeu: no participant measured valeu (did you mean "
            "value?); the keys there are: latency_ms, *value*"
        ]
    )


def test_a_key_that_one_participant_measured_is_not_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("p1"), Participant("p2")], iterations=3',
            """
            @define_task
            def task(participant, measure):
                if participant.name == "p1":
                    measure(extra=5.0)
            """,
        )
    )
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-threshold", "extra: p95 < 100"
    )
    # p2 measured nothing: its own item fails, and the session is an ordinary failure.
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*p2: extra p95 has no samples (threshold < 100): p2 measured*"])
    assert "no participant measured" not in result.stdout.str()
