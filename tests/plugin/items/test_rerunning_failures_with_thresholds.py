"""``--lf``, ``--ff`` and ``--sw`` re-run what failed together with what it needs: a threshold
item with all the iterations it judges, an iteration with its participant's thresholds (and
so the rest of its iterations) and warm-up; and never a threshold before its iterations."""

from __future__ import annotations

import json

import pytest

from helpers.sessions import bench

#: p1's threshold fails with SLOW set; p2's iteration 1 raises with BOOM set. p3 never fails.
SOURCE = bench(
    'participants=["p1", "p2", "p3"], iterations=3, warmup=1,\nthresholds={"value": "max < 50"}',
    """
    import os

    @define_task
    def task(participant, task_index, measure):
        if participant.name == "p2" and task_index == 1 and os.environ.get("BOOM"):
            raise RuntimeError("boom")
        slow = participant.name == "p1" and os.environ.get("SLOW")
        measure(value=90 if slow else 10)
    """,
)

P1 = [
    "bench_x.py::warmup[p1-0]",
    "bench_x.py::task[p1-0]",
    "bench_x.py::task[p1-1]",
    "bench_x.py::task[p1-2]",
    "bench_x.py::threshold[p1-value-max<50]",
]
P2 = [nodeid.replace("p1", "p2") for nodeid in P1]
P3 = [nodeid.replace("p1", "p3") for nodeid in P1]


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, list[str]]:
    """A session and the node ids it ran, in the order they ran."""
    result = pytester.runpytest_inprocess("--bench", "--bench-dry-run", "-v", *args)
    ran = []
    for line in result.outlines:
        nodeid, _, outcome = line.partition(" ")
        if "::" in nodeid and outcome.startswith(("PASSED", "FAILED", "SKIPPED")):
            ran.append(nodeid)
    return result, ran


def _lastfailed(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    return sorted(json.loads(path.read_text())) if path.exists() else []


def test_lf_after_a_failed_threshold_reruns_it_with_the_iterations_it_judges(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    monkeypatch.setenv("SLOW", "1")
    first, _ = _run(pytester)
    first.assert_outcomes(passed=14, failed=1)
    assert _lastfailed(pytester) == ["bench_x.py::threshold[p1-value-max<50]"]
    monkeypatch.delenv("SLOW")
    rerun, ran = _run(pytester, "--lf")
    rerun.stdout.fnmatch_lines(
        [
            "run-last-failure: rerun previous 1 failure",
            "benchsdk: also running 1 warm-up item(s) (they run before their phase), "
            "3 iteration(s) (a selected threshold judges them)",
        ]
    )
    assert "known failures not in selected tests" not in rerun.stdout.str()
    assert ran == P1
    rerun.assert_outcomes(passed=5)
    assert _lastfailed(pytester) == []


def test_lf_after_mixed_failures_keeps_the_thresholds(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    monkeypatch.setenv("SLOW", "1")
    monkeypatch.setenv("BOOM", "1")
    _run(pytester)[0].assert_outcomes(passed=13, failed=2)
    assert _lastfailed(pytester) == [
        "bench_x.py::task[p2-1]",
        "bench_x.py::threshold[p1-value-max<50]",
    ]
    rerun, ran = _run(pytester, "--lf")
    # p1's threshold with its iterations; p2's failed iteration with its threshold, which
    # judges all of p2's iterations; each after its warm-up. Nothing of p3.
    assert ran == P1 + P2
    rerun.assert_outcomes(passed=8, failed=2)
    rerun.stdout.fnmatch_lines(
        [
            "bench_x.py::threshold[[]p1-value-max<50] FAILED*",
            "bench_x.py::task[[]p2-1] FAILED*",
        ]
    )


def test_lf_after_a_failed_iteration_brings_its_participants_thresholds(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    monkeypatch.setenv("BOOM", "1")
    _run(pytester)[0].assert_outcomes(passed=14, failed=1)
    monkeypatch.delenv("BOOM")
    rerun, ran = _run(pytester, "--lf")
    rerun.stdout.fnmatch_lines(
        [
            "benchsdk: also running 1 warm-up item(s) (they run before their phase), 1 "
            "threshold item(s) (--lf runs iterations they judge), 2 iteration(s) (a selected "
            "threshold judges them)"
        ]
    )
    assert ran == P2
    rerun.assert_outcomes(passed=5)


def test_ff_runs_a_failed_participant_first_in_its_own_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    monkeypatch.setenv("SLOW", "1")
    _run(pytester)
    monkeypatch.delenv("SLOW")
    rerun, ran = _run(pytester, "--ff")
    rerun.assert_outcomes(passed=15)
    # pytest's --ff alone would run p1's threshold first, before the iterations it judges.
    assert ran == P1 + P2 + P3
    monkeypatch.setenv("BOOM", "1")
    _run(pytester)
    monkeypatch.delenv("BOOM")
    assert _run(pytester, "--ff")[1] == P2 + P1 + P3


def test_sw_continues_at_the_failure_with_the_participants_earlier_items(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    monkeypatch.setenv("BOOM", "1")
    ran = _run(pytester, "--sw")[1]
    assert ran == [*P1, *P2[:3]]  # stopped at task[p2-1]
    monkeypatch.delenv("BOOM")
    second, ran = _run(pytester, "--sw")
    second.stdout.fnmatch_lines(["stepwise: skipping 7 already passed items*"])
    # From p2 on, with p2's warm-up and first iteration again (its threshold judges them).
    assert ran == P2 + P3
    second.assert_outcomes(passed=10)


def test_running_one_threshold_item_runs_the_iterations_it_judges(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(bench_x=SOURCE)
    result, ran = _run(pytester, "bench_x.py::threshold[p3-value-max<50]")
    assert ran == P3
    result.assert_outcomes(passed=5)
    # ... and -k picks the threshold items, which bring their iterations.
    assert _run(pytester, "-k", "threshold and p2")[1] == P2
