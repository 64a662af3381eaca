"""The model of a finished run, built from records made here the way the session end builds it
(``BenchmarkRun`` → score → ``analyse`` → status → ``summarise``): the facts every view reads.
The sessions that feed it are in ``tests/plugin/``; here each fact is checked where it is made.
"""

from __future__ import annotations

import math

import pytest

from helpers.runs import SCORING, config, finish, live_run, record
from pytest_benchsdk._config.models import Participant, Phase
from pytest_benchsdk._engine.payload import RecordPayload
from pytest_benchsdk._engine.schedule import RunArgs
from pytest_benchsdk.records import ParticipantRecords, StepRecord, TaskRecord
from pytest_benchsdk.results import (
    LATENCY,
    HygieneOptions,
    ParticipantSummary,
    RunStatus,
    RunSummary,
    SampleStats,
    knobs_of,
    metric_unit,
)


def _phase(index: int) -> str:
    return "cold" if index < 2 else "warm"


def _phased() -> RunSummary:
    """Two phases (cold 2, warm 4); ``a`` measures ``value`` (scored, ms), ``bytes`` and
    ``read_us``; ``b`` a little more; ``dead`` fails every iteration; ``gated`` lacks its
    environment variable."""
    bench = config(
        participants=[
            Participant("a"),
            Participant("b"),
            Participant("dead"),
            Participant("gated", required_env_vars=["GATE"]),
        ],
        phases=[Phase("cold", 2), Phase("warm", 4)],
        scoring=SCORING,
    )
    records = {
        "a": [
            record(
                i, 10 + i, data={"value": 10 + i, "bytes": 100 + i, "read_us": 3}, phase=_phase(i)
            )
            for i in range(6)
        ],
        "b": [record(i, 20 + i, data={"value": 11 + i}, phase=_phase(i)) for i in range(6)],
        "dead": [record(i, 1, error="boom", phase=_phase(i)) for i in range(6)],
    }
    return finish(live_run(bench, records))


def _named(summary: RunSummary, name: str) -> ParticipantSummary:
    found = summary.participant(name)
    assert found is not None
    return found


# --- per participant and phase ----------------------------------------------------------------


def test_each_participant_has_its_latency_and_every_measured_metric_with_its_unit() -> None:
    summary = _phased()
    a = _named(summary, "a")
    assert (a.planned, a.ran, a.passed, a.failed) == (6, 6, 6, 0)
    assert a.latency == SampleStats.of([10, 11, 12, 13, 14, 15])
    assert a.latency is not None
    assert (a.latency.median, a.latency.p95) == (12.5, 15.0)
    # The scored metric first, then the others as first measured; units declared or read off
    # the key's time suffix, none otherwise.
    assert [(m.key, m.unit, m.scored, m.lower_is_better) for m in a.metrics] == [
        ("value", "ms", True, True),
        ("bytes", "", False, None),
        ("read_us", "us", False, None),
    ]
    value = a.metric("value")
    assert value is not None
    assert value.stats is not None
    assert (value.stats.count, value.stats.min, value.stats.max) == (6, 10.0, 15.0)
    # A participant that measured only the scored metric lists only it.
    assert [m.key for m in _named(summary, "b").metrics] == ["value"]


def test_each_phase_has_its_own_counts_latency_and_metrics() -> None:
    a = _named(_phased(), "a")
    cold, warm = a.phases
    assert (cold.phase, cold.planned, cold.ran, cold.passed) == ("cold", 2, 2, 2)
    assert (warm.phase, warm.planned, warm.ran, warm.passed) == ("warm", 4, 4, 4)
    assert cold.latency == SampleStats.of([10, 11])
    assert warm.latency == SampleStats.of([12, 13, 14, 15])
    cold_bytes = next(m for m in cold.metrics if m.key == "bytes")
    assert cold_bytes.stats == SampleStats.of([100, 101])


def test_a_failed_iteration_counts_but_measures_nothing() -> None:
    bench = config(participants=[Participant("p")], iterations=4)
    records = {
        "p": [
            record(0, 10, data={"x_ms": 1}),
            record(1, 12, data={"x_ms": 2}),
            # A timeout's latency measures the failure, not the work.
            record(2, 30_000, data={"x_ms": 99}, error="step_timeout", message="too slow"),
            record(3, 14, data={"x_ms": 3}),
        ]
    }
    p = _named(finish(live_run(bench, records)), "p")
    assert (p.ran, p.passed, p.failed) == (4, 3, 1)
    assert p.latency is not None
    assert p.latency.max == 14.0
    x = p.metric("x_ms")
    assert x is not None
    assert x.stats is not None
    assert x.stats.max == 3.0
    assert x.unit == "ms"
    (failure,) = p.failures
    assert (failure.code, failure.count, failure.messages) == (
        "step_timeout",
        1,
        ((2, "too slow"),),
    )


