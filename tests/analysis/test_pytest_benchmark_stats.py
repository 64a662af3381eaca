"""pytest-benchmark's statistics by its own definitions (issue 47, item 4): the figures a
pytest-benchmark JSON file holds, checked against what pytest-benchmark 5.3.1's
``pytest_benchmark.stats.Stats.as_dict()`` gives for the same rounds (values recorded from it;
pytest-benchmark itself is not installed in the test environment)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_benchsdk._analysis.pytest_benchmark import STAT_FIELDS, fixture_stats

#: ``Stats.as_dict()`` of pytest-benchmark 5.3.1 for each data set (its quartile methods 2
#: and 3, both odd cases, Tukey fences with an outlier, one round).
RECORDED = {
    "one": (
        [0.5],
        {"min": 0.5, "max": 0.5, "mean": 0.5, "stddev": 0, "rounds": 1, "median": 0.5,
         "iqr": 0.0, "q1": 0.5, "q3": 0.5, "iqr_outliers": 0, "stddev_outliers": 0,
         "outliers": "0;0", "ld15iqr": 0.5, "hd15iqr": 0.5, "ops": 2.0, "total": 0.5},
    ),
    "two": (
        [0.25, 0.75],
        {"min": 0.25, "max": 0.75, "mean": 0.5, "stddev": 0.3535533905932738, "rounds": 2,
         "median": 0.5, "iqr": 0.5, "q1": 0.25, "q3": 0.75, "iqr_outliers": 0,
         "stddev_outliers": 0, "outliers": "0;0", "ld15iqr": 0.25, "hd15iqr": 0.75,
         "ops": 2.0, "total": 1.0},
    ),
    "odd_q1": (
        [3.0, 1.0, 2.0, 5.0, 4.0],
        {"min": 1.0, "max": 5.0, "mean": 3.0, "stddev": 1.5811388300841898, "rounds": 5,
         "median": 3.0, "iqr": 2.5, "q1": 1.75, "q3": 4.25, "iqr_outliers": 0,
         "stddev_outliers": 2, "outliers": "2;0", "ld15iqr": 1.0, "hd15iqr": 5.0,
         "ops": 0.3333333333333333, "total": 15.0},
    ),
    "odd_q3": (
        [9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        {"min": 1.0, "max": 9.0, "mean": 4.285714285714286, "stddev": 2.690370836538197,
         "rounds": 7, "median": 4.0, "iqr": 3.5, "q1": 2.25, "q3": 5.75, "iqr_outliers": 0,
         "stddev_outliers": 2, "outliers": "2;0", "ld15iqr": 1.0, "hd15iqr": 9.0,
         "ops": 0.23333333333333334, "total": 30.0},
    ),
    "even_outlier": (
        [1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98, 9.0],
        {"min": 0.9, "max": 9.0, "mean": 2.0, "stddev": 2.8290785981102955, "rounds": 8,
         "median": 1.01, "iqr": 0.11000000000000021, "q1": 0.965, "q3": 1.0750000000000002,
         "iqr_outliers": 1, "stddev_outliers": 1, "outliers": "1;1", "ld15iqr": 0.9,
         "hd15iqr": 1.1, "ops": 0.5, "total": 16.0},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(RECORDED))
def test_each_figure_is_pytest_benchmarks_own(name: str) -> None:
    data, expected = RECORDED[name]
    got = fixture_stats(data, iterations=3)
    assert list(got) == list(STAT_FIELDS)
    assert got["iterations"] == 3
    for key, value in expected.items():
        if isinstance(value, str):
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


def test_kept_rounds_of_more_rounds_keep_ops_as_one_over_the_mean() -> None:
    # A record keeps at most 1000 rounds' figures: rounds says how many ran, total is
    # mean x rounds, so ops (rounds / total) is still 1 / mean.
    got = fixture_stats([1.0, 2.0, 3.0], rounds=300)
    assert got["rounds"] == 300
    assert got["total"] == pytest.approx(600.0)
    assert got["ops"] == pytest.approx(0.5)


@given(st.lists(st.floats(1e-9, 10.0), min_size=1, max_size=60))
def test_the_order_of_figures_holds_for_any_rounds(data: list[float]) -> None:
    got = fixture_stats(data)
    assert got["min"] <= got["ld15iqr"] <= got["median"] <= got["hd15iqr"] <= got["max"]
    assert got["q1"] <= got["q3"]
    assert math.isclose(got["ops"], 1 / got["mean"], rel_tol=1e-9)
    assert got["outliers"] == f"{got['stddev_outliers']};{got['iqr_outliers']}"
