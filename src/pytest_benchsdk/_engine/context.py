"""The implementation behind :mod:`pytest_benchsdk.context` (its docstring says what it is)."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from time import process_time, thread_time
from types import CoroutineType
from typing import Any, Final, Literal

import attrs

from pytest_benchsdk import _instruments
from pytest_benchsdk._base.clock import CLOCK, Clock
from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._base.ctrlc import is_ctrl_c
from pytest_benchsdk._base.js import JSONConversionError, is_number, to_json_value
from pytest_benchsdk._base.numbers import is_finite
from pytest_benchsdk._engine.steps import (
    ACTIVE_STEP,
    CPU_KEY,
    RawLogLine,
    StepBlock,
    StepOptions,
    StepRow,
    StepRunner,
    is_step_outcome,
    per_call_metrics,
    step_records,
)
from pytest_benchsdk._engine.taskerror import TaskError, error_code_of, is_task_error
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY
from pytest_benchsdk.records import LOG_LEVELS, LogLevel, LogLine, StepRecord, TaskRecord

__all__ = [
    "IterationOutcome",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "build_record",
    "current_context",
    "error_code_of",
    "is_step_outcome",
    "is_task_error",
    "run_task",
    "run_task_async",
]

_TASK_RESULT_KEYS: Final = frozenset({"data", "steps", "latency_ms", "latencyMs"})
# The default readiness (the same interned string as the default argument of ``step``).
_INTERNAL: Final = "internal"


# --------------------------------------------------------------------------------------------
# Values


@attrs.frozen
class TaskResult:
    """What a task may return: extra record ``data``, pre-measured ``steps``, a ``latency_ms``.

    A task may also return a mapping whose keys are only ``data``/``steps``/``latency_ms``/
    ``latencyMs`` (read as a TaskResult); any other returned mapping is record data; any other
    return value is ignored. ``latency_ms`` replaces the measured wall-clock latency on success;
    ``steps`` are appended after the framework's steps on success.
    """

    data: Mapping[str, Any] | None = None
    steps: Sequence[StepRecord | Mapping[str, Any]] | None = None
    latency_ms: float | None = None


class IterationOutcome:
    """The result of one iteration: its record, the exception it raised (with traceback) and
    its log lines. ``error`` is None for a successful iteration.

    The record may be given ready-made or as ``build``, a function making it on first access,
    and the log lines likewise (``build_logs``): the executor hands finished iterations over
    that way, so formatting timestamps and assembling records and log lines happens in the
    thread that reads them, not on the event loop while other iterations are being timed.
    """

    __slots__ = ("_build", "_build_logs", "_logs", "_record", "error")

    def __init__(
        self,
        record: TaskRecord | None = None,
        error: BaseException | None = None,
        logs: tuple[LogLine, ...] = (),
        *,
        build: Callable[[], TaskRecord] | None = None,
        build_logs: Callable[[], tuple[LogLine, ...]] | None = None,
    ) -> None:
        if (record is None) == (build is None):
            raise TypeError("IterationOutcome needs exactly one of record and build")
        self._record = record
        self._build = build
        self.error = error
        self._logs = logs
        self._build_logs = build_logs

    @property
    def record(self) -> TaskRecord:
        """The iteration's :class:`~pytest_benchsdk.records.TaskRecord`."""
        record = self._record
        if record is None:
            assert self._build is not None
            # Two threads may race here; both build the same value from the same snapshot.
            record = self._record = self._build()
            self._build = None
        return record

    @property
    def logs(self) -> tuple[LogLine, ...]:
        """The iteration's log lines, in the order they were written."""
        build = self._build_logs
        if build is not None:
            # A race builds the same lines twice from the same snapshot; both are equal.
            self._logs = build()
            self._build_logs = None
        return self._logs

    @property
    def ok(self) -> bool:
        """True when the record's status is ``success``."""
        return self.record.status == "success"

    def __repr__(self) -> str:
        return f"IterationOutcome(record={self.record!r}, error={self.error!r})"


