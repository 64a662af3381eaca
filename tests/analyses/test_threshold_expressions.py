"""Thresholds without pytest: parsing, config validation, evaluation."""

from __future__ import annotations

import pytest

from pytest_benchsdk import BenchmarkConfigError, define_benchmark_config
from pytest_benchsdk._thresholds import (
    Threshold,
    evaluate_threshold,
    parse_cli_threshold,
    parse_threshold,
    threshold_samples,
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


def test_statistics_use_untrimmed_nearest_rank_samples() -> None:
    samples = threshold_samples("v", [({"v": float(i)}, 0.0) for i in range(1, 101)])
    verdict = evaluate_threshold(parse_threshold("v", "p95 < 95"), "p", samples=samples)
    assert (verdict.observed, verdict.passed) == (95.0, False)
    assert verdict.message() == "p: v p95 = 95, threshold < 95 breached"
    ok = evaluate_threshold(parse_threshold("v", "max <= 100"), "p", samples=samples)
    assert (ok.observed, ok.passed) == (100.0, True)
    mean = evaluate_threshold(parse_threshold("v", "mean > 50"), "p", samples=samples)
    assert mean.observed == 50.5


def test_latency_falls_back_to_the_iteration_latency() -> None:
    assert threshold_samples("latency_ms", [(None, 12.5), ({"x": 1}, 7.0)]) == [12.5, 7.0]
    assert threshold_samples("latency_ms", [({"latency_ms": 3}, 12.5)]) == [3]


def test_missing_samples_fail_with_their_own_message() -> None:
    verdict = evaluate_threshold(parse_threshold("v", "p95 < 1"), "p", samples=[])
    assert (verdict.observed, verdict.passed) == (None, False)
    assert verdict.message() == "p: v p95 has no samples (threshold < 1)"


def test_success_rate_and_score() -> None:
    rate = evaluate_threshold(parse_threshold("success_rate", ">= 0.99"), "p", passed=98, total=100)
    assert (rate.observed, rate.passed) == (0.98, False)
    score = evaluate_threshold(parse_threshold("score", ">= 70"), "p", score=71.5)
    assert score.passed
