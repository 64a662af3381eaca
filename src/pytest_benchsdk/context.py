"""The task context: ``step`` / ``measure`` / ``log``, ``TaskError`` and the record builder.

This is upstream's runner task context (``runTaskRecord`` in ``@benchsdk/runner``) re-made for
Python tasks, sync or async:

* ``step(name, fn)`` runs ``fn`` as a named, timed step (with ``timeout_ms`` and
  ``parallel_invocations``), records a :class:`~pytest_benchsdk.records.StepRecord` and returns
  ``fn``'s value. In a coroutine (an async task) it returns an awaitable; on a plain thread (a sync
  task) it runs now and returns the value. ``step(name)`` without ``fn`` is a block:
  ``with step("x"):`` / ``async with step("x"):``.
* ``measure(...)`` shallow-merges numbers/values into the active step's ``data`` or, outside any
  step, into the task's measures (which end up in ``record.data``). The active step is tracked
  with :mod:`contextvars`, so steps running concurrently in one task each get their own measures.
* ``log(message, meta)`` appends a :class:`LogLine` (``<ISO> [task <i>] [<level>] <message>``).
* :func:`run_task` / :func:`run_task_async` run a task function with a fresh context and build
  its :class:`~pytest_benchsdk.records.TaskRecord` with upstream's runner rules (§4.7), returning
  an :class:`IterationOutcome` that also carries the original exception.

Timings use :data:`pytest_benchsdk._clock.CLOCK` (monotonic; ISO timestamps derived from it).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Literal

import attrs

from pytest_benchsdk._clock import CLOCK, Clock
from pytest_benchsdk._jsfmt import is_js_integer, is_number, js_json, js_string
from pytest_benchsdk.records import StepRecord, TaskRecord

__all__ = [
    "LOG_LEVELS",
    "IterationOutcome",
    "LogLevel",
    "LogLine",
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

LogLevel = Literal["debug", "info", "warn", "error"]
#: Log levels in increasing severity (upstream ``LOG_LEVEL_ORDER``).
LOG_LEVELS: Final[tuple[str, ...]] = ("debug", "info", "warn", "error")

_STEP_OUTCOME_KEYS: Final = frozenset(
    {"stdout", "stderr", "error", "exitCode", "code", "signal", "pid"}
)
_TASK_RESULT_KEYS: Final = frozenset({"data", "steps", "latency_ms", "latencyMs"})


# --------------------------------------------------------------------------------------------
# Errors


class TaskError(Exception):
    """An expected task failure carrying an error code and data into the record.

    ``TaskError(message, *, code=None, data=None, steps=None, step=None, timeout_ms=None)``.
    The record of a task that raises it gets ``status='error'``, ``error_code = code`` (or
    ``'TaskError'`` when ``code`` is None) and ``data = measures ∪ data ∪ {phase}``; ``steps``
    (pre-measured :class:`StepRecord` s or their wire dicts) are appended to the record's steps.
    ``str(err)`` is upstream's ``toString()``::

        [TaskError (code)] message
          step: <step>
          timeoutMs: <n>
          data: <JSON, 2-space indent>
    """

    name: Final = "TaskError"

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        data: Mapping[str, Any] | None = None,
        steps: Sequence[StepRecord | Mapping[str, Any]] | None = None,
        step: str | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.code: str | None = code
        self.data: dict[str, Any] | None = dict(data) if data is not None else None
        self.steps: tuple[StepRecord | Mapping[str, Any], ...] | None = (
            tuple(steps) if steps is not None else None
        )
        self.step: str | None = step
        self.timeout_ms: float | None = timeout_ms

    def __str__(self) -> str:
        text = f"[{self.name}{f' ({self.code})' if self.code else ''}] {self.message}"
        if self.step:
            text += f"\n  step: {self.step}"
        if self.timeout_ms is not None:
            text += f"\n  timeoutMs: {js_string(self.timeout_ms)}"
        if self.data:
            text += f"\n  data: {js_json(self.data, 2)}"
        return text

    def __repr__(self) -> str:
        parts = [repr(self.message)]
        for field in ("code", "data", "steps", "step", "timeout_ms"):
            value = getattr(self, field)
            if value is not None:
                parts.append(f"{field}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments are not in ``args``; rebuild explicitly so the error survives
        # pickling (xdist, multiprocessing).
        return (
            _rebuild_task_error,
            (
                type(self),
                self.message,
                self.code,
                self.data,
                self.steps,
                self.step,
                self.timeout_ms,
            ),
        )


def _rebuild_task_error(
    cls: type[TaskError],
    message: str,
    code: str | None,
    data: Mapping[str, Any] | None,
    steps: Sequence[Any] | None,
    step: str | None,
    timeout_ms: float | None,
) -> TaskError:
    return cls(message, code=code, data=data, steps=steps, step=step, timeout_ms=timeout_ms)


def is_task_error(exc: object) -> bool:
    """True for a :class:`TaskError` or any exception whose class is named ``TaskError``.

    Name-based recognition mirrors upstream (``error.name === 'TaskError'``), so a TaskError
    class from another copy of the package (vendored, reloaded) is still recognised.
    """
    return isinstance(exc, TaskError) or (
        isinstance(exc, BaseException) and type(exc).__name__ == "TaskError"
    )


def error_code_of(exc: object) -> str:
    """Upstream ``getErrorCode``: a non-empty string ``code`` attribute, else the class name.

    ``'ERROR'`` for values that are not exceptions.
    """
    if not isinstance(exc, BaseException):
        return "ERROR"
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return code
    return type(exc).__name__ or "ERROR"


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


@attrs.frozen
class LogLine:
    """One line of a task's log.

    ``level`` is None for upstream's level-less lines (step output capture). ``format()`` gives
    ``<ISO> [task <i>] [<level>] <message>`` + `` <JSON meta>`` when ``meta`` has keys.
    """

    timestamp: str
    task_index: int
    level: str | None
    message: str
    meta: Mapping[str, Any] | None = None

    def format(self) -> str:
        """The line as upstream writes it to the worker log."""
        level = f" [{self.level}]" if self.level is not None else ""
        suffix = f" {js_json(dict(self.meta))}" if self.meta else ""
        return f"{self.timestamp} [task {self.task_index}]{level} {self.message}{suffix}"

    def __str__(self) -> str:
        return self.format()


@attrs.frozen
class IterationOutcome:
    """The result of one iteration: its record, the exception it raised (with traceback) and
    its log lines. ``error`` is None for a successful iteration."""

    record: TaskRecord
    error: BaseException | None = None
    logs: tuple[LogLine, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the record's status is ``success``."""
        return self.record.status == "success"


