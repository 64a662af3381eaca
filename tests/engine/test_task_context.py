"""Task context: TaskError, error codes, log lines, steps, measures and the record builder."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import pickle
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_benchsdk._base.clock import Clock, iso_utc
from pytest_benchsdk._engine.context import (
    LogLine,
    TaskContext,
    TaskError,
    TaskResult,
    build_record,
    current_context,
    error_code_of,
    is_step_outcome,
    is_task_error,
    run_task,
    run_task_async,
)
from pytest_benchsdk.records import ABSENT, StepRecord

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def make_ctx(**kwargs: Any) -> TaskContext:
    kwargs.setdefault("participant", {"name": "e2b"})
    kwargs.setdefault("participant_name", "e2b")
    kwargs.setdefault("task_index", 0)
    return TaskContext(**kwargs)


def run_sync(task: Callable[[TaskContext], object], **kwargs: Any) -> Any:
    return run_task(make_ctx(**kwargs), task)


def run_async(task: Callable[[TaskContext], object], **kwargs: Any) -> Any:
    return asyncio.run(run_task_async(make_ctx(is_async=True, **kwargs), task))


def measured(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """``data`` without the CPU time every sync step and task records (None when that was
    all), after checking that it is there."""
    assert data is not None
    assert data["cpu_ms"] >= 0
    rest = {k: v for k, v in data.items() if k != "cpu_ms"}
    return rest or None


def wire(outcome: Any) -> dict[str, Any]:
    result: dict[str, Any] = outcome.record.to_wire()
    return result


# ------------------------------------------------------------------------------ clock


def test_iso_utc_matches_js_to_iso_string() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_utc(1796005090.123) == "2026-11-30T02:18:10.123Z"
    assert iso_utc(1.9999) == "1970-01-01T00:00:01.999Z"  # truncated like a JS Date


def test_clock_timestamps_follow_the_monotonic_counter() -> None:
    ticks = iter([100.0, 100.0, 102.5])
    clock = Clock(monotonic=lambda: next(ticks), wall=lambda: 1_000_000.0)
    assert clock.monotonic() == 100.0
    assert clock.wall(101.25) == 1_000_001.25
    assert clock.iso() == iso_utc(1_000_002.5)
    assert Clock.elapsed_ms(1.0, 1.0123456) == 12.3456
    # A 150 ns step keeps its nanoseconds (it used to record 0.0 or 0.001 ms).
    assert Clock.elapsed_ms(10.0, 10.00000015) == 0.00015
    assert Clock.elapsed_ms(2.0, 2.0000000004) == 0.0  # below a nanosecond: float noise


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=0, max_value=1e6),
    st.floats(min_value=0, max_value=3600),
    st.floats(min_value=1e9, max_value=2e9),
)
def test_timestamps_and_the_nanosecond_latency_agree_within_a_millisecond(
    start: float, duration: float, wall: float
) -> None:
    # The clock's invariant: completed_at - started_at is the latency, within the millisecond
    # the ISO timestamps are truncated to; the latency itself keeps six decimals.
    clock = Clock(monotonic=lambda: 0.0, wall=lambda: wall)
    end = start + duration
    latency = Clock.elapsed_ms(start, end)
    assert latency == round(latency, 6)
    assert abs(latency - duration * 1000) <= 5e-7 + 1e-9 * duration * 1000
    span_ms = _epoch_ms(clock.iso(end)) - _epoch_ms(clock.iso(start))
    assert abs(span_ms - latency) < 1.0 + 1e-6 * latency


def _epoch_ms(text: str) -> int:
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


# ------------------------------------------------------------------------------ TaskError


def test_task_error_str_is_upstream_to_string() -> None:
    err = TaskError(
        "boom", code="storage_error", data={"file_size": "1MB", "n": 2}, step="put", timeout_ms=50
    )
    assert str(err) == (
        "[TaskError (storage_error)] boom\n"
        "  step: put\n"
        "  timeoutMs: 50\n"
        '  data: {"file_size":"1MB","n":2}'
    )
    assert str(TaskError("plain")) == "[TaskError] plain"
    assert str(TaskError("x", data={})) == "[TaskError] x"
    assert str(TaskError("x", timeout_ms=1.5)) == "[TaskError] x\n  timeoutMs: 1.5"


def test_task_error_attributes_repr_and_pickle() -> None:
    err = TaskError("m", code="c", data={"a": 1}, step="s", timeout_ms=3)
    assert (err.message, err.code, err.data) == ("m", "c", {"a": 1})
    assert (err.step, err.timeout_ms) == ("s", 3)
    assert err.steps is None
    assert repr(err) == "TaskError('m', code='c', data={'a': 1}, step='s', timeout_ms=3)"
    copy = pickle.loads(pickle.dumps(err))
    assert isinstance(copy, TaskError)
    assert str(copy) == str(err)


def test_is_task_error_is_cross_module_safe() -> None:
    class TaskError(Exception):  # another copy of the class, same name
        pass

    assert is_task_error(TaskError("x"))
    assert is_task_error(globals()["TaskError"]("x"))
    assert not is_task_error(ValueError("x"))
    assert not is_task_error("TaskError")


def test_error_code_of_is_upstream_get_error_code() -> None:
    class Coded(Exception):
        code = "ECONNRESET"

    class EmptyCode(Exception):
        code = ""

    assert error_code_of(TaskError("x", code="probe_failed")) == "probe_failed"
    assert error_code_of(TaskError("x")) == "TaskError"
    assert error_code_of(Coded()) == "ECONNRESET"
    assert error_code_of(EmptyCode()) == "EmptyCode"
    assert error_code_of(ValueError()) == "ValueError"
    assert error_code_of("nope") == "ERROR"


# ------------------------------------------------------------------------------ logs


def test_log_line_format() -> None:
    line = LogLine("2024-01-01T00:00:00.000Z", 3, "warn", "hello", {"a": 1, "b": "x"})
    assert line.format() == '2024-01-01T00:00:00.000Z [task 3] [warn] hello {"a":1,"b":"x"}'
    assert str(LogLine("T", 0, "info", "m", {})) == "T [task 0] [info] m"
    assert LogLine("T", 1, None, "probe stdout: hi").format() == "T [task 1] probe stdout: hi"


def test_log_levels_meta_and_options_form() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.log("a")
        ctx.log("b", {"k": 1})
        ctx.log("c", {"level": "warn"})
        ctx.log("d", {"level": "error", "meta": {"x": 2}})
        ctx.log("e", {"level": "verbose"})  # invalid level: the mapping is metadata
        ctx.log("f", {"level": "warn", "other": 1})  # other keys: metadata
        ctx.log("g", {"k": 1}, level="debug")

    outcome = run_sync(task, task_index=7)
    seen = list(outcome.logs)
    assert [(line.level, line.message, line.meta) for line in outcome.logs] == [
        ("info", "a", None),
        ("info", "b", {"k": 1}),
        ("warn", "c", None),
        ("error", "d", {"x": 2}),
        ("info", "e", {"level": "verbose"}),
        ("info", "f", {"level": "warn", "other": 1}),
        ("debug", "g", {"k": 1}),
    ]
    assert all(line.task_index == 7 and ISO.match(line.timestamp) for line in seen)
    assert seen[1].format().endswith(' [task 7] [info] b {"k":1}')


def test_log_rejects_unknown_level_keyword() -> None:
    ctx = make_ctx()
    with pytest.raises(ValueError, match="log level must be one of"):
        ctx.log("x", level="verbose")  # type: ignore[arg-type]


def test_steps_log_success_failure_and_captured_output() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.step("exec", lambda: {"stdout": "one\n\ntwo  \n", "stderr": "warn", "exitCode": 0})
        ctx.step("quiet", lambda: {"stdout": "hidden"}, capture_output=False)
        ctx.step("list", lambda: [{"stdout": "x"}])
        with pytest.raises(TaskError):
            ctx.step("bad", _raise(TaskError("nope", code="c")))

    lines = [line.format().split(" ", 1)[1] for line in run_sync(task, task_index=2).logs]
    assert lines == [
        "[task 2] [info] exec",
        # upstream writes these without a level; ours carry one, by stream
        "[task 2] [info] exec stdout: one",
        "[task 2] [info] exec stdout: two",
        "[task 2] [warn] exec stderr: warn",
        "[task 2] [info] quiet",
        "[task 2] [info] list",
        "[task 2] [error] bad\n  error: nope",
    ]


def test_is_step_outcome() -> None:
    assert is_step_outcome({"stdout": "x"})
    assert is_step_outcome({"error": "x", "code": 1, "signal": None, "pid": 3, "exitCode": 1})
    assert not is_step_outcome({})
    assert not is_step_outcome({"stdout": 1})
    assert not is_step_outcome({"stdout": "x", "other": 1})
    assert not is_step_outcome([{"stdout": "x"}])
    assert not is_step_outcome("stdout")


def _raise(exc: BaseException) -> Callable[[], Any]:
    def fn() -> Any:
        raise exc

    return fn


# ------------------------------------------------------------------------------ measures


def test_measure_attribution_task_step_and_nested_steps() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.measure(a=1)
        with ctx.step("outer"):
            ctx.measure({"o": 1})
            ctx.step("inner", lambda: ctx.measure(i=1))
            ctx.measure(o2=2)  # back on the outer step
        ctx.measure({"b": 2}, c=3)

    record = run_sync(task).record
    assert measured(record.data) == {"a": 1, "b": 2, "c": 3}
    assert [(s.name, measured(s.data)) for s in record.steps] == [
        ("outer", {"o": 1, "o2": 2}),
        ("inner", {"i": 1}),
    ]


def test_measures_of_concurrent_async_steps_stay_with_their_step() -> None:
    # Upstream attributes both to whichever step started last (§8.3 #11); contextvars fix it.
    async def work(ctx: TaskContext, key: str, delay: float) -> str:
        ctx.measure({key: 1})
        await asyncio.sleep(delay)
        ctx.measure({f"{key}_after": 2})
        return key

    async def task(ctx: TaskContext) -> None:
        results = await asyncio.gather(
            ctx.step("a", lambda: work(ctx, "a", 0.02)),
            ctx.step("b", lambda: work(ctx, "b", 0.01)),
        )
        assert list(results) == ["a", "b"]
        ctx.measure(done=True)

    record = run_async(task).record
    assert {s.name: s.data for s in record.steps} == {
        "a": {"a": 1, "a_after": 2},
        "b": {"b": 1, "b_after": 2},
    }
    assert record.data == {"done": True}


def test_measures_inside_parallel_sync_invocations_go_to_the_step() -> None:
    def task(ctx: TaskContext) -> None:
        counter = iter(range(100))
        ctx.step("p", lambda: ctx.measure({f"n{next(counter)}": 1}), parallel_invocations=3)

    record = run_sync(task).record
    assert measured(record.data) is None
    assert measured(record.steps[0].data) == {"n0": 1, "n1": 1, "n2": 1}


# ------------------------------------------------------------------------------ step timeouts


def test_async_step_timeout_cancels_the_awaited_work() -> None:
    seen: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def task(ctx: TaskContext) -> None:
        with pytest.raises(TaskError) as info:
            await ctx.step("create", slow, timeout_ms=20)
        err = info.value
        assert err.code == "step_timeout"
        assert err.step == "create"
        assert err.timeout_ms == 20
        assert err.message == 'Step "create" timed out after 20ms for participant "e2b"'
        assert seen == ["cancelled"]

    outcome = run_async(task)
    assert outcome.error is None, outcome.error
    step = outcome.record.steps[0]
    assert (step.status, step.error_code, step.timeout_ms) == ("error", "step_timeout", 20)


def test_async_step_with_lambda_returning_awaitable_and_timeout_zero_sync_wins() -> None:
    async def fetch() -> int:
        await asyncio.sleep(0)
        return 5

    async def task(ctx: TaskContext) -> None:
        assert await ctx.step("get", lambda: fetch()) == 5
        assert await ctx.step("sync", lambda: 7, timeout_ms=0) == 7
        assert await ctx.step("coro-fn", fetch, timeout_ms=1000) == 5

    outcome = run_async(task)
    assert outcome.error is None, outcome.error
    assert [s.status for s in outcome.record.steps] == ["success"] * 3
    assert outcome.record.steps[2].timeout_ms == 1000
    assert outcome.record.steps[2].wire_error_code is ABSENT


def test_sync_step_timeout_stops_waiting_and_the_thread_finishes_later() -> None:
    release = threading.Event()
    finished = threading.Event()

    def blocking() -> None:
        release.wait(10)
        finished.set()

    def task(ctx: TaskContext) -> None:
        with pytest.raises(TaskError) as info:
            ctx.step("stuck", blocking, timeout_ms=30)
        assert info.value.code == "step_timeout"
        assert not finished.is_set()  # we returned while the work is still running

    outcome = run_sync(task)
    assert outcome.error is None, outcome.error
    assert outcome.record.steps[0].error_code == "step_timeout"
    release.set()
    assert finished.wait(10)


def test_sync_step_returning_awaitable_runs_it_and_cancels_at_timeout() -> None:
    seen: list[str] = []

    async def slow() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "never"

    async def quick() -> str:
        return "ok"

    def task(ctx: TaskContext) -> None:
        assert ctx.step("quick", quick) == "ok"
        with pytest.raises(TaskError, match="timed out after 20ms"):
            ctx.step("slow", slow, timeout_ms=20)

    outcome = run_sync(task)
    assert outcome.error is None, outcome.error
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == ["cancelled"]


def test_async_with_block_timeout_and_plain_with_rejects_timeout() -> None:
    async def task(ctx: TaskContext) -> None:
        with pytest.raises(TaskError, match='Step "blk" timed out after 20ms'):
            async with ctx.step("blk", timeout_ms=20):
                await asyncio.sleep(30)
        async with ctx.step("fast", timeout_ms=5000):
            ctx.measure(x=1)
        await asyncio.sleep(0.05)  # the block's cancellation must not leak past it

    outcome = run_async(task)
    assert outcome.error is None, outcome.error
    assert [(s.name, s.status, s.data) for s in outcome.record.steps] == [
        ("blk", "error", None),
        ("fast", "success", {"x": 1}),
    ]

    def sync_task(ctx: TaskContext) -> None:
        with ctx.step("blk", timeout_ms=5):
            pass

    sync_outcome = run_sync(sync_task)
    assert isinstance(sync_outcome.error, ValueError)
    assert sync_outcome.record.steps[0].error_code == "ValueError"


# ------------------------------------------------------------------------ parallel invocations


def test_parallel_invocations_return_in_order_async_and_sync() -> None:
    async def async_task(ctx: TaskContext) -> list[int]:
        counter = iter(range(10))

        async def one() -> int:
            n = next(counter)
            await asyncio.sleep(0.01 * (3 - n))  # finish in reverse order
            return n

        value: list[int] = await ctx.step("p", one, parallel_invocations=3)
        return value

    outcome = run_async(async_task)
    assert outcome.record.steps is not None
    assert outcome.record.steps[0].concurrency == 3

    results: dict[str, Any] = {}

    async def capture(ctx: TaskContext) -> None:
        results["async"] = await async_task(ctx)

    run_async(capture)
    assert results["async"] == [0, 1, 2]

    def sync_task(ctx: TaskContext) -> None:
        lock = threading.Lock()
        counter = iter(range(10))

        def one() -> int:
            with lock:
                n = next(counter)
            time.sleep(0.01 * (3 - n))
            return n

        results["sync"] = ctx.step("p", one, parallel_invocations=3)

    run_sync(sync_task)
    assert sorted(results["sync"]) == [0, 1, 2]
    assert len(results["sync"]) == 3


def test_parallel_invocations_raise_first_failure_in_invocation_order_async() -> None:
    async def task(ctx: TaskContext) -> None:
        counter = iter(range(10))
        settled: list[int] = []

        async def one() -> int:
            n = next(counter)
            if n == 0:
                await asyncio.sleep(0.03)
                settled.append(n)
                raise TaskError("late", code="invocation_0")
            if n == 1:
                settled.append(n)
                raise TaskError("early", code="invocation_1")
            await asyncio.sleep(0.05)
            settled.append(n)
            return 42

        with pytest.raises(TaskError) as info:
            await ctx.step("p", one, parallel_invocations=3)
        assert info.value.code == "invocation_0"  # invocation order, not time order
        assert sorted(settled) == [0, 1, 2]  # all settled before raising

    outcome = run_async(task)
    assert outcome.error is None, outcome.error
    step = outcome.record.steps[0]
    assert (step.status, step.error_code, step.concurrency) == ("error", "invocation_0", 3)


def test_parallel_invocations_raise_first_failure_in_invocation_order_sync() -> None:
    def task(ctx: TaskContext) -> None:
        lock = threading.Lock()
        counter = iter(range(10))

        def one() -> int:
            with lock:
                n = next(counter)
            if n == 0:
                time.sleep(0.03)
                raise TaskError("late", code="invocation_0")
            if n == 1:
                raise TaskError("early", code="invocation_1")
            return 42

        with pytest.raises(TaskError) as info:
            ctx.step("p", one, parallel_invocations=3)
        assert info.value.code == "invocation_0"

    assert run_sync(task).error is None


def test_deprecated_concurrency_alias_warns_and_is_recorded() -> None:
    async def task(ctx: TaskContext) -> None:
        with pytest.warns(
            DeprecationWarning,
            match='step "p" option "concurrency" is deprecated; use "parallel_invocations"',
        ):
            assert await ctx.step("p", lambda: 42, concurrency=3) == [42, 42, 42]

    outcome = run_async(task)
    assert outcome.record.steps[0].concurrency == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"parallel_invocations": 0},
            'step "s" parallel_invocations must be an integer >= 1 (got 0)',
        ),
        (
            {"parallel_invocations": 1.5},
            'step "s" parallel_invocations must be an integer >= 1 (got 1.5)',
        ),
        ({"timeout_ms": -1}, 'step "s" timeout_ms must be a number >= 0 (got -1)'),
        ({"timeout_ms": float("nan")}, 'step "s" timeout_ms must be a number >= 0 (got nan)'),
    ],
)
def test_step_option_validation_fails_the_step(options: dict[str, Any], message: str) -> None:
    def task(ctx: TaskContext) -> None:
        ctx.step("s", lambda: 1, **options)

    outcome = run_sync(task)
    assert isinstance(outcome.error, ValueError)
    assert str(outcome.error) == message
    assert outcome.record.steps[0].status == "error"
    assert outcome.record.steps[0].error_code == "ValueError"


def test_failing_step_reraises_and_task_may_continue() -> None:
    def task(ctx: TaskContext) -> None:
        with contextlib.suppress(KeyError):
            ctx.step("bad", _raise(KeyError("k")))
        with contextlib.suppress(TaskError):
            ctx.step("te", _raise(TaskError("x")))

    outcome = run_sync(task)
    assert outcome.record.status == "success"
    assert [(s.name, s.status, s.error_code) for s in outcome.record.steps] == [
        ("bad", "error", "KeyError"),
        ("te", "error", "TaskError"),
    ]
    assert "errorCode" not in outcome.record.to_wire()


# ------------------------------------------------------------------------------ record builder


def test_success_record_with_implicit_task_step() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.measure(bytes=10)

    outcome = run_sync(task, task_index=4)
    data = wire(outcome)
    assert data["taskIndex"] == 4
    assert data["status"] == "success"
    assert "errorCode" not in data
    assert measured(data["data"]) == {"bytes": 10}
    assert ISO.match(data["startedAt"])
    assert data["startedAt"] <= data["completedAt"]
    assert data["steps"] == [
        {
            "name": "task",
            "status": "success",
            "startedAt": data["startedAt"],
            "completedAt": data["completedAt"],
            "latencyMs": data["latencyMs"],
            "errorCode": None,
            "data": {"bytes": 10},
        }
    ]
    assert outcome.error is None


def test_record_without_measures_has_only_its_cpu_time() -> None:
    data = wire(run_sync(lambda ctx: None))
    assert measured(data["data"]) is None
    assert "data" not in data["steps"][0]  # the implicit step keeps only measures


def test_measure_only_inside_step_leaves_record_data_without_it() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.step("probe", lambda: ctx.measure(ops=5))

    data = wire(run_sync(task))
    assert measured(data["data"]) is None
    assert measured(data["steps"][0]["data"]) == {"ops": 5}
    assert [s["name"] for s in data["steps"]] == ["probe"]


def test_phase_is_tagged_last_and_result_data_merges_over_measures() -> None:
    def task(ctx: TaskContext) -> dict[str, Any]:
        ctx.measure(a=1, b=1)
        return {"b": 2, "phase": "overridden"}

    record = run_sync(task, phase="cold").record
    assert measured(record.data) == {"a": 1, "b": 2, "phase": "cold"}
    assert record.steps[0].data == {"a": 1, "b": 1}  # the implicit step keeps only measures


def test_task_result_latency_and_steps() -> None:
    probe = StepRecord(name="probe", status="success", latency_ms=5)

    async def task(ctx: TaskContext) -> TaskResult:
        await ctx.step("own", lambda: None)
        return TaskResult(data={"phaseSeen": ctx.phase}, steps=[probe], latency_ms=11)

    record = run_async(task, phase="warm").record
    assert record.latency_ms == 11
    assert record.data == {"phaseSeen": "warm", "phase": "warm"}
    assert [s.name for s in record.steps] == ["own", "probe"]
    assert record.steps[1] == probe


def test_task_result_mapping_form_and_other_returns() -> None:
    steps = [{"name": "w", "status": "success"}]
    record = run_sync(lambda ctx: {"data": {"x": 1}, "latencyMs": 7, "steps": steps}).record
    assert (measured(record.data), record.latency_ms) == ({"x": 1}, 7)
    assert record.steps is not None
    assert [s.name for s in record.steps] == ["w"]
    assert measured(run_sync(lambda ctx: {"x": 1}).record.data) == {"x": 1}
    assert measured(run_sync(lambda ctx: 42).record.data) is None
    assert measured(run_sync(lambda ctx: [1, 2]).record.data) is None


def test_task_error_record() -> None:
    pre = StepRecord(name="pre", status="error", error_code="probe_failed")

    def task(ctx: TaskContext) -> None:
        ctx.measure(m=1)
        raise TaskError("boom", code="storage_error", data={"file_size": "1MB"}, steps=[pre])

    outcome = run_sync(task, phase="1MB")
    record = outcome.record
    assert record.status == "error"
    assert record.error_code == "storage_error"
    assert record.data == {"m": 1, "file_size": "1MB", "errorMessage": "boom", "phase": "1MB"}
    assert record.steps == (pre,)
    assert isinstance(outcome.error, TaskError)
    assert outcome.error.__traceback__ is not None


def test_task_error_without_code_and_implicit_step_error_code() -> None:
    def task(ctx: TaskContext) -> None:
        raise TaskError("x", data={"mode": "cold"})

    data = wire(run_sync(task))
    assert data["errorCode"] == "TaskError"
    assert data["data"] == {"mode": "cold", "errorMessage": "x"}
    assert data["steps"][0]["errorCode"] == "TaskError"
    assert data["steps"][0]["status"] == "error"
    assert "data" not in data["steps"][0]


def test_other_exception_record() -> None:
    class Coded(Exception):
        code = "ECONNRESET"

    def task(ctx: TaskContext) -> None:
        ctx.measure(m=1)
        raise Coded("socket hang up")

    outcome = run_sync(task, phase="cold")
    assert outcome.record.error_code == "ECONNRESET"
    assert outcome.record.data == {"m": 1, "errorMessage": "socket hang up", "phase": "cold"}
    assert isinstance(outcome.error, Coded)

    async def failing(ctx: TaskContext) -> None:
        raise ValueError("bad value")

    assert run_async(failing).record.error_code == "ValueError"


def test_a_ctrl_c_propagates_without_a_record() -> None:
    from pytest_benchsdk._base.ctrlc import ctrl_c_interrupt

    # A Ctrl-C's KeyboardInterrupt (as the plugin's handler raises it) stops the run, whatever
    # the process's SIGINT disposition (a background job ignores it).
    def task(ctx: TaskContext) -> None:
        raise ctrl_c_interrupt()

    with pytest.raises(KeyboardInterrupt):
        run_sync(task)


def test_latency_is_measured_with_the_monotonic_clock() -> None:
    ticks = iter([10.0, 10.0, 10.25, 10.25, 10.25, 10.25])
    clock = Clock(monotonic=lambda: next(ticks), wall=lambda: 0.0)
    ctx = make_ctx(clock=clock)
    outcome = build_record(ctx, started=10.0, completed=10.25)
    assert outcome.record.latency_ms == 250.0
    assert outcome.record.started_at == "1970-01-01T00:00:00.000Z"
    assert outcome.record.completed_at == "1970-01-01T00:00:00.250Z"


def test_context_attributes() -> None:
    ctx = make_ctx(phase="cold", task_index=3, args={"--file-size": "10MB"}, is_async=True)
    assert ctx.participant == {"name": "e2b"}
    assert (ctx.participant_name, ctx.phase) == ("e2b", "cold")
    assert (ctx.task_index, ctx.is_async) == (3, True)
    assert ctx.args == {"--file-size": "10MB"}
    assert "e2b" in repr(ctx)


def test_malformed_returned_steps_fail_the_iteration_readably() -> None:
    outcome = run_sync(lambda ctx: TaskResult(steps=[{"name": "x"}]))
    assert outcome.record.status == "error"
    assert outcome.record.error_code == "ValueError"
    assert isinstance(outcome.error, ValueError)
    assert str(outcome.error).startswith("task returned invalid steps: step.status is required")
    nan_latency = run_sync(lambda ctx: TaskResult(latency_ms=float("nan"))).record.latency_ms
    assert nan_latency is not None
    assert math.isfinite(nan_latency)  # a non-finite returned latency is ignored


def test_current_context_is_the_running_iteration() -> None:
    assert current_context() is None

    def sync_task(ctx: TaskContext) -> None:
        assert current_context() is ctx
        assert ctx.step("t", lambda: current_context(), timeout_ms=5000) is ctx  # helper thread

    assert run_sync(sync_task).error is None

    async def async_task(ctx: TaskContext) -> None:
        assert current_context() is ctx
        assert await ctx.step("t", lambda: asyncio.sleep(0, result=current_context())) is ctx

    assert run_async(async_task).error is None
    assert current_context() is None


# ------------------------------------------------------------------------------ CPU time


def _burn() -> int:
    return sum(i * i for i in range(20_000))


def test_helper_thread_steps_count_in_their_step_and_in_the_task() -> None:
    def task(ctx: TaskContext) -> None:
        ctx.step("helper", _burn, timeout_ms=60_000)  # runs on a helper thread
        ctx.step("fan-out", _burn, parallel_invocations=2)

    record = run_sync(task).record
    steps = {s.name: s.data for s in record.steps}
    helper, fan_out = steps["helper"]["cpu_ms"], steps["fan-out"]["cpu_ms"]
    assert helper > 0
    assert fan_out > 0
    # The task's own thread only waited: its CPU time holds the helpers'.
    assert record.data["cpu_ms"] >= helper + fan_out


def test_the_users_cpu_ms_wins_and_awaitables_are_not_counted() -> None:
    async def later() -> int:
        return _burn()

    def task(ctx: TaskContext) -> None:
        ctx.step("own", lambda: ctx.measure(cpu_ms=-1))
        ctx.step("awaited", later)  # its work runs where the awaitable is resolved
        ctx.measure(cpu_ms=42)

    record = run_sync(task).record
    steps = {s.name: s.data for s in record.steps}
    assert steps["own"] == {"cpu_ms": -1}
    assert steps["awaited"] is None
    assert record.data == {"cpu_ms": 42}


def test_an_async_task_records_process_cpu_time_only_when_asked() -> None:
    async def task(ctx: TaskContext) -> None:
        _burn()

    assert run_async(task).record.data is None
    record = run_async(task, process_cpu_time=True).record
    assert record.data["cpu_ms"] > 0


def test_an_outcome_shows_its_record_and_error_when_printed() -> None:
    # What a failed assertion or a debugger shows of an iteration's outcome.
    def task(ctx: TaskContext) -> None:
        raise TaskError("no quota", code="quota")

    failed = run_sync(task)
    assert repr(failed) == f"IterationOutcome(record={failed.record!r}, error={failed.error!r})"
    assert failed.record.error_code == "quota"
    assert isinstance(failed.error, TaskError)
