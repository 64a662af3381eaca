"""The trend test's Kendall tau-b without scipy: the same tau, p-value and verdict as
``scipy.stats.kendalltau(range(n), values)``, for small and large runs, with and without ties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pytest_benchsdk._analysis.hygiene import TREND, run_warnings
from pytest_benchsdk._analysis.kendall import kendall_trend


def _scipy(values: list[float]) -> tuple[float, float]:
    result = stats.kendalltau(np.arange(len(values)), np.asarray(values, dtype=float))
    return float(result.statistic), float(result.pvalue)


def _same(values: list[float]) -> None:
    tau, p_value = kendall_trend(values)
    want_tau, want_p = _scipy(values)
    if math.isnan(want_tau):
        assert math.isnan(tau)
        assert math.isnan(p_value)
        return
    assert tau == pytest.approx(want_tau, rel=1e-12, abs=1e-15)
    assert p_value == pytest.approx(want_p, rel=1e-9, abs=1e-300)
    # The verdict the trend check draws from it (p < 0.01) is scipy's.
    assert (p_value < 0.01) == (want_p < 0.01)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6).map(float), min_size=2, max_size=60))
def test_with_ties_like_scipy(values: list[float]) -> None:
    _same(values)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=40, unique=True))
def test_without_ties_like_scipy_exact_and_asymptotic(values: list[float]) -> None:
    # Up to 33 untied values scipy's p-value is exact; above, the normal approximation.
    _same(values)


@pytest.mark.parametrize("n", [2, 3, 10, 33, 34, 170, 171, 172, 500])
def test_monotonic_and_one_swap_use_the_exact_tail(n: int) -> None:
    rising = [float(i) for i in range(n)]
    _same(rising)
    _same(rising[::-1])
    if n > 2:
        _same([rising[1], rising[0], *rising[2:]])


@pytest.mark.parametrize("seed", range(4))
def test_large_runs_like_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 20_000
    drift = np.linspace(0, 0.002 * seed, n)
    values = (1e-3 * (1 + drift) * rng.lognormal(0, 0.3, n)).round(7).tolist()
    _same(values)  # rounded: many ties, as microsecond latencies have


def test_all_equal_has_no_tau() -> None:
    assert all(math.isnan(x) for x in kendall_trend([1.0] * 12))
    assert all(math.isnan(x) for x in kendall_trend([1.0]))


@pytest.mark.parametrize("seed", range(6))
def test_trend_verdicts_match_scipys(seed: int) -> None:
    """The warning fires exactly when scipy's p-value says so (the drift gate aside)."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(10, 3000))
    slope = float(rng.choice([0.0, 0.05, 0.3, 1.0]))
    values = (100 * (1 + np.linspace(0, slope, n)) * rng.lognormal(0, 0.4, n)).tolist()
    third = n // 3
    first, last = np.median(values[:third]), np.median(values[-third:])
    drifted = abs(last - first) / abs(first) >= 0.10
    expected = drifted and _scipy(values)[1] < 0.01
    fired = any(w.code == TREND for w in run_warnings("p", {"m": values}))
    assert fired == expected
