"""Numbers for people (``_numbers``): three significant digits, a row of times in one unit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_benchsdk._base.numbers import quantity, row_scale, significant, stat_triple


def test_three_significant_digits_never_fewer_than_the_integer_part() -> None:
    assert significant(0.04213) == "0.0421"
    assert significant(22.84) == "22.8"
    assert significant(1234.5) == "1234"
    assert significant(9.996) == "10.0"
    assert significant(math.nan) == "-"


def test_a_row_of_times_is_scaled_by_its_largest_value() -> None:
    # A spread row reads in the unit of its largest number: no "723/12837/12837 µs".
    assert stat_triple(0.723, 12.837, 12.837, "ms") == "0.723/12.8/12.8 ms"
    assert stat_triple(0.416, 0.620, 0.620, "ms") == "416/620/620 µs"
    assert stat_triple(1834.0, 2100.0, 2500.0, "ms") == "1.83/2.10/2.50 s"
    # Non-time units keep their unit and are not scaled.
    assert stat_triple(200, 200, 200, "rows") == "200/200/200 rows"
    assert row_scale([1.0, math.nan, -3.0]) == 3.0


def test_one_value_is_scaled_by_itself() -> None:
    assert quantity(0.0112, "ms") == "11.2 µs"
    assert quantity(12837.0, "us") == "12.8 ms"
    assert quantity(None, "ms") == "-"


# ------------------------------------------------ time at the resolution it has (issue 30, 2)

_UNITS_S = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _parse(text: str) -> tuple[float, str, str]:
    number, unit = text.split(" ")
    return float(number), unit, number


def test_durations_read_three_significant_digits_at_the_unit_that_fits() -> None:
    assert quantity(0.000152, "ms") == "152 ns"
    assert quantity(0.00124, "ms") == "1.24 µs"
    assert quantity(15.27, "ms") == "15.3 ms"
    assert quantity(2410.0, "ms") == "2.41 s"
    assert quantity(0.00005, "ms") == "50.0 ns"
    # Rounding that carries into the next unit is written in it.
    assert quantity(0.0009996, "ms") == "1.00 µs"
    assert quantity(999.6, "ms") == "1.00 s"
    assert significant(0.9996) == "1.00"
    assert significant(99.96) == "100"


def test_a_row_keeps_one_unit_and_every_digit() -> None:
    # A 152 ns median beside a 12.8 ms p99: one unit, and the small one keeps its digits.
    assert stat_triple(0.000152, 0.0128, 12.8, "ms") == "0.000152/0.0128/12.8 ms"
    assert stat_triple(0.000152, 0.000160, 0.000999, "ms") == "152/160/999 ns"


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-7, max_value=1e7))
def test_any_duration_reads_back_within_its_rounding(value_ms: float) -> None:
    number, unit, digits = _parse(quantity(value_ms, "ms"))
    seconds = number * _UNITS_S[unit]
    assert seconds == pytest.approx(value_ms / 1000, rel=5e-3)
    if unit != "s" and value_ms >= 1e-6:
        assert 1 <= number < 1000  # the unit that fits
    if number < 1000:
        significant_digits = digits.replace(".", "").lstrip("0")
        assert len(significant_digits) == 3, digits  # never fewer, never more


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1e-7, max_value=1e6), min_size=3, max_size=3))
def test_a_row_of_times_never_loses_a_value(values: list[float]) -> None:
    median, p95, p99 = sorted(values)
    text = stat_triple(median, p95, p99, "ms")
    numbers, unit = text.split(" ")
    for shown, value in zip(numbers.split("/"), (median, p95, p99), strict=True):
        assert float(shown) * _UNITS_S[unit] == pytest.approx(value / 1000, rel=5e-3)
