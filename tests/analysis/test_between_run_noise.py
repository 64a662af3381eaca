"""The comparison's verdict with the between-run noise of earlier runs, what "unchanged" means
(the smallest detectable change, the reason), and their JSON forms."""

from __future__ import annotations

import json
import math

import attrs
import numpy as np
import pytest

from pytest_benchsdk._analysis.baseline import (
    MIN_HISTORY_RUNS,
    BaselineComparison,
    BetweenRunNoise,
    MetricComparison,
    between_run_noise,
    compare_runs,
)
from pytest_benchsdk._base.numbers import change_text
from pytest_benchsdk.compare import Comparison, compare_samples, detectable_change
from pytest_benchsdk.records import TaskRecord


def lognormal(n: int, seed: int, scale: float = 1.0) -> list[float]:
    values: list[float] = (20 * scale * np.random.default_rng(seed).lognormal(0, 0.1, n)).tolist()
    return values


def test_noise_needs_three_earlier_positive_values() -> None:
    assert MIN_HISTORY_RUNS == 3
    assert between_run_noise([10.0, 11.0]) is None
    assert between_run_noise([10.0, 0.0, 11.0]) is None
    assert between_run_noise([10.0, math.nan, 11.0]) is None
    assert between_run_noise([10.0, 11.0, 10.5]) is not None


def test_the_band_is_a_robust_normal_band_or_the_second_largest_change() -> None:
    # Consecutive changes of exactly ±2 %: the normal band (2.9 times the median change).
    values = [100 * 1.02 ** (i % 2) for i in range(10)]
    noise = between_run_noise(values)
    assert noise is not None
    assert noise.runs == 10
    assert noise.typical == pytest.approx(0.02, rel=1e-9)
    # Student's t with 9 degrees of freedom (10 values, 9 changes): 2.262 instead of 1.960.
    normal = 2.262157 * math.log(1.02) / 0.6744897501960817
    assert noise.band == pytest.approx(math.expm1(normal), rel=1e-5)
    # A burst in the history (one run three times the others, the next back): two large
    # changes, and the band covers them.
    burst = list(values)
    burst[6] *= 3
    found = between_run_noise(burst)
    assert found is not None
    assert found.typical == pytest.approx(0.02, rel=1e-9)
    assert found.band == pytest.approx(300 / 102 - 1, rel=1e-6)  # 102 → 300 and back
    # A step (a regression since): one large change, which does not widen the band.
    step = [v * (1.3 if i >= 6 else 1) for i, v in enumerate(values)]
    stepped = between_run_noise(step)
    assert stepped is not None
    assert (stepped.runs, stepped.typical, stepped.band) == (noise.runs, noise.typical, noise.band)
    # ... though it is the largest move the runs made (kept apart: what the runs did).
    assert noise.largest == pytest.approx(0.02, rel=1e-9)
    assert stepped.largest == pytest.approx(1.3 / 1.02 - 1, rel=1e-9)  # 102 → 130


def test_the_band_holds_both_ways_as_ratios() -> None:
    noise = BetweenRunNoise(runs=5, typical=0.05, band=0.25)
    assert noise.beaten_by(0.26)
    assert not noise.beaten_by(0.24)
    # Down: beyond ÷1.25 (-20 %), not -25 %.
    assert noise.beaten_by(-0.21)
    assert not noise.beaten_by(-0.19)
    assert noise.beaten_by(-1.0)


def _comparison(**changes: object) -> Comparison:
    base = compare_samples(lognormal(50, 1), lognormal(50, 2, 1.3))
    return attrs.evolve(base, **changes)  # type: ignore[arg-type]


def test_a_within_run_regression_stands_when_it_beats_the_history() -> None:
    c = _comparison()
    assert c.verdict == "regressed"
    assert c.change > 0.2
    row = MetricComparison("p1", "value", "median", "ms", c, None, BetweenRunNoise(8, 0.01, 0.04))
    assert row.verdict == "regressed"
    assert row.noise == "within-run"  # its own interval asked more than the history's band
    assert row.noise_label == "within-run"
    assert row.detectable == c.detectable
    assert row.reason is None


def test_a_change_within_the_history_band_is_unchanged_and_says_why() -> None:
    c = _comparison()
    noisy = BetweenRunNoise(6, 0.2, 0.5)
    row = MetricComparison("p1", "value", "median", "ms", c, None, noisy)
    assert c.verdict == "regressed"
    assert row.verdict == "unchanged"
    assert row.noise == "history"
    assert row.noise_label == "history, 6 runs"
    assert row.detectable == 0.5
    assert row.reason is not None
    assert "is within what the last 6 complete runs show between themselves" in row.reason
    assert row.reason.endswith("(up to +50.0% or -33.3%)")