def is_step_outcome(value: object) -> bool:
    """Upstream ``isStepOutcome``: a non-empty mapping whose keys are all in
    ``{stdout, stderr, error, exitCode, code, signal, pid}`` with at least one of
    ``stdout``/``stderr``/``error`` a string."""
    if not isinstance(value, Mapping) or len(value) == 0:
        return False
    if not all(isinstance(k, str) and k in _STEP_OUTCOME_KEYS for k in value):
        return False
    return any(isinstance(value.get(k), str) for k in ("stdout", "stderr", "error"))


# --------------------------------------------------------------------------------------------
# Steps


@attrs.define(eq=False)
class _StepState:
    """A step while it runs; turned into a StepRecord when the task's record is built."""

    name: str
    started: float
    started_at: str
    concurrency: int | None
    timeout_ms: float | None
    data: dict[str, Any] = attrs.Factory(dict)
    status: str = "running"
    ended: float | None = None
    completed_at: str | None = None
    error_code: str | None = None


# (owner context, step) of the innermost running step in the current execution context.
_ACTIVE_STEP: contextvars.ContextVar[tuple[TaskContext, _StepState] | None] = (
    contextvars.ContextVar("pytest_benchsdk_active_step", default=None)
)


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


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _consume_result(task: asyncio.Future[Any]) -> None:
    # Mark an abandoned task's exception as retrieved so asyncio does not warn about it.
    if not task.cancelled():
        task.exception()