# The context of the iteration running in the current execution context (thread / asyncio task).
_CURRENT: contextvars.ContextVar[TaskContext | None] = contextvars.ContextVar(
    "pytest_benchsdk_current_context", default=None
)


def current_context() -> TaskContext | None:
    """The :class:`TaskContext` of the iteration running here, or None outside any task.

    Set while :func:`run_task` / :func:`run_task_async` run the task (and inherited by its
    steps' helper threads and tasks), so a helper or a fixture-provided proxy can reach
    ``step``/``measure``/``log`` of the right iteration even when several run concurrently.
    """
    return _CURRENT.get()


# --------------------------------------------------------------------------------------------
# The context


class TaskContext:
    """Everything a task gets: who it runs for and the ``step``/``measure``/``log`` helpers.

    Attributes: ``participant`` (the participant object), ``participant_name``, ``phase``
    (str or None), ``task_index`` (0-based schedule index), ``args`` (custom CLI flag values),
    ``is_async`` (the task is a coroutine function). One context serves one iteration; it is
    thread-safe (steps may run on helper threads).

    ``loop`` is the executor's event loop: a sync task whose step returns an awaitable has it
    run there (without one, ``asyncio.run`` is used on the calling thread).

    ``process_cpu_time``: an async task's iteration records the process's CPU time as its
    ``cpu_ms`` (the executor sets it where the participant runs one iteration at a time, so
    the process's CPU time in the iteration is the iteration's). A sync task always records
    its thread's CPU time.

    ``alone``: this context's participant runs one iteration at a time (the executor's
    concurrency 1), so a region counted on the event loop (``--bench-instructions``) holds
    this iteration's work only; with several in flight only what runs on a thread of its own
    is counted.
    """

    def __init__(
        self,
        *,
        participant: object,
        participant_name: str,
        task_index: int,
        phase: str | None = None,
        args: Mapping[str, str] | None = None,
        is_async: bool = False,
        clock: Clock = CLOCK,
        loop: asyncio.AbstractEventLoop | None = None,
        coordination: StepCoordination | None = None,
        process_cpu_time: bool = False,
        alone: bool = True,
    ) -> None:
        self.participant = participant
        self.participant_name = participant_name
        self.task_index = task_index
        self.phase = phase
        self.args: Mapping[str, str] = dict(args or {})
        self.is_async = is_async
        self.clock = clock
        self.loop = loop
        self.coordination = coordination
        self.process_cpu_time = process_cpu_time
        self.alone = alone
        self._lock = threading.Lock()
        self._measures: dict[str, Any] = {}
        # (monotonic reading, level, message, meta) per line: LogLines are made when read.
        self._logs: list[RawLogLine] = []
        self._step_runner: StepRunner | None = None

    @property
    def _steps(self) -> StepRunner:
        """The context's step machinery, made on the first step: it refers back to the
        context, so a task that takes no step leaves no reference cycle behind (one per
        iteration, for the garbage collector to find)."""
        runner = self._step_runner
        if runner is None:
            with self._lock:
                runner = self._step_runner
                if runner is None:
                    runner = self._step_runner = StepRunner(self, self._lock, self._logs)
        return runner

    def __repr__(self) -> str:
        return (
            f"<TaskContext participant={self.participant_name!r} phase={self.phase!r} "
            f"task_index={self.task_index}>"
        )

    # ---------------------------------------------------------------- public helpers

    @property
    def measures(self) -> dict[str, Any]:
        """A copy of the task-level measures so far."""
        with self._lock:
            return dict(self._measures)

    @property
    def logs(self) -> tuple[LogLine, ...]:
        """The log lines written so far."""
        return _log_lines(self._raw_logs(), self.clock, self.task_index)

    def _raw_logs(self) -> tuple[RawLogLine, ...]:
        with self._lock:
            return tuple(self._logs)

    def measure(self, data: Mapping[str, Any] | None = None, /, **values: Any) -> None:
        """Shallow-merge ``data`` and keyword ``values`` into the active step's data, or into the
        task's measures outside any step. ``measure({"a": 1})`` and ``measure(a=1)`` are equal.

        Values are converted to their JSON form now (see
        :func:`pytest_benchsdk._base.js.to_json_value`:
        a ``datetime`` becomes its ISO text, a set a list ...); a value without one raises
        :class:`~pytest_benchsdk._base.js.JSONConversionError` (a ``TypeError``) naming its key,
        which fails the iteration."""
        merged: dict[str, Any] = dict(data) if data is not None else {}
        merged.update(values)
        if not _plain_json(merged):
            merged = _json_or_raise(merged, "measure()")
        active = ACTIVE_STEP.get()
        with self._lock:
            runner = self._step_runner  # (not _steps: that takes the lock held here)
            if active is not None and active[0] is runner and active[1].status == "running":
                state = active[1]
                if state.data is None:
                    state.data = merged
                else:
                    state.data.update(merged)
            else:
                self._measures.update(merged)

    def log(
        self,
        message: str,
        meta: Mapping[str, Any] | None = None,
        *,
        level: LogLevel | None = None,
    ) -> None:
        """Write a log line at ``level`` (default ``info``) with optional ``meta``.

        Upstream's options form works too: ``log("x", {"level": "warn", "meta": {...}})`` — a
        non-empty mapping whose keys are only ``level``/``meta`` with a valid level is read as
        options; any other mapping is metadata. ``meta`` is converted to JSON like
        ``measure`` values (a value without a JSON form raises, failing the iteration).
        """
        resolved_level: str = "info"
        resolved_meta: Mapping[str, Any] | None = meta
        if _is_log_options(meta):
            assert meta is not None
            resolved_level = meta.get("level") or "info"
            inner = meta.get("meta")
            resolved_meta = inner if isinstance(inner, Mapping) else None
        if resolved_meta:
            resolved_meta = _json_or_raise(resolved_meta, "log() meta")
        if level is not None:
            if level not in LOG_LEVELS:
                raise ValueError(
                    f"log level must be one of debug, info, warn, error (got {level!r})"
                )
            resolved_level = level
        self._write_log(resolved_level, str(message), resolved_meta)

    def step(
        self,
        name: str,
        fn: Callable[[], Any] | Awaitable[Any] | None = None,
        *,
        timeout_ms: float | None = None,
        parallel_invocations: int | None = None,
        concurrency: int | None = None,
        capture_output: bool = True,
        report_concurrency: bool = True,
        readiness: Literal["internal", "poll"] = "internal",
        ready_poll_interval_ms: float | None = None,
        ready_timeout_ms: float | None = None,
        calls: int | Literal["auto"] | None = None,
        min_time_ms: float | None = None,
    ) -> Any:
        """Run ``fn`` as a named, timed step and return its value.

        * In a coroutine (async task): returns an awaitable — ``await step("x", fn)``. ``fn``
          may be sync, a coroutine function, return an awaitable (``lambda: client.get(u)``),
          or be an awaitable itself (``step("think", asyncio.sleep(0.1))``).
        * On a plain thread (sync task): runs now and returns the value; an awaitable given or
          returned by ``fn`` is run on the executor's loop.
        * ``fn`` omitted: returns a block for ``with step("x"):`` / ``async with step("x"):``.
        * Anything else (``step("x", 5)``) is a ``TypeError`` naming the step.

        ``timeout_ms``: raise ``TaskError(code="step_timeout")`` at the deadline. Awaitables are
        cancelled; sync work on a thread is abandoned (it finishes on its own). In an async
        task a ``fn`` that is not a coroutine function runs on a helper thread when it has a
        ``timeout_ms`` > 0 (so the timeout holds and the event loop stays free; ``measure`` and
        ``log`` inside still attach to the step); without one it runs on the loop, and one that
        holds the loop for more than 100 ms warns once per step name (``RuntimeWarning`` and a
        ``warn`` log line). With ``timeout_ms=0`` a sync value always wins, as upstream.
        ``parallel_invocations=N``: start N invocations at once, return
        their values in order; if any fails, raise the first failure in invocation order after
        all settle. ``concurrency`` is its deprecated alias. ``capture_output``: log a returned
        ``{stdout, stderr, error, ...}`` outcome.

        Platform workers: ``report_concurrency=False`` keeps the step out of
        the heartbeat's concurrency samples. ``readiness="poll"`` waits, before ``fn`` runs,
        until every worker of the pool has arrived at this step (the platform's run progress
        says ``ready``), polling every ``ready_poll_interval_ms`` (default 1000); after
        ``ready_timeout_ms`` the step fails with ``TaskError(code="step_ready_timeout")``. The
        wait is not part of the step's latency. Without a platform (dry run, local only,
        xdist workers) a ``"poll"`` step proceeds at once; ``"internal"`` (the default) never
        waits.

        Tiny callables: ``calls="auto"`` calls ``fn`` in a loop calibrated like
        :meth:`timeit.Timer.autorange` (1, 2, 5, 10 … calls until one loop lasts at least
        ``min_time_ms``, default 1 ms), times four more loops of that count and records the
        fastest loop's time *per call* as the step's latency (at nanosecond resolution or
        finer), with ``calls`` and ``loop_ms`` in the step's data; ``calls=N`` runs one loop of
        N calls. The step returns the last call's
        value. An async ``fn`` is awaited each call; ``timeout_ms`` holds for the whole loop
        (calibration included). It needs a function: the ``with step(...)`` form, an awaitable
        and ``parallel_invocations`` cannot be looped (``TypeError``/``ValueError``).
        """
        if (
            timeout_ms is None
            and parallel_invocations is None
            and concurrency is None
            and readiness is _INTERNAL
            and ready_poll_interval_ms is None
            and ready_timeout_ms is None
            and calls is None
            and min_time_ms is None
        ):
            # No option to check: the common step takes the short way (same behaviour).
            runner = self._step_runner
            if runner is None:
                runner = self._steps
            if type(name) is not str:
                name = str(name)
            if fn is None:
                return StepBlock(runner, None, name, report_concurrency)
            return runner.plain(name, fn, capture_output, report_concurrency)
        if concurrency is not None:
            warnings.warn(
                f'step "{name}" option "concurrency" is deprecated; use "parallel_invocations"',
                DeprecationWarning,
                stacklevel=2,
            )
        parallelism = parallel_invocations if parallel_invocations is not None else concurrency
        options = StepOptions(
            str(name),
            timeout_ms,
            parallelism,
            capture_output,
            bool(report_concurrency),
            readiness,
            ready_poll_interval_ms,
            ready_timeout_ms,
            calls,
            min_time_ms,
        )
        return self._steps.start(options, fn)

    def _snapshot(
        self,
        started: float,
        completed: float,
        cpu_ms: float | None = None,
        instructions: int | None = None,
    ) -> _IterationSnapshot:
        """What the record of the iteration that ran from ``started`` to ``completed`` (using
        ``cpu_ms`` of CPU time, if known) is built from (the measures and steps as they are
        now)."""
        runner = self._step_runner
        return _IterationSnapshot(
            task_index=self.task_index,
            phase=self.phase,
            clock=self.clock,
            measures=self.measures,
            steps=() if runner is None else runner.rows(completed),
            started=started,
            completed=completed,
            cpu_ms=cpu_ms,
            instructions=instructions,
        )

    def _log_builder(self) -> Callable[[], tuple[LogLine, ...]] | None:
        """A function making the log lines written so far (the lines are copied now); None
        when there are none."""
        raw, clock, task_index = self._raw_logs(), self.clock, self.task_index
        if not raw:
            return None
        return lambda: _log_lines(raw, clock, task_index)

    # ---------------------------------------------------------------- logging

    def _write_log(self, level: str | None, message: str, meta: Mapping[str, Any] | None) -> None:
        # The line is kept raw (its time as a clock reading): the LogLine and its ISO
        # timestamp are made when the logs are read, not in the task's timed region.
        line = (self.clock.monotonic(), level, message, dict(meta) if meta else None)
        with self._lock:
            self._logs.append(line)