def test_one_that_never_ran_says_why_and_one_that_failed_every_iteration_has_no_latency() -> None:
    summary = _phased()
    gated = _named(summary, "gated")
    assert (gated.skipped, gated.planned, gated.ran) == ("missing GATE", 0, 0)
    dead = _named(summary, "dead")
    assert (dead.ran, dead.passed, dead.latency, dead.skipped) == (6, 0, None, None)
    assert [p.name for p in summary.ran_participants] == ["a", "b", "dead"]
    assert [p.name for p in summary.participants] == ["a", "b", "dead", "gated"]


def test_a_deselected_participant_is_not_part_of_the_run() -> None:
    bench = config(participants=["a", "b"], iterations=2)
    run = live_run(bench, {"a": [record(0), record(1)]}, selected={"a": {0, 1}}, whole_plan=False)
    summary = finish(run)
    assert [p.name for p in summary.participants] == ["a"]
    assert (summary.status.planned, summary.status.ran, summary.status.complete) == (2, 2, False)
    assert summary.status.text() == "passed, partial"


def test_steps_have_their_labels_order_latency_of_successes_and_failures() -> None:
    bench = config(
        participants=["p"],
        iterations=3,
        display={
            "steps": [
                {"key": "exec", "label": "Execute", "order": 0},
                {"key": "create", "label": "Create", "order": 1},
            ]
        },
    )

    def steps(index: int) -> list[StepRecord]:
        create = StepRecord("create", "success", latency_ms=5.0 + index)
        status = "error" if index == 2 else "success"
        return [create, StepRecord("exec", status, latency_ms=1.0 + index)]

    summary = finish(live_run(bench, {"p": [record(i, steps=steps(i)) for i in range(3)]}))
    exec_, create = _named(summary, "p").steps
    # display.steps orders and labels them (exec first although it runs second).
    assert (exec_.name, exec_.label, exec_.order, exec_.failed) == ("exec", "Execute", 0, 1)
    assert exec_.latency == SampleStats.of([1.0, 2.0])
    assert (create.name, create.label, create.order, create.failed) == ("create", "Create", 1, 0)
    assert create.latency == SampleStats.of([5.0, 6.0, 7.0])


def test_failures_are_grouped_by_code_most_frequent_first_with_the_first_messages() -> None:
    bench = config(participants=["p"], iterations=9)
    long = "x" * 400
    records = [record(i, error="quota", message=f"{long}{i}") for i in range(7)]
    records += [record(7, error="auth", message="denied"), record(8, error="auth")]
    p = _named(finish(live_run(bench, {"p": records})), "p")
    quota, auth = p.failures
    assert (quota.code, quota.count, auth.code, auth.count) == ("quota", 7, "auth", 2)
    # The first five messages, each cut to 300 characters.
    assert [index for index, _ in quota.messages] == [0, 1, 2, 3, 4]
    assert all(len(text) == 300 and text.endswith("…") for _, text in quota.messages)
    assert auth.messages == ((7, "denied"),)


def test_a_record_delivered_again_replaces_the_earlier_one() -> None:
    bench = config(participants=["p"], iterations=2)
    run = live_run(
        bench, {"p": [record(0, 10), record(1, error="flaky"), record(1, 30, data={"v": 1})]}
    )
    p = _named(finish(run), "p")
    assert (p.ran, p.passed, p.failures) == (2, 2, ())
    assert p.latency == SampleStats.of([10.0, 30.0])
    assert run.received("p") == 2
    assert run.participant_finished("p")


def test_the_benchmark_starts_with_its_first_iteration_and_ends_with_its_last() -> None:
    bench = config(participants=["a", "b"], iterations=2)
    records = {
        "a": [record(0, 10, offset=5), record(1, 10, offset=5)],
        "b": [record(0, 250), record(1, 1500)],
    }
    summary = finish(live_run(bench, records))
    assert summary.started_at == "2026-12-01T08:00:00.000Z"
    assert summary.finished_at == "2026-12-01T08:00:06.010Z"