async def _await_with_timeout(
    awaitable: Awaitable[Any], timeout_s: float, on_timeout: Callable[[], BaseException]
) -> Any:
    """Await ``awaitable``; at the deadline cancel it, let it unwind, raise ``on_timeout()``."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(_consume_result)
        raise
    if task in done:
        return task.result()
    task.cancel()
    task.add_done_callback(_consume_result)
    # Wait for the work to acknowledge the cancellation (its finally blocks run) before the
    # step reports, like ``asyncio.wait_for``.
    await asyncio.wait({task})
    raise on_timeout()


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class _ThreadCall:
    """Runs one invocation on a daemon helper thread so the caller can stop waiting for it."""

    def __init__(self, run: Callable[[], Any], name: str) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._body, run), name=name, daemon=True
        )
        self._thread.start()

    def _body(self, run: Callable[[], Any]) -> None:
        try:
            self.value = run()
        except BaseException as exc:  # handed to the waiting thread
            self.error = exc
        finally:
            self.done.set()


@attrs.frozen
class _StepOptions:
    name: str
    timeout_ms: Any
    parallelism: Any
    capture_output: bool


class _StepBlock:
    """``with step("name"):`` / ``async with step("name"):`` — times the block as a step."""

    def __init__(self, ctx: TaskContext, options: _StepOptions) -> None:
        self._ctx = ctx
        self._options = options
        self._state: _StepState | None = None
        self._token: contextvars.Token[tuple[TaskContext, _StepState] | None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timed_out = False
        self._task: asyncio.Task[Any] | None = None

    def _begin(self, *, allow_timeout: bool) -> None:
        self._state, self._token = self._ctx._begin_step(self._options)
        try:
            if self._options.parallelism is not None:
                raise ValueError(
                    f'step "{self._options.name}" parallel_invocations needs a function '
                    "(step(name, fn, parallel_invocations=N))"
                )
            timeout_ms = self._ctx._validate_options(self._options)[1]
            if timeout_ms is not None and not allow_timeout:
                raise ValueError(
                    f'step "{self._options.name}" timeout_ms needs a function or `async with` '
                    "(a plain `with` block cannot be interrupted)"
                )
        except BaseException as exc:
            self._finish(None, exc)
            raise

    def _finish(self, value: Any, exc: BaseException | None) -> None:
        assert self._state is not None
        assert self._token is not None
        token, self._token = self._token, None
        self._ctx._end_step(self._state, token, self._options, value, exc)

    def __enter__(self) -> _StepBlock:
        self._begin(allow_timeout=False)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish(None, exc)

    async def __aenter__(self) -> _StepBlock:
        self._begin(allow_timeout=True)
        timeout_ms = self._options.timeout_ms
        if timeout_ms is not None:
            self._task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(float(timeout_ms) / 1000.0, self._on_timeout)
        return self

    def _on_timeout(self) -> None:
        self._timed_out = True
        if self._task is not None:
            self._task.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if self._timer is not None:
            self._timer.cancel()
        if self._timed_out and (exc is None or isinstance(exc, asyncio.CancelledError)):
            uncancel = getattr(self._task, "uncancel", None)
            if exc is not None and uncancel is not None:
                uncancel()  # 3.11+: our own cancellation is consumed here
            error = self._ctx._timeout_error(self._options.name, self._options.timeout_ms)
            self._finish(None, error)
            raise error from None
        self._finish(None, exc)
        return False


# --------------------------------------------------------------------------------------------
# The context


class TaskContext:
    """Everything a task gets: who it runs for and the ``step``/``measure``/``log`` helpers.

    Attributes: ``participant`` (the participant object), ``participant_name``, ``phase``
    (str or None), ``task_index`` (0-based schedule index), ``args`` (custom CLI flag values),
    ``is_async`` (the task is a coroutine function). One context serves one iteration; it is
    thread-safe (steps may run on helper threads).

    ``loop`` is the executor's event loop: a sync task whose step returns an awaitable has it
    run there (without one, ``asyncio.run`` is used on the calling thread). ``on_log`` receives
    every :class:`LogLine` as it is written (from any thread). ``log_task_index`` is the index
    shown in log lines (default ``task_index``).
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
        on_log: Callable[[LogLine], None] | None = None,
        log_task_index: int | None = None,
    ) -> None:
        self.participant = participant
        self.participant_name = participant_name
        self.task_index = task_index
        self.phase = phase
        self.args: Mapping[str, str] = dict(args or {})
        self.is_async = is_async
        self.clock = clock
        self.loop = loop
        self._on_log = on_log
        self._log_index = task_index if log_task_index is None else log_task_index
        self._lock = threading.Lock()
        self._measures: dict[str, Any] = {}
        self._steps: list[_StepState] = []
        self._logs: list[LogLine] = []

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
        with self._lock:
            return tuple(self._logs)

    def measure(self, data: Mapping[str, Any] | None = None, /, **values: Any) -> None:
        """Shallow-merge ``data`` and keyword ``values`` into the active step's data, or into the
        task's measures outside any step. ``measure({"a": 1})`` and ``measure(a=1)`` are equal."""
        merged: dict[str, Any] = dict(data) if data is not None else {}
        merged.update(values)
        active = _ACTIVE_STEP.get()
        with self._lock:
            if active is not None and active[0] is self and active[1].status == "running":
                active[1].data.update(merged)
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
        options; any other mapping is metadata.
        """
        resolved_level: str = "info"
        resolved_meta: Mapping[str, Any] | None = meta
        if _is_log_options(meta):
            assert meta is not None
            resolved_level = meta.get("level") or "info"
            inner = meta.get("meta")
            resolved_meta = inner if isinstance(inner, Mapping) else None
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
        fn: Callable[[], Any] | None = None,
        *,
        timeout_ms: float | None = None,
        parallel_invocations: int | None = None,
        concurrency: int | None = None,
        capture_output: bool = True,
        report_concurrency: bool = True,
    ) -> Any:
        """Run ``fn`` as a named, timed step and return its value.

        * In a coroutine (async task): returns an awaitable — ``await step("x", fn)``. ``fn``
          may be sync, a coroutine function, or return an awaitable (``lambda: client.get(u)``).
        * On a plain thread (sync task): runs now and returns the value; an awaitable returned
          by ``fn`` is run on the executor's loop.
        * ``fn`` omitted: returns a block for ``with step("x"):`` / ``async with step("x"):``.

        ``timeout_ms``: raise ``TaskError(code="step_timeout")`` at the deadline. Awaitables are
        cancelled; sync work on a thread is abandoned (it finishes on its own). Synchronous
        ``fn`` in an async task is not timed (it cannot be interrupted; like upstream a sync
        value always wins). ``parallel_invocations=N``: start N invocations at once, return
        their values in order; if any fails, raise the first failure in invocation order after
        all settle. ``concurrency`` is its deprecated alias. ``capture_output``: log a returned
        ``{stdout, stderr, error, ...}`` outcome. ``report_concurrency`` is accepted for
        upstream compatibility (platform heartbeat only; no local effect).
        """
        del report_concurrency  # platform heartbeat option; nothing to do locally
        if concurrency is not None:
            warnings.warn(
                f'step "{name}" option "concurrency" is deprecated; use "parallel_invocations"',
                DeprecationWarning,
                stacklevel=2,
            )
        parallelism = parallel_invocations if parallel_invocations is not None else concurrency
        options = _StepOptions(str(name), timeout_ms, parallelism, capture_output)
        if fn is None:
            return _StepBlock(self, options)
        if _in_running_loop():
            return self._step_async(options, fn)
        return self._step_sync(options, fn)

    # ---------------------------------------------------------------- step machinery

    def _begin_step(
        self, options: _StepOptions
    ) -> tuple[_StepState, contextvars.Token[tuple[TaskContext, _StepState] | None]]:
        now = self.clock.monotonic()
        parallelism = options.parallelism
        state = _StepState(
            name=options.name,
            started=now,
            started_at=self.clock.iso(now),
            # Only a valid request is recorded (the wire schema wants an integer >= 1).
            concurrency=int(parallelism)
            if is_js_integer(parallelism) and parallelism >= 1
            else None,
            timeout_ms=options.timeout_ms if is_number(options.timeout_ms) else None,
        )
        with self._lock:
            self._steps.append(state)
        token = _ACTIVE_STEP.set((self, state))
        return state, token

    def _end_step(
        self,
        state: _StepState,
        token: contextvars.Token[tuple[TaskContext, _StepState] | None],
        options: _StepOptions,
        value: Any,
        exc: BaseException | None,
    ) -> None:
        end = self.clock.monotonic()
        try:
            _ACTIVE_STEP.reset(token)
        except ValueError:
            # Token made in another context (a block entered and left in different tasks);
            # fall back to clearing only if it still points at this step.
            current = _ACTIVE_STEP.get()
            if current is not None and current[1] is state:
                _ACTIVE_STEP.set(None)
        with self._lock:
            state.ended = end
            state.completed_at = self.clock.iso(end)
            if exc is None:
                state.status = "success"
            else:
                state.status = "error"
                state.error_code = _step_error_code(exc)
        if exc is None:
            self._write_log("info", state.name, None)
            if options.capture_output and is_step_outcome(value):
                self._log_outcome(state.name, value)
        else:
            self._write_log("error", f"{state.name}\n  error: {_error_message(exc)}", None)

    def _log_outcome(self, step_name: str, outcome: Mapping[str, Any]) -> None:
        for stream in ("stdout", "stderr", "error"):
            text = outcome.get(stream)
            if not isinstance(text, str) or not text.strip():
                continue
            for raw in text.split("\n"):
                line = raw.rstrip()
                if line:
                    self._write_log(None, f"{step_name} {stream}: {line}", None)

    def _validate_options(self, options: _StepOptions) -> tuple[int, float | None]:
        parallelism = options.parallelism
        if parallelism is not None and (not is_js_integer(parallelism) or parallelism < 1):
            raise ValueError(
                f'step "{options.name}" parallel_invocations must be an integer >= 1 '
                f"(got {js_string(parallelism)})"
            )
        timeout_ms = options.timeout_ms
        if timeout_ms is not None and (
            not is_number(timeout_ms) or not _finite(timeout_ms) or timeout_ms < 0
        ):
            raise ValueError(
                f'step "{options.name}" timeout_ms must be a number >= 0 '
                f"(got {js_string(timeout_ms)})"
            )
        count = int(parallelism) if parallelism is not None else 1
        return count, (float(timeout_ms) if timeout_ms is not None else None)

    def _timeout_error(self, name: str, timeout_ms: Any) -> TaskError:
        who = f' for participant "{self.participant_name}"' if self.participant_name else ""
        return TaskError(
            f'Step "{name}" timed out after {js_string(timeout_ms)}ms{who}',
            code="step_timeout",
            step=name,
            timeout_ms=timeout_ms,
        )

    async def _step_async(self, options: _StepOptions, fn: Callable[[], Any]) -> Any:
        state, token = self._begin_step(options)
        value: Any = None
        try:
            count, timeout_ms = self._validate_options(options)
            if count == 1:
                value = await self._invoke_async(options, fn, timeout_ms)
            else:
                tasks = [
                    asyncio.ensure_future(self._invoke_async(options, fn, timeout_ms))
                    for _ in range(count)
                ]
                settled = await asyncio.gather(*tasks, return_exceptions=True)
                _raise_first_failure(settled)
                value = list(settled)
        except BaseException as exc:
            self._end_step(state, token, options, None, exc)
            raise
        self._end_step(state, token, options, value, None)
        return value

    async def _invoke_async(
        self, options: _StepOptions, fn: Callable[[], Any], timeout_ms: float | None
    ) -> Any:
        result = fn()
        if not inspect.isawaitable(result):
            return result
        if timeout_ms is None:
            return await result
        return await _await_with_timeout(
            result,
            timeout_ms / 1000.0,
            lambda: self._timeout_error(options.name, options.timeout_ms),
        )

    def _step_sync(self, options: _StepOptions, fn: Callable[[], Any]) -> Any:
        state, token = self._begin_step(options)
        value: Any = None
        try:
            count, timeout_ms = self._validate_options(options)
            if count == 1 and timeout_ms is None:
                value = self._resolve_blocking(fn(), None, options)
            else:
                value = self._invoke_threads(options, fn, count, timeout_ms)
        except BaseException as exc:
            self._end_step(state, token, options, None, exc)
            raise
        self._end_step(state, token, options, value, None)
        return value

    def _invoke_threads(
        self, options: _StepOptions, fn: Callable[[], Any], count: int, timeout_ms: float | None
    ) -> Any:
        deadline = None if timeout_ms is None else self.clock.monotonic() + timeout_ms / 1000.0

        def run() -> Any:
            return self._resolve_blocking(fn(), deadline, options)

        calls = [
            _ThreadCall(run, f"benchsdk-step-{options.name}-{i}") for i in range(count)
        ]
        settled: list[Any] = []
        for call in calls:
            if deadline is None:
                call.done.wait()
                finished = True
            else:
                finished = call.done.wait(max(0.0, deadline - self.clock.monotonic()))
            if not finished:
                # Stop waiting; the thread finishes on its own (it cannot be killed).
                settled.append(self._timeout_error(options.name, options.timeout_ms))
            elif call.error is not None:
                settled.append(call.error)
            else:
                settled.append(call.value)
        if count == 1:
            _raise_first_failure(settled)
            return settled[0]
        _raise_first_failure(settled)
        return settled

    def _resolve_blocking(
        self, result: Any, deadline: float | None, options: _StepOptions | None
    ) -> Any:
        """Run an awaitable returned on a plain thread to completion (cancelled at deadline)."""
        if not inspect.isawaitable(result):
            return result
        coro: Coroutine[Any, Any, Any]
        if deadline is None:
            coro = _as_coroutine(result)
        else:
            remaining = max(0.0, deadline - self.clock.monotonic())
            assert options is not None
            name, timeout = options.name, options.timeout_ms
            coro = _await_with_timeout(
                result, remaining, lambda: self._timeout_error(name, timeout)
            )
        loop = self.loop
        if loop is not None and loop.is_running() and not loop.is_closed():
            future = asyncio.run_coroutine_threadsafe(coro, loop)
            try:
                return future.result()
            except BaseException:
                future.cancel()
                raise
        return asyncio.run(coro)

    # ---------------------------------------------------------------- logging

    def _write_log(self, level: str | None, message: str, meta: Mapping[str, Any] | None) -> None:
        line = LogLine(
            timestamp=self.clock.iso(),
            task_index=self._log_index,
            level=level,
            message=message,
            meta=dict(meta) if meta else None,
        )
        with self._lock:
            self._logs.append(line)
        if self._on_log is not None:
            self._on_log(line)

    # ---------------------------------------------------------------- record helpers

    def _step_records(self, now: float) -> list[StepRecord]:
        with self._lock:
            states = list(self._steps)
        records: list[StepRecord] = []
        for state in states:
            error_code: str | None
            if state.status == "running":
                # Still running when the task ended (not awaited / left on a thread).
                ended: float = now
                completed_at = self.clock.iso(now)
                status, error_code = "error", "step_unfinished"
            else:
                assert state.ended is not None
                assert state.completed_at is not None
                ended, completed_at = state.ended, state.completed_at
                status = state.status
                error_code = state.error_code
            kwargs: dict[str, Any] = {}
            if error_code is not None:
                kwargs["error_code"] = error_code
            if state.data:
                kwargs["data"] = dict(state.data)
            if state.concurrency is not None:
                kwargs["concurrency"] = state.concurrency
            if state.timeout_ms is not None:
                kwargs["timeout_ms"] = state.timeout_ms
            records.append(
                StepRecord(
                    name=state.name,
                    status=status,
                    started_at=state.started_at,
                    completed_at=completed_at,
                    latency_ms=Clock.elapsed_ms(state.started, ended),
                    **kwargs,
                )
            )
        return records


def _finite(value: float) -> bool:
    return value == value and value not in (float("inf"), float("-inf"))


def _raise_first_failure(settled: Iterable[Any]) -> None:
    for item in settled:
        if isinstance(item, BaseException):
            raise item


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
    if isinstance(step, StepRecord):
        return step
    return StepRecord.from_wire(dict(step))


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


def build_record(
    ctx: TaskContext,
    *,
    started: float,
    completed: float,
    result: object = None,
    error: BaseException | None = None,
) -> IterationOutcome:
    """Build the iteration's record with upstream's runner rules (§4.7).

    ``started``/``completed`` are :meth:`Clock.monotonic` readings; ``result`` is the task's
    return value (see :class:`TaskResult`), ``error`` the exception it raised (if any).
    """
    measures = ctx.measures
    steps = ctx._step_records(completed)
    started_at = ctx.clock.iso(started)
    completed_at = ctx.clock.iso(completed)
    latency_ms: float = Clock.elapsed_ms(started, completed)
    error_code: str | None = None
    if error is None:
        status = "success"
        task_result = _coerce_result(result)
        data = dict(measures)  # measures stay as they are for the implicit step
        if task_result.data:
            data.update(task_result.data)
        data = _with_phase(data, ctx.phase)
        returned = task_result.latency_ms
        if returned is not None and is_number(returned) and _finite(returned):
            latency_ms = returned
        try:
            steps.extend(_coerce_step(s) for s in task_result.steps or ())
        except (TypeError, ValueError) as exc:
            # A malformed returned step fails the iteration with a readable error record.
            invalid = ValueError(f"task returned invalid steps: {exc}")
            invalid.__cause__ = exc
            return build_record(ctx, started=started, completed=completed, error=invalid)
    else:
        status = "error"
        if is_task_error(error):
            code = getattr(error, "code", None)
            error_code = code if isinstance(code, str) else "TaskError"
            extra = getattr(error, "data", None)
            data = _with_phase({**measures, **dict(extra or {})}, ctx.phase)
            try:
                steps.extend(_coerce_step(s) for s in getattr(error, "steps", None) or ())
            except (TypeError, ValueError) as exc:
                invalid = ValueError(f"TaskError carries invalid steps: {exc}")
                invalid.__cause__ = error
                return build_record(ctx, started=started, completed=completed, error=invalid)
        else:
            error_code = error_code_of(error)
            data = _with_phase({**measures, "errorMessage": str(error)}, ctx.phase)
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
        task_index=ctx.task_index,
        status=status,
        started_at=started_at,
        completed_at=completed_at,
        latency_ms=latency_ms,
        steps=tuple(steps),
        **record_kwargs,
    )
    return IterationOutcome(record=record, error=error, logs=ctx.logs)


def run_task(ctx: TaskContext, invoke: Callable[[TaskContext], object]) -> IterationOutcome:
    """Run ``invoke(ctx)`` on the calling thread and build its record.

    An awaitable returned by ``invoke`` is run on ``ctx.loop`` (or ``asyncio.run``). Exceptions
    (``Exception`` subclasses) become error records; ``BaseException`` (KeyboardInterrupt,
    pytest's skip/exit outcomes, cancellation) propagates without a record.
    """

    def body() -> IterationOutcome:
        _ACTIVE_STEP.set(None)
        _CURRENT.set(ctx)
        started = ctx.clock.monotonic()
        try:
            result = ctx._resolve_blocking(invoke(ctx), None, None)
        except Exception as exc:
            return build_record(ctx, started=started, completed=ctx.clock.monotonic(), error=exc)
        return build_record(ctx, started=started, completed=ctx.clock.monotonic(), result=result)

    return contextvars.copy_context().run(body)


async def run_task_async(
    ctx: TaskContext, invoke: Callable[[TaskContext], object]
) -> IterationOutcome:
    """Run ``invoke(ctx)`` in the running event loop (awaiting what it returns) and build its
    record. ``asyncio.CancelledError`` and other ``BaseException`` s propagate."""
    token = _ACTIVE_STEP.set(None)
    current_token = _CURRENT.set(ctx)
    started = ctx.clock.monotonic()
    try:
        result = invoke(ctx)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        return build_record(ctx, started=started, completed=ctx.clock.monotonic(), error=exc)
    finally:
        _CURRENT.reset(current_token)
        _ACTIVE_STEP.reset(token)
    return build_record(ctx, started=started, completed=ctx.clock.monotonic(), result=result)
