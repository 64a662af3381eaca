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


# ------------------------------------------------ units that never mix (issue 33, part 2)


def test_a_change_between_two_values_keeps_a_rate_unit_whole() -> None:
    from pytest_benchsdk._base.numbers import change_of_values

    # "MB/s" is a unit, not a separator: never "45.8 → 63.3 MB → s".
    assert change_of_values(45.8, 63.3, "MB/s") == "45.8 → 63.3 MB/s"
    assert change_of_values(12.0, 15.0, "req/s") == "12.0 → 15.0 req/s"
    # Times read in the unit that fits the larger: no "579.528 → 2901 ns".
    assert change_of_values(579.528, 2901.0, "ns") == "0.580 → 2.90 µs"
    assert change_of_values(20.2, 26.6, "ms") == "20.2 → 26.6 ms"


def test_a_time_limit_reads_in_the_observed_values_unit() -> None:
    from pytest_benchsdk._base.numbers import limit_in_unit

    # The observed 7.93 µs and its limit written as 3000 (ns): one unit on the line.
    assert limit_in_unit(3000, "ns", 7930) == "3 µs"
    assert limit_in_unit(5, "ms", 0.434) == "5000 µs"
    assert limit_in_unit(0.3, "ms", 12.0) == "0.3 ms"


def test_a_threshold_line_never_mixes_units() -> None:
    from pytest_benchsdk._config.thresholds import Threshold, ThresholdVerdict

    verdict = ThresholdVerdict(
        Threshold("step_ns", "p95", "<", 3000.0), "p1", 7930.0, False, unit="ns"
    )
    # One unit on the line, the one the limit was written in (issue 46).
    assert verdict.message() == "p1: step_ns p95 = 7930 ns, threshold < 3000 ns: breached"


@pytest.mark.parametrize(
    ("seconds", "reads"),
    [(0.0, "< 1 ms"), (0.0004, "< 1 ms"), (0.001, "1 ms"), (0.072, "72 ms"), (3.21, "3.21 s")],
)
def test_a_runs_span_is_said_at_the_resolution_of_its_times(seconds: float, reads: str) -> None:
    from pytest_benchsdk._views.text import span_text

    # The stored start and end are milliseconds: a 0.4 ms run is "< 1 ms", never "0 ns".
    assert span_text(seconds) == reads


def test_a_history_table_puts_its_time_columns_in_one_unit() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from pytest_benchsdk._views.text import history_lines
    from pytest_benchsdk.results import Knobs
    from pytest_benchsdk.results._history import HistorySeries, RunHistory, SeriesPoint

    runs = [SimpleNamespace(run_id=f"run{i}", started_at=f"2026-12-0{i}T10:00:00Z") for i in (1, 2)]

    def series(statistic: str, values: list[float]) -> HistorySeries:
        points = tuple(
            SeriesPoint(r.run_id, r.started_at, v) for r, v in zip(runs, values, strict=True)
        )
        return HistorySeries("p1", "latency_ms", "latency", "ms", statistic, True, points)

    history = RunHistory(
        "demo", "Demo", Knobs(2, 1, 0, "participant"), True, cast(Any, tuple(runs)),
        (series("median", [0.00075, 0.00076]), series("p95", [0.001254, 0.00126])),
    )  # fmt: skip
    table = "\n".join(history_lines(history))
    # Never "1254 ns" in one column beside "0.750 µs" in the next.
    assert "0.750 µs" in table, table
    assert "1.25 µs" in table, table
    assert " ns" not in table, table


# ------------------------------------------ instruction counts: a count, never a time (issue 45)


def test_a_count_reads_whole_below_ten_thousand_and_with_an_si_prefix_above() -> None:
    assert quantity(812.0, "instr") == "812 instr"
    assert quantity(9731.4, "instr") == "9,731 instr"
    assert quantity(12.5, "instr") == "12.5 instr"  # a per-call figure of a tiny call
    assert quantity(12_345.0, "instr") == "12.3 k instr"
    assert quantity(1_234_567.0, "instr") == "1.23 M instr"
    assert quantity(999_960.0, "instr") == "1.00 M instr"  # rounding carries into the prefix
    assert quantity(2.5e9, "instr") == "2.50 G instr"
    # A row in one prefix, the largest value's; never milliseconds.
    assert stat_triple(1_234_567.0, 1_250_000.0, 1_480_000.0, "instr") == "1.23/1.25/1.48 M instr"
    assert "ms" not in stat_triple(0.5e6, 1e6, 2e6, "instr")