def test_knobs_are_the_resolved_ones_with_phases_warmup_and_providers() -> None:
    bench = config(
        participants=["a", "b", "c"],
        phases=[Phase("cold", 2), Phase("warm", 4, warmup=2)],
        concurrency=2,
        warmup=1,
    )
    run = live_run(bench, {}, args=RunArgs(providers=("c", "a"), stagger_delay_ms=5))
    knobs = run.knobs
    assert (knobs.iterations, knobs.concurrency, knobs.stagger_delay_ms) == (6, 2, 5.0)
    assert (knobs.group_by, knobs.warmup, knobs.providers) == ("participant", 1, ("c", "a"))
    assert knobs.phases == (("cold", 2), ("warm", 4))
    assert knobs.phase_warmup == (("cold", 0, "cold"), ("warm", 2, "phase"))
    assert knobs_of(run.schedule) == knobs
    assert run.participants == ["a", "c"]  # declared order, not the option's
    assert (knobs.unit, knobs.rounds) == ("iterations", None)


def test_the_schedules_notes_are_the_runs() -> None:
    bench = config(participants=["p"], phases=[Phase("a", 1), Phase("b", 2)])
    run = live_run(
        bench,
        {"p": [record(i, phase="a" if i == 0 else "b") for i in range(3)]},
        args=RunArgs(iterations=5),
    )
    summary = finish(run)
    assert summary.notes == (
        "--bench-iterations is ignored because this benchmark sizes its phases individually.",
    )


# --- scores, ranks and ties -------------------------------------------------------------------


def test_participants_rank_by_score_and_one_with_nothing_to_rank_comes_after() -> None:
    scores = _phased().scores
    assert scores is not None
    assert [(e.participant, e.rank) for e in scores.ranking] == [
        ("a", 1),
        ("b", 2),
        ("dead", None),
    ]
    a, b, dead = scores.ranking
    assert a.row.composite_score > b.row.composite_score > dead.row.composite_score == 0
    assert dead.row.success_rate == 0
    # Each phase scored alone beside the whole.
    assert [phase for phase, _ in a.phase_rows] == ["cold", "warm"]
    assert scores.metrics == (("value", "ms", "value"),)
    assert scores.level is None
    assert not scores.has_ties


def _close_race(resamples: int) -> RunSummary:
    """``fast`` clearly ahead; ``near`` and ``nearer`` overlap (every value within noise)."""
    bench = config(participants=["fast", "near", "nearer"], iterations=20, scoring=SCORING)
    values = {"fast": 5.0, "near": 40.0, "nearer": 40.5}

    def records(name: str) -> list[TaskRecord]:
        return [record(i, data={"value": values[name] + (i % 5) * 4}) for i in range(20)]

    return finish(live_run(bench, {n: records(n) for n in values}), resamples=resamples)


def test_neighbours_whose_intervals_overlap_are_tied_and_keep_their_order() -> None:
    scores = _close_race(resamples=400).scores
    assert scores is not None
    assert scores.level == 0.95
    ranking = {e.participant: e for e in scores.ranking}
    assert [e.participant for e in scores.ranking] == ["fast", "near", "nearer"]
    assert not ranking["near"].tied_with_above  # fast's interval is far above
    assert ranking["nearer"].tied_with_above
    assert scores.has_ties
    fast = ranking["fast"]
    assert fast.uncertainty is not None
    assert fast.uncertainty.low <= fast.row.composite_score <= fast.uncertainty.high
    assert fast.keeps_rank == 1.0


def test_the_relative_summary_sets_the_best_against_each_other() -> None:
    relative = _close_race(resamples=400).relative
    assert relative is not None
    assert (relative.reference, relative.metric, relative.unit) == ("fast", "value", "ms")
    assert [row.participant for row in relative.rows] == ["near", "nearer"]
    near = relative.rows[0]
    assert near.low <= near.factor <= near.high
    assert near.factor == pytest.approx(48.0 / 13.0, rel=0.01)  # the medians' ratio
    assert near.verdict != "unchanged"


def test_intervals_cover_each_statistic_of_the_latency_and_the_metrics() -> None:
    summary = _close_race(resamples=400)
    fast = _named(summary, "fast")
    for metric, stats in ((LATENCY, fast.latency), ("value", fast.metric("value").stats)):  # type: ignore[union-attr]
        assert stats is not None
        for statistic in ("median", "p95", "p99"):
            interval = summary.interval("fast", metric, statistic)
            assert interval is not None
            assert interval.level == 0.95
            assert interval.low <= stats.get(statistic) <= interval.high
    assert summary.interval("fast", "nothing", "median") is None


def test_without_resampling_there_are_no_intervals() -> None:
    summary = _close_race(resamples=0)
    assert (summary.intervals, summary.relative) == ((), None)
    assert summary.scores is not None
    assert all(e.uncertainty is None for e in summary.scores.ranking)


