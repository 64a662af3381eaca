"""Every part of the model serialises both ways: what ``to_json`` writes (the store's summary,
``--bench-json``) ``from_json`` reads back as the same model, through JSON text."""

from __future__ import annotations

import json
import math
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, settings

from helpers.runs import SCORING, config, finish, live_run, record
from pytest_benchsdk._analysis.baseline import Baseline
from pytest_benchsdk._config.models import Participant, Phase
from pytest_benchsdk.records import StepRecord, TaskRecord
from pytest_benchsdk.results import (
    ComparisonOptions,
    HygieneOptions,
    Knobs,
    RoundsKnobs,
    RunStatus,
    RunSummary,
    SampleStats,
)


def _through_json(summary: RunSummary) -> RunSummary:
    text = json.dumps(summary.to_json(), allow_nan=False)
    return RunSummary.from_json(json.loads(text))


def _phase_of(index: int) -> str:
    return "cold" if index < 2 else "warm"


@st.composite
def _runs(draw: st.DrawFn) -> RunSummary:
    """A finished run: 1-3 participants, 1-6 iterations (two phases or none), records that
    pass or fail, with latencies, a scored value, an unscored metric and steps."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    iterations = draw(st.integers(1, 6))
    phased = iterations >= 3 and draw(st.booleans())
    fields: dict[str, Any] = {"participants": names, "scoring": SCORING}
    if phased:
        fields["phases"] = [Phase("cold", 2), Phase("warm", iterations - 2)]
    else:
        fields["iterations"] = iterations
    if draw(st.booleans()):
        fields["thresholds"] = {"value": "p95 < 50", "success_rate": ">= 0.5"}
    numbers = st.floats(0.001, 1e6, allow_nan=False, allow_infinity=False)
    records: dict[str, list[TaskRecord]] = {}
    for name in names:
        ran = draw(st.integers(0, iterations))
        found = []
        for index in range(ran):
            phase = _phase_of(index) if phased else None
            steps = [
                StepRecord(
                    "exec", draw(st.sampled_from(["success", "error"])), latency_ms=draw(numbers)
                )
            ]
            if draw(st.integers(0, 4)) == 0:
                found.append(
                    record(
                        index,
                        draw(numbers),
                        error=draw(st.sampled_from(["x", "y"])),
                        message="m",
                        phase=phase,
                        steps=steps,
                    )
                )
            else:
                data = {"value": draw(numbers), "bytes": draw(st.integers(0, 10**9))}
                found.append(record(index, draw(numbers), data=data, phase=phase, steps=steps))
        records[name] = found
    run = live_run(config(**fields), records)
    return finish(run, hygiene=HygieneOptions(), interrupted=draw(st.booleans()))


@settings(max_examples=40)
@given(_runs())
def test_a_summary_reads_back_as_itself(summary: RunSummary) -> None:
    back = _through_json(summary)
    assert back == summary
    assert back.to_json() == summary.to_json()


def _comparison_run() -> RunSummary:
    """Every optional part at once: intervals and ties, the relative summary, thresholds,
    warnings, a baseline comparison, an A/B side, errors and notes."""
    bench = config(
        participants=[
            Participant("fast"),
            Participant("slow"),
            Participant("gated", required_env_vars=["G"]),
        ],
        phases=[Phase("cold", 2), Phase("warm", 8)],
        scoring=SCORING,
        thresholds={"value": "p95 < 30"},
        dimensions={"region": "eu"},
    )

    def records(base: float, shift: float = 0.0) -> list[TaskRecord]:
        return [
            record(
                i,
                base + i,
                data={"value": base + shift + (i % 4)},
                phase=_phase_of(i),
                steps=[StepRecord("exec", "success", latency_ms=1.0 + i)],
            )
            for i in range(10)
        ]

    earlier = {"fast": records(10), "slow": records(20)}
    baseline = Baseline(
        "run earlier", "e" * 32, earlier, {"benchmark": "demo", "knobs": {}, "environment": {}}
    )
    run = live_run(bench, {"fast": records(10, 5), "slow": records(20)})
    run.extra_knobs = {"abSide": "B", "abRevision": "1a2b3c4d5e6f", "abProcesses": 1}
    run.errors.append("on_complete failed: RuntimeError: no")
    return finish(
        run,
        resamples=300,
        hygiene=HygieneOptions(),
        comparison=ComparisonOptions(baseline=baseline),
        run_key="ci-7",
    )


def test_a_summary_with_every_part_reads_back_as_itself() -> None:
    summary = _comparison_run()
    assert summary.comparison is not None
    assert summary.comparison.rows
    assert summary.intervals
    assert summary.relative is not None
    assert summary.warnings
    assert summary.ab is not None
    assert summary.ab.other_run_id == "e" * 32
    assert summary.scores is not None
    assert summary.scores.ranking[0].uncertainty is not None
    assert summary.scores.dimensions == {"region": "eu"}
    assert _through_json(summary) == summary


def test_a_note_instead_of_a_comparison_reads_back() -> None:
    bench = config(participants=["p"], iterations=2)
    run = live_run(bench, {"p": [record(0), record(1)]})
    summary = finish(run, comparison=ComparisonOptions(baseline="no complete run of demo yet"))
    assert (summary.comparison, summary.comparison_note) == (None, "no complete run of demo yet")
    assert _through_json(summary) == summary


_settings = st.one_of(st.none(), st.integers(0, 100))


@given(
    st.builds(
        RoundsKnobs,
        min_rounds=_settings,
        min_time=st.one_of(st.none(), st.floats(0, 10)),
        max_time=st.one_of(st.none(), st.floats(0, 10)),
        timer=st.one_of(st.none(), st.sampled_from(["time.perf_counter", "time.process_time"])),
        disable_gc=st.one_of(st.none(), st.booleans()),
        warmup=st.one_of(st.none(), st.booleans()),
        warmup_iterations=_settings,
        calibration_precision=_settings,
    ),
    st.lists(st.tuples(st.text(min_size=1, max_size=5), st.integers(1, 50)), max_size=3),
    st.one_of(st.none(), st.lists(st.text(max_size=5), max_size=3).map(tuple)),
)
def test_knobs_read_back_with_phases_providers_and_rounds(
    rounds: RoundsKnobs, phases: list[tuple[str, int]], providers: tuple[str, ...] | None
) -> None:
    knobs = Knobs(
        iterations=sum(n for _, n in phases) or 1,
        concurrency=2,
        stagger_delay_ms=1.5,
        group_by="round",
        warmup=1,
        phases=tuple(phases),
        providers=providers,
        phase_warmup=tuple((name, 1, "default") for name, _ in phases),
        phases_sized=True,
        rounds=rounds,
    )
    assert Knobs.from_json(json.loads(json.dumps(knobs.to_json()))) == knobs
    assert knobs.unit == "tests"
    assert RoundsKnobs.of_knobs(rounds.as_knobs()) == rounds


@given(
    st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=60),
    st.sampled_from([0.0, 0.05, 0.1]),
)
def test_sample_statistics_read_back_and_follow_the_percentile_rule(
    values: list[float], trim: float
) -> None:
    stats = SampleStats.of(values, trim)
    assert stats is not None
    assert SampleStats.from_json(json.loads(json.dumps(stats.to_json()))) == stats
    ordered = sorted(values)
    assert (stats.count, stats.min, stats.max) == (len(values), ordered[0], ordered[-1])
    assert stats.min <= stats.median <= stats.p95 <= stats.p99 <= stats.max
    assert stats.q1 <= stats.q3
    assert stats.iqr == stats.q3 - stats.q1
    assert stats.get("p95") == stats.p95


def test_no_values_have_no_statistics_and_a_summary_stored_before_stddev_reads_nan() -> None:
    assert SampleStats.of([]) is None
    assert SampleStats.from_json(None) is None
    old = {"count": 1, "median": 2, "p95": 2, "p99": 2, "mean": 2, "min": 2, "max": 2}
    stats = SampleStats.from_json(old)
    assert stats is not None
    assert stats.trim == 0.05
    assert math.isnan(stats.stddev)
    assert math.isnan(stats.q1)
    # Written back, what has no value is null (JSON has no NaN).
    assert stats.to_json()["stddev"] is None


@given(
    st.sampled_from(["passed", "failed", "interrupted", "running"]),
    st.lists(st.sampled_from(["iterations", "items", "errors", "threshold"]), unique=True).map(
        tuple
    ),
    st.integers(0, 100),
    st.integers(0, 100),
    st.booleans(),
    st.sampled_from(["iterations", "tests"]),
)
def test_a_status_reads_back(
    state: str, reasons: tuple[str, ...], planned: int, ran: int, complete: bool, unit: str
) -> None:
    status = RunStatus(state, reasons, planned, ran, complete, unit)
    assert RunStatus.from_json(json.loads(json.dumps(status.to_json()))) == status


def test_a_status_stored_with_only_its_state_is_a_complete_run_of_iterations() -> None:
    assert RunStatus.from_json({"state": "passed"}) == RunStatus("passed")
