"""Executor: pools, stagger, rounds, inline runs, callbacks, cancellation and shutdown.

Timing assertions are one-sided and loose (the CI machine is small and shared): orders and
lower bounds on gaps; where an upper bound is needed it is checked against an alternative that
would be at least a whole stagger slot slower.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_benchsdk._base.ctrlc import ctrl_c_interrupt
from pytest_benchsdk.context import IterationOutcome, TaskContext, TaskError
from pytest_benchsdk.executor import (
    Executor,
    ExecutorShutdownError,
    GroupPlan,
    IterationSpec,
)

WAIT = 30.0  # generous upper limit for anything that must eventually happen


@pytest.fixture
def executor() -> Iterator[Executor]:
    ex = Executor()
    yield ex
    ex.shutdown(timeout=5)


class Probe:
    """Records start/end times and in-flight counts of iterations, thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: dict[Any, float] = {}
        self.ends: dict[Any, float] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.threads: dict[Any, str] = {}

    def begin(self, key: Any) -> None:
        with self.lock:
            self.starts[key] = time.perf_counter()
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.threads[key] = threading.current_thread().name

    def end(self, key: Any) -> None:
        with self.lock:
            self.ends[key] = time.perf_counter()
            self.in_flight -= 1

    def order(self) -> list[Any]:
        return sorted(self.starts, key=self.starts.__getitem__)


def sync_work(probe: Probe, seconds: float) -> Callable[[TaskContext], object]:
    def invoke(ctx: TaskContext) -> object:
        key = (ctx.participant_name, ctx.task_index)
        probe.begin(key)
        time.sleep(seconds)
        ctx.measure(i=ctx.task_index)
        probe.end(key)
        return None

    return invoke


def async_work(probe: Probe, seconds: float) -> Callable[[TaskContext], object]:
    async def invoke(ctx: TaskContext) -> object:
        key = (ctx.participant_name, ctx.task_index)
        probe.begin(key)
        await asyncio.sleep(seconds)
        ctx.measure(i=ctx.task_index)
        probe.end(key)
        return None

    return invoke


def spec(
    index: int,
    invoke: Callable[[TaskContext], object],
    *,
    participant: str = "p",
    is_async: bool = True,
    ordinal: int | None = None,
    phase: str | None = None,
) -> IterationSpec:
    return IterationSpec(
        key=(participant, index),
        participant={"name": participant},
        participant_name=participant,
        phase=phase,
        task_index=index,
        ordinal=index if ordinal is None else ordinal,
        invoke=invoke,
        is_async=is_async,
    )


def participant_plan(
    specs: list[IterationSpec], concurrency: int = 1, stagger: float = 0, group_id: str = "g"
) -> GroupPlan:
    return GroupPlan(
        group_id=group_id,
        mode="participant",
        concurrency=concurrency,
        stagger_delay_ms=stagger,
        iterations=specs,
    )


def results(futures: Any) -> list[IterationOutcome]:
    return [f.result(timeout=WAIT) for f in futures.values()]


# ------------------------------------------------------------------------------ plans


def test_group_plan_validation_and_round_building() -> None:
    noop: Callable[[TaskContext], object] = lambda ctx: None  # noqa: E731
    flat = [spec(i, noop, participant=p) for i in range(2) for p in ("a", "b")]
    plan = GroupPlan.build(
        group_id="r", mode="round", concurrency=1, stagger_delay_ms=0, iterations=flat
    )
    assert [[s.key for s in r] for r in plan.rounds] == [
        [("a", 0), ("b", 0)],
        [("a", 1), ("b", 1)],
    ]
    with pytest.raises(ValueError, match="concurrency must be an integer >= 1"):
        participant_plan([], concurrency=0)
    with pytest.raises(ValueError, match="stagger_delay_ms must be a number from 0 to"):
        participant_plan([], stagger=-1)
    with pytest.raises(ValueError, match=r"from 0 to 3,600,000 \(one hour; got 1e\+300\)"):
        participant_plan([], stagger=1e300)  # overflowed time.sleep / hung asyncio.sleep
    with pytest.raises(ValueError, match="keys must be unique"):
        participant_plan([spec(0, noop), spec(0, noop)])
    with pytest.raises(TypeError, match="round-mode"):
        GroupPlan(group_id="x", mode="round", concurrency=1, stagger_delay_ms=0, iterations=flat)
    with pytest.raises(ValueError, match="mode must be"):
        GroupPlan.build(group_id="x", mode="nope", concurrency=1, stagger_delay_ms=0, iterations=[])


