"""A participant's records as samples (``ParticipantSamples``, ``sample_sets``, ``timeline``):
the one reader of records for everything a summary says of them, live or from the store."""

from __future__ import annotations

import math

import hypothesis.strategies as st
from hypothesis import given

from helpers.runs import record
from pytest_benchsdk._engine.calibrated import CALLS_KEY
from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.results import ParticipantSamples, sample_sets, timeline


def test_a_sample_is_a_finite_number_or_each_finite_number_of_a_list() -> None:
    samples = sample_sets(
        [
            record(0, data={"v": 1, "many": [1, 2, math.nan, "x"], "flag": True, "name": "n"}),
            record(1, data={"v": math.inf, "many": [3], "flag": False}),
            record(2, data={"v": 2.5, "many": []}),
        ]
    )
    assert samples.metric("v") == [1.0, 2.5]
    assert samples.metric("many") == [1.0, 2.0, 3.0]
    # Booleans and text are never samples; a key without one is no metric.
    assert samples.metric_keys() == ["v", "many"]
    assert samples.metric("flag") == []
    assert samples.metric("missing") == []


def test_failed_and_warm_up_iterations_are_no_samples() -> None:
    samples = sample_sets(
        [
            TaskRecord(task_index=-1, status="success", latency_ms=1.0, data={"v": 1}),
            record(0, 10, data={"v": 10}),
            record(1, 99, data={"v": 99}, error="boom"),
        ]
    )
    assert (samples.count, samples.passed) == (2, 1)
    assert samples.latency() == [10.0]
    assert samples.metric("v") == [10.0]
    assert samples.failures() == [("boom", 1, [])]


def test_a_failure_without_a_code_is_unknown() -> None:
    samples = sample_sets([TaskRecord(task_index=0, status="error", data={"errorMessage": 3})])
    assert samples.failures() == [("unknown", 1, [(0, "3")])]


def test_samples_per_phase_keep_run_order() -> None:
    samples = sample_sets(
        [
            record(3, 13, phase="warm"),
            record(0, 10, phase="cold"),
            record(2, 12, phase="warm"),
            record(1, 11, phase="cold", error="x"),
        ]
    )
    assert samples.phases() == ["cold", "warm"]  # in run order, whatever came first
    assert samples.counts("cold") == (2, 1)
    assert samples.counts("warm") == (2, 2)
    assert samples.counts() == (4, 3)
    assert samples.latency() == [10.0, 12.0, 13.0]  # task index order
    assert samples.latency("warm") == [12.0, 13.0]


def test_steps_keep_their_successful_latencies_and_count_failures() -> None:
    samples = sample_sets(
        [
            record(0, steps=[StepRecord("a", "success", latency_ms=1.0), StepRecord("b", "error")]),
            record(
                1,
                steps=[
                    StepRecord("a", "success"),  # no latency: no sample
                    StepRecord("loop", "success", latency_ms=0.1, data={CALLS_KEY: 1000}),
                    StepRecord("b", "error"),
                ],
            ),
        ]
    )
    assert samples.step_names() == ["a", "loop", "b"]
    assert samples.step("a") == ([1.0], 0)
    assert samples.step("b") == ([], 2)
    assert samples.step("none") == ([], 0)
    assert samples.calibrated_steps() == frozenset({"loop"})


def test_a_record_delivered_again_undoes_everything_the_earlier_one_added() -> None:
    first = record(
        0,
        50,
        data={"v": 5, "many": [1, 2]},
        steps=[StepRecord("a", "success", latency_ms=5.0), StepRecord("b", "error")],
    )
    failed = record(0, 1, error="boom", message="first")
    again = record(0, 7, data={"v": 7}, steps=[StepRecord("a", "success", latency_ms=7.0)])
    samples = ParticipantSamples()
    for one in (first, failed, again):
        samples.add(one)
    assert (samples.count, samples.passed) == (1, 1)
    assert samples.latency() == [7.0]
    assert (samples.metric("v"), samples.metric("many")) == ([7.0], [])
    assert samples.step("a") == ([7.0], 0)
    assert samples.step("b") == ([], 0)
    assert samples.failures() == []


def test_a_benchmarked_tests_rounds_come_from_its_passing_record() -> None:
    rounds = {"rounds": {"count": 12, "iterations": 100}}
    assert sample_sets([record(0, data=rounds)]).rounds() == (12, 100)
    assert (
        sample_sets([record(0, data={"rounds": {"count": True, "iterations": 1}})]).rounds() is None
    )
    assert sample_sets([record(0)]).rounds() is None


def test_the_span_is_the_first_start_and_the_last_end() -> None:
    samples = sample_sets([record(2, 500), record(0, 10), record(1, error="x", latency=4000)])
    assert samples.span() == (
        1796112000.0,  # 2026-12-01T08:00:00Z
        1796112000.0 + 1 + 4.0,
    )
    # Times in another ISO shape are read too; unreadable ones are never earlier.
    other = sample_sets(
        [
            TaskRecord(task_index=0, status="success", started_at="2026-12-01T08:00:05+00:00"),
            TaskRecord(task_index=1, status="success", started_at="garbage"),
            TaskRecord(task_index=2, status="success", started_at="2026-12-01T08:00:01+00:00"),
        ]
    )
    span = other.span()
    assert span is not None
    assert span[0] == 1796112001.0
    assert ParticipantSamples().span() is None
    assert sample_sets([TaskRecord(task_index=0, status="success")]).span() is None


def test_an_end_before_the_start_is_the_start() -> None:
    backwards = TaskRecord(
        task_index=0,
        status="success",
        started_at="2026-12-01T08:00:05.000Z",
        completed_at="2026-12-01T08:00:01.000Z",
    )
    assert sample_sets([backwards]).span() == (1796112005.0, 1796112005.0)
    assert timeline([backwards]) == [(0, 1796112005.0, 1796112005.0, True)]


def test_the_timeline_has_each_measured_iteration_once_in_task_order() -> None:
    records = [
        record(1, 1000, error="x"),
        record(0, 500),
        record(0, 250),  # delivered again: the last one counts
        TaskRecord(task_index=-1, status="success", started_at="2026-12-01T08:00:00.000Z"),
        TaskRecord(task_index=2, status="success"),  # no start: not on the timeline
    ]
    assert timeline(records) == [
        (0, 1796112000.0, 1796112000.25, True),
        (1, 1796112001.0, 1796112002.0, False),
    ]


@given(
    st.lists(
        st.tuples(
            st.integers(0, 30),
            st.sampled_from(["success", "error"]),
            st.floats(0, 1e6, allow_nan=False),
        ),
        max_size=40,
    )
)
def test_samples_fed_one_by_one_or_read_back_say_the_same(
    found: list[tuple[int, str, float]],
) -> None:
    records = [
        TaskRecord(
            task_index=i,
            status=s,
            latency_ms=latency,
            data={"v": latency},
            error_code="e" if s == "error" else None,
        )
        if s == "error"
        else TaskRecord(task_index=i, status=s, latency_ms=latency, data={"v": latency})
        for i, s, latency in found
    ]
    live = sample_sets(records)
    # What the store gives back: the last record of each task index, by index.
    latest = {r.task_index: r for r in records}
    stored = sample_sets([latest[i] for i in sorted(latest)])
    assert (
        (live.count, live.passed)
        == (stored.count, stored.passed)
        == (
            len(latest),
            sum(r.status == "success" for r in latest.values()),
        )
    )
    assert live.latency() == stored.latency()
    assert live.metric("v") == stored.metric("v")
    assert live.failures() == stored.failures()