def test_a_change_between_two_counts_reads_exact() -> None:
    from pytest_benchsdk._base.numbers import change_of_values

    # A few instructions moved are a change: both counts in full.
    assert change_of_values(1_234_567.0, 1_240_112.4, "instr") == "1,234,567 → 1,240,112 instr"


def test_a_count_threshold_reads_with_the_observed_counts_prefix() -> None:
    from pytest_benchsdk._config.thresholds import Threshold, ThresholdVerdict

    breached = ThresholdVerdict(
        Threshold("instructions", "p95", "<", 2e6), "p1", 2_051_234.0, False, unit="instr"
    )
    assert breached.message() == (
        "p1: instructions p95 = 2.05 M instr, threshold < 2 M instr: breached"
    )
    ok = ThresholdVerdict(
        Threshold("instructions", "median", "<", 5000), "p1", 4321.0, True, unit="instr"
    )
    assert ok.message() == "p1: instructions median = 4,321 instr, threshold < 5,000 instr: ok"


def test_instructions_have_the_count_unit() -> None:
    from pytest_benchsdk._base.numbers import COUNT_UNITS
    from pytest_benchsdk._instruments import INSTRUCTIONS_KEY
    from pytest_benchsdk.results import metric_unit
    from pytest_benchsdk.results._model import INSTRUCTIONS_UNIT

    assert metric_unit(INSTRUCTIONS_KEY, None) == INSTRUCTIONS_UNIT
    assert INSTRUCTIONS_UNIT in COUNT_UNITS
    # A declared unit still wins; a time key keeps its time unit.
    assert metric_unit(INSTRUCTIONS_KEY, "ops") == "ops"
    assert metric_unit("cpu_ms", None) == "ms"


def test_a_column_of_times_reads_in_one_unit_chosen_from_its_medians() -> None:
    # Issue 46: "0.0755/0.0980/1.10 s" beside "127/140/145 ms" in one column.
    from helpers.runs import config, finish, live_run, record
    from pytest_benchsdk._views.markdown import markdown_summary
    from pytest_benchsdk._views.text import summary_lines

    def latencies(values: list[float]) -> list:  # type: ignore[type-arg]
        return [record(i, v, data={"wait_ms": v}) for i, v in enumerate(values)]

    # 19 samples: nothing trimmed, so the 1.1 s sample is the p95 and p99.
    spiky = [75.5] * 17 + [98.0, 1100.0]
    steady = [127.0] * 17 + [140.0, 145.0]
    records = {"spiky": latencies(spiky), "steady": latencies(steady)}
    bench = config(participants=list(records), iterations=19)
    summary = finish(live_run(bench, records))
    text = "\n".join(summary_lines(summary))
    assert "75.5/1100/1100 ms" in text, text
    assert "127/145/145 ms" in text, text
    assert "1.10 s" not in text, text
    markdown = markdown_summary([summary])
    assert "75.5/1100/1100 ms" in markdown
    assert "1.10 s" not in markdown
    # A count keeps its own prefix: whole numbers beside "1.23 M instr".
    assert stat_triple(9_732, 9_734, 9_734, "instr", reference=1.23e6) == "9,732/9,734/9,734 instr"


def test_names_cut_in_a_table_never_read_as_one() -> None:
    from pytest_benchsdk._views.text import distinct_cells, name_cell

    same_start = [f"test_{'x' * 40}[{i}-{'y' * 30}]" for i in range(3)]
    cells = distinct_cells(same_start)
    assert len(set(cells.values())) == 3
    assert all(len(cell) < len(name) for name, cell in cells.items())
    # A name alone keeps its end, where a parametrized test's id is.
    assert name_cell("test_" + "z" * 50 + "[case-7]").endswith("[case-7]")
    # Names that differ only in the middle keep the character that tells them apart.
    middle = ["a" * 30 + c + "b" * 30 for c in "PQ"]
    told = distinct_cells(middle)
    assert [told[name][17] for name in middle] == ["P", "Q"]
