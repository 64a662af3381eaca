"""Thresholds without pytest: parsing, config validation, evaluation."""

from __future__ import annotations

import pytest

from pytest_benchsdk import BenchmarkConfigError, define_benchmark_config
from pytest_benchsdk._config.thresholds import (
    Threshold,
    ThresholdVerdict,
    evaluate_threshold,
    parse_cli_threshold,
    parse_threshold,
)
from pytest_benchsdk.records import TaskRecord
from pytest_benchsdk.results import (
    MetricCatalog,
    SampleStats,
    judge_thresholds,
    participant_summary,
    sample_sets,
)

BASE = {"benchmark_slug": "a", "benchmark_name": "A", "participants": [{"name": "p"}]}


@pytest.mark.parametrize(
    ("metric", "text", "expected"),
    [
        ("tti_ms", "p95 < 3000", Threshold("tti_ms", "p95", "<", 3000.0)),
        ("tti_ms", "median<=800", Threshold("tti_ms", "median", "<=", 800.0)),
        ("tti_ms", "  max >  1e3 ", Threshold("tti_ms", "max", ">", 1000.0)),
        ("success_rate", ">= 0.99", Threshold("success_rate", None, ">=", 0.99)),
        ("score", ">=70", Threshold("score", None, ">=", 70.0)),
    ],
)
def test_expressions_parse(metric: str, text: str, expected: Threshold) -> None:
    assert parse_threshold(metric, text) == expected


def test_labels_are_canonical() -> None:
    assert parse_threshold("tti_ms", " p95 <  3000 ").label == "tti_ms-p95<3000"
    assert parse_threshold("success_rate", ">= 0.99").label == "success_rate->=0.99"