# ------------------------------------------------------------------------------ participant mode


def test_concurrency_one_runs_in_order_without_overlap(executor: Executor) -> None:
    probe = Probe()
    specs = [
        spec(i, (async_work if i % 2 == 0 else sync_work)(probe, 0.01), is_async=i % 2 == 0)
        for i in range(4)
    ]
    outcomes = results(executor.start_group(participant_plan(specs)))
    assert probe.order() == [("p", i) for i in range(4)]
    assert probe.max_in_flight == 1
    assert [o.record.task_index for o in outcomes] == [0, 1, 2, 3]
    # One iteration at a time: sync tasks record their thread's CPU time, async ones the
    # process's.
    assert [o.record.data for o in outcomes] == [
        {"i": i, "cpu_ms": o.record.data["cpu_ms"]} for i, o in enumerate(outcomes)
    ]
    assert all(o.record.status == "success" for o in outcomes)


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
def test_pool_keeps_concurrency_iterations_in_flight(executor: Executor, is_async: bool) -> None:
    probe = Probe()
    work = async_work if is_async else sync_work
    specs = [spec(i, work(probe, 0.05), is_async=is_async) for i in range(9)]
    outcomes = results(executor.start_group(participant_plan(specs, concurrency=3)))
    assert probe.max_in_flight == 3
    assert len(outcomes) == 9
    # Pulled in order: the first three start before any later one.
    order = probe.order()
    assert set(order[:3]) == {("p", 0), ("p", 1), ("p", 2)}
    if not is_async:
        assert all(name.startswith("benchsdk-task-") for name in probe.threads.values())


def test_start_group_is_idempotent(executor: Executor) -> None:
    probe = Probe()
    plan = participant_plan([spec(i, async_work(probe, 0)) for i in range(3)])
    first = executor.start_group(plan)
    second = executor.start_group(plan)
    assert all(first[k] is second[k] for k in first)
    results(first)
    assert len(probe.starts) == 3  # ran once


def test_anchored_stagger_slots(executor: Executor) -> None:
    # Upstream: 3 tasks x 40 ms, stagger 50, concurrency 1 -> starts at t0, t0+50, t0+100.
    probe = Probe()
    specs = [spec(i, async_work(probe, 0.04)) for i in range(3)]
    results(executor.start_group(participant_plan(specs, stagger=50)))
    t0 = probe.starts[("p", 0)]
    assert probe.starts[("p", 1)] - t0 >= 0.8 * 0.05
    assert probe.starts[("p", 2)] - t0 >= 0.8 * 0.10
    assert probe.order() == [("p", 0), ("p", 1), ("p", 2)]


