"""Tests of pytest_benchsdk.compare.change_points: e-divisive means with a permutation test."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from pytest_benchsdk._analysis.changepoints import _q_values
from pytest_benchsdk.compare import ChangePoint, change_points


def noisy(n: int, seed: int, sigma: float = 0.03, level: float = 100.0) -> np.ndarray:
    return level * (1 + np.random.default_rng(seed).normal(0, sigma, n))


def test_the_energy_statistic_is_matteson_and_james_q() -> None:
    z = np.random.default_rng(3).normal(size=11)

    def q(tau: int) -> float:
        x, y = z[:tau], z[tau:]
        cross = np.abs(x[:, None] - y[None, :]).mean()
        within = [
            np.mean([abs(a - b) for a, b in itertools.combinations(part, 2)])
            if len(part) > 1
            else 0.0
            for part in (x, y)
        ]
        return len(x) * len(y) / len(z) * (2 * cross - within[0] - within[1])

    for min_size in (1, 2, 3):
        expected = [q(tau) for tau in range(min_size, z.size - min_size + 1)]
        assert _q_values(z[np.newaxis, :], min_size)[0] == pytest.approx(expected)


def test_a_step_is_found_where_it_starts_with_its_size() -> None:
    values = np.concatenate([noisy(15, 1), noisy(10, 2, level=120)])
    (point,) = change_points(values)
    assert point.index == 15
    assert point.before == pytest.approx(np.median(values[:15]))
    assert point.after == pytest.approx(np.median(values[15:]))
    assert point.change == pytest.approx(point.after / point.before - 1)
    assert 0.15 < point.change < 0.25
    assert point.p_value == pytest.approx(1 / 200)  # no permutation came close


def test_two_steps_are_both_found() -> None:
    values = np.concatenate([noisy(12, 1), noisy(12, 2, level=125), noisy(12, 3, level=95)])
    points = change_points(values)
    assert [p.index for p in points] == [12, 24]
    assert points[0].change > 0 > points[1].change
    # Each change is between the regimes on either side of it.
    assert points[0].after == points[1].before


def test_stationary_series_get_a_change_point_in_about_alpha_of_cases() -> None:
    found = sum(bool(change_points(noisy(30, seed), seed=seed)) for seed in range(200))
    # alpha = 5 %: about 10 of 200; the test is exact, so far more would be a defect.
    assert found <= 20
    assert found >= 2  # and it is a test that can say yes


def test_outlier_runs_are_not_change_points() -> None:
    values = noisy(30, 7)
    values[[5, 17, 26]] *= 1.5  # three runs hit by a burst of load
    assert change_points(values) == ()


def test_min_change_drops_small_changes() -> None:
    values = np.concatenate([noisy(20, 1, sigma=0.002), noisy(20, 2, sigma=0.002, level=101)])
    assert [p.index for p in change_points(values)] == [20]  # significant
    assert change_points(values, min_change=0.02) == ()  # but 1 % is under the threshold


def test_too_short_or_constant_series_have_none() -> None:
    assert change_points([]) == ()
    assert change_points([1.0, 2.0, 3.0]) == ()  # a segment needs 2 values: 4 at least
    assert change_points([5.0] * 30) == ()
    # The last value alone cannot start a regime (min_size 2); with min_size 1 it can, but
    # one value in eleven at an end is what shuffling gives in 2 of 11 cases: not significant.
    values = [100.0] * 10 + [200.0]
    assert change_points(values) == ()
    assert change_points(values, min_size=1) == ()


def test_the_same_series_gives_the_same_answer() -> None:
    values = np.concatenate([noisy(25, 4), noisy(8, 5, level=108)])
    assert change_points(values, seed=3) == change_points(list(values), seed=3)


def test_a_change_point_reads_back_from_json() -> None:
    point = ChangePoint(7, 100.0, 130.0, 0.005)
    data = json.loads(json.dumps(point.to_json()))
    assert data["change"] == pytest.approx(0.3)
    assert ChangePoint.from_json(data) == point
    assert math.isnan(ChangePoint(1, 0.0, 1.0, 0.01).change)
    assert ChangePoint(1, 0.0, 1.0, 0.01).to_json()["change"] is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0}, "alpha must be between 0 and 1"),
        ({"permutations": 0}, "permutations must be an int >= 1"),
        ({"min_size": 0}, "min_size must be an int >= 1"),
        ({"min_change": -0.1}, "min_change must be a finite number >= 0"),
        ({"seed": -1}, "seed must be an int >= 0"),
    ],
)
def test_bad_arguments_are_clear_value_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        change_points([1.0, 2.0, 3.0, 4.0], **kwargs)  # type: ignore[arg-type]


def test_values_must_be_finite_numbers() -> None:
    with pytest.raises(ValueError, match="finite numbers"):
        change_points([1.0, math.nan, 3.0])
    with pytest.raises(ValueError, match="must be numbers"):
        change_points(["a", "b"])  # type: ignore[list-item]
