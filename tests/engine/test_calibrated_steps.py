"""``step(name, fn, calls="auto" | N)``: counts, per-call math, async forms, timeouts, errors.

The per-call math runs on an injected clock that only the timed function advances (100 ns a
call, or what a test says), so every count and figure is exact; no wall-clock timing is
asserted.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from pytest_benchsdk._base.clock import Clock
from pytest_benchsdk._engine.calibrated import LOOPS, Calibration, calibration, loop_sync
from pytest_benchsdk._engine.context import TaskContext, TaskError, run_task, run_task_async
from pytest_benchsdk.records import StepRecord


class FakeTime:
    """A monotonic source that stands still; ``tick`` is what a call of the timed function
    adds (seconds)."""

    def __init__(self, tick: float = 100e-9) -> None:
        self.now = 1000.0
        self.tick = tick
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def work(self) -> int:
        self.calls += 1
        self.now += self.tick
        return self.calls


def _ctx(clock_source: Callable[[], float] | None = None, *, is_async: bool = False) -> TaskContext:
    clock = Clock(monotonic=clock_source, wall=lambda: 1_000_000.0) if clock_source else None
    kwargs: dict[str, Any] = {"clock": clock} if clock is not None else {}
    return TaskContext(
        participant=None, participant_name="p1", task_index=0, is_async=is_async, **kwargs
    )


def _step(outcome: Any, name: str) -> StepRecord:
    steps = [s for s in outcome.record.steps if s.name == name]
    assert len(steps) == 1, outcome.record.steps
    step: StepRecord = steps[0]
    return step


def test_auto_calibrates_like_autorange_and_records_the_time_per_call() -> None:
    # 101 ns a call (not 100: float readings need not add up to exactly 1 ms): a loop of at
    # least 1 ms needs 10,000 calls.
    time = FakeTime(tick=101e-9)
    seen: list[Any] = []

    def task(ctx: TaskContext) -> None:
        seen.append(ctx.step("join", time.work, calls="auto"))

    outcome = run_task(_ctx(time), task)
    step = _step(outcome, "join")
    assert step.status == "success"
    assert step.latency_ms == pytest.approx(0.000101, abs=1e-12)  # 101 ns, not 0.001 ms
    assert step.data == {"calls": 10_000, "loop_ms": 1.01}
    # The probe, autorange's 1, 2, 5 … 5,000 and 10,000, then four more loops of 10,000.
    calibrating = sum(base * k for base in (1, 10, 100, 1000) for k in (1, 2, 5))
    assert time.calls == 1 + calibrating + 10_000 * LOOPS
    assert seen == [time.calls]  # the step returns the last call's value


def test_min_time_ms_sets_how_long_the_loop_lasts() -> None:
    time = FakeTime(tick=1.01e-6)

    def task(ctx: TaskContext) -> None:
        ctx.step("s", time.work, calls="auto", min_time_ms=20)

    step = _step(run_task(_ctx(time), task), "s")
    assert step.data == {"calls": 20_000, "loop_ms": 20.2}
    assert step.latency_ms == pytest.approx(0.00101, abs=1e-12)


def test_the_fastest_loop_is_the_measurement() -> None:
    # 101 ns a call, until the repeats after the calibration: the calibration's twelve loops
    # (1 … 5,000 calls: 0.5 ms) take 24 readings; from the second repeat on a call takes 80 ns.
    readings = 0
    now = 0.0

    def read() -> float:
        nonlocal readings
        readings += 1
        return now

    def work() -> None:
        nonlocal now
        now += 80e-9 if readings >= 26 else 101e-9

    timing = loop_sync("s", work, Calibration(None, 0.0005), read)
    assert timing.calls == 5000
    assert readings == 24 + 2 * (LOOPS - 1)
    assert timing.per_call_s == pytest.approx(80e-9)


def test_a_fixed_count_runs_exactly_that_many_calls_in_one_loop() -> None:
    time = FakeTime(tick=250e-9)

    def task(ctx: TaskContext) -> None:
        ctx.step("s", time.work, calls=7)

    step = _step(run_task(_ctx(time), task), "s")
    assert time.calls == 7
    assert step.data == {"calls": 7, "loop_ms": 0.00175}
    assert step.latency_ms == pytest.approx(0.00025, abs=1e-12)


def test_timestamps_span_the_measured_loop_and_measure_lands_in_the_step() -> None:
    time = FakeTime(tick=1e-3)  # 1 ms a call

    def task(ctx: TaskContext) -> None:
        def fn() -> None:
            time.work()
            ctx.measure(bytes=3)

        ctx.step("s", fn, calls=5)

    step = _step(run_task(_ctx(time), task), "s")
    assert step.data == {"bytes": 3, "calls": 5, "loop_ms": 5.0}
    assert step.latency_ms == pytest.approx(1.0)
    assert step.started_at == "1970-01-12T13:46:40.000Z"
    assert step.completed_at == "1970-01-12T13:46:40.005Z"  # calls × latency_ms


def test_async_function_in_an_async_task_is_awaited_each_call() -> None:
    time = FakeTime(tick=1e-6)
    awaited = 0

    async def fn() -> int:
        nonlocal awaited
        awaited += 1
        await asyncio.sleep(0)
        return time.work()

    async def task(ctx: TaskContext) -> Any:
        return await ctx.step("a", fn, calls=3)

    outcome = asyncio.run(run_task_async(_ctx(time, is_async=True), task))
    step = _step(outcome, "a")
    assert awaited == 3
    assert step.data == {"calls": 3, "loop_ms": 0.003}
    assert step.latency_ms == pytest.approx(0.001)


def test_sync_function_in_an_async_task_and_auto() -> None:
    time = FakeTime(tick=1.01e-6)

    async def task(ctx: TaskContext) -> None:
        assert await ctx.step("s", time.work, calls="auto") == time.calls

    step = _step(asyncio.run(run_task_async(_ctx(time, is_async=True), task)), "s")
    assert step.data == {"calls": 1000, "loop_ms": 1.01}


def test_async_function_in_a_sync_task() -> None:
    time = FakeTime(tick=1e-6)

    async def fn() -> int:
        return time.work()

    def task(ctx: TaskContext) -> None:
        assert ctx.step("a", fn, calls=4) == 4

    step = _step(run_task(_ctx(time), task), "a")
    assert step.data == {"calls": 4, "loop_ms": 0.004}


def test_async_function_in_a_sync_task_auto() -> None:
    time = FakeTime(tick=1.01e-6)

    async def fn() -> int:
        return time.work()

    def task(ctx: TaskContext) -> None:
        ctx.step("a", fn, calls="auto")

    step = _step(run_task(_ctx(time), task), "a")
    assert step.data == {"calls": 1000, "loop_ms": 1.01}


def test_the_timeout_holds_for_the_whole_loop_sync() -> None:
    stop = threading.Event()

    def task(ctx: TaskContext) -> None:
        # Each call waits 10 ms: a million of them would take hours; the step times out.
        ctx.step("slow", lambda: stop.wait(0.01), calls=1_000_000, timeout_ms=50)

    try:
        outcome = run_task(_ctx(), task)
    finally:
        stop.set()  # the abandoned loop's thread ends at its next call
    assert isinstance(outcome.error, TaskError)
    assert outcome.record.error_code == "step_timeout"
    assert _step(outcome, "slow").error_code == "step_timeout"


def test_the_timeout_holds_for_the_whole_loop_async() -> None:
    async def fn() -> None:
        await asyncio.sleep(0.01)

    async def task(ctx: TaskContext) -> None:
        await ctx.step("slow", fn, calls="auto", min_time_ms=60_000, timeout_ms=50)

    outcome = asyncio.run(run_task_async(_ctx(is_async=True), task))
    assert outcome.record.error_code == "step_timeout"


def test_a_failing_call_fails_the_step() -> None:
    def boom() -> None:
        raise KeyError("x")

    def task(ctx: TaskContext) -> None:
        ctx.step("s", boom, calls="auto")

    outcome = run_task(_ctx(), task)
    step = _step(outcome, "s")
    assert (step.status, step.error_code) == ("error", "KeyError")
    assert step.data is None


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"calls": 0}, ValueError, 'calls must be "auto" or an int >= 1 (got 0)'),
        ({"calls": -3}, ValueError, "(got -3)"),
        ({"calls": "fast"}, TypeError, "(got 'fast')"),
        ({"calls": 2.5}, TypeError, "(got 2.5)"),
        ({"calls": True}, TypeError, "(got True)"),
        ({"calls": 5, "min_time_ms": 3}, ValueError, 'min_time_ms applies to calls="auto"'),
        ({"calls": "auto", "min_time_ms": 0}, ValueError, "min_time_ms must be a number > 0"),
        ({"calls": "auto", "min_time_ms": "1"}, ValueError, "min_time_ms must be a number > 0"),
        (
            {"calls": "auto", "parallel_invocations": 2},
            ValueError,
            "calls= and parallel_invocations= cannot be combined",
        ),
    ],
)
def test_bad_options_are_clear_errors_and_fail_the_step(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    def task(ctx: TaskContext) -> None:
        ctx.step("s", lambda: None, **options)

    outcome = run_task(_ctx(), task)
    assert isinstance(outcome.error, error)
    assert words in str(outcome.error)
    assert str(outcome.error).startswith('step "s"')
    assert _step(outcome, "s").status == "error"


def test_calibration_accepts_an_integral_float() -> None:
    assert calibration("s", 1000.0, None).calls == 1000
    assert calibration("s", "auto", 5).min_time_s == 0.005


def test_the_with_form_and_awaitables_cannot_be_looped() -> None:
    ctx = _ctx()
    with pytest.raises(TypeError, match=r"needs one: step\(\"s\", fn, calls=\"auto\"\); a `with"):
        ctx.step("s", calls="auto")

    async def coro() -> None:
        return None

    async def task(ctx: TaskContext) -> None:
        await ctx.step("a", coro(), calls=3)

    outcome = asyncio.run(run_task_async(_ctx(is_async=True), task))
    assert isinstance(outcome.error, TypeError)
    assert "an awaitable runs only once" in str(outcome.error)


def test_a_sync_task_says_how_to_loop_a_function_returning_awaitables() -> None:
    async def get() -> None:
        return None

    def task(ctx: TaskContext) -> None:
        ctx.step("get", lambda: get(), calls="auto")

    outcome = run_task(_ctx(), task)
    assert isinstance(outcome.error, TypeError)
    assert "pass a coroutine function" in str(outcome.error)


def test_plain_steps_are_unchanged() -> None:
    time = FakeTime(tick=150e-9)

    def task(ctx: TaskContext) -> None:
        ctx.step("one pair", time.work)

    step = _step(run_task(_ctx(time), task), "one pair")
    # A plain step's data holds its CPU time only: no calls, no loop time.
    assert step.data is not None
    assert set(step.data) == {"cpu_ms"}
    assert step.latency_ms == 0.00015  # nanoseconds kept (0.001 before)