@pytest.mark.slow
def test_anchored_stagger_does_not_accumulate(executor: Executor) -> None:
    # The first iteration overruns its slot; the second starts as soon as a worker is free
    # (anchored ramp), not a whole stagger after the first one ended (accumulated delay). A
    # stagger of a second leaves a loaded machine 0.8 s to start the second iteration, far more
    # than it needs, and far less than the stagger an accumulated delay would add.
    stagger = 1.0
    release = threading.Event()
    probe = Probe()

    async def first(ctx: TaskContext) -> None:
        probe.begin(0)
        while not release.is_set():
            await asyncio.sleep(0.005)
        probe.end(0)

    async def second(ctx: TaskContext) -> None:
        probe.begin(1)
        probe.end(1)

    plan = participant_plan([spec(0, first), spec(1, second)], stagger=stagger * 1000)
    futures = executor.start_group(plan)
    deadline = time.monotonic() + WAIT
    while 0 not in probe.starts and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(stagger * 1.2)  # slot 1 has passed while iteration 0 still runs
    release.set()
    results(futures)
    assert probe.starts[1] >= probe.ends[0]
    assert probe.starts[1] - probe.ends[0] < 0.8 * stagger


def test_stagger_uses_ordinals_with_concurrency(executor: Executor) -> None:
    probe = Probe()
    # Deselected iterations leave gaps in task_index; the slots follow the ordinal.
    specs = [spec(idx, async_work(probe, 0), ordinal=o) for o, idx in enumerate([0, 5, 9])]
    results(executor.start_group(participant_plan(specs, concurrency=3, stagger=60)))
    t0 = probe.starts[("p", 0)]
    assert probe.order() == [("p", 0), ("p", 5), ("p", 9)]
    assert probe.starts[("p", 5)] - t0 >= 0.8 * 0.06
    assert probe.starts[("p", 9)] - t0 >= 0.8 * 0.12


def test_mixed_sync_and_async_tasks_with_context(executor: Executor) -> None:
    seen: dict[int, tuple[bool, str | None, str]] = {}

    def sync_task(ctx: TaskContext) -> dict[str, int]:
        seen[ctx.task_index] = (ctx.is_async, ctx.phase, threading.current_thread().name)
        value = ctx.step("sync-step", lambda: 1)
        return {"value": value}

    async def async_task(ctx: TaskContext) -> dict[str, int]:
        seen[ctx.task_index] = (ctx.is_async, ctx.phase, threading.current_thread().name)
        value = await ctx.step("async-step", lambda: asyncio.sleep(0, result=2))
        return {"value": value}

    specs = [
        spec(0, sync_task, is_async=False, phase="cold"),
        spec(1, async_task, is_async=True, phase="warm"),
    ]
    outcomes = results(executor.start_group(participant_plan(specs, concurrency=2)))
    # Two at a time: the async iteration's CPU time is not its own, so it records none.
    assert [o.record.data for o in outcomes] == [
        {"value": 1, "phase": "cold", "cpu_ms": outcomes[0].record.data["cpu_ms"]},
        {"value": 2, "phase": "warm"},
    ]
    assert seen[0][:2] == (False, "cold")
    assert seen[0][2].startswith("benchsdk-task-")
    assert seen[1] == (True, "warm", "benchsdk-loop")


def test_sync_task_step_returning_awaitable_runs_on_the_loop(executor: Executor) -> None:
    loops: list[str] = []

    async def fetch() -> str:
        loops.append(threading.current_thread().name)
        return "ok"

    def task(ctx: TaskContext) -> str:
        value: str = ctx.step("fetch", fetch, timeout_ms=5000)
        return value

    (outcome,) = results(executor.start_group(participant_plan([spec(0, task, is_async=False)])))
    assert outcome.error is None
    assert loops == ["benchsdk-loop"]


