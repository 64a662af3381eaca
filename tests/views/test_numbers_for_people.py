"""Numbers for people (``_numbers``): three significant digits, a row of times in one unit."""

from __future__ import annotations

import math

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
