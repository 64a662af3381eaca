"""What a latency covers: the clock is read right before the work and right after it.

A clock that records each of its readings in an event list, next to the work's own events and
the coordination's notifications, shows what lies between a step's (or a task's) two readings:
the work and nothing else. No wall-clock timing is asserted: the clock is a counter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from pytest_benchsdk._base.clock import Clock
from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk.context import IterationOutcome, TaskContext, run_task, run_task_async
from pytest_benchsdk.records import StepRecord, TaskRecord

Event = tuple[str, float] | str


class CountingClock:
    """A monotonic source returning 0.001, 0.002, ... (a millisecond per reading, so no step
    looks long enough to warn about) and noting each reading in ``events``."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.count = 0

    def __call__(self) -> float:
        self.count += 1
        reading = self.count / 1000.0
        self.events.append(("clock", reading))
        return reading


def make_ctx(events: list[Event], **kwargs: Any) -> TaskContext:
    clock = Clock(monotonic=CountingClock(events), wall=lambda: 1_000_000.0)
    coordination = StepCoordination(4, on_change=lambda: events.append("notify"))
    return TaskContext(
        participant=None,
        participant_name="p",
        task_index=0,
        clock=clock,
        coordination=coordination,
        **kwargs,
    )


def assert_timed_around(
    record: StepRecord | TaskRecord, clock: Clock, events: list[Event], work: str = "work"
) -> None:
    """``record`` was timed from the reading right before ``work`` to the one right after
    (a step whose function returns an awaitable reads the clock once more in between)."""
    at = events.index(work)
    before, after = events[at - 1], events[at + 1]
    assert isinstance(before, tuple), events
    assert before[0] == "clock", events
    assert isinstance(after, tuple), events
    assert after[0] == "clock", events
    started = next(
        reading
        for event in reversed(events[:at])
        if isinstance(event, tuple) and clock.iso(reading := event[1]) == record.started_at
    )
    between = events[events.index(("clock", started)) + 1 : at]
    assert all(isinstance(event, tuple) for event in between), events  # only readings
    assert len(between) <= 1, events
    assert record.completed_at == clock.iso(after[1])
    assert record.latency_ms == Clock.elapsed_ms(started, after[1])


def step_record(outcome: IterationOutcome, name: str) -> StepRecord:
    return next(step for step in outcome.record.steps if step.name == name)


def test_a_function_step_is_timed_around_its_function_only() -> None:
    events: list[Event] = []
    ctx = make_ctx(events)

    def task(ctx: TaskContext) -> None:
        ctx.step("work", lambda: events.append("work"))

    outcome = run_task(ctx, task)
    assert outcome.error is None
    assert_timed_around(step_record(outcome, "work"), ctx.clock, events)
    # The heartbeat's notices come before the first reading and after the second.
    assert events.count("notify") == 2
    # The step's log line carries the step's end.
    (line,) = outcome.logs
    assert (line.message, line.timestamp) == ("work", step_record(outcome, "work").completed_at)


def test_a_block_step_is_timed_around_its_body_only() -> None:
    events: list[Event] = []
    ctx = make_ctx(events)

    def task(ctx: TaskContext) -> None:
        with ctx.step("work"):
            events.append("work")

    outcome = run_task(ctx, task)
    assert_timed_around(step_record(outcome, "work"), ctx.clock, events)
    assert events.count("notify") == 2


@pytest.mark.parametrize("form", ["sync function", "async function", "async with"])
def test_an_async_step_is_timed_around_its_work_only(form: str) -> None:
    events: list[Event] = []
    ctx = make_ctx(events, is_async=True)

    def work() -> None:
        events.append("work")

    async def async_work() -> None:
        events.append("work")

    async def task(ctx: TaskContext) -> None:
        if form == "sync function":
            await ctx.step("work", work)
        elif form == "async function":
            await ctx.step("work", async_work)
        else:
            async with ctx.step("work"):
                events.append("work")

    outcome = asyncio.run(run_task_async(ctx, task))
    assert outcome.error is None
    assert_timed_around(step_record(outcome, "work"), ctx.clock, events)
    assert events.count("notify") == 2


def test_a_step_with_options_is_timed_after_its_options_are_checked() -> None:
    events: list[Event] = []
    ctx = make_ctx(events)

    def task(ctx: TaskContext) -> None:
        ctx.step("work", lambda: events.append("work"), readiness="poll", capture_output=False)

    outcome = run_task(ctx, task)
    assert_timed_around(step_record(outcome, "work"), ctx.clock, events)


def test_a_failing_step_is_timed_until_its_work_raised() -> None:
    events: list[Event] = []
    ctx = make_ctx(events)

    def fail() -> None:
        events.append("work")
        raise ValueError("no")

    def task(ctx: TaskContext) -> None:
        ctx.step("work", fail)

    outcome = run_task(ctx, task)
    step = step_record(outcome, "work")
    assert (step.status, step.error_code) == ("error", "ValueError")
    assert_timed_around(step, ctx.clock, events)


class BoundTask:
    """An ``invoke`` with ``bind``: the setup it does there is not the iteration's latency."""

    def __init__(self, events: list[Event], fail_in_bind: bool = False) -> None:
        self.events = events
        self.fail_in_bind = fail_in_bind

    def bind(self, ctx: TaskContext) -> Callable[[], object]:
        self.events.append("bind")
        if self.fail_in_bind:
            raise KeyError("fixture")
        return lambda: self.events.append("work")

    def __call__(self, ctx: TaskContext) -> object:
        return self.bind(ctx)()


def test_a_task_is_timed_around_its_call_and_bind_runs_before_the_clock() -> None:
    events: list[Event] = []
    ctx = make_ctx(events)
    outcome = run_task(ctx, BoundTask(events))
    assert outcome.error is None
    assert events.index("bind") < events.index("work")
    assert_timed_around(outcome.record, ctx.clock, events)


def test_an_async_task_is_timed_around_its_call_and_await() -> None:
    events: list[Event] = []
    ctx = make_ctx(events, is_async=True)

    async def task(ctx: TaskContext) -> None:
        events.append("work")

    outcome = asyncio.run(run_task_async(ctx, task))
    assert_timed_around(outcome.record, ctx.clock, events)


@pytest.mark.parametrize("is_async", [False, True])
def test_a_bind_that_fails_is_an_error_record_of_no_duration(is_async: bool) -> None:
    events: list[Event] = []
    ctx = make_ctx(events, is_async=is_async)
    invoke = BoundTask(events, fail_in_bind=True)
    outcome = asyncio.run(run_task_async(ctx, invoke)) if is_async else run_task(ctx, invoke)
    assert isinstance(outcome.error, KeyError)
    assert (outcome.record.status, outcome.record.error_code) == ("error", "KeyError")
    assert outcome.record.latency_ms == 0
    assert "work" not in events
