"""The step machinery behind ``TaskContext.step``: timed steps, blocks, timeouts, fan-out.

A :class:`StepRunner` belongs to one :class:`~pytest_benchsdk.context.TaskContext`. It runs
``step(name, fn)`` in a coroutine (awaiting ``fn``'s awaitable, cancelling it at ``timeout_ms``)
or on a plain thread (running now; with ``timeout_ms`` or ``parallel_invocations`` each
invocation gets a daemon helper thread that the step stops waiting for at the deadline), keeps
each step's state for the record (:meth:`StepRunner.rows`, made into records by
:func:`step_records` when the task's record is built), and writes the step's log lines
(including a captured ``{stdout, stderr, error}`` outcome). :class:`StepBlock` is the
``with step("x"):`` / ``async with step("x"):`` form. ``step(name, fn, calls="auto" | N)``
times ``fn`` per call in the loops of :mod:`pytest_benchsdk._engine.calibrated`.

A step's latency is the time between two clock readings taken right before its work starts
and right after it returns; everything else a step does (its state, the active step, the
coordination's count and heartbeat notice, checking options, log lines) happens outside them.
A step without options to check (the common ``step(name, fn)`` / ``with step(name)``) takes
:meth:`StepRunner.plain`, a short path with the same behaviour.

The innermost running step of the current execution context is :data:`ACTIVE_STEP`, so
``measure`` of concurrently running steps lands in the right step.

In an async task, ``fn`` may also be an awaitable itself (``step("x", asyncio.sleep(1))``); a
function that is not a coroutine function, given a ``timeout_ms``, is called on a daemon helper
thread (with the step's context, so ``measure``/``log`` inside attach to the step) so the timeout
holds and the event loop stays free; one that runs on the loop for more than
:data:`BLOCKING_WARN_S` warns once per step name (:class:`RuntimeWarning` and a ``warn`` log line).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import warnings

# Returns None where asyncio.get_running_loop raises RuntimeError (which costs a microsecond).
from asyncio import _get_running_loop
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from threading import get_ident
from time import perf_counter, thread_time
from types import CoroutineType, TracebackType
from typing import Any, Final, Protocol

import attrs

from pytest_benchsdk import _instruments
from pytest_benchsdk._base.awaitables import await_with_timeout, is_coroutine_callable
from pytest_benchsdk._base.clock import Clock
from pytest_benchsdk._base.coordination import StepCoordination
from pytest_benchsdk._base.js import is_js_integer, is_number, py_number, py_value
from pytest_benchsdk._base.numbers import is_finite
from pytest_benchsdk._engine.calibrated import calibrated_step
from pytest_benchsdk._engine.taskerror import TaskError, error_code_of, is_task_error
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY, Counter
from pytest_benchsdk.records import StepRecord

__all__ = [
    "ACTIVE_STEP",
    "BLOCKING_WARN_S",
    "CPU_KEY",
    "READINESS_MODES",
    "READY_TIMEOUT_CODE",
    "RawLogLine",
    "StepBlock",
    "StepHost",
    "StepOptions",
    "StepRow",
    "StepRunner",
    "StepState",
    "is_step_outcome",
    "per_call_metrics",
    "step_records",
]

#: The error code of a ``readiness="poll"`` step whose barrier did not open in time.
READY_TIMEOUT_CODE: Final = "step_ready_timeout"
#: The data key a sync step's (and a task's) CPU time is recorded under, in milliseconds.
CPU_KEY: Final = "cpu_ms"

_STEP_OUTCOME_KEYS: Final = frozenset(
    {"stdout", "stderr", "error", "exitCode", "code", "signal", "pid"}
)


def is_step_outcome(value: object) -> bool:
    """Upstream ``isStepOutcome``: a non-empty mapping whose keys are all in
    ``{stdout, stderr, error, exitCode, code, signal, pid}`` with at least one of
    ``stdout``/``stderr``/``error`` a string."""
    if not isinstance(value, Mapping) or len(value) == 0:
        return False
    if not all(isinstance(k, str) and k in _STEP_OUTCOME_KEYS for k in value):
        return False
    return any(isinstance(value.get(k), str) for k in ("stdout", "stderr", "error"))


#: The log level of a line copied from a step's captured process output, by stream.
_OUTPUT_LEVELS: Final = {"stdout": "info", "stderr": "warn", "error": "error"}


def _step_error_code(exc: BaseException) -> str:
    # Runner rule for step records: TaskError -> code ?? name, else getErrorCode.
    if is_task_error(exc):
        code = getattr(exc, "code", None)
        return code if isinstance(code, str) else "TaskError"
    return error_code_of(exc)


def _error_message(exc: BaseException) -> str:
    # JS ``error.message``: TaskError keeps its bare message (str() is the decorated form).
    if is_task_error(exc):
        message = getattr(exc, "message", None)
        if isinstance(message, str):
            return message
    return str(exc)


@attrs.define(eq=False)
class StepState:
    """A step while it runs; turned into a StepRecord when the task's record is built.

    ``started`` and ``ended`` are monotonic readings: ``started`` is taken when the step is
    opened and taken again right before its work begins (after its options are checked and
    its barrier, if any, opened), ``ended`` right after the work returns; the ISO timestamps
    are derived from them when the record is built.
    """

    name: str
    started: float
    concurrency: int | None = None
    timeout_ms: float | None = None
    data: dict[str, Any] | None = None  # made by the first measure()
    status: str = "running"
    ended: float | None = None
    error_code: str | None = None
    # Invocations counted as active in the coordination (left again when the step ends).
    entered: int = 0
    # A calibrated step's calls between ``started`` and ``ended`` (its latency is per call).
    calls: int | None = None


#: A finished (or, at the snapshot, still running) step as the record builder needs it:
#: ``(name, started, ended, status, error_code, data, concurrency, timeout_ms, calls)``.
StepRow = tuple[
    str, float, float, str, str | None, dict[str, Any] | None, int | None, float | None, int | None
]


# (owner runner, step) of the innermost running step in the current execution context.
ACTIVE_STEP: contextvars.ContextVar[tuple[StepRunner, StepState] | None] = contextvars.ContextVar(
    "pytest_benchsdk_active_step", default=None
)


def _in_running_loop() -> bool:
    return _get_running_loop() is not None


def _clear_active(state: StepState) -> None:
    # The step's token was made in another context (a block entered and left in different
    # tasks): clear the active step only if it still points at this step.
    current = ACTIVE_STEP.get()
    if current is not None and current[1] is state:
        ACTIVE_STEP.set(None)


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class _ThreadCall:
    """Runs one invocation on a daemon helper thread so the caller can stop waiting for it.

    The thread runs in a copy of the caller's context (the running step, the task context);
    ``notify`` (if given) is called on the helper thread once the call has finished.
    """

    def __init__(
        self, run: Callable[[], Any], name: str, notify: Callable[[], None] | None = None
    ) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        #: The helper thread's CPU time in the call (seconds), set before ``done``.
        self.cpu_s: float | None = None
        self._notify = notify
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._body, run), name=name, daemon=True
        )
        self._thread.start()

    def _body(self, run: Callable[[], Any]) -> None:
        cpu_started = thread_time()
        try:
            self.value = run()
        except BaseException as exc:  # handed to the waiting thread
            self.error = exc
        finally:
            self.cpu_s = thread_time() - cpu_started
            self.done.set()
            if self._notify is not None:
                self._notify()


class _GivenAwaitable:
    """``step(name, awaitable)``: the awaitable passed instead of a function (runs once)."""

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable

    def __call__(self) -> Awaitable[Any]:
        return self.awaitable


def _is_async_callable(fn: Callable[[], Any]) -> bool:
    """``fn`` is known to return an awaitable at once: a coroutine function (also behind
    ``functools.partial`` or as an object's ``async def __call__``) or a given awaitable."""
    return isinstance(fn, _GivenAwaitable) or is_coroutine_callable(fn)


def _discard_unstarted(fn: Callable[[], Any]) -> None:
    """Close a given coroutine the failed step never started (no "never awaited" warning)."""
    awaitable = fn.awaitable if isinstance(fn, _GivenAwaitable) else None
    if inspect.iscoroutine(awaitable) and (
        inspect.getcoroutinestate(awaitable) == inspect.CORO_CREATED
    ):
        awaitable.close()


def _needs_the_loop(error: BaseException) -> bool:
    # What asyncio raises when a function that needs the running loop (asyncio.gather,
    # create_task, ensure_future) is called on a thread without one.
    return isinstance(error, RuntimeError) and "event loop" in str(error)


def step_fn(name: str, fn: object, parallelism: object) -> Callable[[], Any] | None:
    """``fn`` as ``step`` runs it: an awaitable becomes a function returning it; anything else
    that is not callable is a ``TypeError`` naming the step and what to pass."""
    if fn is None or callable(fn):
        return fn
    if inspect.isawaitable(fn):
        if parallelism is not None and parallelism != 1:
            if inspect.iscoroutine(fn):
                fn.close()  # never awaited: say why instead of warning about it
            raise TypeError(
                f'step "{name}" got an awaitable, which runs only once; parallel_invocations='
                f"{py_value(parallelism)} needs a function that makes one per invocation, "
                f'e.g. step("{name}", lambda: client.get(url), '
                f"parallel_invocations={py_value(parallelism)})"
            )
        return _GivenAwaitable(fn)
    raise TypeError(
        f'step "{name}" needs a function to run (or, in an async task, an awaitable), '
        f"got {type(fn).__name__} {py_value(fn)}: pass the function itself "
        f'(step("{name}", client.create)) or a lambda (step("{name}", lambda: client.create(x)))'
    )


#: A sync step function that runs this long on the event loop warns (once per step name).
BLOCKING_WARN_S: Final = 0.1
_BLOCKING_WARNED: set[str] = set()
_BLOCKING_LOCK = threading.Lock()


def _first_blocking_report(name: str) -> bool:
    with _BLOCKING_LOCK:
        if name in _BLOCKING_WARNED:
            return False
        _BLOCKING_WARNED.add(name)
        return True


#: ``readiness`` values: ``internal`` never waits, ``poll`` waits for the pool's barrier.
READINESS_MODES: Final = ("internal", "poll")


@attrs.frozen
class StepOptions:
    """A step's options as passed (validated when the step starts, so errors become records)."""

    name: str
    timeout_ms: Any
    parallelism: Any
    capture_output: bool
    report_concurrency: bool = True
    readiness: Any = "internal"
    ready_poll_interval_ms: Any = None
    ready_timeout_ms: Any = None
    # ``step(name, fn, calls="auto" | N, min_time_ms=...)``: a calibrated loop (see
    # :mod:`pytest_benchsdk._engine.calibrated`).
    calls: Any = None
    min_time_ms: Any = None

    @property
    def calibrated(self) -> bool:
        return self.calls is not None or self.min_time_ms is not None


@attrs.frozen
class _Arrival:
    """A validated step about to run: invocation count, timeout, and its barrier wait (if any)."""

    count: int
    timeout_ms: float | None
    # (target, timeout_s, poll_interval_s) of a readiness="poll" step with a platform barrier.
    barrier: tuple[int, float | None, float] | None


class _BlockTimeout:
    """The deadline of an ``async with step(..., timeout_ms=N)`` block: cancels its task."""

    __slots__ = ("handle", "task", "timed_out")

    def __init__(self, timeout_ms: float) -> None:
        self.task = asyncio.current_task()
        self.timed_out = False
        self.handle = asyncio.get_running_loop().call_later(timeout_ms / 1000.0, self._fire)

    def _fire(self) -> None:
        self.timed_out = True
        if self.task is not None:
            self.task.cancel()


def _cpu_reading() -> tuple[int, float] | None:
    """(thread id, its CPU time) where a plain ``with`` block's CPU time means something: off
    an event loop (in a coroutine the block may await, and the loop's thread then runs other
    tasks' work too). None elsewhere."""
    if _get_running_loop() is not None:
        return None
    return get_ident(), thread_time()


class StepBlock:
    """``with step("name"):`` / ``async with step("name"):`` — times the block as a step.

    ``options`` None is a block without options to check (no timeout, no readiness wait): it
    is opened with :meth:`StepRunner.open`. Either way the block is timed from the last
    statement of ``__enter__`` to the first of ``__exit__``.
    """

    __slots__ = (
        "_counted",
        "_cpu_started",
        "_name",
        "_options",
        "_report",
        "_runner",
        "_state",
        "_timeout",
        "_token",
    )

    def __init__(
        self,
        runner: StepRunner,
        options: StepOptions | None,
        name: str = "",
        report_concurrency: bool = True,
    ) -> None:
        self._runner = runner
        self._options = options
        self._name = name if options is None else options.name
        self._report = report_concurrency
        self._state: StepState | None = None
        self._token: contextvars.Token[tuple[StepRunner, StepState] | None] | None = None
        self._timeout: _BlockTimeout | None = None
        # (thread id, thread_time()) when a plain ``with`` block's work began.
        self._cpu_started: tuple[int, float] | None = None
        # (counter, region) of a block whose instructions are counted.
        self._counted: tuple[Counter, Any] | None = None

    def _begin(self, options: StepOptions, *, allow_timeout: bool) -> _Arrival:
        self._state, self._token = self._runner.begin(options)
        try:
            if options.parallelism is not None:
                raise ValueError(
                    f'step "{options.name}" parallel_invocations needs a function '
                    "(step(name, fn, parallel_invocations=N))"
                )
            arrival = self._runner.arrive(self._state, options)
            if arrival.timeout_ms is not None and not allow_timeout:
                raise ValueError(
                    f'step "{options.name}" timeout_ms needs a function or `async with` '
                    "(a plain `with` block cannot be interrupted)"
                )
        except BaseException as exc:
            self._finish(None, exc)
            raise
        return arrival

    def _finish(self, value: Any, exc: BaseException | None, ended: float | None = None) -> None:
        state, token = self._state, self._token
        assert state is not None
        assert token is not None
        self._token = None
        if exc is None:
            self._runner.succeed(state, token, ended, value)
        else:
            self._runner.end(state, token, self._options, value, exc, ended)

    def __enter__(self) -> StepBlock:
        runner = self._runner
        options = self._options
        if options is None:  # runner.open(), inline: this is every plain block's cost
            host = runner._host
            monotonic = host.clock.monotonic
            self._state = state = StepState(self._name, monotonic())
            runner._states.append(state)
            self._token = ACTIVE_STEP.set((runner, state))
            coordination = host.coordination
            if coordination is not None and self._report:
                coordination.enter(state.name, coordination.target_of(None), 1)
                state.entered = 1
            self._cpu_started = _cpu_reading()
            state.started = monotonic()
            self._counted = _open_region(runner, False)
            return self
        arrival = self._begin(options, allow_timeout=False)
        assert self._state is not None
        state = self._state
        try:
            runner.wait_ready(state, arrival)
        except BaseException as exc:
            self._finish(None, exc)
            raise
        self._cpu_started = _cpu_reading()
        state.started = runner.monotonic()
        self._counted = _open_region(runner, False)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner = self._runner
        counted = self._counted
        if counted is not None:
            self._counted = None
            _close_region(runner, self._state, counted, exc is None)
        ended = runner._host.clock.monotonic()
        cpu_ended = thread_time()
        state, token = self._state, self._token
        started = self._cpu_started
        if exc is None and state is not None and token is not None:
            self._token = None
            # Only on the thread the block began on: another thread's clock says nothing.
            runner.succeed(
                state,
                token,
                ended,
                cpu_s=cpu_ended - started[1]
                if started is not None and started[0] == get_ident()
                else None,
            )
        else:
            self._finish(None, exc, ended)

    async def __aenter__(self) -> StepBlock:
        runner = self._runner
        options = self._options
        if options is None:
            state, self._token = runner.open(self._name, self._report)
            self._state = state
            state.started = runner.monotonic()
            self._counted = _open_region(runner, True)
            return self
        arrival = self._begin(options, allow_timeout=True)
        assert self._state is not None
        state = self._state
        try:
            await runner.wait_ready_async(state, arrival)
        except BaseException as exc:
            self._finish(None, exc)
            raise
        if options.timeout_ms is not None:
            self._timeout = _BlockTimeout(float(options.timeout_ms))
        state.started = runner.monotonic()
        self._counted = _open_region(runner, True)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        counted = self._counted
        if counted is not None:
            self._counted = None
            _close_region(self._runner, self._state, counted, exc is None)
        ended = self._runner.monotonic()
        timeout = self._timeout
        if timeout is not None:
            timeout.handle.cancel()
            if timeout.timed_out and (exc is None or isinstance(exc, asyncio.CancelledError)):
                uncancel = getattr(timeout.task, "uncancel", None)
                if exc is not None and uncancel is not None:
                    uncancel()  # 3.11+: our own cancellation is consumed here
                assert self._options is not None
                error = self._runner.timeout_error(self._options.name, self._options.timeout_ms)
                self._finish(None, error, ended)
                raise error from None
        self._finish(None, exc, ended)
        return False


def _open_region(runner: StepRunner, on_loop: bool) -> tuple[Counter, Any] | None:
    counter = runner.counter(on_loop)
    return None if counter is None else (counter, counter.begin())


def _close_region(
    runner: StepRunner, state: StepState | None, counted: tuple[Counter, Any], keep: bool
) -> None:
    counter, region = counted
    count = counter.end(region)
    if keep and count is not None and state is not None:
        runner.note_instructions(state, count)


def _set_instructions(state: StepState, count: float) -> None:
    # StepRunner.note_instructions's work, under the runner's lock.
    data = state.data
    if data is None:
        state.data = {INSTRUCTIONS_KEY: count}
    elif INSTRUCTIONS_KEY not in data:
        data[INSTRUCTIONS_KEY] = count


def _set_cpu(state: StepState, seconds: float) -> None:
    # StepRunner.note_cpu's work, under the runner's lock.
    cpu_ms = round(seconds * 1000.0, 6)
    data = state.data
    if data is None:
        state.data = {CPU_KEY: cpu_ms}
    elif CPU_KEY not in data:
        data[CPU_KEY] = cpu_ms


class StepHost(Protocol):
    """The context attributes the steps read. Read on each use: on ``TaskContext`` they are
    plain, assignable attributes."""

    @property
    def clock(self) -> Clock: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None: ...
    @property
    def participant_name(self) -> str: ...
    @property
    def coordination(self) -> StepCoordination | None: ...
    @property
    def alone(self) -> bool: ...


#: A log line as written: ``(monotonic reading, level, message, meta)``; the context makes its
#: :class:`~pytest_benchsdk.records.LogLine` (and the ISO timestamp) when the logs are read.
RawLogLine = tuple[float, str | None, str, dict[str, Any] | None]


class StepRunner:
    """Runs and records the steps of one context.

    ``lock`` is the context's lock: one lock guards measures, steps and logs, so a ``measure``
    never lands in a step that has just ended. ``logs`` is the context's list of log lines
    (steps write theirs there too).

    A step's latency is its work only: the monotonic clock is read right before the work
    starts and right after it returns; opening the step (its state, the active-step variable,
    the coordination's count, checking options, a barrier wait) happens before the first
    reading, and settling it (status, log lines, the coordination) after the second. The
    timestamps and the step's record are made when the task's record is built.
    """

    def __init__(self, host: StepHost, lock: threading.Lock, logs: list[RawLogLine]) -> None:
        self._host = host
        self._lock = lock
        self._logs = logs
        self._states: list[StepState] = []  # every step started, in start order
        #: CPU time (seconds) the task's sync steps used on helper threads, which the task
        #: thread's own clock does not see (added to the task's ``cpu_ms``).
        self.helper_cpu_s = 0.0

    def counter(self, on_loop: bool) -> Counter | None:
        """The instruction counter for a region of this context's, or None: when nothing is
        counted, and for a region on the event loop (``on_loop``) unless this context's
        participant runs alone there (another iteration's work would be counted in it)."""
        counter = _instruments.ACTIVE
        if counter is None or (on_loop and not self._host.alone):
            return None
        return counter

    def note_instructions(self, state: StepState, count: float) -> None:
        """Record ``count`` as the step's ``instructions``, unless the step measured its own."""
        with self._lock:
            _set_instructions(state, count)

    def note_cpu(self, state: StepState, seconds: float) -> None:
        """Record ``seconds`` of CPU time as the step's ``cpu_ms``, unless the step measured a
        ``cpu_ms`` of its own (the user's value wins)."""
        with self._lock:
            _set_cpu(state, seconds)

    def monotonic(self) -> float:
        """A reading of the host's clock (see :meth:`Clock.monotonic`)."""
        return self._host.clock.monotonic()

    @property
    def lock(self) -> threading.Lock:
        """The context's lock (guards measures, steps and logs)."""
        return self._lock

    def _write_log(self, level: str, message: str) -> None:
        line = (self._host.clock.monotonic(), level, message, None)
        with self._lock:
            self._logs.append(line)

    def start(self, options: StepOptions, fn: object) -> Any:
        """A block without ``fn``; in a running loop an awaitable; else run now (see
        ``TaskContext.step``). ``fn`` may be an awaitable (run as the step's work)."""
        if options.calibrated:
            return calibrated_step(self, options, fn)
        fn = step_fn(options.name, fn, options.parallelism)
        if fn is None:
            return StepBlock(self, options)
        if _in_running_loop():
            return self._step_async(options, fn)
        return self._step_sync(options, fn)

    def plain(self, name: str, fn: object, capture_output: bool, report_concurrency: bool) -> Any:
        """:meth:`start` for a step without options to check: no ``timeout_ms``, no
        ``parallel_invocations``, ``readiness="internal"`` — the common step, so it is kept
        short: what :meth:`open` and :meth:`end` do, inline."""
        if fn is None:
            return StepBlock(self, None, name, report_concurrency)
        if not callable(fn):  # an awaitable, or the TypeError that says what to pass
            options = StepOptions(name, None, None, capture_output, bool(report_concurrency))
            return self.start(options, fn)
        if _get_running_loop() is not None:
            return self._plain_async(name, fn, capture_output, report_concurrency)
        host = self._host
        monotonic = host.clock.monotonic
        state = StepState(name, monotonic())
        self._states.append(state)  # (one append is atomic; rows() copies under the lock)
        token = ACTIVE_STEP.set((self, state))
        coordination = host.coordination
        if coordination is not None and report_concurrency:
            coordination.enter(name, coordination.target_of(None), 1)
            state.entered = 1
        cpu_s: float | None = None
        counter = _instruments.ACTIVE
        if counter is not None:
            return self._counted_sync(state, token, fn, capture_output, counter)
        try:
            # (The CPU clock is read outside the wall-clock readings: not in the latency.)
            cpu_started = thread_time()
            state.started = monotonic()
            value = fn()
            ended = monotonic()
            cpu_ended = thread_time()
            if value is not None and inspect.isawaitable(value):
                value = self.resolve_blocking(value, None, None)
                ended = monotonic()
            else:  # (an awaitable's work runs on the event loop's thread: not counted here)
                cpu_s = cpu_ended - cpu_started
        except BaseException as exc:
            self.end(state, token, None, None, exc, monotonic())
            raise
        self.succeed(state, token, ended, value, capture_output, cpu_s)
        return value

    def _counted_sync(
        self,
        state: StepState,
        token: contextvars.Token[tuple[StepRunner, StepState] | None],
        fn: Callable[[], Any],
        capture_output: bool,
        counter: Counter,
    ) -> Any:
        """:meth:`plain`'s work with its instructions counted (``--bench-instructions``): the
        region is the call alone, inside the clock readings."""
        monotonic = self._host.clock.monotonic
        try:
            cpu_started = thread_time()
            state.started = monotonic()
            region = counter.begin()
            try:
                value = fn()
            finally:
                count = counter.end(region)
            ended = monotonic()
            cpu_s: float | None = thread_time() - cpu_started
            if value is not None and inspect.isawaitable(value):
                # Its work runs on the event loop's thread: this thread's count says nothing.
                count, cpu_s = None, None
                value = self.resolve_blocking(value, None, None)
                ended = monotonic()
        except BaseException as exc:
            self.end(state, token, None, None, exc, monotonic())
            raise
        if count is not None:
            self.note_instructions(state, count)
        self.succeed(state, token, ended, value, capture_output, cpu_s)
        return value

    async def _plain_async(
        self, name: str, fn: Callable[[], Any], capture_output: bool, report_concurrency: bool
    ) -> Any:
        state, token = self.open(name, report_concurrency)
        monotonic = self._host.clock.monotonic
        counted = _open_region(self, True)
        try:
            state.started = started = monotonic()
            value = fn()
            ended = monotonic()
            if ended - started > BLOCKING_WARN_S and counted is None:
                self.check_blocking(name, ended - started)
            # (A coroutine is told apart without a call: this check is inside the step's time.)
            if type(value) is CoroutineType or (value is not None and inspect.isawaitable(value)):
                value = await value
                ended = monotonic()
        except BaseException as exc:
            if counted is not None:
                _close_region(self, state, counted, False)
            self.end(state, token, None, None, exc, monotonic())
            raise
        if counted is not None:
            _close_region(self, state, counted, True)
        self.succeed(state, token, ended, value, capture_output)
        return value

    def succeed(
        self,
        state: StepState,
        token: contextvars.Token[tuple[StepRunner, StepState] | None],
        ended: float | None,
        value: Any = None,
        capture_output: bool = False,
        cpu_s: float | None = None,
    ) -> None:
        """:meth:`end` of a step whose work returned ``value`` (``ended``: the reading right
        after it; None: now): one lock for the status, the step's log line, stamped with
        the step's end, and its CPU time (``cpu_s``: see :meth:`note_cpu`)."""
        if ended is None:
            ended = self._host.clock.monotonic()
        try:
            ACTIVE_STEP.reset(token)
        except ValueError:
            _clear_active(state)
        if state.entered:
            self._leave(state)
        with self._lock:
            if cpu_s is not None:
                _set_cpu(state, cpu_s)
            state.ended = ended
            state.status = "success"
            self._logs.append((ended, "info", state.name, None))
        if capture_output and value is not None and is_step_outcome(value):
            self._log_outcome(state.name, value)

    def _leave(self, state: StepState) -> None:
        coordination = self._host.coordination
        if coordination is not None:
            coordination.leave(state.name, state.entered)
        state.entered = 0

    def open(
        self, name: str, report_concurrency: bool = True
    ) -> tuple[StepState, contextvars.Token[tuple[StepRunner, StepState] | None]]:
        """Record a running step without options to check, make it the active one and count
        it in the coordination (undo with :meth:`end`). Its ``started`` is read now; the
        caller reads it again right before the work begins."""
        state = StepState(name, self._host.clock.monotonic())
        self._states.append(state)  # (one append is atomic; rows() copies under the lock)
        token = ACTIVE_STEP.set((self, state))
        coordination = self._host.coordination
        if coordination is not None and report_concurrency:
            coordination.enter(name, coordination.target_of(None), 1)
            state.entered = 1
        return state, token

    def begin(
        self, options: StepOptions
    ) -> tuple[StepState, contextvars.Token[tuple[StepRunner, StepState] | None]]:
        """Record a running step and make it the active one (undo with :meth:`end`)."""
        parallelism = options.parallelism
        state = StepState(
            options.name,
            self._host.clock.monotonic(),
            # Only a valid request is recorded (the wire schema wants an integer >= 1).
            concurrency=int(parallelism)
            if is_js_integer(parallelism) and parallelism >= 1
            else None,
            timeout_ms=options.timeout_ms if is_number(options.timeout_ms) else None,
        )
        self._states.append(state)
        token = ACTIVE_STEP.set((self, state))
        return state, token

    def end(
        self,
        state: StepState,
        token: contextvars.Token[tuple[StepRunner, StepState] | None],
        options: StepOptions | None,
        value: Any,
        exc: BaseException | None,
        ended: float | None = None,
        capture_output: bool | None = None,
    ) -> None:
        """Settle ``state`` as success (``exc`` None) or error and write its log lines.

        ``ended`` is the reading taken right after the step's work (now when omitted);
        ``capture_output`` defaults to the options' (a step without options: False)."""
        if ended is None:
            ended = self._host.clock.monotonic()
        if exc is None:
            if capture_output is None:
                capture_output = options is not None and options.capture_output
            self.succeed(state, token, ended, value, capture_output)
            return
        try:
            ACTIVE_STEP.reset(token)
        except ValueError:
            _clear_active(state)
        if state.entered:
            self._leave(state)
        with self._lock:
            state.ended = ended
            state.status = "error"
            state.error_code = _step_error_code(exc)
        self._write_log("error", f"{state.name}\n  error: {_error_message(exc)}")

    def _log_outcome(self, step_name: str, outcome: Mapping[str, Any]) -> None:
        # Upstream writes these lines without a level; ours carry one (stdout info, stderr
        # warn, error error) so the log can be filtered like every other line.
        for stream in ("stdout", "stderr", "error"):
            text = outcome.get(stream)
            if not isinstance(text, str) or not text.strip():
                continue
            level = _OUTPUT_LEVELS[stream]
            for raw in text.split("\n"):
                line = raw.rstrip()
                if line:
                    self._write_log(level, f"{step_name} {stream}: {line}")

    def validate(self, options: StepOptions) -> tuple[int, float | None]:
        """``(invocation count, timeout_ms)``; ValueError for an invalid option."""
        parallelism = options.parallelism
        if parallelism is not None and (not is_js_integer(parallelism) or parallelism < 1):
            raise ValueError(
                f'step "{options.name}" parallel_invocations must be an integer >= 1 '
                f"(got {py_value(parallelism)})"
            )
        timeout_ms = options.timeout_ms
        if timeout_ms is not None and (not is_finite(timeout_ms) or timeout_ms < 0):
            raise ValueError(
                f'step "{options.name}" timeout_ms must be a number >= 0 '
                f"(got {py_value(timeout_ms)})"
            )
        readiness = options.readiness
        if readiness not in READINESS_MODES:
            raise ValueError(
                f'step "{options.name}" readiness must be "poll" or "internal" '
                f"(got {py_value(readiness)})"
            )
        for option, value, minimum in (
            ("ready_poll_interval_ms", options.ready_poll_interval_ms, 1),
            ("ready_timeout_ms", options.ready_timeout_ms, 0),
        ):
            if value is not None and (not is_finite(value) or value < minimum):
                raise ValueError(
                    f'step "{options.name}" {option} must be a number >= {minimum} '
                    f"(got {py_value(value)})"
                )
        count = int(parallelism) if parallelism is not None else 1
        return count, (float(timeout_ms) if timeout_ms is not None else None)

    def arrive(self, state: StepState, options: StepOptions) -> _Arrival:
        """Validate the options and count the step's invocations as active (heartbeat
        samples); a ``readiness="poll"`` step gets its barrier wait."""
        count, timeout_ms = self.validate(options)
        coordination = self._host.coordination
        if coordination is None:
            return _Arrival(count, timeout_ms, None)
        target = coordination.target_of(count if options.parallelism is not None else None)
        if options.report_concurrency or options.readiness == "poll":
            coordination.enter(options.name, target, count)
            state.entered = count
        barrier = None
        if options.readiness == "poll" and coordination.barrier is not None:
            ready_timeout = options.ready_timeout_ms
            interval = options.ready_poll_interval_ms
            barrier = (
                target,
                None if ready_timeout is None else float(ready_timeout) / 1000.0,
                (coordination.ready_poll_interval_ms if interval is None else float(interval))
                / 1000.0,
            )
        return _Arrival(count, timeout_ms, barrier)

    def _ready_error(self, name: str) -> TaskError:
        return TaskError(
            f'Timed out waiting for benchmark step "{name}" to become ready.',
            code=READY_TIMEOUT_CODE,
            step=name,
        )

    def wait_ready(self, state: StepState, arrival: _Arrival) -> None:
        """Block at the step's barrier (if any); ``TaskError`` when it times out."""
        coordination = self._host.coordination
        if arrival.barrier is None or coordination is None:
            return
        if not coordination.wait_ready(state.name, *arrival.barrier):
            raise self._ready_error(state.name)

    async def wait_ready_async(self, state: StepState, arrival: _Arrival) -> None:
        """:meth:`wait_ready` without blocking the event loop."""
        coordination = self._host.coordination
        if arrival.barrier is None or coordination is None:
            return
        if not await coordination.wait_ready_async(state.name, *arrival.barrier):
            raise self._ready_error(state.name)

    def timeout_error(self, name: str, timeout_ms: Any) -> TaskError:
        """The ``step_timeout`` TaskError of step ``name``."""
        participant = self._host.participant_name
        who = f' for participant "{participant}"' if participant else ""
        return TaskError(
            f'Step "{name}" timed out after {py_value(timeout_ms)}ms{who}',
            code="step_timeout",
            step=name,
            timeout_ms=timeout_ms,
        )

    async def _step_async(self, options: StepOptions, fn: Callable[[], Any]) -> Any:
        state, token = self.begin(options)
        monotonic = self._host.clock.monotonic
        value: Any = None
        try:
            arrival = self.arrive(state, options)
            # The barrier wait is not the step's work: its latency starts when the pool is ready.
            await self.wait_ready_async(state, arrival)
            count, timeout_ms = arrival.count, arrival.timeout_ms
            if count == 1:
                state.started = monotonic()
                # (A sync function with a timeout runs on a helper thread: not counted.)
                counted = (
                    _open_region(self, True)
                    if timeout_ms is None or _is_async_callable(fn)
                    else None
                )
                try:
                    value = await self._invoke_async(options, fn, timeout_ms)
                except BaseException:
                    if counted is not None:
                        _close_region(self, state, counted, False)
                    raise
                if counted is not None:
                    _close_region(self, state, counted, True)
                ended = monotonic()
            else:
                state.started = monotonic()
                tasks = [
                    asyncio.ensure_future(self._invoke_async(options, fn, timeout_ms))
                    for _ in range(count)
                ]
                settled = await asyncio.gather(*tasks, return_exceptions=True)
                ended = monotonic()
                _raise_first_failure(settled)
                value = list(settled)
        except BaseException as exc:
            ended = monotonic()
            _discard_unstarted(fn)
            self.end(state, token, options, None, exc, ended)
            raise
        self.end(state, token, options, value, None, ended)
        return value

    async def _invoke_async(
        self, options: StepOptions, fn: Callable[[], Any], timeout_ms: float | None
    ) -> Any:
        if timeout_ms is not None and timeout_ms > 0 and not _is_async_callable(fn):
            return await self.invoke_on_thread(options, fn, timeout_ms)
        started = perf_counter()
        result = fn()
        self.check_blocking(options.name, perf_counter() - started)
        if not inspect.isawaitable(result):
            return result
        if timeout_ms is None:
            return await result
        return await await_with_timeout(
            result,
            timeout_ms / 1000.0,
            lambda: self.timeout_error(options.name, options.timeout_ms),
        )

    async def invoke_on_thread(
        self, options: StepOptions, fn: Callable[[], Any], timeout_ms: float
    ) -> Any:
        """Call a sync ``fn`` on a helper thread, waiting at most ``timeout_ms`` for it (and for
        an awaitable it returns) without blocking the loop. At the deadline the thread is
        abandoned (it finishes on its own) and the step fails with ``step_timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        finished: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not finished.done():
                finished.set_result(None)

        def notify() -> None:
            # The loop may have closed meanwhile; then nobody is waiting.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle)

        call = _ThreadCall(fn, f"benchsdk-step-{options.name}", notify)
        try:
            await asyncio.wait({finished}, timeout=max(0.0, deadline - loop.time()))
        finally:
            finished.cancel()  # a no-op once settled; on timeout/cancel nobody waits for it
        if not call.done.is_set():
            raise self.timeout_error(options.name, options.timeout_ms)
        if call.error is not None:
            if _needs_the_loop(call.error):
                raise RuntimeError(
                    f'step "{options.name}": its function needs the running event loop '
                    f"({call.error}), but with timeout_ms a function that is not a coroutine "
                    "function runs on a helper thread (so that it can be timed). Pass an async "
                    "function, or the awaitable itself "
                    f'(step("{options.name}", asyncio.gather(...), timeout_ms=...)).'
                ) from call.error
            raise call.error
        result = call.value
        if not inspect.isawaitable(result):
            return result
        return await await_with_timeout(
            result,
            max(0.0, deadline - loop.time()),
            lambda: self.timeout_error(options.name, options.timeout_ms),
        )

    def check_blocking(self, name: str, seconds: float) -> None:
        """Warn (once per step name) about a sync step function that held the event loop
        for ``seconds`` (as the step's readings measured it)."""
        if seconds <= BLOCKING_WARN_S or not _first_blocking_report(name):
            return
        message = (
            f'step "{name}" ran a sync function on the event loop for '
            f"{py_number(round(seconds * 1000))} ms; other async iterations could not run "
            f"meanwhile (their steps may time out). Give it a timeout_ms (it then runs on a "
            f"helper thread) or make it async (e.g. asyncio.to_thread)."
        )
        self._write_log("warn", message)
        warnings.warn(message, RuntimeWarning, stacklevel=2)

    def _step_sync(self, options: StepOptions, fn: Callable[[], Any]) -> Any:
        state, token = self.begin(options)
        monotonic = self._host.clock.monotonic
        value: Any = None
        try:
            arrival = self.arrive(state, options)
            # The barrier wait is not the step's work: its latency starts when the pool is ready.
            self.wait_ready(state, arrival)
            count, timeout_ms = arrival.count, arrival.timeout_ms
            if count == 1 and timeout_ms is None:
                cpu_started = thread_time()
                state.started = monotonic()
                counted = _open_region(self, False)
                try:
                    value = fn()
                finally:
                    instructions = None if counted is None else counted[0].end(counted[1])
                ended = monotonic()
                cpu_ended = thread_time()
                if value is not None and inspect.isawaitable(value):
                    value = self.resolve_blocking(value, None, options)
                    ended = monotonic()
                else:
                    self.note_cpu(state, cpu_ended - cpu_started)
                    if instructions is not None:
                        self.note_instructions(state, instructions)
            else:
                state.started = monotonic()
                value = self.invoke_threads(options, fn, count, timeout_ms, state)
                ended = monotonic()
        except BaseException as exc:
            ended = monotonic()
            _discard_unstarted(fn)
            self.end(state, token, options, None, exc, ended)
            raise
        self.end(state, token, options, value, None, ended)
        return value

    def invoke_threads(
        self,
        options: StepOptions,
        fn: Callable[[], Any],
        count: int,
        timeout_ms: float | None,
        state: StepState | None = None,
    ) -> Any:
        deadline = (
            None if timeout_ms is None else self._host.clock.monotonic() + timeout_ms / 1000.0
        )

        def run() -> Any:
            return self.resolve_blocking(fn(), deadline, options)

        calls = [_ThreadCall(run, f"benchsdk-step-{options.name}-{i}") for i in range(count)]
        settled: list[Any] = []
        for call in calls:
            if deadline is None:
                call.done.wait()
                finished = True
            else:
                finished = call.done.wait(max(0.0, deadline - self._host.clock.monotonic()))
            if not finished:
                # Stop waiting; the thread finishes on its own (it cannot be killed).
                settled.append(self.timeout_error(options.name, options.timeout_ms))
            elif call.error is not None:
                settled.append(call.error)
            else:
                settled.append(call.value)
        # The CPU time of the invocations that finished (an abandoned one's is unknown).
        used = sum(call.cpu_s or 0.0 for call in calls if call.done.is_set())
        with self._lock:
            self.helper_cpu_s += used
        if state is not None:
            self.note_cpu(state, used)
        if count == 1:
            _raise_first_failure(settled)
            return settled[0]
        _raise_first_failure(settled)
        return settled

    def resolve_blocking(
        self, result: Any, deadline: float | None, options: StepOptions | None
    ) -> Any:
        """Run an awaitable returned on a plain thread to completion (cancelled at deadline)."""
        if not inspect.isawaitable(result):
            return result
        coro: Coroutine[Any, Any, Any]
        if deadline is None:
            coro = _as_coroutine(result)
        else:
            remaining = max(0.0, deadline - self._host.clock.monotonic())
            assert options is not None
            name, timeout = options.name, options.timeout_ms
            coro = await_with_timeout(result, remaining, lambda: self.timeout_error(name, timeout))
        loop = self._host.loop
        if loop is not None and loop.is_running() and not loop.is_closed():
            future = asyncio.run_coroutine_threadsafe(coro, loop)
            try:
                return future.result()
            except BaseException:
                future.cancel()
                raise
        return asyncio.run(coro)

    def rows(self, now: float) -> tuple[StepRow, ...]:
        """The steps as they are at ``now``, in start order (see :data:`StepRow`); steps still
        running (not awaited / left on a thread) end at ``now`` as ``step_unfinished``.
        Cheap: the records are made from these later, by :func:`step_records`."""
        with self._lock:
            return tuple(
                (
                    state.name,
                    state.started,
                    now if state.ended is None or state.status == "running" else state.ended,
                    state.status,
                    state.error_code,
                    dict(state.data) if state.data else None,
                    state.concurrency,
                    state.timeout_ms,
                    state.calls,
                )
                for state in self._states
            )


def step_records(rows: Iterable[StepRow], clock: Clock) -> list[StepRecord]:
    """The :class:`StepRecord` s of :meth:`StepRunner.rows` (timestamps from ``clock``)."""
    records: list[StepRecord] = []
    for name, started, ended, status, error_code, data, concurrency, timeout_ms, calls in rows:
        if status == "running":
            # Still running when the task ended (not awaited / left on a thread).
            status, error_code = "error", "step_unfinished"
        kwargs: dict[str, Any] = {}
        if error_code is not None:
            kwargs["error_code"] = error_code
        if data:
            kwargs["data"] = data
        if concurrency is not None:
            kwargs["concurrency"] = concurrency
        if timeout_ms is not None:
            kwargs["timeout_ms"] = timeout_ms
        records.append(
            StepRecord(
                name=name,
                status=status,
                started_at=clock.iso(started),
                completed_at=clock.iso(ended),
                latency_ms=Clock.elapsed_ms(started, ended)
                if calls is None
                else _per_call_ms(started, ended, calls),
                **kwargs,
            )
        )
    return records


def per_call_metrics(rows: Iterable[StepRow]) -> dict[str, float | list[float]]:
    """The per-call time of each calibrated step (``step(name, fn, calls=...)``) that
    succeeded, keyed by the step's name: the metrics an iteration's record adds to its data.
    A step timed once in the iteration gives one number (milliseconds per call, the step's
    latency); a step timed several times gives a list, one figure per timing, in start order
    (each a sample, as scoring reads a list)."""
    figures: dict[str, list[float]] = {}
    for name, started, ended, status, _, _, _, _, calls in rows:
        if calls is not None and status == "success":
            figures.setdefault(name, []).append(_per_call_ms(started, ended, calls))
    return {name: values[0] if len(values) == 1 else values for name, values in figures.items()}


def _per_call_ms(started: float, ended: float, calls: int) -> float:
    """A calibrated step's latency: its loop's time per call, in milliseconds to the
    picosecond (the loop resolves finer than one clock pair: 1 ms over 20,000 calls)."""
    return round((ended - started) * 1000.0 / calls, 9)


def _raise_first_failure(settled: Iterable[Any]) -> None:
    for item in settled:
        if isinstance(item, BaseException):
            raise item