def _log_lines(raw: Sequence[RawLogLine], clock: Clock, task_index: int) -> tuple[LogLine, ...]:
    return tuple(
        LogLine(
            timestamp=clock.iso(mono),
            task_index=task_index,
            level=level,
            message=message,
            meta=meta,
        )
        for mono, level, message, meta in raw
    )


_PLAIN_JSON_TYPES: Final = (str, int, float, bool, type(None))


def _plain_json(values: Mapping[str, Any]) -> bool:
    """Every key a ``str`` and every value a plain JSON scalar: already its own JSON form."""
    return all(
        type(key) is str and type(value) in _PLAIN_JSON_TYPES for key, value in values.items()
    )


def _json_or_raise(value: Mapping[str, Any], path: str) -> dict[str, Any]:
    try:
        converted: dict[str, Any] = to_json_value(value, path)
    except JSONConversionError as exc:
        # Raised where the task called measure()/log(): the conversion's own frames say nothing.
        raise exc.with_traceback(None) from None
    return converted


def _is_log_options(value: object) -> bool:
    if not isinstance(value, Mapping) or len(value) == 0:
        return False
    if not all(k in ("level", "meta") for k in value):
        return False
    level = value.get("level")
    return level is None or (isinstance(level, str) and level in LOG_LEVELS)


