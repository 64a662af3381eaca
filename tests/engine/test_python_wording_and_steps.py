"""Python wording of messages, our option names in warnings, the
TaskError display and record, ``step()`` with awaitables and sync work in async tasks, levels
of captured process output."""

from __future__ import annotations

import asyncio
import gc
import math
import threading
import time
import uuid
import warnings
from typing import Any

import pytest

from helpers.sessions import bench, read_json
from pytest_benchsdk import ScoringSpec, lower_is_better, validate_scoring_spec
from pytest_benchsdk.config import (
    BenchmarkConfigError,
    Participant,
    Phase,
    define_benchmark_config,
    validate_benchmark_config,
    validate_scoring_config,
)
from pytest_benchsdk.context import (
    TaskContext,
    TaskError,
    current_context,
    run_task,
    run_task_async,
)
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


# --- #10 step() with awaitables, sync work in async tasks -----------------------------------


def _ctx(name: str = "p", *, is_async: bool = True) -> TaskContext:
    return TaskContext(participant=None, participant_name=name, task_index=0, is_async=is_async)


def test_async_step_accepts_an_awaitable() -> None:
    async def task(ctx: TaskContext) -> None:
        assert await ctx.step("think", asyncio.sleep(0.001, result=3)) == 3

    outcome = asyncio.run(run_task_async(_ctx(), task))
    assert outcome.error is None, outcome.error
    assert [(s.name, s.status) for s in outcome.record.steps] == [("think", "success")]


def test_sync_step_accepts_an_awaitable_and_runs_it() -> None:
    async def work() -> int:
        await asyncio.sleep(0.001)
        return 4

    def task(ctx: TaskContext) -> None:
        assert ctx.step("think", work()) == 4
        assert ctx.step("timed", work(), timeout_ms=5_000) == 4

    outcome = run_task(_ctx(is_async=False), task)
    assert outcome.error is None, outcome.error
    assert [s.status for s in outcome.record.steps] == ["success", "success"]


def test_step_misuse_raises_a_type_error_naming_the_step() -> None:
    async def task(ctx: TaskContext) -> None:
        with pytest.raises(TypeError, match=r'step "fan" got an awaitable, which runs only once'):
            ctx.step("fan", asyncio.sleep(0), parallel_invocations=3)
        with pytest.raises(TypeError, match=r'step "count" needs a function to run .*got int 5'):
            ctx.step("count", 5)  # type: ignore[arg-type]

    # Earlier tests' garbage (an unclosed socket's ResourceWarning) is collected first: only
    # this test's own may turn into an error below.
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the refused coroutine is closed, not left unawaited
        outcome = asyncio.run(run_task_async(_ctx(), task))
        gc.collect()
    assert outcome.error is None, outcome.error


def test_sync_fn_with_timeout_in_async_task_times_out_on_a_thread() -> None:
    release = threading.Event()
    threads: list[str] = []

    def slow() -> None:
        threads.append(threading.current_thread().name)
        current_context().measure(started=True)  # type: ignore[union-attr]
        release.wait(10)

    async def slow_task(ctx: TaskContext) -> None:
        await ctx.step("slow", slow, timeout_ms=100)

    async def other_task(ctx: TaskContext) -> None:
        await asyncio.sleep(0.01)  # starts while "slow" is running
        await ctx.step("quick", asyncio.sleep(0.05), timeout_ms=1_000)

    async def both() -> list[Any]:
        return list(
            await asyncio.gather(
                run_task_async(_ctx("a"), slow_task), run_task_async(_ctx("b"), other_task)
            )
        )

    try:
        slow_outcome, other_outcome = asyncio.run(both())
    finally:
        release.set()
    assert isinstance(slow_outcome.error, TaskError)
    assert slow_outcome.error.code == "step_timeout"
    assert str(slow_outcome.error).startswith(
        '[TaskError (step_timeout)] Step "slow" timed out after 100ms for participant "a"'
    )
    (step,) = slow_outcome.record.steps
    assert (step.status, step.error_code, step.data) == ("error", "step_timeout", {"started": True})
    assert threads == ["benchsdk-step-slow"]  # a helper thread, not the loop
    assert other_outcome.error is None, other_outcome.error
    assert other_outcome.record.steps[0].status == "success"