def test_a_significant_interval_that_failed_the_mann_whitney_test_says_so() -> None:
    c = _comparison(p_value=0.08, verdict="unchanged")
    assert c.beyond_noise
    assert not c.significant
    row = MetricComparison("p1", "value", "median", "ms", c)
    assert row.verdict == "unchanged"
    assert row.reason is not None
    assert row.reason.startswith("the Mann–Whitney U test did not pass (p = 0.08, needs < 0.05)")
    # An interval inside the noise band needs no reason: "detects" says it all.
    quiet = compare_samples(lognormal(50, 1), lognormal(50, 2))
    assert quiet.verdict == "unchanged"
    assert not quiet.beyond_noise
    assert MetricComparison("p1", "value", "median", "ms", quiet).reason is None


def test_detectable_is_the_threshold_plus_the_intervals_half_width() -> None:
    c = compare_samples(lognormal(50, 1), lognormal(50, 2), noise_threshold=0.02)
    assert c.detectable == pytest.approx(0.02 + (c.ci_high - c.ci_low) / 2)
    # At n = 50, lognormal sigma 0.1: about 2 % + 4 %.
    assert 0.04 < c.detectable < 0.1
    assert detectable_change(-math.inf, 0.1, 0.02) == math.inf


def test_comparison_json_round_trip_and_an_older_form() -> None:
    c = _comparison()
    data = json.loads(json.dumps(c.to_json()))
    assert data["detectable"] == pytest.approx(c.detectable)
    assert Comparison.from_json(data) == c
    del data["detectable"]  # as stored by earlier versions: it follows from the interval
    assert Comparison.from_json(data) == c


def test_metric_comparison_json_says_the_final_verdict_and_reads_back() -> None:
    row = MetricComparison(
        "p1", "value", "median", "ms", _comparison(), None, BetweenRunNoise(6, 0.2, 0.5)
    )
    data = json.loads(json.dumps(row.to_json()))
    assert data["comparison"]["verdict"] == "regressed"  # the within-run rule's
    assert (data["verdict"], data["noise"]) == ("unchanged", "history")
    assert data["detectable"] == 0.5
    assert data["history"] == {
        "runs": 6,
        "typical": 0.2,
        "band": 0.5,
        "leftOutChanged": 0,
        "leftOutBeforeChange": 0,
        "largest": None,
    }
    assert data["reason"] == row.reason
    assert MetricComparison.from_json(data) == row
    comparison = BaselineComparison("run x", "x", (), (row,), history_runs=6)
    assert BaselineComparison.from_json(json.loads(json.dumps(comparison.to_json()))) == comparison


def test_the_noise_line_says_where_the_noise_comes_from() -> None:
    def line(runs: int | None) -> str:
        return BaselineComparison("run x", "x", (), (), history_runs=runs).noise_line()

    assert line(2).startswith("Between-run noise: unknown (2 earlier complete run(s)")
    assert "3 needed" in line(0)
    assert line(5) == "Between-run noise: from the 5 earlier complete runs with the same setup"
    assert line(45) == (
        "Between-run noise: from the latest 30 of 45 earlier complete runs with the same setup"
    )


def _records(values: list[float]) -> tuple[TaskRecord, ...]:
    return tuple(
        TaskRecord(task_index=i, status="success", latency_ms=v) for i, v in enumerate(values)
    )


def test_compare_runs_puts_each_rows_history_into_it() -> None:
    baseline = {"p1": _records(lognormal(40, 1)), "p2": _records(lognormal(40, 3))}
    current = {"p1": _records(lognormal(40, 2, 1.3)), "p2": _records(lognormal(40, 4))}
    calm = [20.0, 20.2, 19.9, 20.1, 20.0]
    wild = [20.0, 22.0, 19.0, 22.5, 19.5]
    rows = compare_runs(
        baseline,
        current,
        None,
        history={
            ("p1", "latency_ms", "median"): calm,
            ("p1", "latency_ms", "p95"): wild,
            ("p2", "latency_ms", "median"): calm[:2],  # too few
        },
    )
    by_key = {(r.participant, r.statistic): r for r in rows}
    assert by_key[("p1", "median")].verdict == "regressed"
    # Four rows can fail the session: the band is Bonferroni's for four.
    assert by_key[("p1", "median")].history == between_run_noise(calm, rows=4)
    assert by_key[("p1", "p95")].noise == "history"
    assert by_key[("p1", "p95")].verdict == "unchanged"  # +31 % is what these runs show
    assert by_key[("p2", "median")].history is None
    assert by_key[("p2", "median")].noise == "within-run"


def test_changes_from_a_thousand_percent_on_drop_the_tenths() -> None:
    assert change_text(0.123) == "+12.3%"
    assert change_text(-0.5) == "-50.0%"
    assert change_text(33.839) == "+3384%"
    assert change_text(98.5) == "+9850%"
    # From 100 times on, the factor: a history spread over orders of magnitude stays readable.
    assert change_text(24146.229) == "24147×"
    assert change_text(1.4914e17) == "1.49e+17×"


