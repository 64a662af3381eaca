"""``--bench-compare`` end to end: real sessions into one store, then compared."""

from __future__ import annotations

import json

# Imported before pytester's in-process sessions snapshot sys.modules: numpy's C extension
# cannot be loaded a second time in one process once a session has dropped it.
import numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

from plugin_helpers import SCORING, bench, store_path, stored_runs
from pytest_benchsdk import ResultStore

pytest_plugins = ["pytester"]

#: 40 iterations of a lognormal-ish value (seeded per task index), scaled by $SLOWDOWN.
NOISY = bench(
    f'participants=[Participant("p1"), Participant("p2")], iterations=40,\nscoring={SCORING}',
    """
    import os, random

    @define_task
    def task(participant, task_index, measure):
        rng = random.Random(task_index * 7 + len(participant.name))
        base = {"p1": 20.0, "p2": 40.0}[participant.name]
        factor = float(os.environ.get("SLOWDOWN", "1"))
        measure(value=base * factor * rng.lognormvariate(0, 0.1))
    """,
)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("--bench", "--bench-dry-run", *args)


def test_first_run_has_no_baseline_and_the_next_one_compares(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    first = _run(pytester, "--bench-compare")
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(
        [
            "  Baseline: none (no finished run of demo with the same knobs in * yet (this run "
            "becomes the baseline of the next one))"
        ]
    )
    second = _run(pytester, "--bench-compare", "--bench-json", "out.json")
    assert second.ret == 0, second.stdout.str()
    baseline_id = stored_runs(store_path(pytester))[0].run_id
    second.stdout.fnmatch_lines(
        [
            f"  Compared with run {baseline_id} (*):",
            "    participant  metric  stat    baseline  current  change  interval*verdict",
            "    p1           value   median  * ms *+0.0%*unchanged",
            "    p1           value   p95     * ms *unchanged",
            "    p2           value   median  * ms *unchanged",
            "    p2           value   p95     * ms *unchanged",
        ]
    )
    document = json.loads((pytester.path / "out.json").read_text())
    comparison = document["benchmarks"][0]["comparison"]
    assert comparison["baselineRunId"] == baseline_id
    assert [(r["participant"], r["statistic"]) for r in comparison["rows"]] == [
        ("p1", "median"),
        ("p1", "p95"),
        ("p2", "median"),
        ("p2", "p95"),
    ]
    assert {r["comparison"]["verdict"] for r in comparison["rows"]} == {"unchanged"}
    current_id = stored_runs(store_path(pytester))[1].run_id
    with ResultStore(store_path(pytester)) as store:
        assert store.analysis(current_id, "comparison") == comparison


def test_a_regression_is_flagged_and_fails_the_session_when_asked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    monkeypatch.setenv("SLOWDOWN", "1.3")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert out.count("regressed") >= 4, out
    result.stdout.fnmatch_lines(
        [
            "ERROR regressed (--bench-compare-fail): demo: p1 value median: * → * ms, "
            "+3*% [[]+*%, +*%] regressed",
        ]
    )
    # Without --bench-compare-fail the table says it and the session passes.
    again = _run(pytester, "--bench-compare", stored_runs(store_path(pytester))[0].run_id)
    assert again.ret == 0
    again.stdout.fnmatch_lines(["    p1           value   median  * ms *+3*%*regressed"])


def test_an_improvement_is_flagged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester).ret == 0
    monkeypatch.setenv("SLOWDOWN", "0.7")
    result = _run(pytester, "--bench-compare", "--bench-compare-fail")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["    p1           value   median  * ms *-3*%*improved"])


def test_different_knobs_warn_and_a_json_baseline_works(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    assert _run(pytester, "--bench-json", "base.json").ret == 0
    result = _run(pytester, "--bench-compare", "base.json", "--bench-concurrency", "2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "  Compared with base.json (*):",
            "    warning: knob concurrency differs: 1 → 2",
            "    p1           value   median  *unchanged",
        ]
    )


def test_latency_is_compared_when_nothing_is_scored(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=bench('participants=[Participant("p1")], iterations=5'))
    assert _run(pytester).ret == 0
    result = _run(pytester, "--bench-compare")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["    p1           latency_ms  median  * ms *"])


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("nope-123", "no run nope-123 in *"),
        ("missing.json", "cannot read missing.json: *"),
    ],
)
def test_an_unusable_baseline_says_why(pytester: pytest.Pytester, ref: str, why: str) -> None:
    pytester.makepyfile(bench_x=NOISY)
    result = _run(pytester, "--bench-compare", ref)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"  Baseline: none ({why})"])


def test_compare_without_a_store_needs_a_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bench_x=NOISY)
    result = _run(pytester, "--bench-no-store", "--bench-compare")
    result.stdout.fnmatch_lines(
        ["  Baseline: none (no results store to find a baseline in (--bench-no-store))"]
    )