# --------------------------------------------------------------------------------------------
# Record builder


def _coerce_step(step: StepRecord | Mapping[str, Any]) -> StepRecord:
    """A returned (or TaskError-carried) step as a record, its ``data`` converted to JSON."""
    if isinstance(step, StepRecord):
        if step.data is None:
            return step
        return attrs.evolve(step, data=to_json_value(step.data, f"step {step.name!r} data"))
    wire: Any = step
    if isinstance(wire, Mapping) and isinstance(wire.get("data"), Mapping):
        name = wire.get("name")
        where = f"step {name!r} data" if isinstance(name, str) else "step data"
        wire = {**wire, "data": to_json_value(wire["data"], where)}
    return StepRecord.from_wire(dict(wire))


def _coerce_result(value: object) -> TaskResult:
    if value is None:
        return _NO_RESULT
    if isinstance(value, TaskResult):
        return value
    if isinstance(value, Mapping):
        if len(value) > 0 and all(isinstance(k, str) and k in _TASK_RESULT_KEYS for k in value):
            data = value.get("data")
            steps = value.get("steps")
            latency = value.get("latency_ms", value.get("latencyMs"))
            return TaskResult(
                data=data if isinstance(data, Mapping) else None,
                steps=steps if isinstance(steps, Sequence) and not isinstance(steps, str) else None,
                latency_ms=latency if is_number(latency) else None,
            )
        return TaskResult(data=value)
    return TaskResult()