def test_the_normal_band_holds_for_every_row_of_the_session_together() -> None:
    values = [100 * 1.02 ** (i % 2) for i in range(10)]
    one, six = between_run_noise(values), between_run_noise(values, rows=6)
    assert one is not None
    assert six is not None
    # t(1 - 0.05/12, 9) = 3.364 instead of t(0.975, 9) = 2.262.
    ratio = math.log1p(six.band) / math.log1p(one.band)
    assert ratio == pytest.approx(3.3642 / 2.2622, rel=1e-3)
    assert six.typical == one.typical
    with pytest.raises(ValueError, match="rows must be at least 1"):
        between_run_noise(values, rows=0)


def test_a_short_history_widens_the_band() -> None:
    # The same ±2 % swings: from 3 runs (2 changes) the band is t(0.975, 2) = 4.30 σ, from 31
    # runs t(0.975, 30) = 2.04 σ; a σ read off two changes is itself uncertain.
    short = between_run_noise([100 * 1.02 ** (i % 2) for i in range(3)])
    long = between_run_noise([100 * 1.02 ** (i % 2) for i in range(31)])
    assert short is not None
    assert long is not None
    ratio = math.log1p(short.band) / math.log1p(long.band)
    assert ratio == pytest.approx(4.3027 / 2.0423, rel=1e-3)


def _phased(values: list[float], phases: list[str | None]) -> tuple[TaskRecord, ...]:
    return tuple(
        TaskRecord(
            task_index=i,
            status="success",
            latency_ms=v,
            data={} if phase is None else {"phase": phase},
        )
        for i, (v, phase) in enumerate(zip(values, phases, strict=True))
    )


def test_rows_are_per_phase_and_a_baseline_without_phases_compares_pooled() -> None:
    from pytest_benchsdk._analysis.baseline import (
        Baseline,
        compare_with_baseline,
        history_key,
        pooled_participants,
    )

    split = ["cold"] * 40 + ["warm"] * 40
    cold, warm = lognormal(40, 1), [v / 10 for v in lognormal(40, 2)]
    slower_cold = [v * 1.5 for v in cold]
    before = {"p1": _phased(cold + warm, split)}
    after = {"p1": _phased(slower_cold + warm, split)}
    calm = [20.0, 20.2, 19.9, 20.1, 20.0]
    rows = compare_runs(
        before, after, None, history={history_key("p1", "latency_ms", "median", "warm"): calm}
    )
    assert [(r.subject, r.statistic, r.verdict) for r in rows] == [
        ("p1 · cold", "median", "regressed"),
        ("p1 · cold", "p95", "regressed"),
        ("p1 · warm", "median", "unchanged"),
        ("p1 · warm", "p95", "unchanged"),
    ]
    # The warm median's history is its own; Bonferroni for the four rows.
    assert rows[2].history == between_run_noise(calm, rows=4)
    assert rows[0].history is None
    assert MetricComparison.from_json(rows[0].to_json()) == rows[0]
    # A row stored before phases were compared apart reads back as the whole run's.
    old = rows[0].to_json()
    del old["phase"]
    assert MetricComparison.from_json(old).phase is None
    # A baseline whose records carry no phase: pooled against pooled, and said so.
    unsplit = {"p1": _phased(cold + warm, [None] * 80)}
    assert pooled_participants(unsplit, after) == ["p1"]
    comparison = compare_with_baseline(Baseline("old", None, unsplit, {}), after, None, {})
    assert [(r.subject, r.statistic) for r in comparison.rows] == [("p1", "median"), ("p1", "p95")]
    assert any("carry no phases" in w for w in comparison.warnings)


def test_five_paired_rounds_are_not_judged_saying_the_test_cannot_pass() -> None:
    # Thirty times slower in every one of five pairs: the signed-rank test's smallest p is
    # 2/2**5 = 0.0625, so "unchanged" would be a verdict the numbers cannot support.
    from pytest_benchsdk._analysis.baseline.comparison import paired_rounds_needed
    from pytest_benchsdk.compare import compare_paired

    assert paired_rounds_needed(0.05) == 6
    assert paired_rounds_needed(0.01) == 8
    five = compare_paired([1.0, 1.1, 0.9, 1.0, 1.2], [30.0, 31.0, 29.0, 33.0, 30.0])
    row = MetricComparison("p1", "time_ms", "median", "ms", five, paired=True)
    assert row.verdict == "not judged"
    assert row.verdict_label == "not judged: 5 samples"
    assert row.reason is not None
    assert "5 paired rounds; the signed-rank test cannot reach p < 0.05 with fewer than 6" in (
        row.reason
    )
    six = compare_paired([1.0, 1.1, 0.9, 1.0, 1.2, 1.0], [30.0, 31.0, 29.0, 33.0, 30.0, 30.0])
    assert MetricComparison("p1", "time_ms", "median", "ms", six, paired=True).verdict == (
        "regressed"
    )