@pytest.mark.parametrize(
    ("metric", "text", "message"),
    [
        ("tti_ms", "p96 < 3", "unknown statistic 'p96'"),
        ("tti_ms", "< 3", "missing the statistic"),
        ("tti_ms", "p95 = 3", "cannot read"),
        ("tti_ms", "p95 < fast", "the limit 'fast' is not a number"),
        ("tti_ms", "p95 < inf", "finite"),
        ("score", "median > 3", "without a statistic"),
    ],
)
def test_bad_expressions_say_what_is_wrong(metric: str, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_threshold(metric, text)


def test_config_lists_every_invalid_threshold() -> None:
    with pytest.raises(BenchmarkConfigError) as info:
        define_benchmark_config(
            BASE, thresholds={"tti_ms": ["p96 < 1", "median 8"], "score": ">= 70"}, warmup=1.5
        )
    fields = [issue.field for issue in info.value.issues]
    assert fields == [
        "thresholds.tti_ms[0]",
        "thresholds.tti_ms[1]",
        "thresholds.score",
        "warmup",
    ]


def test_config_keeps_parsed_thresholds_and_warmup() -> None:
    config = define_benchmark_config(
        BASE, thresholds={"tti_ms": "p95 < 3000", "success_rate": [">= 0.99"]}, warmup=3
    )
    assert config.thresholds == (
        Threshold("tti_ms", "p95", "<", 3000.0),
        Threshold("success_rate", None, ">=", 0.99),
    )
    assert config.warmup == 3


def test_cli_form() -> None:
    assert parse_cli_threshold("tti_ms: p95 < 3000") == Threshold("tti_ms", "p95", "<", 3000.0)
    with pytest.raises(ValueError, match='expects "KEY: EXPR"'):
        parse_cli_threshold("p95 < 3000")
    with pytest.raises(ValueError, match=r"--bench-threshold tti_ms: .*unknown statistic"):
        parse_cli_threshold("tti_ms: p42 < 1")


def test_statistics_follow_the_summary_tables_percentile_rule() -> None:
    # 1..100: the tables trim 5 samples from each end (n=100, trim 5 %), then take the nearest
    # rank of the 90 left: p95 is 91. mean, min and max are of every sample.
    stats = SampleStats.of([float(i) for i in range(1, 101)])
    assert stats is not None
    verdict = evaluate_threshold(parse_threshold("v", "p95 < 95"), "p", stats=stats)
    assert (verdict.observed, verdict.passed) == (91.0, True)
    assert verdict.message() == "p: v p95 = 91.0, threshold < 95: ok"
    ok = evaluate_threshold(parse_threshold("v", "max <= 100"), "p", stats=stats)
    assert (ok.observed, ok.passed) == (100.0, True)
    mean = evaluate_threshold(parse_threshold("v", "mean > 50"), "p", stats=stats)
    assert mean.observed == 50.5


def test_messages_are_rounded_and_in_the_unit_the_limit_was_written_in() -> None:
    stats = SampleStats.of([93.470848, 10.0, 12.0])
    breach = evaluate_threshold(parse_threshold("dumps_ms", "p95 < 30"), "json", stats=stats,
                                unit="ms")  # fmt: skip
    assert breach.message() == "json: dumps_ms p95 = 93.5 ms, threshold < 30 ms: breached"
    tiny = evaluate_threshold(parse_threshold("step_ms", "median < 0.02"), "p",
                              stats=SampleStats.of([0.0112]), unit="ms")  # fmt: skip
    # The limit as written (0.02, a step_ms's unit), the value beside it in that unit.
    assert tiny.message() == "p: step_ms median = 0.0112 ms, threshold < 0.02 ms: ok"
    # Issue 46: "p95 < 600" on a metric in ms read "< 0.6 s" beside a p95 of 1.24 s.
    slow = evaluate_threshold(parse_threshold("request_ms", "p95 < 600"), "api",
                              stats=SampleStats.of([100.0, 1240.0]), unit="ms",
                              scale=1240.0)  # fmt: skip
    assert slow.message() == "api: request_ms p95 = 1240 ms, threshold < 600 ms: breached"


def _summary(records: list[TaskRecord]):  # type: ignore[no-untyped-def]
    return participant_summary("p", sample_sets(records), MetricCatalog(), planned=len(records))


def test_latency_falls_back_to_the_iteration_latency() -> None:
    records = [
        TaskRecord(task_index=0, status="success", latency_ms=12.5),
        TaskRecord(task_index=1, status="success", latency_ms=7.0, data={"x": 1}),
    ]
    (verdict,) = judge_thresholds([parse_threshold("latency_ms", "max < 10")], _summary(records))
    assert (verdict.observed, verdict.unit, verdict.passed) == (12.5, "ms", False)
    own = [TaskRecord(task_index=0, status="success", latency_ms=12.5, data={"latency_ms": 3})]
    (verdict,) = judge_thresholds([parse_threshold("latency_ms", "max < 10")], _summary(own))
    assert (verdict.observed, verdict.passed) == (3, True)


def test_missing_samples_fail_with_their_own_message() -> None:
    verdict = evaluate_threshold(parse_threshold("v", "p95 < 1"), "p", stats=None)
    assert (verdict.observed, verdict.passed) == (None, False)
    assert verdict.message() == "p: v p95 has no samples (threshold < 1)"


def test_verdicts_round_trip_through_json() -> None:
    verdict = evaluate_threshold(parse_threshold("v", "p95 < 1"), "p", stats=SampleStats.of([2]),
                                 unit="ms")  # fmt: skip
    assert ThresholdVerdict.from_json(verdict.to_json()) == verdict
    assert verdict.to_json()["message"] == verdict.message()


def test_success_rate_and_score() -> None:
    rate = evaluate_threshold(parse_threshold("success_rate", ">= 0.99"), "p", success_rate=0.98)
    assert (rate.observed, rate.passed) == (0.98, False)
    score = evaluate_threshold(parse_threshold("score", ">= 70"), "p", score=71.5)
    assert score.passed


def test_a_threshold_may_name_its_phase() -> None:
    warm = parse_threshold("request_ms", " warm : p95 < 40")
    assert warm == Threshold("request_ms", "p95", "<", 40.0, "warm")
    assert warm.expression == "warm:p95<40"
    assert warm.label == "warm-request_ms-p95<40"
    assert parse_threshold("request_ms", warm.expression) == warm  # as the snapshot keeps it
    assert parse_cli_threshold("request_ms: warm: p95 < 40") == warm
    assert parse_threshold("success_rate", "cold: >= 0.9").phase == "cold"
    with pytest.raises(ValueError, match="score is the participant's composite score"):
        parse_threshold("score", "warm: >= 70")
    with pytest.raises(ValueError, match="the phase before ':' is empty"):
        parse_threshold("request_ms", ": p95 < 40")


def test_a_threshold_without_a_phase_is_one_per_phase() -> None:
    from pytest_benchsdk._config.thresholds import thresholds_per_phase, unknown_phase_problem

    any_phase = Threshold("request_ms", "p95", "<", 40.0)
    score = Threshold("score", None, ">=", 70.0)
    warm = Threshold("request_ms", "p95", "<", 40.0, "warm")
    # score stays the participant's; the warm one named twice is judged once.
    assert thresholds_per_phase([any_phase, score, warm], ["cold", "warm"]) == (
        Threshold("request_ms", "p95", "<", 40.0, "cold"),
        warm,
        score,
    )
    # Without phases, or with one, nothing is split.
    assert thresholds_per_phase([any_phase], []) == (any_phase,)
    assert thresholds_per_phase([any_phase], ["only"]) == (any_phase,)
    assert unknown_phase_problem(warm, ["cold", "warm"]) is None
    assert unknown_phase_problem(warm, ["a", "b"]) == (
        "names the phase 'warm', which the benchmark does not have (its phases: a, b)"
    )
    assert unknown_phase_problem(warm, []) == (
        "names the phase 'warm', but the benchmark has no phases"
    )


def test_a_config_threshold_naming_an_unknown_phase_is_a_config_error() -> None:
    with pytest.raises(BenchmarkConfigError, match="its phases: cold, warm"):
        define_benchmark_config(
            **BASE,
            phases=[{"name": "cold", "iterations": 1}, {"name": "warm", "iterations": 1}],
            thresholds={"request_ms": ["hot: p95 < 40"]},
        )


def test_a_verdict_names_its_phase_and_an_old_one_reads_back() -> None:
    verdict = evaluate_threshold(
        Threshold("request_ms", "p95", "<", 40.0, "warm"),
        "e2b",
        stats=SampleStats.of([10.0, 12.0]),
        unit="ms",
    )
    assert verdict.message().startswith("e2b · warm: request_ms p95 = ")
    data = verdict.to_json()
    assert data["phase"] == "warm"
    assert ThresholdVerdict.from_json(data) == verdict
    del data["phase"]
    assert ThresholdVerdict.from_json(data).threshold.phase is None