def test_sync_fn_with_timeout_in_async_task_returns_its_value() -> None:
    async def task(ctx: TaskContext) -> None:
        assert await ctx.step("sum", lambda: sum(range(10)), timeout_ms=5_000) == 45
        # A lambda returning a coroutine: made on the thread, awaited on the loop.
        assert await ctx.step("get", lambda: asyncio.sleep(0, result=7), timeout_ms=5_000) == 7
        # Parallel invocations each get a thread.
        assert await ctx.step("fan", lambda: 1, timeout_ms=5_000, parallel_invocations=3) == [
            1,
            1,
            1,
        ]

    outcome = asyncio.run(run_task_async(_ctx(), task))
    assert outcome.error is None, outcome.error


def test_sync_fn_needing_the_loop_on_the_thread_explains_itself() -> None:
    async def task(ctx: TaskContext) -> None:
        # Like asyncio.gather / create_task / ensure_future called on a thread.
        await ctx.step("gather", lambda: asyncio.get_running_loop(), timeout_ms=500)

    outcome = asyncio.run(run_task_async(_ctx(), task))
    assert isinstance(outcome.error, RuntimeError)
    assert 'step "gather": its function needs the running event loop' in str(outcome.error)
    assert "Pass an async function, or the awaitable itself" in str(outcome.error)


def test_a_sync_step_blocking_the_loop_warns_once_per_step_name() -> None:
    name = f"blocky-{uuid.uuid4().hex}"

    async def task(ctx: TaskContext) -> None:
        await ctx.step(name, lambda: time.sleep(0.15))
        await ctx.step(name, lambda: time.sleep(0.15))  # same name: no second warning
        await ctx.step("fast", lambda: 1)

    with pytest.warns(RuntimeWarning, match=f'step "{name}" ran a sync function on the event loop'):
        outcome = asyncio.run(run_task_async(_ctx(), task))
    assert outcome.error is None, outcome.error
    warned = [line for line in outcome.logs if line.level == "warn"]
    assert len(warned) == 1
    assert warned[0].message.startswith(f'step "{name}" ran a sync function on the event loop')
    assert "Give it a timeout_ms" in warned[0].message


def test_session_sync_step_times_out_without_stalling_other_participants(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        bench_x=bench(
            'participants=[Participant("slow"), Participant("fast")], group_by="round",'
            " concurrency=2",
            """
            import asyncio, time

            @define_task
            async def task(participant, step):
                if participant.name == "slow":
                    await step("block", lambda: time.sleep(1.5), timeout_ms=100)
                else:
                    await asyncio.sleep(0.02)  # starts while "block" runs
                    await step("think", asyncio.sleep(0.05), timeout_ms=1000)
            """,
        )
    )
    out = pytester.path / "run.json"
    result = pytester.runpytest_inprocess(
        "--bench", "--bench-dry-run", "--bench-json", str(out), "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ['[[]TaskError (step_timeout)[]] Step "block" timed out after 100ms for participant "slow"']
    )
    doc = read_json(out)
    records = {p["participant"]: p["records"] for b in doc["benchmarks"] for p in b["participants"]}
    assert records["slow"][0]["errorCode"] == "step_timeout"
    assert records["fast"][0]["status"] == "success"
    assert [s["name"] for s in records["fast"][0]["steps"]] == ["think"]


def test_a_given_coroutine_of_a_step_failing_validation_is_closed() -> None:
    async def task(ctx: TaskContext) -> None:
        with pytest.raises(ValueError, match=r'step "s" timeout_ms must be a number >= 0'):
            await ctx.step("s", asyncio.sleep(0), timeout_ms=-1)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = asyncio.run(run_task_async(_ctx(), task))
        gc.collect()
    assert outcome.error is None, outcome.error