def test_a_benchmark_without_scoring_has_no_score_table() -> None:
    bench = config(participants=["p"], iterations=2)
    summary = finish(live_run(bench, {"p": [record(0), record(1)]}))
    assert summary.scores is None
    assert [m.key for m in _named(summary, "p").metrics] == []


def test_a_metric_labelled_by_display_is_shown_with_its_label_unit_and_direction() -> None:
    bench = config(
        participants=["p"],
        iterations=2,
        display={
            "metrics": [
                {"key": "ops", "label": "Throughput", "unit": "op/s", "direction": "higher-better"}
            ]
        },
    )
    summary = finish(live_run(bench, {"p": [record(i, data={"ops": 100 + i}) for i in range(2)]}))
    (ops,) = _named(summary, "p").metrics
    assert (ops.key, ops.label, ops.unit, ops.lower_is_better) == (
        "ops",
        "Throughput",
        "op/s",
        False,
    )


# --- thresholds -------------------------------------------------------------------------------


def _judged(thresholds: dict[str, str]) -> RunSummary:
    bench = config(
        participants=["a", "b"],
        phases=[Phase("cold", 2), Phase("warm", 4)],
        thresholds=thresholds,
    )
    records = {
        name: [record(i, base + i, data={"value_ms": base + i}, phase=_phase(i)) for i in range(6)]
        for name, base in (("a", 10), ("b", 30))
    }
    return finish(live_run(bench, records))


def test_a_threshold_is_judged_per_participant_and_phase_on_the_numbers_the_tables_print() -> None:
    summary = _judged({"value_ms": "p95 < 20"})
    verdicts = {(v.participant, v.threshold.phase): v for v in summary.thresholds}
    assert set(verdicts) == {("a", "cold"), ("a", "warm"), ("b", "cold"), ("b", "warm")}
    a_warm = verdicts[("a", "warm")]
    warm = _named(summary, "a").phases[1].metrics[0].stats
    assert warm is not None
    assert a_warm.observed == warm.p95 == 15.0
    assert (a_warm.outcome, a_warm.unit, a_warm.lower_is_better) == ("passed", "ms", None)
    assert verdicts[("b", "cold")].outcome == "failed"
    assert summary.status == RunStatus("failed", ("threshold",), 12, 12)


def test_a_threshold_naming_a_phase_is_judged_on_that_phase_alone() -> None:
    summary = _judged({"latency_ms": "warm: median < 14"})
    assert [
        (v.participant, v.threshold.phase, v.observed, v.outcome) for v in summary.thresholds
    ] == [
        ("a", "warm", 13.5, "passed"),
        ("b", "warm", 33.5, "failed"),
    ]


def test_a_threshold_on_a_key_nobody_measured_is_a_usage_error_with_a_guess() -> None:
    bench = config(participants=["p"], iterations=2, thresholds={"valeu_ms": "p95 < 20"})
    run = live_run(bench, {"p": [record(i, data={"value_ms": 3}) for i in range(2)]})
    summary = finish(run)
    (verdict,) = summary.thresholds
    assert verdict.outcome == "failed"
    assert verdict.hint == "p measured latency_ms, value_ms; did you mean value_ms?"
    assert run.analyses.usage_error == (
        "threshold on valeu_ms: no participant measured valeu_ms (did you mean value_ms?); "
        "the keys there are: latency_ms, value_ms"
    )


def test_a_threshold_of_a_participant_that_did_not_run_is_skipped_with_the_reason() -> None:
    bench = config(
        participants=["a", Participant("gated", required_env_vars=["GATE"])],
        iterations=1,
        thresholds={"success_rate": ">= 1"},
    )
    run = live_run(bench, {"a": [record(0)]}, thresholds=None)
    run.thresholds["gated"] = list(run.schedule.thresholds)
    summary = finish(run)
    skipped = [v for v in summary.thresholds if v.participant == "gated"]
    assert [(v.skipped, v.outcome) for v in skipped] == [("missing GATE", "skipped")]


# --- warnings, status and reasons -------------------------------------------------------------


def test_run_hygiene_warnings_are_per_participant_and_phase_and_can_be_ignored() -> None:
    bench = config(participants=["p"], phases=[Phase("cold", 2), Phase("warm", 4)])
    records = [
        record(i, error="boom", phase=_phase(i)) if i == 3 else record(i, phase=_phase(i))
        for i in range(6)
    ]
    found = finish(live_run(bench, {"p": records}), hygiene=HygieneOptions()).warnings
    assert [(w.code, w.participant, w.phase) for w in found] == [("failure-rate", "p", "warm")]
    assert found[0].message.startswith("1 of 4 iterations failed (25%, more than 5%)")
    quiet = finish(live_run(bench, {"p": records}), hygiene=HygieneOptions(ignore={"failure-rate"}))
    assert quiet.warnings == ()
    assert finish(live_run(bench, {"p": records}), hygiene=None).warnings == ()