def test_errors_and_base_exceptions_are_outcomes_interrupts_fail_the_future(
    executor: Executor,
) -> None:
    class Skip(BaseException):
        pass

    def interrupted(ctx: TaskContext) -> None:
        raise ctrl_c_interrupt()  # what the plugin's handler raises on Ctrl-C

    def own_interrupt(ctx: TaskContext) -> None:
        raise KeyboardInterrupt("the task's own")

    def failing(ctx: TaskContext) -> None:
        raise TaskError("boom", code="probe_failed")

    def skipping(ctx: TaskContext) -> None:
        raise Skip("skip me")

    plan = participant_plan(
        [
            spec(0, failing, is_async=False),
            spec(1, skipping, is_async=False),
            spec(2, interrupted, is_async=False),
            spec(3, own_interrupt, is_async=False),
        ],
        concurrency=2,
    )
    futures = executor.start_group(plan)
    outcome = futures[("p", 0)].result(timeout=WAIT)
    assert outcome.record.status == "error"
    assert outcome.record.error_code == "probe_failed"
    assert isinstance(outcome.error, TaskError)
    assert not outcome.ok
    # A BaseException is the iteration's error, with a record ...
    skipped = futures[("p", 1)].result(timeout=WAIT)
    assert isinstance(skipped.error, Skip)
    assert skipped.record.error_code == "Skip"
    assert skipped.record.data == {"errorMessage": "skip me"}
    # ... so is a task's own KeyboardInterrupt (issue 32) ...
    own = futures[("p", 3)].result(timeout=WAIT)
    assert isinstance(own.error, KeyboardInterrupt)
    assert own.record.error_code == "KeyboardInterrupt"
    # ... but a Ctrl-C keeps its meaning: no record, the waiter gets it.
    with pytest.raises(KeyboardInterrupt):
        futures[("p", 2)].result(timeout=WAIT)


def test_outcomes_carry_logs_and_records() -> None:
    ex = Executor()
    try:

        async def task(ctx: TaskContext) -> None:
            ctx.log("hello", {"n": ctx.task_index})

        specs = [spec(i, task, participant="e2b") for i in range(2)]
        futures = ex.start_group(participant_plan(specs))
        results(futures)
        done = {key: future.result() for key, future in futures.items()}
    finally:
        ex.shutdown()
    logs = [("e2b", line) for key in sorted(done) for line in done[key].logs]
    outcomes = [(key, done[key].record.status) for key in sorted(done)]
    assert [(name, line.message, line.meta) for name, line in logs] == [
        ("e2b", "hello", {"n": 0}),
        ("e2b", "hello", {"n": 1}),
    ]
    assert outcomes == [(("e2b", 0), "success"), (("e2b", 1), "success")]


# ------------------------------------------------------------------------------ round mode


def round_plan(
    rounds: list[list[IterationSpec]], concurrency: int = 1, stagger: float = 0
) -> GroupPlan:
    return GroupPlan(
        group_id="rounds",
        mode="round",
        concurrency=concurrency,
        stagger_delay_ms=stagger,
        iterations=rounds,
    )


@pytest.mark.parametrize("concurrency", [1, 2, 3])
def test_rounds_run_every_participant_before_the_next_round(
    executor: Executor, concurrency: int
) -> None:
    probe = Probe()
    rounds = [
        [spec(r, async_work(probe, 0.01 * (3 - j)), participant=p) for j, p in enumerate("abc")]
        for r in range(3)
    ]
    outcomes = results(executor.start_group(round_plan(rounds, concurrency=concurrency)))
    assert len(outcomes) == 9
    for r in range(2):
        last_end = max(probe.ends[(p, r)] for p in "abc")
        next_start = min(probe.starts[(p, r + 1)] for p in "abc")
        assert last_end <= next_start
    assert probe.max_in_flight == concurrency
    if concurrency == 1:
        assert probe.order() == [(p, r) for r in range(3) for p in "abc"]


def test_rounds_pause_by_the_stagger_between_rounds(executor: Executor) -> None:
    probe = Probe()
    rounds = [[spec(r, async_work(probe, 0), participant=p) for p in "ab"] for r in range(3)]
    results(executor.start_group(round_plan(rounds, concurrency=2, stagger=60)))
    for r in range(2):
        last_end = max(probe.ends[(p, r)] for p in "ab")
        next_start = min(probe.starts[(p, r + 1)] for p in "ab")
        assert next_start - last_end >= 0.8 * 0.06


# ------------------------------------------------------------------------------ inline runs


