"""A benchmark of calibrated steps is judged on their per-call metrics (issue 46, part A),
from records built in the test: the rule (every passing iteration made of calibrated steps
only), the model's ``per_call`` (live, stored, JSON both ways), the relative summary, the
compared rows and the exports."""

from __future__ import annotations

from pathlib import Path

from helpers.runs import config, finish, live_run, record, store_run
from pytest_benchsdk._analysis.baseline import compare_runs, per_call_keys
from pytest_benchsdk._views.exports import export_entries
from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.report._content import load_run
from pytest_benchsdk.results import RunSummary, stored_summary
from pytest_benchsdk.store import ResultStore


def _calibrated(index: int, per_call: float, loop_ms: float = 12.0) -> TaskRecord:
    """An iteration of one calibrated step ``parse``: its loop took ``loop_ms`` (the
    iteration's latency), ``per_call`` ms a call."""
    step = StepRecord(
        name="parse",
        status="success",
        latency_ms=per_call,
        data={"calls": round(loop_ms / per_call), "loop_ms": loop_ms},
    )
    return record(index, loop_ms, data={"parse": per_call}, steps=[step])


def _plain(index: int) -> TaskRecord:
    step = StepRecord(name="fetch", status="success", latency_ms=3.0)
    return record(index, 3.0, data={"parse": 0.001}, steps=[step])


def _records(fast: float, slow: float) -> dict[str, list[TaskRecord]]:
    # The loops' lengths say the opposite of the per-call figures.
    return {
        "a": [_calibrated(i, fast, loop_ms=30.0 + i) for i in range(8)],
        "b": [_calibrated(i, slow, loop_ms=2.0 + i / 10) for i in range(8)],
    }


def test_the_rule_needs_every_passing_iteration_to_be_calibrated_steps() -> None:
    records = _records(0.001, 0.002)
    assert per_call_keys(records) == ("parse",)
    assert per_call_keys({**records, "c": [_plain(0)]}) == ()
    # A failed iteration does not count either way.
    failed = record(9, 5.0, error="boom")
    assert per_call_keys({"a": [*records["a"], failed]}) == ("parse",)


def test_the_summary_is_judged_per_call(tmp_path: Path) -> None:
    run = live_run(config(participants=["a", "b"], iterations=8), _records(0.001, 0.002))
    summary = finish(run, resamples=200)
    assert summary.per_call == ("parse",)
    a = summary.participant("a")
    assert a is not None
    metric = a.metric("parse")
    assert metric is not None
    assert metric.unit == "ms"
    assert metric.lower_is_better is True
    # The relative summary compares the per-call figure: a is faster, though its loops are
    # fifteen times longer.
    assert summary.relative is not None
    assert summary.relative.metric == "parse"
    assert summary.relative.reference == "a"
    # The model says so both ways, and a stored run says the same.
    assert RunSummary.from_json(summary.to_json()).per_call == ("parse",)
    with ResultStore(tmp_path / "results.sqlite3") as store:
        kept = store_run(store, live_run(config(participants=["a", "b"], iterations=8),
                                         _records(0.001, 0.002)))  # fmt: skip
        assert kept.local_run_id is not None
        (stored,) = [r for r in store.list_runs() if r.run_id == kept.local_run_id]
        assert stored_summary(store, stored).per_call == ("parse",)
        # The HTML report charts the per-call figure first.
        report = load_run(store, kept.local_run_id, history=0)
        assert next(iter(report.metrics)) == "parse"


def test_a_mixed_benchmark_keeps_the_latency() -> None:
    records = {"a": [_plain(i) for i in range(4)], "b": [_calibrated(i, 0.001) for i in range(4)]}
    summary = finish(
        live_run(config(participants=["a", "b"], iterations=4), records), resamples=200
    )
    assert summary.per_call == ()
    assert summary.relative is not None
    assert summary.relative.metric == "latency_ms"


def test_the_compared_rows_and_the_exports_are_the_per_call_metric() -> None:
    baseline, current = _records(0.001, 0.002), _records(0.001, 0.003)
    rows = compare_runs(baseline, current, None)
    assert {row.metric for row in rows} == {"parse"}
    b = next(r for r in rows if r.participant == "b" and r.statistic == "median")
    assert b.verdict == "regressed"
    summary = finish(live_run(config(participants=["a", "b"], iterations=8), current))
    metrics = {entry.metric for entry in export_entries([summary])}
    assert metrics == {"parse"}
