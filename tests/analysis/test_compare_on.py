"""``--bench-compare-on``: which rows a comparison has, which of them are judged, the
Bonferroni count of the judged rows, the check of the keys, and the JSON forms."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_benchsdk._analysis.baseline import (
    Baseline,
    BaselineComparison,
    CompareOnError,
    MetricComparison,
    between_run_noise,
    compare_runs,
    compare_with_baseline,
    compared_metrics,
    measured_keys,
)
from pytest_benchsdk._analysis.scoring import ScoringSpec
from pytest_benchsdk.records import TaskRecord


def records(
    latency: float, cpu: float, n: int = 40, seed: int = 0, status: str = "success"
) -> list[TaskRecord]:
    rng = np.random.default_rng(seed)
    return [
        TaskRecord(
            task_index=i,
            status=status,
            latency_ms=float(latency * rng.lognormal(0, 0.05)),
            data={"cpu_ms": float(cpu * rng.lognormal(0, 0.05)), "note": "text", "flag": True},
        )
        for i in range(n)
    ]


def test_the_default_rows_are_as_before_and_compare_on_adds_its_keys() -> None:
    assert [m.key for m in compared_metrics(None)] == ["latency_ms"]
    spec = ScoringSpec.coerce(
        {
            "metrics": [
                {"name": "tti_ms", "ceiling": 100, "weights": {"median": 1, "p95": 0, "p99": 0}}
            ]
        }
    )
    assert [m.key for m in compared_metrics(spec)] == ["tti_ms"]
    added = compared_metrics(spec, ["cpu_ms", "tti_ms", "ratio"])
    assert [(m.key, m.unit, m.lower_is_better) for m in added] == [
        ("tti_ms", None, True),
        ("cpu_ms", "ms", True),
        ("ratio", None, True),
    ]


def test_only_the_named_metrics_are_judged_and_the_others_still_shown() -> None:
    # Wall time doubles (load), CPU time stays: judged on cpu_ms, the session passes.
    baseline = {"zlib": records(7.0, 7.0, seed=1)}
    current = {"zlib": records(14.0, 7.0, seed=2)}
    rows = compare_runs(baseline, current, None, compare_on=["cpu_ms"])
    by_metric = {(r.metric, r.statistic): r for r in rows}
    assert set(by_metric) == {
        ("latency_ms", "median"),
        ("latency_ms", "p95"),
        ("cpu_ms", "median"),
        ("cpu_ms", "p95"),
    }
    wall = by_metric["latency_ms", "median"]
    assert (wall.verdict, wall.judged, wall.verdict_label) == ("regressed", False, "(regressed)")
    cpu = by_metric["cpu_ms", "median"]
    assert (cpu.verdict, cpu.judged, cpu.unit) == ("unchanged", True, "ms")
    comparison = BaselineComparison("main", None, (), rows, None, ("cpu_ms",))
    assert comparison.regressions == ()
    assert comparison.judged_line() is not None
    assert "cpu_ms" in str(comparison.judged_line())
    # Without compare_on every row is judged, as before: the wall regression counts.
    plain = compare_runs(baseline, current, None)
    assert {r.metric for r in plain} == {"latency_ms"}
    assert all(r.judged for r in plain)
    assert BaselineComparison("main", None, (), plain).judged_line() is None
    assert [r.metric for r in BaselineComparison("main", None, (), plain).regressions] == [
        "latency_ms",
        "latency_ms",
    ]


def test_a_judged_cpu_regression_counts() -> None:
    baseline = {"zlib": records(7.0, 7.0, seed=1)}
    current = {"zlib": records(7.0, 11.2, seed=2)}
    rows = compare_runs(baseline, current, None, compare_on=["cpu_ms"])
    comparison = BaselineComparison("main", None, (), rows, None, ("cpu_ms",))
    assert {(r.metric, r.statistic) for r in comparison.regressions} == {
        ("cpu_ms", "median"),
        ("cpu_ms", "p95"),
    }


def test_the_history_band_is_bonferroni_corrected_for_the_judged_rows_only() -> None:
    baseline = {"zlib": records(7.0, 7.0, seed=1)}
    current = {"zlib": records(7.0, 7.0, seed=2)}
    past = [7.0, 7.3, 6.9, 7.2, 7.0, 7.4]
    history = {
        ("zlib", key, s): past for key in ("cpu_ms", "latency_ms") for s in ("median", "p95")
    }
    rows = compare_runs(baseline, current, None, compare_on=["cpu_ms"], history=history)
    judged_band = between_run_noise(past, rows=2)  # 1 participant × 1 judged metric × 2 stats
    assert all(r.history == judged_band for r in rows if r.comparison is not None)
    wider = between_run_noise(past, rows=4)
    assert judged_band is not None
    assert wider is not None
    assert judged_band.band < wider.band


def test_measured_keys_are_the_latency_and_the_data_keys_with_samples() -> None:
    runs = {"a": records(5, 5, n=3), "b": records(5, 5, n=2, status="error")}
    runs["b"][0] = TaskRecord(task_index=0, status="success", latency_ms=1.0, data={"x_ms": [1, 2]})
    # Text and booleans are no samples; an error record's data is not measured.
    assert measured_keys(runs) == ("latency_ms", "cpu_ms", "x_ms")


def test_a_key_nothing_measured_is_an_error_naming_the_keys_there_are() -> None:
    base = Baseline("main", None, {"zlib": records(7, 7)}, {})
    current = {"zlib": records(7, 7, seed=3)}
    spec = ScoringSpec.coerce(
        {
            "metrics": [
                {"name": "tti_ms", "ceiling": 100, "weights": {"median": 1, "p95": 0, "p99": 0}}
            ]
        }
    )
    with pytest.raises(CompareOnError) as caught:
        compare_with_baseline(base, current, spec, {}, compare_on=["cpu_ms", "cpu_msx"])
    assert str(caught.value) == (
        "no participant measured cpu_msx; the keys there are: latency_ms, cpu_ms, tti_ms"
    )
    found = compare_with_baseline(base, current, None, {}, compare_on=["latency_ms"])
    assert found.compare_on == ("latency_ms",)
    assert all(r.judged for r in found.rows)


def test_judged_and_compare_on_round_trip_through_json() -> None:
    baseline = {"zlib": records(7.0, 7.0, seed=1)}
    current = {"zlib": records(14.0, 7.0, seed=2)}
    rows = compare_runs(baseline, current, None, compare_on=["cpu_ms"])
    comparison = BaselineComparison("main", "r1", (), rows, 4, ("cpu_ms",))
    data = json.loads(json.dumps(comparison.to_json()))
    assert data["compareOn"] == ["cpu_ms"]
    assert {(r["metric"], r["judged"]) for r in data["rows"]} == {
        ("latency_ms", False),
        ("cpu_ms", True),
    }
    assert BaselineComparison.from_json(data) == comparison
    # Stored before --bench-compare-on existed: every row judged.
    old = dict(data["rows"][0])
    del old["judged"]
    assert MetricComparison.from_json(old).judged