_NO_RESULT: Final = TaskResult()


def _with_phase(data: dict[str, Any], phase: str | None) -> dict[str, Any]:
    if phase:
        data["phase"] = phase  # last, so it overrides a task-provided "phase"
    return data


@attrs.frozen(eq=False)
class _IterationSnapshot:
    """What an iteration's record is made of, read from its context when the task ended.

    ``measures`` is a copy of the task-level measures and ``steps`` the framework's steps as
    they were at ``completed`` (:meth:`TaskContext._snapshot` takes both); ``started`` and
    ``completed`` are :meth:`Clock.monotonic` readings. Later changes to the context (a step
    left running on a thread) do not reach a snapshot, so a record built from it later (see
    :class:`IterationOutcome`) is the record that would have been built at once.
    """

    task_index: int
    phase: str | None
    clock: Clock
    measures: dict[str, Any]
    steps: tuple[StepRow, ...]
    started: float
    completed: float
    cpu_ms: float | None = None
    instructions: int | None = None


def _finish(
    ctx: TaskContext,
    *,
    started: float,
    completed: float,
    result: object = None,
    cpu_ms: float | None = None,
    instructions: int | None = None,
) -> IterationOutcome:
    """The outcome of an iteration that returned ``result`` without raising.

    When the task returned nothing, nothing about its record can fail, so the record is built
    later from a snapshot taken now (see :class:`IterationOutcome`); otherwise it is built now.
    """
    if result is not None:
        return build_record(
            ctx,
            started=started,
            completed=completed,
            result=result,
            cpu_ms=cpu_ms,
            instructions=instructions,
        )
    snapshot = ctx._snapshot(started, completed, cpu_ms, instructions)

    def build() -> TaskRecord:
        return _assemble(snapshot).record

    return IterationOutcome(error=None, build=build, build_logs=ctx._log_builder())