@pytest.mark.parametrize(
    ("make", "state", "reasons", "text"),
    [
        ({}, "passed", (), "passed"),
        ({"failed": True}, "failed", ("iterations",), "failed (iterations)"),
        ({"items": 1}, "failed", ("items",), "failed (items)"),
        ({"error": "on_complete failed"}, "failed", ("errors",), "failed (errors)"),
        ({"regression": True}, "failed", ("regression",), "failed (regression)"),
        (
            {"failed": True, "regression": True, "items": 2},
            "failed",
            ("iterations", "items", "regression"),
            "failed (iterations, items, regression)",
        ),
    ],
)
def test_the_status_says_every_reason_the_run_did_not_pass(
    make: dict[str, object], state: str, reasons: tuple[str, ...], text: str
) -> None:
    bench = config(participants=["p"], iterations=2)
    second = record(1, error="boom") if make.get("failed") else record(1)
    run = live_run(bench, {"p": [record(0), second]})
    run.failed_items = int(make.get("items", 0))  # type: ignore[call-overload]
    if "error" in make:
        run.errors.append(str(make["error"]))
    summary = finish(run, regression=bool(make.get("regression")))
    assert (summary.status.state, summary.status.reasons, summary.status.text()) == (
        state,
        reasons,
        text,
    )
    assert summary.status.complete
    assert summary.status.incomplete is None


def test_failed_iterations_kept_as_data_are_no_reason() -> None:
    bench = config(participants=["p"], iterations=2)
    run = live_run(bench, {"p": [record(0), record(1, error="boom")]})
    status = run.run_status(interrupted=False, iterations_fail=False)
    assert (status.state, status.reasons) == ("passed", ())
    assert run.run_status(interrupted=False, warnings_failed=True).reasons == (
        "iterations",
        "warnings",
    )


def test_an_interrupted_run_says_how_far_it_got_and_is_no_baseline() -> None:
    bench = config(participants=["a", "b"], iterations=3)
    summary = finish(live_run(bench, {"a": [record(0), record(1)]}), interrupted=True)
    status = summary.status
    assert (status.state, status.planned, status.ran, status.complete) == (
        "interrupted",
        6,
        2,
        False,
    )
    assert status.text() == "interrupted (2 of 6 iterations ran)"
    assert status.incomplete == "it was interrupted (2 of 6 iterations ran)"


def test_a_run_with_missing_records_is_not_complete() -> None:
    bench = config(participants=["p"], iterations=3)
    summary = finish(live_run(bench, {"p": [record(0), record(1)]}))
    assert (summary.status.state, summary.status.complete) == ("passed", False)
    assert summary.status.incomplete == "it ran a subset of the benchmark (-k, a node id, --lf)"


@pytest.mark.parametrize(
    ("status", "why"),
    [
        (RunStatus("running"), "its session never finished it (killed, or still running)"),
        (RunStatus("weird"), "its status is weird"),
        (RunStatus("passed", unit="tests", planned=3, ran=3), None),
    ],
)
def test_what_makes_a_run_incomplete(status: RunStatus, why: str | None) -> None:
    assert status.incomplete == why


# --- what the run keeps -----------------------------------------------------------------------


def test_a_record_the_store_cannot_give_back_as_it_is_stays_in_memory() -> None:
    bench = config(participants=["p"], iterations=3)
    run = live_run(bench, {})
    stored = [record(0, data={"v": 1}), record(1, data={"v": [1, 2]})]
    not_json = record(2, data={"v": math.inf})
    for one in (*stored, not_json):
        run.add(
            RecordPayload("bench_demo.py", "p", one.task_index, one, one.to_wire()), stored=True
        )
    assert run.records == {"p": {2: not_json}}
    # What the store holds is read back with it, in task index order.
    run.stored_records = lambda: [ParticipantRecords("p", stored)]
    (kept,) = run.participant_records()
    assert kept.records == (*stored, not_json)
    assert run.records_json() == [
        {"participant": "p", "records": [r.to_wire() for r in (*stored, not_json)]}
    ]


def test_metric_units_come_from_the_declaration_or_the_keys_time_suffix() -> None:
    assert metric_unit("dumps_ms", None) == "ms"
    assert metric_unit("read_us", "") == "us"
    assert metric_unit("wait_s", None) == "s"
    assert metric_unit("bytes", None) == ""
    assert metric_unit("dumps_ms", "op/s") == "op/s"
    assert metric_unit("sms", None) == ""
