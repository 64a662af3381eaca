"""Tests of pytest_benchsdk.compare.run_warnings: each code triggered, and not triggered."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_benchsdk._analysis.hygiene import step_floor_warnings
from pytest_benchsdk.compare import (
    FAILURE_RATE,
    FIRST_OUTLIER,
    HIGH_VARIANCE,
    P99_FEW_SAMPLES,
    TIMER_FLOOR,
    TREND,
    UNMEASURED_METRIC,
    WARNING_CODES,
    RunWarning,
    run_warnings,
)


def steady(n: int, seed: int = 0, sigma: float = 0.05) -> list[float]:
    values: list[float] = np.random.default_rng(seed).lognormal(math.log(100), sigma, n).tolist()
    return values


def codes(samples: list[float], **kwargs: int) -> list[str]:
    return [w.code for w in run_warnings("e2b", {"tti_ms": samples}, **kwargs)]


def test_codes_are_stable_and_distinct() -> None:
    assert WARNING_CODES == (
        "failure-rate",
        "unmeasured-metric",
        "p99-few-samples",
        "first-outlier",
        "high-variance",
        "trend",
        "timer-floor",
    )
    assert (
        FAILURE_RATE,
        UNMEASURED_METRIC,
        P99_FEW_SAMPLES,
        FIRST_OUTLIER,
        HIGH_VARIANCE,
        TREND,
        TIMER_FLOOR,
    ) == WARNING_CODES


def test_clean_samples_give_no_warning() -> None:
    assert run_warnings("e2b", {"tti_ms": steady(200)}, iterations=200, failed=0) == []


def test_p99_from_fewer_than_100_samples() -> None:
    (warning,) = run_warnings("e2b", {"tti_ms": steady(50)})
    assert warning == RunWarning(
        P99_FEW_SAMPLES,
        warning.message,
        "e2b",
        "tti_ms",
        finding="p99 comes from 50 sample(s)",
        figure=50,
    )
    assert warning.message.startswith(f"{warning.finding}; ")
    assert "50 sample(s)" in warning.message
    assert "largest sample" in warning.message
    assert P99_FEW_SAMPLES not in codes(steady(100))
    assert codes([]) == []


def test_a_slow_first_iteration_is_flagged() -> None:
    samples = steady(200)
    samples[0] = 400.0
    warnings = [w for w in run_warnings("e2b", {"tti_ms": samples}) if w.code == FIRST_OUTLIER]
    (warning,) = warnings
    assert "above" in warning.message
    assert "warmup" in warning.message


def test_a_first_time_far_below_the_others_is_no_warm_up() -> None:
    # A first round or latency far *below* the rest pays for nothing: no warm-up advice
    # (issue 47). A metric of another kind (a throughput: higher is better) still is flagged.
    samples = steady(200)
    samples[0] = 10.0
    rounds = run_warnings("test_x", {"time_ms": samples}, rounds=True)
    assert FIRST_OUTLIER not in [w.code for w in rounds]
    latency = run_warnings("e2b", {"latency_ms": samples})
    assert FIRST_OUTLIER not in [w.code for w in latency]
    assert FIRST_OUTLIER in codes(samples)
    samples[0] = 400.0
    assert FIRST_OUTLIER in [
        w.code for w in run_warnings("test_x", {"time_ms": samples}, rounds=True)
    ]


def test_an_ordinary_first_iteration_is_not_flagged() -> None:
    samples = steady(200)
    samples[0] = 115.0  # a few standard deviations: unlucky, not a different kind
    assert FIRST_OUTLIER not in codes(samples)


def test_first_outlier_needs_spread_and_samples() -> None:
    assert FIRST_OUTLIER not in codes([500.0, *[100.0] * 150])  # MAD 0: no z-score
    assert FIRST_OUTLIER not in codes([500.0, 100.0, 101.0, 99.0])  # too few samples


def test_high_variance() -> None:
    assert HIGH_VARIANCE in codes(steady(200, sigma=0.8))
    assert HIGH_VARIANCE not in codes(steady(200, sigma=0.1))
    assert HIGH_VARIANCE not in codes([-5.0, 5.0, -6.0, 6.0] * 30)  # no positive mean
    # A spread of two or four samples is no finding (the quick start's cold phase of 2).
    assert HIGH_VARIANCE not in codes([11.2, 16.9])
    assert HIGH_VARIANCE not in codes([10.0, 30.0, 10.0, 30.0])
    assert HIGH_VARIANCE in codes([10.0, 30.0, 10.0, 30.0, 10.0])


def test_a_trend_over_the_run() -> None:
    rng = np.random.default_rng(1)
    rising = (100 * (1 + np.linspace(0, 0.5, 200)) * rng.lognormal(0, 0.05, 200)).tolist()
    warnings = [w for w in run_warnings("e2b", {"tti_ms": rising}) if w.code == TREND]
    (warning,) = warnings
    assert "later iterations are higher" in warning.message
    falling = rising[::-1]
    assert "later iterations are lower" in run_warnings("e2b", {"tti_ms": falling})[-1].message


def test_no_trend_in_noise_or_in_a_negligible_drift() -> None:
    assert TREND not in codes(steady(500))
    # 2 % drift over 5,000 tight samples: significant, but not worth a warning.
    rng = np.random.default_rng(2)
    drifting = (100 * (1 + np.linspace(0, 0.02, 5000)) * rng.lognormal(0, 0.01, 5000)).tolist()
    assert TREND not in codes(drifting)
    assert TREND not in codes([float(i) for i in range(1, 10)])  # fewer than 10 samples


def test_a_scored_metric_no_passing_iteration_measured() -> None:
    found = run_warnings(
        "e2b", {"tti_ms": [], "bytes": steady(200)}, iterations=200, scored=["tti_ms", "bytes"]
    )
    assert [(w.code, w.metrics) for w in found] == [(UNMEASURED_METRIC, ("tti_ms",))]
    assert "measure(<key>=value)" in found[0].message
    assert "with step(...)" in found[0].message
    # A metric nobody scores, or a participant none of whose iterations passed (failure-rate
    # says that), is not this.
    assert run_warnings("e2b", {"tti_ms": []}, iterations=20) == []
    assert [w.code for w in run_warnings("e2b", {}, iterations=3, failed=3, scored=["x"])] == [
        FAILURE_RATE
    ]
    # NaN samples are no samples.
    nan = run_warnings("e2b", {"x": [math.nan] * 5}, iterations=5, scored=["x"])
    assert [w.code for w in nan] == [UNMEASURED_METRIC]


def test_failure_rate() -> None:
    (warning,) = run_warnings("e2b", {}, iterations=100, failed=6)
    assert (warning.code, warning.participant, warning.metric) == (FAILURE_RATE, "e2b", None)
    assert "6 of 100 iterations failed" in warning.message
    assert run_warnings("e2b", {}, iterations=100, failed=5) == []
    assert run_warnings("e2b", {}) == []


def test_warnings_come_participant_first_then_by_code_metrics_that_say_the_same_merged() -> None:
    samples = steady(50)
    samples[0] = 200.0
    warnings = run_warnings("e2b", {"a": samples, "b": steady(50)}, iterations=50, failed=10)
    assert [(w.code, w.metrics) for w in warnings] == [
        (FAILURE_RATE, ()),
        (P99_FEW_SAMPLES, ("a", "b")),  # the same 50 samples: one warning for both
        (FIRST_OUTLIER, ("a",)),
    ]
    assert warnings[1].metric == "a, b"
    assert warnings[2].metric == "a"
    assert warnings[0].metric is None


def test_p99_few_samples_only_where_p99_counts() -> None:
    samples = {"a": steady(50), "b": steady(50)}
    assert [w.metrics for w in run_warnings("e2b", samples, p99_metrics={"b"})] == [("b",)]
    assert run_warnings("e2b", samples, p99_metrics=()) == []


def test_first_outlier_speaks_in_the_metrics_unit() -> None:
    samples = steady(200)
    samples[0] = 400.0
    (warning,) = run_warnings("e2b", {"tti_ms": samples}, units={"tti_ms": "ms"})
    assert "(400 ms against a median of 100 ms, modified z-score" in warning.message
    scaled = [v / 1000 for v in samples]  # 0.4 ms is shown as 400 µs
    (warning,) = run_warnings("e2b", {"tti_ms": scaled}, units={"tti_ms": "ms"})
    assert "(400 µs against a median of 100 µs" in warning.message


def test_first_outlier_after_warm_up_says_warm_up_did_not_reach_it() -> None:
    samples = steady(200)
    samples[0] = 400.0
    (cold,) = run_warnings("e2b", {"tti_ms": samples})
    assert "add warm-up iterations (warmup=1 in the config, or --bench-warmup 1)" in cold.message
    (warm,) = run_warnings("e2b", {"tti_ms": samples}, warmup=3)
    assert warm.message.startswith("the first measured iteration is still far above the others")
    assert "after 3 warm-up iteration(s)" in warm.message
    assert "add warm-up" not in warm.message


def test_a_warning_of_an_earlier_version_reads_back() -> None:
    old = {"code": P99_FEW_SAMPLES, "message": "m", "participant": "e2b", "metric": "tti_ms"}
    assert RunWarning.from_json(old) == RunWarning(P99_FEW_SAMPLES, "m", "e2b", ("tti_ms",))
    wide = {"code": FAILURE_RATE, "message": "m", "participant": "e2b", "metric": None}
    assert RunWarning.from_json(wide).metrics == ()


def test_non_finite_and_non_numbers_are_left_out() -> None:
    samples: list[object] = [*steady(120), math.nan, math.inf, None, "x", True]
    assert run_warnings("e2b", {"tti_ms": samples}) == []  # type: ignore[dict-item]


def test_to_json() -> None:
    (warning,) = run_warnings("e2b", {}, iterations=10, failed=5)
    data = warning.to_json()
    assert data == {
        "code": FAILURE_RATE,
        "message": warning.message,
        "participant": "e2b",
        "phase": None,
        "metric": None,
        "metrics": [],
        "finding": "5 of 10 iterations failed (50%, more than 5%)",
        "figure": 0.5,
    }
    assert RunWarning.from_json(json.loads(json.dumps(data))) == warning


def test_a_phase_warning_names_its_phase_and_reads_back() -> None:
    (warning,) = run_warnings("e2b", {}, iterations=10, failed=5, phase="cold")
    assert warning.phase == "cold"
    assert warning.subject == "e2b · cold"
    assert warning.to_json()["phase"] == "cold"
    assert RunWarning.from_json(json.loads(json.dumps(warning.to_json()))) == warning
    # Stored before phases were judged apart: about the whole run.
    old = {"code": TREND, "message": "m", "participant": "e2b", "metrics": ["tti_ms"]}
    assert RunWarning.from_json(old).phase is None
    assert RunWarning.from_json(old).subject == "e2b"


def test_each_phase_is_its_own_series() -> None:
    """A cold phase ten times slower than the warm one: pooled, it is a first outlier, a trend
    and high variance; judged per phase (as the results do with phases), nothing."""
    cold = steady(20, seed=1, sigma=0.03)
    warm = [v / 10 for v in steady(40, seed=2, sigma=0.03)]
    pooled = codes(cold + warm)
    assert {FIRST_OUTLIER, TREND, HIGH_VARIANCE} <= set(pooled)
    assert codes(cold) == [P99_FEW_SAMPLES]
    assert codes(warm) == [P99_FEW_SAMPLES]


def test_series_checks_are_the_per_series_codes_in_order() -> None:
    from pytest_benchsdk._analysis.hygiene import SERIES_CHECKS

    per_series = [code for code, _ in SERIES_CHECKS]
    assert per_series == [c for c in WARNING_CODES if c in per_series]
    assert per_series == [P99_FEW_SAMPLES, FIRST_OUTLIER, HIGH_VARIANCE, TREND, TIMER_FLOOR]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"iterations": -1}, "iterations must be an int >= 0"),
        ({"failed": 2, "iterations": 1}, r"failed \(2\) cannot exceed iterations \(1\)"),
        ({"failed": 1.5, "iterations": 3}, "failed must be an int >= 0"),
        ({"warmup": -1}, "warmup must be an int >= 0"),
    ],
)
def test_bad_counts_are_clear_value_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_warnings("e2b", {}, **kwargs)  # type: ignore[arg-type]


def test_a_first_outlier_of_a_phase_names_the_phase_s_own_warm_up() -> None:
    samples = [1000.0, *steady(40)]
    (found,) = [
        w for w in run_warnings("e2b", {"tti_ms": samples}, phase="cold") if w.code == FIRST_OUTLIER
    ]
    assert found.message.startswith("the first iteration of phase cold is far above the others")
    assert 'Phase("cold", ..., warmup=1)' in found.message


# ------------------------------------------------------------------ timer-floor (issue 30, 2)


def _jitter(center: float) -> list[float]:
    """21 samples 1 % apart around ``center`` (their median), in a shuffled order."""
    values = [center * (1 + 0.01 * k) for k in range(-10, 11)]
    return values[::2] + values[1::2]


def test_a_latency_under_two_microseconds_is_on_the_clock_floor() -> None:
    found = run_warnings("p1", {"latency_ms": _jitter(0.0012)}, units={"latency_ms": "ms"})
    floor = [w for w in found if w.code == TIMER_FLOOR]
    assert len(floor) == 1
    assert floor[0].metrics == ("latency_ms",)
    assert "the median is 1.20 µs, under 2.00 µs" in floor[0].message
    assert 'step(name, fn, calls="auto")' in floor[0].message


def test_a_measured_metric_under_two_microseconds_is_not_flagged() -> None:
    # A per-call figure the task computed itself (a loop of its own) is not one clock pair.
    found = run_warnings("p1", {"per_call_ms": _jitter(0.00015)}, units={"per_call_ms": "ms"})
    assert TIMER_FLOOR not in [w.code for w in found]


def test_most_samples_on_one_value_is_the_record_floor() -> None:
    # What 0.001 ms rounding made of a 150 ns step: every sample 1.00 µs.
    samples = [0.001] * 14 + [0.002] * 6
    (floor,) = [
        w
        for w in run_warnings("p1", {"join_ms": samples}, units={"join_ms": "ms"})
        if w.code == TIMER_FLOOR
    ]
    assert floor.message.startswith("14 of 20 samples are exactly 1.00 µs")
    # Any time unit: a millisecond timer's integers too.
    coarse = {"tti_ms": [12.0] * 11 + [13.0] * 9}
    assert TIMER_FLOOR in [w.code for w in run_warnings("p1", coarse, units={"tti_ms": "ms"})]


def test_no_floor_for_fine_samples_counts_or_few_samples() -> None:
    fine = {"tti_ms": _jitter(15.0)}
    assert TIMER_FLOOR not in [w.code for w in run_warnings("p1", fine, units={"tti_ms": "ms"})]
    counts = {"rows": [200.0] * 20}
    assert TIMER_FLOOR not in [w.code for w in run_warnings("p1", counts, units={"rows": "rows"})]
    few = {"tti_ms": [1.0, 1.0, 1.0, 2.0]}  # under 5 samples: ties say little
    assert TIMER_FLOOR not in [w.code for w in run_warnings("p1", few, units={"tti_ms": "ms"})]
    # Half on one value is not "most".
    half = {"tti_ms": [1.0] * 10 + [float(v) for v in range(2, 12)]}
    assert TIMER_FLOOR not in [w.code for w in run_warnings("p1", half, units={"tti_ms": "ms"})]


def test_steps_on_the_floor_are_named_and_share_a_finding() -> None:
    warnings = step_floor_warnings(
        "p1",
        {"join": [0.001] * 20, "split": [0.001] * 20, "fetch": _jitter(12.0), "tiny": [0.0003]},
    )
    assert [(w.code, w.metrics) for w in warnings] == [
        (TIMER_FLOOR, ("step join", "step split")),
        (TIMER_FLOOR, ("step tiny",)),
    ]
    assert "the median is 300 ns" in warnings[1].message
    assert step_floor_warnings("p1", {"fetch": _jitter(12.0), "empty": []}) == []


def test_a_benchmarked_test_s_rounds_get_the_fixture_s_advice_and_no_iteration_codes() -> None:
    # Every code the samples would raise, from a test's rounds (the benchmark fixture's).
    cold = [5000.0, *steady(20)]
    drifting = [100.0 + i for i in range(60)]
    floored = [0.0] * 10
    found = run_warnings(
        "test_x",
        {
            "cold": cold,
            "drifting": drifting,
            "floored": floored,
            "wide": [1.0, 100.0, 1.0, 100.0, 1.0],
        },
        # Would be failure-rate and unmeasured-metric of a bench file's iterations.
        iterations=2,
        failed=1,
        scored=["unmeasured"],
        units={"cold": "ms", "floored": "ms"},
        rounds=True,
    )
    by_code = {w.code: w.message for w in found}
    assert set(by_code) == {P99_FEW_SAMPLES, FIRST_OUTLIER, HIGH_VARIANCE, TREND, TIMER_FLOOR}
    assert "warmup_rounds=N" in by_code[FIRST_OUTLIER]
    assert "first round" in by_code[FIRST_OUTLIER]
    assert "min_rounds=100" in by_code[P99_FEW_SAMPLES]
    assert "rounds are lower" in by_code[TREND] or "rounds are higher" in by_code[TREND]
    assert "rounds spread widely" in by_code[HIGH_VARIANCE]
    assert "10 of 10 rounds are exactly" in by_code[TIMER_FLOOR]
    for message in by_code.values():
        assert "--bench-warmup" not in message
        assert "step(" not in message
        assert "iterations or" not in message


def _with_outlier(n: int) -> list[float]:
    """73–80 ms with one 1.1 s sample in the middle of the run (not the first)."""
    return [1100.0 if i == 7 else 73.0 + (i * 7) % 8 for i in range(n)]


def test_high_variance_judges_the_samples_the_statistics_use() -> None:
    # 24 samples: the statistics trim one from each end, the 1.1 s sample with them, so their
    # 77/80/80 ms do not spread (issue 46: "181%" beside 73.6/79.6/80.8 ms).
    samples = {"t_ms": _with_outlier(24)}
    found = run_warnings("a", samples, iterations=24, units={"t_ms": "ms"})
    assert HIGH_VARIANCE not in [w.code for w in found]
    # A metric trimmed less (its scoring's trim=0) keeps the outlier, and is judged with it.
    kept = run_warnings("a", samples, iterations=24, units={"t_ms": "ms"}, trims={"t_ms": 0.0})
    assert HIGH_VARIANCE in [w.code for w in kept]


def test_high_variance_names_the_outlier_that_makes_it() -> None:
    (warning,) = [
        w
        for w in run_warnings("a", {"t_ms": _with_outlier(16)}, iterations=16, units={"t_ms": "ms"})
        if w.code == HIGH_VARIANCE
    ]
    assert warning.message.startswith(
        "coefficient of variation 182% (over 30%) of the 16 samples; one sample of 1.10 s, "
        "14.3× the median (77.0 ms) (without it: 3%): "
    ), warning.message