def build_record(
    ctx: TaskContext,
    *,
    started: float,
    completed: float,
    result: object = None,
    error: BaseException | None = None,
    cpu_ms: float | None = None,
    instructions: int | None = None,
) -> IterationOutcome:
    """Build the iteration's record with upstream's runner rules.

    ``started``/``completed`` are :meth:`Clock.monotonic` readings; ``result`` is the task's
    return value (see :class:`TaskResult`), ``error`` the exception it raised (if any);
    ``cpu_ms`` the CPU time the iteration used, recorded as the metric ``cpu_ms`` of a
    passing record (unless the task measured or returned a ``cpu_ms`` of its own);
    ``instructions`` likewise the task body's instruction count (``--bench-instructions``).
    """
    outcome = _assemble(ctx._snapshot(started, completed, cpu_ms, instructions), result, error)
    return IterationOutcome(outcome.record, outcome.error, build_logs=ctx._log_builder())


def _assemble(
    snapshot: _IterationSnapshot, result: object = None, error: BaseException | None = None
) -> IterationOutcome:
    """:func:`build_record` on a snapshot of the context (the outcome's logs are left empty)."""
    task_index, phase, clock = snapshot.task_index, snapshot.phase, snapshot.clock
    measures, started, completed = snapshot.measures, snapshot.started, snapshot.completed
    steps = step_records(snapshot.steps, clock)

    def invalid_record(invalid: Exception) -> IterationOutcome:
        # Malformed steps (returned, or carried by a TaskError) fail the iteration readably;
        # the record keeps the framework's steps only.
        return _assemble(snapshot, None, invalid)

    started_at = clock.iso(started)
    completed_at = clock.iso(completed)
    latency_ms: float = Clock.elapsed_ms(started, completed)
    error_code: str | None = None
    if error is None:
        status = "success"
        task_result = _coerce_result(result)
        data = dict(measures)  # measures stay as they are for the implicit step
        if task_result.data:
            try:
                data.update(to_json_value(task_result.data, "returned data"))
            except TypeError as exc:
                invalid: Exception = TypeError(f"task returned data that cannot be recorded: {exc}")
                invalid.__cause__ = exc
                return invalid_record(invalid)
        if snapshot.cpu_ms is not None and CPU_KEY not in data:
            data[CPU_KEY] = snapshot.cpu_ms  # the user's own cpu_ms wins
        if snapshot.instructions is not None and INSTRUCTIONS_KEY not in data:
            data[INSTRUCTIONS_KEY] = snapshot.instructions
        for name, per_call in per_call_metrics(snapshot.steps).items():
            # A calibrated step's per-call time is a metric named after the step; a value
            # the task measured or returned under that name wins (its own, as for cpu_ms).
            data.setdefault(name, per_call)
        data = _with_phase(data, phase)
        returned = task_result.latency_ms
        if returned is not None and is_finite(returned):
            latency_ms = returned
        try:
            steps.extend(_coerce_step(s) for s in task_result.steps or ())
        except (TypeError, ValueError) as exc:
            invalid = ValueError(f"task returned invalid steps: {exc}")
            invalid.__cause__ = exc
            return invalid_record(invalid)
    else:
        status = "error"
        if is_task_error(error):
            code = getattr(error, "code", None)
            error_code = code if isinstance(code, str) else "TaskError"
            extra = getattr(error, "data", None)
            try:
                extra = to_json_value(dict(extra or {}), "TaskError data")
            except (TypeError, ValueError) as exc:
                invalid = TypeError(f"TaskError carries data that cannot be recorded: {exc}")
                invalid.__cause__ = error
                return invalid_record(invalid)
            data = {**measures, **extra}
            message = _task_error_message(error)
            if message:
                # Upstream's worker keeps it too (its runner does not): why the iteration failed.
                data["errorMessage"] = message
            data = _with_phase(data, phase)
            try:
                steps.extend(_coerce_step(s) for s in getattr(error, "steps", None) or ())
            except (TypeError, ValueError) as exc:
                invalid = ValueError(f"TaskError carries invalid steps: {exc}")
                invalid.__cause__ = error
                return invalid_record(invalid)
        else:
            error_code = error_code_of(error)
            data = _with_phase({**measures, "errorMessage": _message_of(error)}, phase)
    if not steps:
        implicit: dict[str, Any] = {"error_code": error_code}
        if measures:
            implicit["data"] = dict(measures)
        steps = [
            StepRecord(
                name="task",
                status=status,
                started_at=started_at,
                completed_at=completed_at,
                latency_ms=latency_ms,
                **implicit,
            )
        ]
    record_kwargs: dict[str, Any] = {}
    if error_code is not None:
        record_kwargs["error_code"] = error_code
    if data:
        record_kwargs["data"] = data
    record = TaskRecord(
        task_index=task_index,
        status=status,
        started_at=started_at,
        completed_at=completed_at,
        latency_ms=latency_ms,
        steps=tuple(steps),
        **record_kwargs,
    )
    return IterationOutcome(record=record, error=error)