def test_run_inline_sync_on_caller_thread_async_on_loop(executor: Executor) -> None:
    probe = Probe()
    specs = [
        spec(0, sync_work(probe, 0), is_async=False),
        spec(1, async_work(probe, 0), is_async=True),
    ]
    plan = participant_plan(specs)
    first = executor.run_inline(plan, ("p", 0))
    second = executor.run_inline(plan, ("p", 1))
    assert (first.record.task_index, second.record.task_index) == (0, 1)
    assert probe.threads[("p", 0)] == threading.current_thread().name
    assert probe.threads[("p", 1)] == "benchsdk-loop"
    # The group's futures reflect inline runs; a repeated call returns the same outcome.
    assert executor.futures("g")[("p", 0)].result() is first
    assert executor.run_inline(plan, ("p", 0)) is first


def test_run_inline_applies_the_stagger(executor: Executor) -> None:
    # Anchored stagger: iteration i starts no earlier than t0 + i × stagger, where t0 is taken
    # when the group's first iteration is asked for. The first iteration itself may start late
    # (a loaded machine, the loop thread's start), so the bound is measured from before the
    # first call, not from the first start (the clock is perf_counter on both sides).
    probe = Probe()
    specs = [spec(i, sync_work(probe, 0), is_async=False) for i in range(3)]
    plan = participant_plan(specs, stagger=50)
    before = time.perf_counter()
    for i in range(3):
        executor.run_inline(plan, ("p", i))
    assert probe.starts[("p", 1)] - before >= 0.05
    assert probe.starts[("p", 2)] - before >= 0.10
    assert probe.order() == [("p", 0), ("p", 1), ("p", 2)]


def test_run_inline_round_pause(executor: Executor) -> None:
    probe = Probe()
    rounds = [
        [spec(r, sync_work(probe, 0), participant=p, is_async=False) for p in "ab"]
        for r in range(2)
    ]
    plan = round_plan(rounds, stagger=60)
    for r in range(2):
        for p in "ab":
            executor.run_inline(plan, (p, r))
    assert probe.starts[("a", 1)] - probe.ends[("b", 0)] >= 0.8 * 0.06
    # No pause between participants of the same round.
    assert probe.order() == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]


def test_start_group_after_inline_runs_only_the_rest(executor: Executor) -> None:
    probe = Probe()
    plan = participant_plan([spec(i, async_work(probe, 0)) for i in range(3)], concurrency=2)
    inline = executor.run_inline(plan, ("p", 0))
    futures = executor.start_group(plan)
    assert futures[("p", 0)].result() is inline
    results(futures)
    assert sorted(probe.starts) == [("p", 0), ("p", 1), ("p", 2)]
    # run_inline on a started group just waits for the result.
    assert executor.run_inline(plan, ("p", 2)) is futures[("p", 2)].result()


def test_release_forgets_an_iteration(executor: Executor) -> None:
    # What the plugin does once an item has its outcome: nothing of it stays in the executor.
    probe = Probe()
    plan = participant_plan([spec(i, sync_work(probe, 0), is_async=False) for i in range(3)])
    assert executor.futures("g") == {}  # futures are made on demand
    first = executor.run_inline(plan, ("p", 0))
    assert executor.futures("g")[("p", 0)].result() is first
    executor.release("g", ("p", 0))
    assert executor.futures("g") == {}
    with pytest.raises(KeyError, match="released"):
        executor.run_inline(plan, ("p", 0))
    executor.release("unknown", ("p", 0))  # a no-op
    # A group started later runs only what was neither run nor released.
    executor.release("g", ("p", 1))
    futures = executor.start_group(plan)
    assert set(futures) == {("p", 2)}
    results(futures)
    assert probe.order() == [("p", 0), ("p", 2)]


