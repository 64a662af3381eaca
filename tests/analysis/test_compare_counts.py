"""Verdicts on counts (``instructions``, issue 45): a count's noise is its own spread within
each run (none when every count is the same), judged against the count threshold; the
wall-time history never widens it, and the rows say which noise decided."""

from __future__ import annotations

import json

import pytest

from pytest_benchsdk._analysis.baseline import (
    Baseline,
    BaselineComparison,
    MetricComparison,
    compare_runs,
    compare_with_baseline,
    history_key,
)
from pytest_benchsdk._analysis.compare import compare_counts
from pytest_benchsdk.records import TaskRecord

THRESHOLD = 0.005


def counted(*counts: float, latency: float = 1.0) -> list[TaskRecord]:
    """Records of a bench file's iterations, each with its task body's count."""
    return [
        TaskRecord(
            task_index=i,
            status="success",
            latency_ms=latency,
            data={"instructions": count, "cpu_ms": latency},
        )
        for i, count in enumerate(counts)
    ]


def test_identical_counts_are_exact_and_unchanged() -> None:
    c = compare_counts([1_000_000] * 5, [1_000_000] * 5, noise_threshold=THRESHOLD)
    assert (c.change, c.ci_low, c.ci_high) == (0, 0, 0)
    assert c.verdict == "unchanged"
    assert c.detectable == THRESHOLD  # what an exact count could have seen: the threshold
    assert c.resamples == 0


def test_one_percent_more_work_is_a_regression_an_exact_count_is_sure_of() -> None:
    c = compare_counts([1_000_000] * 3, [1_010_000] * 3, noise_threshold=THRESHOLD)
    assert c.change == pytest.approx(0.01)
    assert c.ci_low == c.ci_high == pytest.approx(0.01)
    assert c.p_value == 0
    assert c.verdict == "regressed"
    faster = compare_counts([1_000_000] * 3, [990_000] * 3, noise_threshold=THRESHOLD)
    assert faster.verdict == "improved"


def test_a_change_below_the_threshold_is_none() -> None:
    c = compare_counts([1_000_000], [1_003_000], noise_threshold=THRESHOLD)
    assert c.change == pytest.approx(0.003)
    assert c.verdict == "unchanged"
    assert compare_counts([1_000_000], [1_003_000], noise_threshold=0.001).verdict == "regressed"


def test_counts_that_spread_within_a_run_widen_the_interval() -> None:
    # +1 % at the median, but each run's counts spread by ±1 %: not a change to be sure of.
    before = [990_000, 1_000_000, 1_010_000]
    after = [1_000_000, 1_010_000, 1_020_000]
    c = compare_counts(before, after, noise_threshold=THRESHOLD)
    assert c.change == pytest.approx(0.01)
    assert c.ci_low == pytest.approx(0.01 - 0.01 - 10_000 / 1_010_000)
    assert c.ci_high == pytest.approx(0.01 + 0.01 + 10_000 / 1_010_000)
    assert c.verdict == "unchanged"
    assert c.p_value == 1  # the interval holds no change too


def test_one_odd_count_does_not_widen_it() -> None:
    # A first iteration with colder caches counts 3 % more, in both runs: +1 % still shows.
    before = [1_030_000, 1_000_000, 1_000_100, 1_000_000]
    after = [1_040_300, 1_010_000, 1_010_100, 1_010_000]
    c = compare_counts(before, after, noise_threshold=THRESHOLD)
    assert c.change == pytest.approx(0.01, abs=1e-4)
    assert c.ci_low > THRESHOLD
    assert c.verdict == "regressed"


def test_higher_is_better_counts_mirror_the_verdict() -> None:
    more = compare_counts([100.0] * 3, [110.0] * 3, lower_is_better=False)
    assert more.verdict == "improved"


def test_a_baseline_of_zero_has_no_relative_change() -> None:
    with pytest.raises(ValueError, match="baseline's median is 0"):
        compare_counts([0, 0, 0], [5, 5, 5])


