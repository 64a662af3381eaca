"""Issue 10 (engine part): Python wording of messages, our option names in warnings, the
TaskError display and record, ``step()`` with awaitables and sync work in async tasks, levels
of captured process output."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_benchsdk import ScoringSpec, lower_is_better, validate_scoring_spec
from pytest_benchsdk.config import (
    BenchmarkConfigError,
    Participant,
    Phase,
    define_benchmark_config,
    validate_benchmark_config,
    validate_scoring_config,
)
from pytest_benchsdk.context import TaskContext, TaskError, run_task
from pytest_benchsdk.schedule import RunArgs, merge_config
from pytest_benchsdk.scoring import ScoringSpecError

BASE: dict[str, Any] = {
    "benchmark_slug": "s",
    "benchmark_name": "n",
    "participants": [Participant("a")],
}
W = {"median": 0.5, "p95": 0.3, "p99": 0.2}


def issues(**overrides: Any) -> list[tuple[str, str]]:
    return [(i.field, i.message) for i in validate_benchmark_config({**BASE, **overrides})]


# --- #6 Python wording ------------------------------------------------------------------------


def test_missing_field_says_is_missing_and_none_says_got_none() -> None:
    missing = {"metrics": [{"key": "x", "ceiling": 1, "weights": {"median": 0.5, "p99": 0.5}}]}
    assert validate_scoring_config(missing) == (
        "scoring.metrics[0].weights.p95 is missing (must be a finite number)"
    )
    given_none = {"metrics": [{"key": "x", "ceiling": 1, "weights": {**W, "p95": None}}]}
    assert validate_scoring_config(given_none) == (
        "scoring.metrics[0].weights.p95 must be a finite number (got None)"
    )


def test_messages_speak_python_not_javascript() -> None:
    found = issues(
        participants=[],
        phases=[{"name": "x"}],
        stagger_delay_ms=math.inf,
        group_by=True,
        shapes={"b": {}},
        dimensions=[1],
    )
    text = "\n".join(f"{field}: {message}" for field, message in found)
    for javascript in ("array", "object", "undefined", "null", "Infinity", "true"):
        assert javascript not in text, text
    assert found == [
        ("participants", "must be a non-empty list"),
        ("phases['x'].iterations", "is missing (must be an integer >= 1)"),
        ("stagger_delay_ms", "must be a number >= 0 (got inf)"),
        ("group_by", "must be 'participant' or 'round' (got True)"),
        ("shapes['b'].slug", "is missing (needs a lowercase slug)"),
        ("dimensions", "must be a dict"),
    ]


def test_error_text_shows_python_values() -> None:
    with pytest.raises(BenchmarkConfigError) as info:
        define_benchmark_config(**{**BASE, "iterations": "3", "phases": None})
    assert "  - iterations: must be an integer >= 1 (got '3')" in str(info.value)


def test_huge_and_tiny_numbers_are_written_short() -> None:
    huge = {"metrics": [{"key": "x", "ceiling": 1, "weights": {**W, "median": 1e21}}]}
    assert validate_scoring_config(huge) == "scoring metric weights must sum to 1.0 (got 1e+21)"
    tiny_weights = {"median": 1e-6, "p95": 0, "p99": 0}
    tiny = {"metrics": [{"key": "x", "ceiling": 1, "weights": tiny_weights}]}
    assert validate_scoring_config(tiny) == "scoring metric weights must sum to 1.0 (got 1e-06)"
    # The usual range keeps upstream's three decimals.
    usual = {"metrics": [{"key": "x", "ceiling": 1, "weights": {**W, "p99": 0.1}}]}
    assert validate_scoring_config(usual) == "scoring metric weights must sum to 1.0 (got 0.900)"


def test_scoring_spec_error_writes_huge_sums_short() -> None:
    spec = ScoringSpec(
        metrics=[lower_is_better("x", ceiling=1, weights={"median": 1e21, "p95": 0, "p99": 0})]
    )
    with pytest.raises(ScoringSpecError) as info:
        validate_scoring_spec(spec)
    message = str(info.value)
    assert message.startswith("Scoring spec weights sum to 1e+21, expected 1.0")
    assert message.endswith("Per-metric totals: x=1e+21")
    assert "000000000" not in message


# --- #7 warnings name our options ---------------------------------------------------------


def test_uneven_phases_warning_names_bench_iterations() -> None:
    config = define_benchmark_config(**{**BASE, "phases": [Phase("cold", 3), Phase("warm", 2)]})
    _, warnings = merge_config(config, RunArgs(iterations=9))
    assert warnings == [
        "--bench-iterations is ignored because this benchmark sizes its phases individually."
    ]


# --- #9 TaskError display and record ------------------------------------------------------


def test_task_error_data_is_one_line() -> None:
    err = TaskError("boom", code="c", data={"nested": {"a": [1, 2]}, "text": "two\nlines"})
    lines = str(err).splitlines()
    assert lines == ["[TaskError (c)] boom", '  data: {"nested":{"a":[1,2]},"text":"two\\nlines"}']


def test_task_error_message_is_kept_in_the_record() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.measure(before=1)
        raise TaskError("quota exceeded", code="quota", data={"limit": 3})

    ctx = TaskContext(participant=None, participant_name="p", task_index=0, phase="cold")
    record = run_task(ctx, task).record
    assert record.error_code == "quota"
    assert record.data == {
        "before": 1,
        "limit": 3,
        "errorMessage": "quota exceeded",
        "phase": "cold",
    }


def test_task_error_without_message_adds_no_error_message() -> None:
    def task(ctx: TaskContext) -> None:
        raise TaskError(code="quota")

    ctx = TaskContext(participant=None, participant_name="p", task_index=0)
    assert run_task(ctx, task).record.data is None


# --- #11 captured process output carries a level ------------------------------------------


def test_captured_output_lines_have_levels_by_stream() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.step("exec", lambda: {"stdout": "ok", "stderr": "careful", "error": "failed"})

    ctx = TaskContext(participant=None, participant_name="p", task_index=4)
    logs = run_task(ctx, task).logs
    assert [(line.level, line.message) for line in logs] == [
        ("info", "exec"),
        ("info", "exec stdout: ok"),
        ("warn", "exec stderr: careful"),
        ("error", "exec error: failed"),
    ]
    assert logs[2].format().endswith(" [task 4] [warn] exec stderr: careful")
