"""Tests of pytest_benchsdk.compare.compare_samples: real bootstrap and Mann–Whitney runs."""

from __future__ import annotations

import json
import math
import statistics

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_benchsdk import Comparison, compare_samples
from pytest_benchsdk._analysis import compare as compare_module
from pytest_benchsdk._analysis import resampling
from pytest_benchsdk._analysis.stats import compute_stats
from pytest_benchsdk.compare import DEFAULT_RESAMPLES, STATISTICS, VERDICTS

MIRRORED = {"regressed": "improved", "improved": "regressed", "unchanged": "unchanged"}

samples = st.lists(
    st.floats(min_value=0.5, max_value=1e6, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=60,
)


def lognormal(seed: int, n: int, scale: float = 1.0, sigma: float = 0.2) -> list[float]:
    values: list[float] = (np.random.default_rng(seed).lognormal(0, sigma, n) * scale).tolist()
    return values


def test_a_clear_regression_is_flagged() -> None:
    comparison = compare_samples(lognormal(1, 200), lognormal(2, 200, scale=1.3))
    assert comparison.verdict == "regressed"
    assert comparison.p_value < 0.05
    assert 0.02 < comparison.ci_low <= comparison.change <= comparison.ci_high
    assert comparison.change == pytest.approx(0.3, abs=0.1)


def test_a_clear_improvement_is_flagged() -> None:
    comparison = compare_samples(lognormal(1, 200), lognormal(2, 200, scale=0.7))
    assert comparison.verdict == "improved"
    assert comparison.ci_high < -0.02


def test_higher_is_better_mirrors_the_verdict() -> None:
    baseline, current = lognormal(1, 200), lognormal(2, 200, scale=1.3)
    assert compare_samples(baseline, current, lower_is_better=False).verdict == "improved"
    current = lognormal(2, 200, scale=0.7)
    assert compare_samples(baseline, current, lower_is_better=False).verdict == "regressed"


@settings(max_examples=30, deadline=None)
@given(baseline=samples, current=samples, statistic=st.sampled_from(STATISTICS))
def test_mirrored_verdicts_property(
    baseline: list[float], current: list[float], statistic: str
) -> None:
    lower = compare_samples(baseline, current, statistic=statistic, resamples=200)  # type: ignore[arg-type]
    higher = compare_samples(
        baseline,
        current,
        statistic=statistic,  # type: ignore[arg-type]
        resamples=200,
        lower_is_better=False,
    )
    assert higher.verdict == MIRRORED[lower.verdict]
    assert attrs.evolve(higher, lower_is_better=True, verdict=lower.verdict) == lower


def test_identical_samples_are_unchanged() -> None:
    values = lognormal(3, 100)
    comparison = compare_samples(values, values)
    assert comparison.verdict == "unchanged"
    assert comparison.change == 0
    assert comparison.p_value == pytest.approx(1.0)


def test_samples_from_one_distribution_are_not_flagged() -> None:
    flagged = [
        compare_samples(lognormal(seed, 50), lognormal(seed + 1000, 50)).verdict
        for seed in range(20)
    ]
    assert flagged.count("unchanged") >= 18


def test_every_value_equal_gives_p_one_and_no_change() -> None:
    comparison = compare_samples([5.0] * 10, [5.0] * 10)
    assert (comparison.p_value, comparison.change, comparison.verdict) == (1.0, 0.0, "unchanged")
    assert comparison.ci_low == comparison.ci_high == 0


@pytest.mark.slow
def test_a_significant_change_inside_the_noise_threshold_is_unchanged() -> None:
    # 1 % slower on 5,000 tight samples: significant, but not beyond a 2 % noise threshold.
    baseline = lognormal(4, 5000, sigma=0.01)
    current = lognormal(5, 5000, scale=1.01, sigma=0.01)
    comparison = compare_samples(baseline, current)
    assert comparison.p_value < 0.05
    assert comparison.verdict == "unchanged"
    assert compare_samples(baseline, current, noise_threshold=0.001).verdict == "regressed"


def test_the_same_seed_gives_the_same_comparison() -> None:
    baseline, current = lognormal(6, 80), lognormal(7, 80, scale=1.1)
    first = compare_samples(baseline, current, seed=11)
    assert compare_samples(baseline, current, seed=11) == first
    other = compare_samples(baseline, current, seed=12)
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)
    assert (other.change, other.p_value) == (first.change, first.p_value)  # no randomness


def test_chunked_resampling_draws_the_same_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    # Large samples are resampled in chunks (by the resampling engine); the chunk size must not
    # change the result.
    baseline, current = lognormal(8, 400), lognormal(9, 400, scale=1.05)
    whole = compare_samples(baseline, current, statistic="p95", resamples=300)
    monkeypatch.setattr(resampling, "MAX_CHUNK_CELLS", 400 * 7)
    assert compare_samples(baseline, current, statistic="p95", resamples=300) == whole


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(values=samples)
def test_statistics_follow_upstreams_rules(values: list[float]) -> None:
    # Untrimmed nearest-rank percentiles and median, the same rule as score()'s stats.
    stats = compute_stats(values, trim=0)
    expected = {
        "median": stats.median,
        "p95": stats.p95,
        "p99": stats.p99,
        "mean": statistics.fmean(values),
    }
    for statistic, value in expected.items():
        comparison = compare_samples(values, values, statistic=statistic, resamples=1)  # type: ignore[arg-type]
        assert comparison.baseline_statistic == pytest.approx(value, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    values=samples,
    statistic=st.sampled_from(STATISTICS),
    seed=st.integers(0, 2**32),
)
def test_each_resample_uses_the_same_rule_as_the_point_statistic(
    values: list[float], statistic: str, seed: int
) -> None:
    # The vectorised statistic of sorted position rows equals the statistic of each resample.
    sorted_values = np.sort(np.array(values))
    draws = np.random.default_rng(seed).integers(0, len(values), (5, len(values)))
    positions = np.sort(draws, axis=1).astype(np.int32)
    vectorised = compare_module._statistic_of_sorted(sorted_values, statistic, positions)
    for row, got in zip(positions, vectorised, strict=True):
        resample = sorted_values[row].tolist()
        one = compare_module._statistic_of_sorted(np.array(resample), statistic, None)[0]
        assert got == pytest.approx(one, rel=1e-12)


