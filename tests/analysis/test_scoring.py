"""Tests of pytest_benchsdk.scoring: upstream's scoring math, float for float (§5, §9.2)."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_benchsdk.records import ParticipantRecords, TaskRecord
from pytest_benchsdk.scoring import (
    MetricResult,
    MetricScoring,
    ScoreResult,
    ScoringSpec,
    ScoringSpecError,
    Stats,
    StatWeights,
    compute_stats,
    higher_is_better,
    lower_is_better,
    score,
    score_stat,
    scoring_config_to_spec,
    validate_scoring_spec,
)

MEDIAN_ONLY = {"median": 1, "p95": 0, "p99": 0}


@attrs.frozen
class Outcome:
    participants: Sequence[ParticipantRecords]


def outcome(**participants: list[TaskRecord]) -> Outcome:
    return Outcome([ParticipantRecords(name, records) for name, records in participants.items()])


def ok(i: int = 0, **data: Any) -> TaskRecord:
    return TaskRecord(i, "success", data=data)


def failed(i: int = 0, **data: Any) -> TaskRecord:
    return TaskRecord(i, "error", error_code="E", data=data or None)


def spec_of(*metrics: MetricScoring, **kwargs: Any) -> ScoringSpec:
    return ScoringSpec(metrics, **kwargs)


# --- validate_scoring_spec (§5.6, scoring.test.ts) --------------------------------------------


def test_weights_summing_to_one_across_metrics_are_valid() -> None:
    validate_scoring_spec(
        spec_of(
            lower_is_better("a", ceiling=1, weights={"median": 0.25, "p95": 0.10, "p99": 0.05}),
            lower_is_better("b", ceiling=1, weights={"median": 0.35, "p95": 0.15, "p99": 0.05}),
            lower_is_better("c", ceiling=1, weights={"median": 0.05, "p95": 0, "p99": 0}),
        )
    )
    validate_scoring_spec(
        spec_of(lower_is_better("a", ceiling=1, weights={"median": 0.6, "p95": 0.25, "p99": 0.15}))
    )


def test_weights_summing_to_080_give_the_verbatim_message() -> None:
    spec = spec_of(
        lower_is_better("ttiMs", ceiling=1, weights={"median": 0.5, "p95": 0.2, "p99": 0.1})
    )
    with pytest.raises(ScoringSpecError) as info:
        validate_scoring_spec(spec)
    assert str(info.value) == (
        "Scoring spec weights sum to 0.800, expected 1.0 (±0.01). Each metric's weights.median"
        " + weights.p95 + weights.p99, summed across every declared metric, must total 1.0 for"
        " compositeScore to stay a meaningful 0-100 scale. Per-metric totals: ttiMs=0.800"
    )
    assert isinstance(info.value, ValueError)


def test_weights_summing_to_140_list_every_metric() -> None:
    spec = spec_of(
        lower_is_better("a", ceiling=1, weights={"median": 0.6, "p95": 0.3, "p99": 0.2}),
        lower_is_better("b", ceiling=1, weights={"median": 0.3, "p95": 0, "p99": 0}),
    )
    with pytest.raises(
        ScoringSpecError, match=r"^Scoring spec weights sum to 1\.400, expected 1\.0"
    ):
        validate_scoring_spec(spec)
    with pytest.raises(ScoringSpecError, match=r"Per-metric totals: a=1\.100, b=0\.300$"):
        validate_scoring_spec(spec)


def test_weight_tolerance_is_plus_minus_001() -> None:
    validate_scoring_spec(
        spec_of(lower_is_better("a", ceiling=1, weights={"median": 1.009, "p95": 0, "p99": 0}))
    )
    with pytest.raises(ScoringSpecError, match=r"sum to 1\.011"):
        validate_scoring_spec(
            spec_of(lower_is_better("a", ceiling=1, weights={"median": 1.011, "p95": 0, "p99": 0}))
        )


def test_no_metrics_is_an_error() -> None:
    with pytest.raises(
        ScoringSpecError, match=r"sum to 0\.000.*Per-metric totals: \(no metrics declared\)$"
    ):
        validate_scoring_spec(ScoringSpec([]))


def test_score_validates_first_even_without_records() -> None:
    spec = spec_of(lower_is_better("x", ceiling=1, weights={"median": 0.25, "p95": 0.25, "p99": 0}))
    with pytest.raises(ScoringSpecError, match=r"Scoring spec weights sum to 0\.500"):
        score(outcome(), spec)


# --- compute_stats (§5.3) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "trim", "expected"),
    [
        ([3, 1, 2], 0.05, (2, 3, 3)),
        (range(1, 11), 0.05, (5.5, 10, 10)),  # k = floor(0.5) = 0: untrimmed
        (range(1, 21), 0.05, (10.5, 19, 19)),  # k = 1
        (range(1, 21), 0, (10.5, 19, 20)),
        (range(1, 101), 0.05, (50.5, 91, 95)),
        (range(1, 101), 0, (50.5, 95, 99)),
        ([10, 20, 30, 40, 1000], 0.05, (30, 1000, 1000)),
        ([10, 20, 30, 40, 1000], 0.2, (30, 40, 40)),
        ([1, 2, 3, 4], 0.5, (2.5, 4, 4)),  # n - 2k = 0: no trimming
        (range(1, 11), 0.3, (5.5, 7, 7)),
        ([], 0.05, (0, 0, 0)),
        ([7], 0.05, (7, 7, 7)),
        (range(1, 11), -0.5, (5.5, 10, 10)),  # trim <= 0: untrimmed
        (range(1, 11), math.nan, (5.5, 10, 10)),  # JS: floor(NaN) > 0 is false
        (range(1, 11), math.inf, (5.5, 10, 10)),  # JS: n - 2*Infinity > 0 is false
        (range(1, 11), None, (5.5, 10, 10)),  # None: default trim
    ],
)
def test_compute_stats_worked_examples(
    values: Sequence[float], trim: float | None, expected: tuple[float, float, float]
) -> None:
    stats = compute_stats(values, trim)
    assert stats == Stats(*expected)
    assert (stats.median, stats.p95, stats.p99) == expected


def test_compute_stats_does_not_touch_its_input() -> None:
    values = [3, 1, 2]
    compute_stats(values)
    assert values == [3, 1, 2]


# --- score_stat (§5.4) ------------------------------------------------------------------------

THROUGHPUT = higher_is_better("mbps", floor=1, ceiling=500, weights=MEDIAN_ONLY)
LATENCY = lower_is_better("ms", ceiling=1000, weights=MEDIAN_ONLY)


@pytest.mark.parametrize(
    ("stat", "metric", "expected"),
    [
        (250, THROUGHPUT, 49.899799599198396),
        (0.5, THROUGHPUT, 0),
        (1, THROUGHPUT, 0),
        (600, THROUGHPUT, 100),
        (500, THROUGHPUT, 100),
        (1500, LATENCY, 0),
        (-100, LATENCY, 110.00000000000001),  # not capped at 100 (upstream)
        (250, LATENCY, 75),
        (0, LATENCY, 100),
    ],
)
def test_score_stat_worked_examples(stat: float, metric: MetricScoring, expected: float) -> None:
    assert score_stat(stat, metric) == expected


def test_higher_is_better_floor_defaults_to_zero() -> None:
    metric = higher_is_better("x", ceiling=200, weights=MEDIAN_ONLY)
    assert score_stat(50, metric) == 25
    assert score_stat(0, metric) == 0


def test_ceiling_zero_gives_js_infinities_not_an_error() -> None:
    metric = lower_is_better("x", ceiling=0, weights=MEDIAN_ONLY)
    assert score_stat(5, metric) == 0  # 1 - Infinity → -Infinity → max(0, ...) = 0
    assert score_stat(-5, metric) == math.inf
    assert math.isnan(score_stat(0, metric))  # 0/0, and Math.max(0, NaN) is NaN
    [row] = score(outcome(p=[ok(x=-5)]), spec_of(metric))
    assert math.isnan(row.composite_score)  # 0 * Infinity in the p95/p99 terms is NaN


# --- score: composite, success rate, samples (§5.2, §5.5) -------------------------------------


def test_two_metric_example_with_success_rate() -> None:
    weights = {"median": 0.35, "p95": 0.1, "p99": 0.05}
    spec = spec_of(
        lower_is_better("durationMs", ceiling=1000, weights=weights),
        higher_is_better("throughputMbps", floor=1, ceiling=500, weights=weights),
    )
    duration = lower_is_better("durationMs", ceiling=1000, weights=weights)
    throughput = higher_is_better("throughputMbps", floor=1, ceiling=500, weights=weights)
    d_stats = compute_stats([100, 200, 300, 400])
    t_stats = compute_stats([50, 100, 150, 200])
    assert d_stats == Stats(250, 400, 400)
    assert t_stats == Stats(125, 200, 200)
    assert (
        0.35 * score_stat(250, duration)
        + 0.1 * score_stat(400, duration)
        + 0.05 * score_stat(400, duration)
    ) == 35.25
    assert (
        0.35 * score_stat(125, throughput)
        + 0.1 * score_stat(200, throughput)
        + 0.05 * score_stat(200, throughput)
    ) == 14.67935871743487

    # All four records passing: composite = round2(35.25 + 14.679...) = 49.93.
    records = [
        ok(i, durationMs=d, throughputMbps=t)
        for i, (d, t) in enumerate([(100, 50), (200, 100), (300, 150), (400, 200)])
    ]
    [row] = score(outcome(p=records), spec)
    assert row.composite_score == 49.93
    assert row.metrics == (
        MetricResult("durationMs", "", 250, 400, 400),
        MetricResult("throughputMbps", "", 125, 200, 200),
    )

    # Same samples with success rate 0.75 (a list value contributes each element).
    records = [
        ok(0, durationMs=[100, 200], throughputMbps=[50, 100]),
        ok(1, durationMs=300, throughputMbps=150),
        ok(2, durationMs=400, throughputMbps=200),
        failed(3, durationMs=9999, throughputMbps=0),
    ]
    [row] = score(outcome(p=records), spec)
    assert row.success_rate == 0.75
    assert row.composite_score == 37.45


def test_composite_rounds_half_up_like_math_round() -> None:
    # 0.125 * 100 = 12.5: Math.round gives 13 (Python's round(0.125, 2) would give 0.12).
    spec = spec_of(higher_is_better("x", ceiling=100, weights=MEDIAN_ONLY))
    [row] = score(outcome(p=[ok(x=0.125)]), spec)
    assert row.composite_score == 0.13


def test_success_rate_is_unrounded_and_composite_zero_without_passing_records() -> None:
    spec = spec_of(lower_is_better("x", ceiling=1000, weights=MEDIAN_ONLY))
    [row] = score(outcome(p=[ok(0, x=100), failed(1), failed(2)]), spec)
    assert row.success_rate == 1 / 3
    assert row.composite_score == round(90 / 3, 2)
    [row] = score(outcome(p=[failed(0, x=100), failed(1, x=1)]), spec)
    assert row == ScoreResult("p", {}, (), 0, 0, False)


def test_participant_without_records_is_one_skipped_row() -> None:
    spec = spec_of(lower_is_better("x", ceiling=1000, weights=MEDIAN_ONLY))
    [row] = score(outcome(p=[]), spec)
    assert row.to_wire() == {
        "provider": "p",
        "dimensions": {},
        "metrics": [],
        "compositeScore": 0,
        "successRate": 0,
        "skipped": True,
    }


def test_sampling_ignores_non_numbers_bools_and_non_finite_values() -> None:
    spec = spec_of(lower_is_better("x", ceiling=1000, weights=MEDIAN_ONLY))
    records = [
        ok(0, x=100),
        ok(1, x="200"),
        ok(2, x=True),
        ok(3, x=math.nan),
        ok(4, x=math.inf),
        ok(5, x=None),
        ok(6),
        TaskRecord(7, "success"),  # no data at all
        ok(8, x=[300, "400", False, -math.inf, [500], 600.0]),
        ok(9, x={"v": 1}),
    ]
    [row] = score(outcome(p=records), spec)
    assert row.metrics == (MetricResult("x", "", 300, 600.0, 600.0),)
    assert row.success_rate == 1


def test_value_key_and_callable_value() -> None:
    spec = spec_of(
        lower_is_better(
            "latency", ceiling=1000, weights={"median": 0.5, "p95": 0, "p99": 0}, value="elapsedMs"
        ),
        lower_is_better(
            "steps",
            ceiling=10,
            weights={"median": 0.5, "p95": 0, "p99": 0},
            value=lambda r: [len(r.steps or ())] if r.data else "n/a",
        ),
    )
    records = [ok(0, elapsedMs=100, latency=999), TaskRecord(1, "success")]
    [row] = score(outcome(p=records), spec)
    assert row.metrics == (
        MetricResult("latency", "", 100, 100, 100),
        MetricResult("steps", "", 0, 0, 0),
    )
    assert row.composite_score == 0.5 * 90 + 0.5 * 100


def test_metric_without_samples_is_dropped_without_renormalising() -> None:
    spec = spec_of(
        lower_is_better("a", ceiling=1000, weights={"median": 0.5, "p95": 0, "p99": 0}),
        lower_is_better("b", ceiling=1000, weights={"median": 0.5, "p95": 0, "p99": 0}),
    )
    [row] = score(outcome(p=[ok(a=0)]), spec)
    assert [m.name for m in row.metrics] == ["a"]
    assert row.composite_score == 50


def test_custom_success_predicate() -> None:
    spec = spec_of(
        lower_is_better("x", ceiling=1000, weights=MEDIAN_ONLY),
        success=lambda record: (record.data or {}).get("ok") == 1,
    )
    [row] = score(outcome(p=[failed(0, ok=1, x=100), ok(1, ok=0, x=900)]), spec)
    assert row.success_rate == 0.5
    assert row.metrics[0].median == 100


# --- group_by (§5.7) --------------------------------------------------------------------------

UPLOAD = spec_of(
    lower_is_better("uploadMs", ceiling=1000, weights=MEDIAN_ONLY), group_by="file_size"
)


def test_group_by_rows_aggregate_first_then_groups() -> None:
    records = [ok(0, file_size="1MB", uploadMs=100), ok(1, file_size="4MB", uploadMs=400)]
    rows = score(outcome(**{"aws-s3": records}), UPLOAD)
    assert [r.dimensions.get("file_size") for r in rows] == [None, "1MB", "4MB"]
    assert [r.success_rate for r in rows] == [1, 1, 1]
    assert [r.provider for r in rows] == ["aws-s3"] * 3
    aggregate, one, four = rows
    assert aggregate.metrics == (MetricResult("uploadMs", "", 250, 400, 400),)
    assert aggregate.composite_score == 75
    assert one.metrics == (MetricResult("uploadMs", "", 100, 100, 100),)
    assert one.composite_score == 90
    assert four.composite_score == 60


def test_group_by_success_rate_per_group() -> None:
    records = [ok(0, file_size="1MB", uploadMs=100), failed(1, file_size="1MB")]
    rows = score(outcome(**{"aws-s3": records}), UPLOAD)
    assert [(r.dimensions, r.success_rate) for r in rows] == [
        ({}, 0.5),
        ({"file_size": "1MB"}, 0.5),
    ]
    assert rows[1].composite_score == 45


def test_group_by_participant_without_records_is_one_skipped_row() -> None:
    rows = score(outcome(**{"aws-s3": []}), UPLOAD)
    assert len(rows) == 1
    assert (rows[0].provider, rows[0].skipped, rows[0].success_rate) == ("aws-s3", True, 0)


def test_group_identity_is_json_text_and_missing_key_has_base_dimensions() -> None:
    spec = spec_of(
        lower_is_better("t", ceiling=1000, weights=MEDIAN_ONLY),
        group_by="g",
        dimensions={"region": "eu"},
    )
    records = [
        ok(0, g=1, t=100),
        ok(1, g="1", t=200),
        ok(2, t=300),  # no key: its own group, base dimensions only (§8.3 item 5)
        ok(3, g=1.0, t=400),  # same JS number as 1
        ok(4, g=None, t=500),
        ok(5, g={"a": [1, 2]}, t=600),
        ok(6, g=True, t=700),
        ok(7, g={"a": [1.0, 2]}, t=800),
        TaskRecord(8, "success"),  # no data: the missing-key group
        failed(9, g="new"),
    ]
    rows = score(outcome(p=records), spec)
    assert [(r.dimensions, [m.median for m in r.metrics]) for r in rows] == [
        ({"region": "eu"}, [450]),
        ({"region": "eu", "g": 1}, [250]),
        ({"region": "eu", "g": "1"}, [200]),
        ({"region": "eu"}, [300]),
        ({"region": "eu", "g": None}, [500]),
        ({"region": "eu", "g": {"a": [1, 2]}}, [700]),
        ({"region": "eu", "g": True}, [700]),
        ({"region": "eu", "g": "new"}, []),
    ]
    assert [r.success_rate for r in rows] == [0.9, 1, 1, 1, 1, 1, 1, 0]


def test_group_value_overrides_a_base_dimension_of_the_same_name() -> None:
    spec = spec_of(
        lower_is_better("t", ceiling=1000, weights=MEDIAN_ONLY),
        group_by="size",
        dimensions={"size": "all", "env": "ci"},
    )
    rows = score(outcome(p=[ok(size="1MB", t=1)]), spec)
    assert [list(r.dimensions.items()) for r in rows] == [
        [("size", "all"), ("env", "ci")],
        [("size", "1MB"), ("env", "ci")],
    ]


def test_dimensions_are_json_round_tripped_and_not_shared_between_rows() -> None:
    spec = spec_of(
        lower_is_better("t", ceiling=1000, weights=MEDIAN_ONLY),
        dimensions={"tuple": (1, 2), "nan": math.nan, "fn": len, "nested": {"f": print, "x": 1}},
    )
    rows = score(outcome(a=[ok(t=1)], b=[]), spec)
    assert rows[0].dimensions == {"tuple": [1, 2], "nan": None, "nested": {"x": 1}}
    assert rows[0].dimensions is not rows[1].dimensions
    rows[0].dimensions["mutated"] = True
    assert "mutated" not in rows[1].dimensions


# --- units ------------------------------------------------------------------------------------


def test_unit_comes_from_display_metrics_unless_the_metric_declares_one() -> None:
    records = [ok(durationMs=100)]
    display = [{"key": "durationMs", "unit": "ms"}]
    [row] = score(
        outcome(p=records),
        spec_of(lower_is_better("durationMs", ceiling=500, weights=MEDIAN_ONLY)),
        display,
    )
    assert row.metrics[0].to_wire() == {
        "name": "durationMs",
        "unit": "ms",
        "median": 100,
        "p95": 100,
        "p99": 100,
    }
    [row] = score(
        outcome(p=records),
        spec_of(lower_is_better("durationMs", ceiling=500, weights=MEDIAN_ONLY, unit="s")),
        display,
    )
    assert row.metrics[0].unit == "s"
    [row] = score(
        outcome(p=records), spec_of(lower_is_better("durationMs", ceiling=500, weights=MEDIAN_ONLY))
    )
    assert row.metrics[0].unit == ""


def test_unit_lookup_uses_a_string_value_key_and_the_last_duplicate() -> None:
    @attrs.frozen
    class Display:
        key: str
        unit: str | None

    metric = lower_is_better("latency", ceiling=500, weights=MEDIAN_ONLY, value="durationMs")
    display = [Display("durationMs", "s"), Display("latency", "x"), Display("durationMs", "ms")]
    [row] = score(outcome(p=[ok(durationMs=1)]), spec_of(metric), display)
    assert row.metrics[0].unit == "ms"


# --- scoring_config_to_spec (§5.8) ------------------------------------------------------------


def _cfg(unit: str | None = None, **extra: Any) -> dict[str, Any]:
    metric: dict[str, Any] = {"key": "durationMs", "ceiling": 1000, "weights": MEDIAN_ONLY}
    if unit is not None:
        metric["unit"] = unit
    return {"metrics": [metric], **extra}


@pytest.mark.parametrize(
    ("metric_unit", "display", "expected"),
    [
        (None, {"metrics": [{"key": "durationMs", "label": "D", "unit": "ms"}]}, "ms"),
        ("ms", None, "ms"),
        ("s", {"metrics": [{"key": "durationMs", "label": "D", "unit": "ms"}]}, "ms"),
        (None, None, ""),
        ("s", {"metrics": [{"key": "other", "label": "D", "unit": "ms"}]}, "s"),
        ("s", {"metrics": None}, "s"),
    ],
)
def test_scoring_config_to_spec_units(
    metric_unit: str | None, display: dict[str, Any] | None, expected: str
) -> None:
    spec = scoring_config_to_spec(_cfg(metric_unit), None, display)
    assert spec.metrics[0].unit == expected
    assert spec.metrics[0].value == "durationMs"
    assert spec.metrics[0].name == "durationMs"


def test_scoring_config_to_spec_fields() -> None:
    spec = scoring_config_to_spec(
        {
            "groupBy": "size",
            "metrics": [
                {
                    "key": "mbps",
                    "ceiling": 500,
                    "floor": 1,
                    "higherIsBetter": True,
                    "trim": 0.1,
                    "weights": {"median": 0.6, "p95": 0.3, "p99": 0.1},
                }
            ],
        },
        {"region": "eu", "fn": len},
    )
    assert spec.group_by == "size"
    assert spec.dimensions == {"region": "eu"}
    assert spec.success is None
    assert spec.metrics == (
        MetricScoring(
            "mbps",
            value="mbps",
            unit="",
            ceiling=500,
            floor=1,
            higher_is_better=True,
            weights=StatWeights(0.6, 0.3, 0.1),
            trim=0.1,
        ),
    )
    assert scoring_config_to_spec(_cfg()).dimensions is None
    assert scoring_config_to_spec(_cfg(group_by="")).group_by is None


def test_success_rule_require_data() -> None:
    cfg = _cfg(success={"requireData": {"verified": True}})
    cfg["metrics"][0]["key"] = "forkMs"
    records = [ok(0, verified=True, forkMs=100), ok(1, verified=False, forkMs=900)]
    [row] = score(outcome(p=records), scoring_config_to_spec(cfg))
    assert row.success_rate == 0.5
    assert row.metrics[0].median == 100
    assert row.composite_score == 45
    del cfg["success"]
    [row] = score(outcome(p=records), scoring_config_to_spec(cfg))
    assert row.success_rate == 1
    assert row.metrics[0].median == 500
    assert row.composite_score == 50


def test_success_rule_uses_strict_equality() -> None:
    spec = scoring_config_to_spec(_cfg(success={"require_data": {"flag": True, "n": 1}}))
    assert spec.success is not None
    assert spec.success(ok(flag=True, n=1.0))
    assert not spec.success(ok(flag=1, n=1))  # 1 !== true
    assert not spec.success(ok(flag=True, n=True))  # true !== 1
    assert not spec.success(ok(flag=True, n="1"))
    assert not spec.success(ok(flag=True))
    assert not spec.success(TaskRecord(0, "success"))
    assert not spec.success(failed(flag=True, n=1))


def test_scoring_config_to_spec_accepts_config_models() -> None:
    config = pytest.importorskip("pytest_benchsdk.config")
    scoring = config.ScoringConfig(
        metrics=(
            config.ScoringMetric(
                key="ttiMs", ceiling=1000, weights=config.Weights(median=0.6, p95=0.25, p99=0.15)
            ),
        ),
        group_by="phase",
        success=config.ScoringSuccess(require_data={"ok": True}),
    )
    display = config.DisplayConfig(
        metrics=(config.DisplayMetric(key="ttiMs", label="TTI", unit="ms"),)
    )
    spec = scoring_config_to_spec(scoring, {"env": "ci"}, display)
    assert spec.metrics[0].unit == "ms"
    assert spec.metrics[0].weights == StatWeights(0.6, 0.25, 0.15)
    assert spec.group_by == "phase"
    records = [ok(0, ok=True, ttiMs=100, phase="cold"), ok(1, ok=False, ttiMs=100, phase="warm")]
    rows = score(outcome(p=records), spec, display.metrics)
    assert [(r.dimensions, r.success_rate, r.composite_score) for r in rows] == [
        ({"env": "ci"}, 0.5, 45),
        ({"env": "ci", "phase": "cold"}, 1, 90),
        ({"env": "ci", "phase": "warm"}, 0, 0),
    ]


# --- models and wire --------------------------------------------------------------------------


def test_lower_and_higher_is_better_build_metric_scoring() -> None:
    low = lower_is_better("a", ceiling=10, weights=StatWeights(1, 0, 0), unit="ms", trim=0)
    assert low.higher_is_better is False
    assert low.floor is None
    high = higher_is_better("b", ceiling=10, floor=2, weights={"median": 1, "p95": 0, "p99": 0})
    assert high.higher_is_better is True
    assert high.floor == 2
    assert high.weights == StatWeights(1, 0, 0)
    with pytest.raises(TypeError, match="weights need numeric median, p95 and p99"):
        lower_is_better("c", ceiling=1, weights={"median": 1})


def test_scoring_spec_coerces_mappings() -> None:
    spec = ScoringSpec.coerce(
        {
            "metrics": [
                {"name": "x", "ceiling": 5, "higherIsBetter": True, "weights": MEDIAN_ONLY},
            ],
            "groupBy": "g",
        }
    )
    assert spec.group_by == "g"
    assert spec.metrics[0].higher_is_better is True
    [row] = score(
        outcome(p=[ok(x=5)]), {"metrics": [{"name": "x", "ceiling": 10, "weights": MEDIAN_ONLY}]}
    )
    assert row.composite_score == 50
    with pytest.raises(TypeError, match="needs a 'metrics' list"):
        ScoringSpec.coerce({"metrics": {"name": "x"}})


def test_score_result_wire_round_trip() -> None:
    result = ScoreResult(
        provider="e2b",
        dimensions={"size": "1MB"},
        metrics=[MetricResult("ttiMs", "ms", 250.0, 400, 400)],
        composite_score=75.0,
        success_rate=1.0,
        skipped=False,
    )
    wire = result.to_wire()
    assert wire == {
        "provider": "e2b",
        "dimensions": {"size": "1MB"},
        "metrics": [{"name": "ttiMs", "unit": "ms", "median": 250.0, "p95": 400, "p99": 400}],
        "compositeScore": 75.0,
        "successRate": 1.0,
        "skipped": False,
    }
    assert ScoreResult.from_wire(wire) == result
    assert ScoreResult.from_wire(wire).to_wire() == wire


def test_score_result_from_wire_reads_null_numbers_as_nan_and_validates() -> None:
    wire: dict[str, Any] = {
        "provider": "p",
        "dimensions": {},
        "metrics": [],
        "compositeScore": None,
        "successRate": 1,
        "skipped": False,
    }
    assert math.isnan(ScoreResult.from_wire(wire).composite_score)
    with pytest.raises(ValueError, match=re.escape("result.skipped must be a boolean (got 0)")):
        ScoreResult.from_wire({**wire, "skipped": 0})
    with pytest.raises(ValueError, match=re.escape("result.metrics[0].unit is required")):
        ScoreResult.from_wire({**wire, "metrics": [{"name": "x", "median": 1, "p95": 1, "p99": 1}]})
    with pytest.raises(ValueError, match=re.escape("result has unknown key(s) 'extra'")):
        ScoreResult.from_wire({**wire, "extra": 1})
    with pytest.raises(
        ValueError, match=re.escape('result.successRate must be a number (got "1")')
    ):
        ScoreResult.from_wire({**wire, "successRate": "1"})


# --- properties -------------------------------------------------------------------------------

_samples = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.integers(-(10**6), 10**6),
    min_size=1,
    max_size=60,
)


@pytest.mark.slow
@given(_samples, st.floats(min_value=-0.2, max_value=0.7, allow_nan=False))
def test_median_and_percentiles_lie_within_the_samples(values: list[float], trim: float) -> None:
    stats = compute_stats(values, trim)
    assert min(values) <= stats.median <= max(values)
    assert stats.median <= stats.p95 <= stats.p99 <= max(values)
    assert stats.p95 in values
    assert stats.p99 in values


@given(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=1e-3, max_value=1e6, allow_nan=False),
    st.floats(min_value=0, max_value=1, allow_nan=False),
)
def test_stat_scores_between_floor_and_ceiling_stay_in_0_100(
    floor: float, span: float, position: float
) -> None:
    ceiling = floor + span
    stat = floor + (ceiling - floor) * position
    high = higher_is_better("x", floor=floor, ceiling=ceiling, weights=MEDIAN_ONLY)
    assert 0 <= score_stat(stat, high) <= 100
    if ceiling > 0:
        low_stat = ceiling * position
        low = lower_is_better("x", ceiling=ceiling, weights=MEDIAN_ONLY)
        assert 0 <= score_stat(low_stat, low) <= 100


_record_data = st.fixed_dictionaries(
    {},
    optional={
        "a": st.floats(-1e4, 1e4, allow_nan=False) | st.lists(st.integers(0, 5000), max_size=3),
        "b": st.integers(0, 1000) | st.just(math.inf) | st.text(max_size=2),
        "g": st.sampled_from(["x", "y", 1, 1.0, None]),
    },
)
_records = st.lists(
    st.builds(
        TaskRecord,
        task_index=st.just(0),
        status=st.sampled_from(["success", "error"]),
        data=_record_data,
    ),
    max_size=25,
)
_SPEC = spec_of(
    lower_is_better("a", ceiling=5000, weights={"median": 0.3, "p95": 0.2, "p99": 0.1}),
    higher_is_better(
        "b", floor=10, ceiling=900, weights={"median": 0.2, "p95": 0.1, "p99": 0.1}, trim=0.2
    ),
    group_by="g",
)


@pytest.mark.slow
@settings(max_examples=150)
@given(_records, st.randoms(use_true_random=False))
def test_results_do_not_depend_on_record_order(
    records: list[TaskRecord], rng: random.Random
) -> None:
    shuffled = list(records)
    rng.shuffle(shuffled)
    original = score(outcome(p=records), _SPEC)
    reordered = score(outcome(p=shuffled), _SPEC)
    # Group rows follow first-seen order, so compare them keyed by dimensions.
    assert original[0] == reordered[0]
    key = lambda r: repr(sorted(r.dimensions.items()))  # noqa: E731
    assert sorted(original[1:], key=key) == sorted(reordered[1:], key=key)


@pytest.mark.slow
@given(_records)
def test_composite_is_zero_when_no_record_passes(records: list[TaskRecord]) -> None:
    failing = [attrs.evolve(r, status="error") for r in records]
    for row in score(outcome(p=failing), _SPEC):
        assert row.composite_score == 0
        assert row.success_rate == 0
        assert row.metrics == ()