def test_count_rows_use_the_count_threshold_and_never_the_history() -> None:
    baseline = {"p": counted(1_000_000, 1_000_000, 1_000_000)}
    current = {"p": counted(1_010_000, 1_010_000, 1_010_000, latency=5.0)}
    # A history whose wall-time band is huge (±60 %): it must not hide the count's +1 %.
    history = {
        history_key("p", key, statistic, None): [1.0, 1.6, 0.7, 1.5, 0.8]
        for key in ("instructions", "latency_ms")
        for statistic in ("median", "p95")
    }
    rows = compare_runs(
        baseline,
        current,
        None,
        compare_on=["instructions"],
        history=history,
        count_threshold=THRESHOLD,
    )
    by_key = {(row.metric, row.statistic): row for row in rows}
    count = by_key["instructions", "median"]
    assert count.counted
    assert count.history is None
    assert count.verdict == "regressed"
    assert count.noise == "count"
    assert count.noise_label == "count, exact"
    assert count.judged
    # The latency row beside it is judged by its history as before (and not judged here).
    latency = by_key["latency_ms", "median"]
    assert not latency.counted
    assert latency.history is not None
    assert not latency.judged


def test_an_unchanged_count_says_why() -> None:
    rows = compare_runs(
        {"p": counted(1_000_000, 1_000_000)},
        {"p": counted(1_000_000, 1_000_000)},
        None,
        compare_on=["instructions"],
    )
    row = next(r for r in rows if r.metric == "instructions")
    assert row.verdict == "unchanged"
    assert row.reason == "the count is identical"
    small = next(
        r
        for r in compare_runs(
            {"p": counted(1_000_000)}, {"p": counted(1_002_000)}, None, compare_on=["instructions"]
        )
        if r.metric == "instructions"
    )
    assert small.reason is not None
    assert small.reason == (
        "a change of +0.2% is within the count threshold (0.5%, --bench-compare-count-noise)"
    )
    spread = next(
        r
        for r in compare_runs(
            {"p": counted(990_000, 1_000_000, 1_010_000)},
            {"p": counted(1_000_000, 1_010_000, 1_020_000)},
            None,
            compare_on=["instructions"],
        )
        if r.metric == "instructions" and r.statistic == "median"
    )
    assert spread.verdict == "unchanged"
    assert spread.reason is not None
    assert spread.reason.startswith("the counts spread by ±")
    assert spread.noise_label.startswith("count, ±")


def test_the_comparison_says_what_noise_counts_have_and_reads_back_from_json() -> None:
    comparison = compare_with_baseline(
        Baseline("main", "r1", {"p": counted(1_000_000, 1_000_000)}, {}),
        {"p": counted(1_010_000, 1_010_000)},
        None,
        {},
        compare_on=["instructions"],
        count_threshold=THRESHOLD,
    )
    assert comparison.says_noise
    line = comparison.noise_line()
    assert line.startswith("Noise: counts (instructions): judged on their own spread")
    assert "--bench-compare-count-noise" in line
    # One row per count: its median (a count's p95 would be its coldest iteration).
    assert [(r.metric, r.statistic) for r in comparison.regressions] == [("instructions", "median")]
    again = BaselineComparison.from_json(json.loads(json.dumps(comparison.to_json())))
    assert again == comparison
    row = next(r for r in again.rows if r.metric == "instructions")
    assert isinstance(row, MetricComparison)
    assert row.counted
    assert row.to_json()["noise"] == "count"


def test_counts_from_two_setups_are_not_compared_and_the_warning_says_why() -> None:
    old_setup = {"tool": "callgrind", "valgrind": "valgrind-3.19.0", "calls": 10}
    new_setup = {**old_setup, "excluded": "allocators"}
    comparison = compare_with_baseline(
        Baseline(
            "main",
            "r1",
            {"p": counted(1_450_000, 1_450_000)},
            {"environment": {"instructions": old_setup}},
        ),
        {"p": counted(1_080_000, 1_080_000)},
        None,
        {"environment": {"instructions": new_setup}},
        compare_on=["instructions"],
    )
    assert "instruction count setup excluded differs: — → allocators" in comparison.warnings
    (row,) = [r for r in comparison.rows if r.metric == "instructions"]
    assert row.comparison is None
    assert row.verdict is None
    assert row.note is not None
    assert row.note.startswith("not compared: the count's setup differs")
    assert comparison.regressions == ()
    # The same setup on both sides: compared as ever.
    same = compare_with_baseline(
        Baseline(
            "main", "r1", {"p": counted(1_000_000)}, {"environment": {"instructions": new_setup}}
        ),
        {"p": counted(1_010_000)},
        None,
        {"environment": {"instructions": new_setup}},
        compare_on=["instructions"],
    )
    assert same.warnings == ()
    assert [r.verdict for r in same.rows if r.metric == "instructions"] == ["regressed"]