def test_change_is_relative_to_the_baseline_statistic() -> None:
    comparison = compare_samples([10.0, 10, 10], [12.0, 12, 12], resamples=10)
    assert comparison.baseline_statistic == 10
    assert comparison.current_statistic == 12
    assert comparison.change == pytest.approx(0.2)
    assert (comparison.baseline_n, comparison.current_n) == (3, 3)


def test_a_negative_baseline_keeps_the_sign_of_larger() -> None:
    # -10 -> -5 is larger: for lower-is-better that is worse.
    baseline = [-10.0 + i * 0.01 for i in range(30)]
    current = [-5.0 + i * 0.01 for i in range(30)]
    comparison = compare_samples(baseline, current)
    assert comparison.change == pytest.approx(0.5, abs=0.01)
    assert comparison.verdict == "regressed"


def test_small_samples_cannot_reach_significance() -> None:
    comparison = compare_samples([1.0], [100.0])
    assert comparison.p_value == 1.0
    assert comparison.verdict == "unchanged"


def test_defaults_are_recorded() -> None:
    comparison = compare_samples([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert comparison.resamples == DEFAULT_RESAMPLES
    assert (comparison.statistic, comparison.lower_is_better) == ("median", True)
    assert (comparison.alpha, comparison.noise_threshold, comparison.seed) == (0.05, 0.02, 0)
    assert comparison.verdict in VERDICTS


def test_accepts_numpy_arrays_and_iterables() -> None:
    values = lognormal(10, 40)
    from_list = compare_samples(values, values, resamples=50)
    assert compare_samples(np.array(values), iter(values), resamples=50) == from_list


def test_to_json_is_camel_case_and_strict_json() -> None:
    comparison = compare_samples([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], resamples=50)
    data = comparison.to_json()
    assert data["verdict"] == comparison.verdict
    assert data["ciLow"] == comparison.ci_low
    assert data["pValue"] == comparison.p_value
    assert set(data) == {
        "statistic",
        "lowerIsBetter",
        "baselineStatistic",
        "currentStatistic",
        "baselineN",
        "currentN",
        "change",
        "ciLow",
        "ciHigh",
        "pValue",
        "verdict",
        "alpha",
        "noiseThreshold",
        "resamples",
        "seed",
        "detectable",
    }
    json.dumps(data, allow_nan=False)


def test_a_resampled_baseline_of_zero_gives_an_unbounded_interval() -> None:
    # Baseline median 1, but resamples with three zeros have median 0: their change is inf.
    comparison = compare_samples([0.0, 0, 1, 1, 1], [2.0] * 5)
    assert comparison.change == 1.0
    assert comparison.ci_high == math.inf
    assert comparison.to_json()["ciHigh"] is None
    json.dumps(comparison.to_json(), allow_nan=False)


def test_comparison_is_public_and_frozen() -> None:
    comparison = compare_samples([1.0, 2.0], [1.0, 2.0], resamples=5)
    assert isinstance(comparison, Comparison)
    assert Comparison.__module__ == "pytest_benchsdk.compare"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        comparison.change = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"baseline": []}, "baseline has no samples"),
        ({"current": []}, "current has no samples"),
        ({"baseline": [1.0, math.nan]}, r"baseline has 1 non-finite value\(s\) \(\[1\]=nan\)"),
        ({"current": [math.inf, 1.0, -math.inf]}, r"current has 2 non-finite value\(s\)"),
        ({"baseline": ["fast"]}, "baseline samples must be numbers"),
        ({"baseline": [[1.0, 2.0]]}, "baseline samples must be a flat sequence"),
        ({"statistic": "p90"}, "unknown statistic 'p90'; expected one of median, p95, p99, mean"),
        ({"lower_is_better": None}, "lower_is_better must be True or False"),
        ({"alpha": 0}, "alpha must be between 0 and 1"),
        ({"alpha": 1}, "alpha must be between 0 and 1"),
        ({"alpha": "0.05"}, "alpha must be a number"),
        ({"noise_threshold": -0.01}, "noise_threshold must be a finite number >= 0"),
        ({"noise_threshold": math.inf}, "noise_threshold must be a finite number >= 0"),
        ({"resamples": 0}, "resamples must be an int >= 1"),
        ({"resamples": 2.5}, "resamples must be an int >= 1"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"baseline": [0.0, 0.0, 1.0]}, "the baseline's median is 0, so a relative change"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"baseline": [1.0, 2.0], "current": [1.0, 2.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        compare_samples(**arguments)  # type: ignore[arg-type]
