"""Paired comparisons (an A/B session's rounds): drift that moves both sides cancels."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_benchsdk._analysis.baseline import compare_runs
from pytest_benchsdk.compare import compare_paired, compare_samples
from pytest_benchsdk.records import TaskRecord


def _drifting(rng: np.random.Generator, n: int = 40) -> np.ndarray:
    """A machine whose load rises halfway (every round after it is 80 % slower), with a
    little noise on top."""
    return np.where(np.arange(n) < n // 2, 1.0, 1.8) * rng.lognormal(0, 0.1, n)


def test_drift_that_hides_a_change_from_the_unpaired_comparison_cancels_in_the_pairs() -> None:
    rng = np.random.default_rng(7)
    drift = _drifting(rng)
    a = 10 * drift * rng.lognormal(0, 0.03, drift.size)
    b = 11 * drift * rng.lognormal(0, 0.03, drift.size)
    paired = compare_paired(a, b)
    assert paired.verdict == "regressed"
    assert 0.07 < paired.change < 0.13
    assert paired.ci_low > 0.02
    assert compare_samples(a, b).verdict == "unchanged"  # the drift swamps it unpaired


def test_unchanged_code_under_drift_is_unchanged_nearly_always() -> None:
    rng = np.random.default_rng(11)
    flagged = 0
    for _ in range(100):
        drift = _drifting(rng)
        a = 10 * drift * rng.lognormal(0, 0.03, drift.size)
        b = 10 * drift * rng.lognormal(0, 0.03, drift.size)
        flagged += compare_paired(a, b, resamples=400).verdict != "unchanged"
    assert flagged <= 5


@pytest.mark.parametrize("statistic", ["median", "p95", "p99", "mean"])
def test_every_statistic_sees_a_uniform_ten_percent(statistic: str) -> None:
    a = np.random.default_rng(3).lognormal(0, 0.2, 50)
    c = compare_paired(a, a * 1.1, statistic=statistic)  # type: ignore[arg-type]
    assert c.change == pytest.approx(0.1)
    assert c.verdict == "regressed"
    assert c.baseline_n == c.current_n == 50


def test_identical_sides_are_unchanged_with_p_value_one() -> None:
    a = [1.0, 2.0, 3.0, 4.0]
    c = compare_paired(a, a)
    assert c.p_value == 1.0
    assert c.change == 0
    assert c.verdict == "unchanged"


def test_the_median_change_of_values_not_all_positive_is_the_ratio_of_medians() -> None:
    c = compare_paired([-1.0, 2.0, 4.0], [-1.0, 3.0, 5.0])
    assert c.change == pytest.approx(0.5)  # medians 2 → 3


def test_sides_of_different_lengths_are_an_error() -> None:
    with pytest.raises(ValueError, match="one value per round"):
        compare_paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        compare_paired([1.0, float("nan")], [1.0, 2.0])


def _records(values: list[float]) -> list[TaskRecord]:
    return [
        TaskRecord.from_wire(
            {
                "taskIndex": i,
                "status": "success",
                "startedAt": "2026-01-01T00:00:00.000Z",
                "completedAt": "2026-01-01T00:00:00.000Z",
                "latencyMs": v,
                "steps": [],
                "data": {"cpu_ms": v / 2},
            }
        )
        for i, v in enumerate(values)
    ]


def test_paired_rows_pair_by_task_index_and_say_so() -> None:
    before = _records([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    after = _records([11.0, 22.0, 33.0, 44.0, 55.0, 66.0])
    # Round 2 failed on side A: it is left out of the pairs.
    del before[2]
    rows = compare_runs({"p": before}, {"p": after}, None, paired=True, also=["cpu_ms"])
    by = {(r.metric, r.statistic): r for r in rows}
    median = by["latency_ms", "median"]
    assert median.comparison is not None
    assert median.comparison.current_n == 5
    assert median.comparison.change == pytest.approx(0.1)
    assert median.noise_label == "paired, 5 rounds"
    assert median.judged
    assert not by["cpu_ms", "median"].judged  # shown, judged only when named
    named = compare_runs(
        {"p": before}, {"p": after}, None, paired=True, also=["cpu_ms"], compare_on=["cpu_ms"]
    )
    assert [r.metric for r in named if r.judged] == ["cpu_ms", "cpu_ms"]


def test_no_common_round_is_a_note_not_a_crash() -> None:
    rows = compare_runs({"p": _records([1.0])}, {"p": _records([1.0, 2.0])[1:]}, None, paired=True)
    assert all(r.comparison is None for r in rows)
    assert {r.note for r in rows} == {"no round with a sample on both sides"}


def test_a_process_s_own_speed_widens_the_interval_instead_of_making_a_verdict() -> None:
    """Each side ran in four processes taking turns; each process has a speed of its own
    (a few per cent). Rounds alone look like a clear change; the clusters say it is not one."""
    rng = np.random.default_rng(5)
    rounds = 40
    labels = np.arange(rounds) % 4
    flagged_rounds = flagged_clusters = 0
    for _ in range(50):
        drift = _drifting(rng, rounds)
        a = 10 * drift * np.exp(rng.normal(0, 0.03, 4))[labels] * rng.lognormal(0, 0.01, rounds)
        b = 10 * drift * np.exp(rng.normal(0, 0.03, 4))[labels] * rng.lognormal(0, 0.01, rounds)
        flagged_rounds += compare_paired(a, b, resamples=400).verdict != "unchanged"
        clustered = compare_paired(a, b, resamples=400, clusters=labels)
        flagged_clusters += clustered.verdict != "unchanged"
    assert flagged_rounds >= 5  # what one process per side got wrong
    assert flagged_clusters <= 2


def test_clusters_still_find_a_ten_percent_change() -> None:
    rng = np.random.default_rng(6)
    labels = np.arange(40) % 4
    drift = _drifting(rng)
    a = 10 * drift * np.exp(rng.normal(0, 0.02, 4))[labels]
    b = 11 * drift * np.exp(rng.normal(0, 0.02, 4))[labels]
    for statistic in ("median", "p95"):
        c = compare_paired(a, b, clusters=labels, statistic=statistic)  # type: ignore[arg-type]
        assert c.verdict == "regressed", c
    with pytest.raises(ValueError, match="one label per round"):
        compare_paired(a, b, clusters=labels[:-1])


def test_process_pairs_that_agree_never_narrow_the_rounds_interval() -> None:
    """Two process pairs whose rounds happen to give the same ratios: resampling the pairs
    alone sees no spread at all (every resample has the same median); the interval is still
    as wide as the rounds allow, and a 3 % change within 10 % noise is not a verdict."""
    rng = np.random.default_rng(8)
    ratios = rng.lognormal(0.03, 0.1, 20)
    a = 10 * _drifting(rng)
    b = a * np.concatenate([ratios, ratios])
    labels = np.repeat([0, 1], 20)
    rounds = compare_paired(a, b)
    clustered = compare_paired(a, b, clusters=labels)
    assert clustered.change == rounds.change
    assert clustered.ci_low <= rounds.ci_low < rounds.change < rounds.ci_high <= clustered.ci_high
    assert clustered.ci_high - clustered.ci_low > 0.05
    assert clustered.verdict == "unchanged"