def test_run_inline_with_release_keeps_nothing(executor: Executor) -> None:
    probe = Probe()
    specs = [
        spec(0, sync_work(probe, 0), is_async=False),
        spec(1, async_work(probe, 0), is_async=True),
        spec(2, sync_work(probe, 0), is_async=False),
    ]
    plan = participant_plan(specs)
    first = executor.run_inline(plan, ("p", 0), release=True)
    second = executor.run_inline(plan, ("p", 1), release=True)
    assert (first.record.task_index, second.record.task_index) == (0, 1)
    assert executor.futures("g") == {}
    # Nothing per finished iteration either (20,000 of them last the whole session).
    group = executor._groups["g"]
    assert not group.claimed
    assert list(group.specs) == [("p", 2)]
    with pytest.raises(KeyError, match="released"):
        executor.run_inline(plan, ("p", 0), release=True)
    executor.cancel_all()
    with pytest.raises(cf.CancelledError):
        executor.run_inline(plan, ("p", 2), release=True)
    assert probe.order() == [("p", 0), ("p", 1)]


def test_cancel_all_cancels_futures_made_later(executor: Executor) -> None:
    probe = Probe()
    plan = participant_plan([spec(i, sync_work(probe, 0), is_async=False) for i in range(2)])
    executor.run_inline(plan, ("p", 0))
    executor.cancel_all()
    with pytest.raises(cf.CancelledError):
        executor.run_inline(plan, ("p", 1))
    assert executor.futures("g")[("p", 1)].cancelled()
    assert probe.order() == [("p", 0)]


# ------------------------------------------------------------------------------ cancellation


def test_cancel_all_and_shutdown_leave_nothing_running() -> None:
    ex = Executor()
    cancelled: list[int] = []
    release = threading.Event()
    started = threading.Semaphore(0)

    async def async_task(ctx: TaskContext) -> None:
        started.release()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(ctx.task_index)
            raise

    def sync_task(ctx: TaskContext) -> None:
        started.release()
        release.wait(60)

    specs = [
        spec(0, async_task, is_async=True),
        spec(1, sync_task, is_async=False),
        spec(2, async_task, is_async=True),  # pending: never starts
    ]
    futures = ex.start_group(participant_plan(specs, concurrency=2))
    for _ in range(2):
        assert started.acquire(timeout=WAIT)
    loop = ex.loop
    ex.cancel_all()
    for future in futures.values():
        with pytest.raises(cf.CancelledError):
            future.result(timeout=WAIT)
    ex.cancel_all()  # idempotent
    ex.shutdown(timeout=0.5)  # the sync thread cannot finish yet: abandoned
    assert cancelled == [0]
    assert loop.is_closed()
    assert not [t for t in asyncio.all_tasks(loop) if not t.done()]
    assert not [t for t in threading.enumerate() if t.name == "benchsdk-loop"]
    release.set()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and any(
        t.name.startswith("benchsdk-") for t in threading.enumerate()
    ):
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("benchsdk-")]
    ex.shutdown()  # idempotent
    with pytest.raises(ExecutorShutdownError):
        ex.start_group(participant_plan([spec(9, async_task)], group_id="late"))


def test_cancel_all_cancels_an_inline_async_run(executor: Executor) -> None:
    entered = threading.Event()
    cancelled = threading.Event()

    async def task(ctx: TaskContext) -> None:
        entered.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    plan = participant_plan([spec(0, task)])

    def cancel_when_running() -> None:
        if entered.wait(WAIT):
            executor.cancel_all()

    timer = threading.Thread(target=cancel_when_running)
    timer.start()
    with pytest.raises(cf.CancelledError):
        executor.run_inline(plan, ("p", 0))
    timer.join()
    assert cancelled.wait(WAIT)
    assert executor.futures("g")[("p", 0)].cancelled()


def test_shutdown_before_use_starts_nothing() -> None:
    ex = Executor()
    ex.shutdown()
    ex.shutdown()
    assert not [t for t in threading.enumerate() if t.name == "benchsdk-loop"]