def _task_error_message(error: BaseException) -> str:
    # A TaskError's bare message (str() is the decorated display form).
    message = getattr(error, "message", None)
    if isinstance(message, str):
        return message
    return _message_of(error)


def _message_of(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # a hostile __str__ must not lose the record
        return f"<{type(error).__name__}: str() failed>"


def stops_the_run(error: BaseException) -> bool:
    """Whether ``error`` stops the run instead of failing one iteration: Ctrl-C (see
    :func:`~pytest_benchsdk._base.ctrlc.is_ctrl_c`) and the executor's cancellation
    (``asyncio.CancelledError``).

    Every other exception a task raises, ``BaseException`` s included (its own
    ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``, pytest's ``fail``/``skip``
    outcomes, custom ones), ends the iteration with an error record whose ``errorCode`` is the
    class name (or its ``code``) and whose ``data.errorMessage`` is ``str(error)``; the outcome
    keeps the exception for the caller.
    """
    return isinstance(error, asyncio.CancelledError) or is_ctrl_c(error)


def _prepared(invoke: Callable[[TaskContext], object], ctx: TaskContext) -> Callable[[], object]:
    """The call to time: ``invoke.bind(ctx)`` where ``invoke`` has one (it does its setup,
    such as resolving the task's arguments, before the clock starts), else ``invoke(ctx)``."""
    bind = getattr(invoke, "bind", None)
    if bind is not None:
        call: Callable[[], object] = bind(ctx)
        return call
    return partial(invoke, ctx)


def run_task(ctx: TaskContext, invoke: Callable[[TaskContext], object]) -> IterationOutcome:
    """Run ``invoke(ctx)`` on the calling thread and build its record.

    An awaitable returned by ``invoke`` is run on ``ctx.loop`` (or ``asyncio.run``). Every
    exception the task raises becomes an error record, ``BaseException`` s included, except
    Ctrl-C and cancellation (see :func:`stops_the_run`), which propagate without a record.

    The latency is the call alone: the clock is read right before ``invoke`` and right after
    it returns (or after the awaitable it returned has finished). If ``invoke`` has a
    ``bind(ctx)`` method, that runs first, outside the timed region, and the function it
    returns is what is timed.
    """

    def body() -> IterationOutcome:
        ACTIVE_STEP.set(None)
        _CURRENT.set(ctx)
        monotonic = ctx.clock.monotonic
        started: float | None = None
        cpu_ms: float | None = None
        instructions: int | None = None
        counter = _instruments.ACTIVE
        try:
            call = _prepared(invoke, ctx)
            # (The CPU clock is read outside the wall-clock readings: not in the latency.)
            cpu_started = thread_time()
            started = monotonic()
            if counter is None:
                result = call()
            else:
                region = counter.begin()
                try:
                    result = call()
                finally:
                    instructions = counter.end(region)
            completed = monotonic()
            cpu_ended = thread_time()
            if result is not None and inspect.isawaitable(result):
                # Its work runs on the event loop's thread, whose clock is shared: not counted.
                instructions = None
                result = ctx._steps.resolve_blocking(result, None, None)
                completed = monotonic()
            else:
                runner = ctx._step_runner
                helpers = 0.0 if runner is None else runner.helper_cpu_s
                cpu_ms = round((cpu_ended - cpu_started + helpers) * 1000.0, 6)
        except BaseException as exc:
            completed = monotonic()
            if stops_the_run(exc):
                raise
            if started is None:
                started = completed  # bind() failed: the task did not start
            return build_record(ctx, started=started, completed=completed, error=exc)
        return _finish(
            ctx,
            started=started,
            completed=completed,
            result=result,
            cpu_ms=cpu_ms,
            instructions=instructions,
        )

    return contextvars.copy_context().run(body)


async def run_task_async(
    ctx: TaskContext, invoke: Callable[[TaskContext], object]
) -> IterationOutcome:
    """Run ``invoke(ctx)`` in the running event loop (awaiting what it returns) and build its
    record. Like :func:`run_task`: only cancellation and Ctrl-C propagate; every other
    exception becomes an error record; the latency is the call and the await alone. With
    ``ctx.process_cpu_time`` the process's CPU time in the call and the await is the record's
    ``cpu_ms``."""
    token = ACTIVE_STEP.set(None)
    current_token = _CURRENT.set(ctx)
    monotonic = ctx.clock.monotonic
    started: float | None = None
    cpu = process_time if ctx.process_cpu_time else None
    cpu_ms: float | None = None
    instructions: int | None = None
    # On the event loop a region holds whatever the loop runs: counted only when alone.
    counter = _instruments.ACTIVE if ctx.alone else None
    region: object = None
    try:
        call = _prepared(invoke, ctx)
        cpu_started = 0.0 if cpu is None else cpu()
        started = monotonic()
        if counter is not None:
            region = counter.begin()
        result = call()
        # (A coroutine is told apart without a call: this check is inside the task's time.)
        if type(result) is CoroutineType or inspect.isawaitable(result):
            result = await result
        if counter is not None:
            instructions, counter = counter.end(region), None
        completed = monotonic()
        if cpu is not None:
            cpu_ms = round((cpu() - cpu_started) * 1000.0, 6)
    except BaseException as exc:
        if counter is not None and region is not None:
            counter.end(region)
        completed = monotonic()
        if stops_the_run(exc):
            raise
        if started is None:
            started = completed  # bind() failed: the task did not start
        return build_record(ctx, started=started, completed=completed, error=exc)
    finally:
        _CURRENT.reset(current_token)
        ACTIVE_STEP.reset(token)
    return _finish(
        ctx,
        started=started,
        completed=completed,
        result=result,
        cpu_ms=cpu_ms,
        instructions=instructions,
    )
