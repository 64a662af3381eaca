"""The model's intervals (``run_intervals``) and the relative summary (``relative_summary``):
which samples and metrics they are made of, and which participant is the reference."""

from __future__ import annotations

from typing import Any

import pytest

from helpers.runs import config, finish, live_run, record
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import LATENCY, ParticipantSummary, RunSummary, sample_sets
from pytest_benchsdk.results._intervals import (
    UNSCORED_INTERVAL_METRICS,
    metric_values,
    relative_summary,
)


def _records(base: float, key: str = "ops", count: int = 12) -> list[TaskRecord]:
    return [record(i, base + i % 3, data={key: base + i % 3}) for i in range(count)]


def _run(records: dict[str, list[TaskRecord]], **fields: Any) -> RunSummary:
    bench = config(participants=list(records), iterations=12, **fields)
    return finish(live_run(bench, records), resamples=300)


def test_the_latency_the_scored_metrics_and_the_first_others_get_intervals() -> None:
    many = [
        record(
            i,
            10 + i % 3,
            data={f"m{k:02d}": k + i % 3 for k in range(UNSCORED_INTERVAL_METRICS + 5)},
        )
        for i in range(12)
    ]
    summary = _run({"p": many})
    metrics = list(dict.fromkeys(i.metric for i in summary.intervals))
    assert metrics == [LATENCY] + [f"m{k:02d}" for k in range(UNSCORED_INTERVAL_METRICS)]
    assert {i.statistic for i in summary.intervals} == {"median", "p95", "p99"}


def test_a_participant_that_measured_nothing_gets_no_interval() -> None:
    summary = _run({"p": _records(10), "dead": [record(i, error="x") for i in range(12)]})
    assert {i.participant for i in summary.intervals} == {"p"}
    assert summary.relative is None  # one participant measured: nothing to set it against


def _participants(records: dict[str, list[TaskRecord]], **fields: Any) -> list[ParticipantSummary]:
    return list(_run(records, **fields).ran_participants)


def _values(records: dict[str, list[TaskRecord]]) -> Any:
    def values(participant: ParticipantSummary, metric: str) -> list[float]:
        return [float(r.data[metric]) for r in records[participant.name] if r.data]

    return values


def test_for_a_higher_is_better_metric_the_reference_has_the_highest_median() -> None:
    records = {"slow": _records(100), "fast": _records(400), "mid": _records(200)}
    ran = _participants(records)
    relative = relative_summary(ran, "ops", "Throughput", "op/s", False, _values(records))
    assert relative is not None
    assert (relative.reference, relative.lower_is_better, relative.label) == (
        "fast",
        False,
        "Throughput",
    )
    # How many times better the reference is: its median over the other's, smallest first.
    assert [r.participant for r in relative.rows] == ["mid", "slow"]
    assert [r.factor for r in relative.rows] == pytest.approx([401 / 201, 401 / 101])
    assert all(r.low <= r.factor <= r.high for r in relative.rows)
    lower = relative_summary(ran, "ops", "ops", "", True, _values(records))
    assert lower is not None
    assert lower.reference == "slow"
    assert [r.participant for r in lower.rows] == ["mid", "fast"]


def test_a_participant_whose_median_is_not_positive_is_left_out() -> None:
    records = {
        "zero": [record(i, data={"ops": 0}) for i in range(12)],
        "a": _records(10),
        "b": _records(20),
    }
    relative = relative_summary(_participants(records), "ops", "ops", "", True, _values(records))
    assert relative is not None
    assert relative.reference == "a"
    assert [r.participant for r in relative.rows] == ["b"]


def test_a_relative_summary_needs_two_participants_with_samples() -> None:
    records = {"a": _records(10), "b": _records(20)}
    ran = _participants(records)
    assert relative_summary(ran[:1], "ops", "ops", "", True, _values(records)) is None
    assert relative_summary(ran, "ops", "ops", "", True, lambda p, m: []) is None
    assert relative_summary(ran, "unmeasured", "x", "", True, _values(records)) is None


def test_the_samples_behind_a_statistic_are_those_its_summary_took() -> None:
    (p,) = _participants({"p": _records(10)})
    samples = sample_sets(_records(10))
    assert metric_values(p, LATENCY, samples, None) == samples.latency()
    assert metric_values(p, "ops", samples, None) == samples.metric("ops")
    assert metric_values(p, "ops", samples, {"ops": [1.0]}) == [1.0]
    assert metric_values(p, "ops", None, {"ops": [1.0]}) == []


def test_an_unchanged_verdict_whose_interval_leaves_out_one_names_the_test_that_decided() -> None:
    # Three samples each, far apart: the bootstrap interval of the ratio leaves out 1×, but
    # the rank test cannot reach p < 0.05 with 3 against 3 (issue 46: words and numbers).
    records = {
        "a": [record(i, data={"ops": v}) for i, v in enumerate([10.0, 11.0, 12.0])],
        "b": [record(i, data={"ops": v}) for i, v in enumerate([18.0, 19.0, 20.0])],
    }
    bench = config(participants=list(records), iterations=3)
    ran = list(finish(live_run(bench, records), resamples=300).ran_participants)
    relative = relative_summary(ran, "ops", "ops", "", True, _values(records))
    assert relative is not None
    (row,) = relative.rows
    assert row.verdict == "unchanged"
    assert row.low > 1
    assert row.decided_by == "mann-whitney"
    assert row.p_value is not None
    assert row.alpha is not None
    assert row.p_value >= row.alpha
    # And it survives the model's JSON.
    assert type(row).from_json(row.to_json()) == row


def test_an_interval_that_says_it_names_nothing_else() -> None:
    records = {"a": _records(10), "b": _records(10)}
    relative = relative_summary(_participants(records), "ops", "ops", "", True, _values(records))
    assert relative is not None
    (row,) = relative.rows
    assert row.verdict == "unchanged"
    assert row.decided_by is None
