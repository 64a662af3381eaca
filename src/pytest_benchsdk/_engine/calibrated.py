"""Calibrated loops: ``step(name, fn, calls="auto" | N)`` times a tiny callable per call.

One pair of clock readings around one call of a 150 ns function measures mostly the readings
and the runner's own work between them. So a calibrated step calls ``fn`` in a loop and
divides: with ``calls="auto"`` the count is found the way :meth:`timeit.Timer.autorange`
finds it (1, 2, 5, 10, 20, 50 … calls until one loop lasts at least ``min_time_ms``, 1 ms by
default), then times that count four times more and keeps the fastest of the five loops
(timeit's ``min(repeat(5, n))``); ``calls=N`` runs one loop of exactly N calls. The
loop is timeit's own shape (``for _ in itertools.repeat(None, n): fn()``), so its per-call
figure is timeit's.

The step's record keeps the per-call time as its ``latency_ms`` (nanosecond resolution) and
the loop in its data: ``calls`` (the loop's count) and ``loop_ms`` (the loop's time); its
timestamps span that loop. The step returns the last call's value.

This module is the calibrated step's one home: the step machinery
(:mod:`pytest_benchsdk._engine.steps`) hands a step with ``calls=`` or ``min_time_ms=`` to
:func:`calibrated_step`, which checks it, opens and settles it through the runner (a
:class:`LoopRunner`: opening, readiness, helper threads, timeouts and records stay the step
machinery's) and times the loops here. The loops read the clock they are given (the task
context's, injectable in tests); nothing here imports the step machinery.
"""

from __future__ import annotations

import inspect
import itertools
import threading

# Returns None where asyncio.get_running_loop raises RuntimeError (which costs a microsecond).
from asyncio import _get_running_loop
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import attrs

from pytest_benchsdk._base.awaitables import await_with_timeout, is_coroutine_callable
from pytest_benchsdk._base.clock import Clock
from pytest_benchsdk._base.js import is_js_integer, py_value
from pytest_benchsdk._base.numbers import is_finite
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY, Counter

__all__ = [
    "AUTO",
    "CALLS_KEY",
    "DEFAULT_MIN_TIME_MS",
    "LOOPS",
    "LOOP_KEY",
    "Calibration",
    "LoopRunner",
    "LoopTiming",
    "calibrated_step",
    "calibration",
    "loop_async",
    "loop_counted",
    "loop_sync",
    "per_call",
]

#: ``calls=AUTO``: calibrate the count.
AUTO: Final = "auto"
#: The step data key of a calibrated step's count of calls in its measured loop.
CALLS_KEY: Final = "calls"
#: The step data key of the measured loop's time in milliseconds (``calls × latency_ms``).
LOOP_KEY: Final = "loop_ms"
#: How long a calibrated loop lasts at least, by default (``min_time_ms``). A millisecond is
#: 20,000 readings' worth of the clock's ~50 ns cost, and short enough for 20 iterations of a
#: step to take well under a second with their calibration.
DEFAULT_MIN_TIME_MS: Final = 1.0
#: Loops of the calibrated count a ``calls="auto"`` step times (the calibration's last one
#: included); the fastest is the measurement, as timeit's ``repeat`` takes the minimum: a
#: slower loop is slower because something else ran meanwhile (another process, another
#: thread), not because the code was.
LOOPS: Final = 5


def _counts() -> itertools.chain[int]:
    # timeit.Timer.autorange's sequence: 1, 2, 5, 10, 20, 50, ...
    return itertools.chain.from_iterable(
        (base, 2 * base, 5 * base) for base in (10**power for power in itertools.count())
    )


@attrs.frozen
class Calibration:
    """A validated ``calls``/``min_time_ms``: a fixed count, or (``calls`` None) autorange
    until a loop lasts ``min_time_s``."""

    calls: int | None
    min_time_s: float


def calibration(name: str, calls: object, min_time_ms: object) -> Calibration:
    """``calls`` and ``min_time_ms`` of step ``name`` checked: ``"auto"`` or an int >= 1, and
    a number > 0 (with ``"auto"`` only). A ``ValueError`` (a ``TypeError`` for a value of
    the wrong kind) saying what to pass."""
    if calls != AUTO and not (is_js_integer(calls) and isinstance(calls, (int, float))):
        raise TypeError(
            f'step "{name}" calls must be "auto" or an int >= 1 (got {py_value(calls)}): '
            f'step("{name}", fn, calls="auto") calibrates the count, calls=1000 fixes it'
        )
    fixed: int | None = None
    if calls != AUTO:
        assert isinstance(calls, (int, float))
        if calls < 1:
            raise ValueError(
                f'step "{name}" calls must be "auto" or an int >= 1 (got {py_value(calls)})'
            )
        fixed = int(calls)
    if min_time_ms is None:
        return Calibration(fixed, DEFAULT_MIN_TIME_MS / 1000.0)
    if fixed is not None:
        raise ValueError(
            f'step "{name}" min_time_ms applies to calls="auto" only (calls={fixed} fixes the '
            "count: the loop takes as long as its calls do)"
        )
    if not is_finite(min_time_ms) or not min_time_ms > 0:  # type: ignore[operator]
        raise ValueError(
            f'step "{name}" min_time_ms must be a number > 0 (got {py_value(min_time_ms)})'
        )
    return Calibration(None, float(min_time_ms) / 1000.0)  # type: ignore[arg-type]


@attrs.frozen
class LoopTiming:
    """The measured loop: ``calls`` calls between the readings ``started`` and ``ended``;
    ``value`` is the last call's return value; ``instructions`` the instructions per call,
    where they were counted (``--bench-instructions``)."""

    calls: int
    started: float
    ended: float
    value: Any
    instructions: float | None = None

    @property
    def per_call_s(self) -> float:
        return (self.ended - self.started) / self.calls


def per_call(count: int | None, calls: int) -> float | None:
    """A loop's instruction count per call (to a thousandth: a count of N calls divides
    exactly into thousandths only for N of 1, 2, 4, 5, 8 …, and more digits say nothing)."""
    return None if count is None else round(count / calls, 3)


def _counted_loop(
    fn: Callable[[], Any], calls: int, monotonic: Callable[[], float], counter: Counter
) -> LoopTiming:
    # The clock is read outside the counted region: its readings are not the function's.
    rest = itertools.repeat(None, calls - 1)
    started = monotonic()
    region = counter.begin()
    for _ in rest:
        fn()
    value = fn()
    count = counter.end(region)
    ended = monotonic()
    return LoopTiming(calls, started, ended, value, per_call(count, calls))


def loop_counted(
    name: str,
    fn: Callable[[], Any],
    calibrated: Calibration,
    monotonic: Callable[[], float],
    counter: Counter,
) -> LoopTiming:
    """``--bench-instructions``: one warm call (not counted: a first call fills caches and
    lets the interpreter specialise), then a counted loop of ``calls=N`` calls, or of the
    counter's ``calls`` for ``calls="auto"`` (a count needs no time to settle). A function
    returning an awaitable is a ``TypeError``, as for :func:`loop_sync`."""
    _no_awaitable(name, fn())
    calls = calibrated.calls if calibrated.calls is not None else counter.calls
    return _counted_loop(fn, calls, monotonic, counter)


async def _awaited_counted_loop(
    fn: Callable[[], Awaitable[Any]], calls: int, monotonic: Callable[[], float], counter: Counter
) -> LoopTiming:
    rest = itertools.repeat(None, calls - 1)
    started = monotonic()
    region = counter.begin()
    for _ in rest:
        await fn()
    value = await fn()
    count = counter.end(region)
    ended = monotonic()
    return LoopTiming(calls, started, ended, value, per_call(count, calls))


def _fastest(a: LoopTiming, b: LoopTiming) -> LoopTiming:
    # The later value is the last call's, whichever loop was faster.
    if b.ended - b.started <= a.ended - a.started:
        return b
    return LoopTiming(a.calls, a.started, a.ended, b.value)


def _loop(fn: Callable[[], Any], calls: int, monotonic: Callable[[], float]) -> LoopTiming:
    # timeit's loop (its last call kept apart, for its value): nothing else between the readings.
    rest = itertools.repeat(None, calls - 1)
    started = monotonic()
    for _ in rest:
        fn()
    value = fn()
    ended = monotonic()
    return LoopTiming(calls, started, ended, value)


def _no_awaitable(name: str, value: object) -> None:
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: say why instead of warning about it
        raise TypeError(
            f'step "{name}" calls=: its function returned an awaitable, which a loop on this '
            "thread cannot await; pass a coroutine function (async def, or functools.partial "
            f'of one): step("{name}", client.get, calls="auto") awaits each call on the loop'
        )


def loop_sync(
    name: str, fn: Callable[[], Any], calibrated: Calibration, monotonic: Callable[[], float]
) -> LoopTiming:
    """Time ``fn`` in a calibrated loop on this thread. ``fn`` returning an awaitable is a
    ``TypeError`` (told by its first call: a probe outside the measured loop when the count
    is calibrated, the loop's first call when it is fixed)."""
    fixed = calibrated.calls
    if fixed is not None:
        started = monotonic()
        first = fn()
        if fixed == 1:
            ended = monotonic()
            _no_awaitable(name, first)
            return LoopTiming(1, started, ended, first)
        _no_awaitable(name, first)
        rest = _loop(fn, fixed - 1, monotonic)
        return LoopTiming(fixed, started, rest.ended, rest.value)
    _no_awaitable(name, fn())
    return _autorange(fn, calibrated, monotonic)


def _autorange(
    fn: Callable[[], Any], calibrated: Calibration, monotonic: Callable[[], float]
) -> LoopTiming:
    """The fastest of ``LOOPS`` loops of the first count whose loop lasts ``min_time_s``."""
    for calls in _counts():
        timing = _loop(fn, calls, monotonic)
        if timing.ended - timing.started >= calibrated.min_time_s:
            for _ in range(LOOPS - 1):
                timing = _fastest(timing, _loop(fn, calls, monotonic))
            return timing
    raise AssertionError("unreachable")  # pragma: no cover - _counts() is endless


async def _awaited_loop(
    fn: Callable[[], Awaitable[Any]], calls: int, monotonic: Callable[[], float]
) -> LoopTiming:
    rest = itertools.repeat(None, calls - 1)
    started = monotonic()
    for _ in rest:
        await fn()
    value = await fn()
    ended = monotonic()
    return LoopTiming(calls, started, ended, value)


async def loop_async(
    name: str,
    fn: Callable[[], Any],
    calibrated: Calibration,
    monotonic: Callable[[], float],
    counter: Counter | None = None,
) -> LoopTiming:
    """Time ``fn`` in a calibrated loop in the running event loop, awaiting each call's
    awaitable. Whether ``fn`` returns awaitables is told by its first call (a probe outside
    the measured loop when the count is calibrated; the loop's first call when it is fixed).
    A sync ``fn`` runs the sync loop, on the loop's thread. With a ``counter`` the loop is
    counted (:func:`loop_counted`'s rule; the first call is the warm one)."""
    fixed = calibrated.calls
    if counter is not None:
        calls = fixed if fixed is not None else counter.calls
        first = fn()
        if not inspect.isawaitable(first):
            return _counted_loop(fn, calls, monotonic, counter)
        await first
        return await _awaited_counted_loop(fn, calls, monotonic, counter)
    if fixed is not None:
        started = monotonic()
        first = fn()
        if not inspect.isawaitable(first):
            if fixed == 1:
                return LoopTiming(1, started, monotonic(), first)
            rest = _loop(fn, fixed - 1, monotonic)
            return LoopTiming(fixed, started, rest.ended, rest.value)
        value = await first
        if fixed == 1:
            return LoopTiming(1, started, monotonic(), value)
        awaited = await _awaited_loop(fn, fixed - 1, monotonic)
        return LoopTiming(fixed, started, awaited.ended, awaited.value)
    probe = fn()
    if not inspect.isawaitable(probe):
        return _autorange(fn, calibrated, monotonic)
    await probe
    for calls in _counts():
        timing = await _awaited_loop(fn, calls, monotonic)
        if timing.ended - timing.started >= calibrated.min_time_s:
            for _ in range(LOOPS - 1):
                timing = _fastest(timing, await _awaited_loop(fn, calls, monotonic))
            return timing
    raise AssertionError("unreachable")  # pragma: no cover - _counts() is endless


# -- the calibrated step: step(name, fn, calls="auto" | N) ---------------------------------------


class LoopRunner(Protocol):
    """What a calibrated step uses of the step machinery (a
    :class:`~pytest_benchsdk._engine.steps.StepRunner`): opening and settling the step, its
    readiness wait, helper threads and timeouts. States, tokens, options and arrivals are the
    runner's own objects, passed back to it as they came; of a state this module sets
    ``started``, ``calls`` and ``data`` (under :attr:`lock`), of options it reads ``name``,
    ``calls``, ``min_time_ms``, ``parallelism`` and ``timeout_ms``, of an arrival
    ``timeout_ms``."""

    @property
    def lock(self) -> threading.Lock: ...
    def monotonic(self) -> float: ...
    def counter(self, on_loop: bool) -> Counter | None: ...
    def begin(self, options: Any) -> tuple[Any, Any]: ...
    def arrive(self, state: Any, options: Any) -> Any: ...
    def wait_ready(self, state: Any, arrival: Any) -> None: ...
    async def wait_ready_async(self, state: Any, arrival: Any) -> None: ...
    def end(
        self,
        state: Any,
        token: Any,
        options: Any,
        value: Any,
        exc: BaseException | None,
        ended: float | None = None,
    ) -> None: ...
    def resolve_blocking(self, result: Any, deadline: float | None, options: Any) -> Any: ...
    def invoke_threads(
        self, options: Any, fn: Callable[[], Any], count: int, timeout_ms: float | None
    ) -> Any: ...
    async def invoke_on_thread(
        self, options: Any, fn: Callable[[], Any], timeout_ms: float
    ) -> Any: ...
    def check_blocking(self, name: str, seconds: float) -> None: ...
    def timeout_error(self, name: str, timeout_ms: Any) -> BaseException: ...


def calibrated_step(runner: LoopRunner, options: Any, fn: object) -> Any:
    """A step with ``calls=``/``min_time_ms=``: ``fn`` called in a loop. On a plain thread it
    runs now and returns the last call's value; in a running event loop it returns an
    awaitable. A block or an awaitable cannot be looped (``TypeError``, before the step
    starts)."""
    name = options.name
    if fn is None:
        raise TypeError(
            f'step "{name}" calls= times a function in a loop, so it needs one: '
            f'step("{name}", fn, calls="auto"); a `with step(...)` block runs its body '
            "once and cannot be looped"
        )
    if not callable(fn):
        if inspect.iscoroutine(fn):
            fn.close()  # never awaited: say why instead of warning about it
        raise TypeError(
            f'step "{name}" calls= needs a function to call again and again, got '
            f"{type(fn).__name__} {py_value(fn)} (an awaitable runs only once): "
            f'step("{name}", fn, calls="auto") or step("{name}", lambda: fn(x), calls=1000)'
        )
    if _get_running_loop() is not None:
        return _calibrated_async(runner, options, fn)
    return _calibrated_sync(runner, options, fn)


def _arrival(runner: LoopRunner, state: Any, options: Any) -> tuple[Calibration, Any]:
    calibrated = calibration(options.name, options.calls, options.min_time_ms)
    if options.parallelism is not None:
        raise ValueError(
            f'step "{options.name}" calls= and parallel_invocations= cannot be combined: '
            "a calibrated loop runs its calls one after another"
        )
    return calibrated, runner.arrive(state, options)


def _calibrated_sync(runner: LoopRunner, options: Any, fn: Callable[[], Any]) -> Any:
    state, token = runner.begin(options)
    monotonic = runner.monotonic
    name = options.name
    try:
        calibrated, arrival = _arrival(runner, state, options)
        runner.wait_ready(state, arrival)
        timeout_ms = arrival.timeout_ms
        timing: LoopTiming
        counter = runner.counter(False)
        if is_coroutine_callable(fn):
            # Awaited on the executor's loop, the whole loop at once (one hop, not one a
            # call); the deadline holds for the whole loop.
            deadline = None if timeout_ms is None else monotonic() + timeout_ms / 1000.0
            timing = runner.resolve_blocking(
                loop_async(name, fn, calibrated, monotonic, runner.counter(True)),
                deadline,
                options,
            )
        elif timeout_ms is None:
            timing = (
                loop_sync(name, fn, calibrated, monotonic)
                if counter is None
                else loop_counted(name, fn, calibrated, monotonic, counter)
            )
        else:
            # On the helper thread: a region counts the thread it runs on.
            timing = runner.invoke_threads(
                options,
                lambda: (
                    loop_sync(name, fn, calibrated, monotonic)
                    if counter is None
                    else loop_counted(name, fn, calibrated, monotonic, counter)
                ),
                1,
                timeout_ms,
            )
    except BaseException as exc:
        runner.end(state, token, options, None, exc, monotonic())
        raise
    _settle(runner, state, timing)
    runner.end(state, token, options, timing.value, None, timing.ended)
    return timing.value


async def _calibrated_async(runner: LoopRunner, options: Any, fn: Callable[[], Any]) -> Any:
    state, token = runner.begin(options)
    monotonic = runner.monotonic
    name = options.name
    try:
        calibrated, arrival = _arrival(runner, state, options)
        await runner.wait_ready_async(state, arrival)
        timeout_ms = arrival.timeout_ms
        timing: LoopTiming
        if timeout_ms is not None and timeout_ms > 0 and not is_coroutine_callable(fn):
            # As a plain step: a sync function with a timeout runs on a helper thread (the
            # whole loop), so the timeout holds and the event loop stays free.
            helper_counter = runner.counter(False)
            timing = await runner.invoke_on_thread(
                options,
                lambda: (
                    loop_sync(name, fn, calibrated, monotonic)
                    if helper_counter is None
                    else loop_counted(name, fn, calibrated, monotonic, helper_counter)
                ),
                timeout_ms,
            )
        elif timeout_ms is None:
            began = monotonic()
            timing = await loop_async(name, fn, calibrated, monotonic, runner.counter(True))
            if not is_coroutine_callable(fn):
                runner.check_blocking(name, monotonic() - began)
        else:
            timing = await await_with_timeout(
                loop_async(name, fn, calibrated, monotonic, runner.counter(True)),
                timeout_ms / 1000.0,
                lambda: runner.timeout_error(name, options.timeout_ms),
            )
    except BaseException as exc:
        runner.end(state, token, options, None, exc, monotonic())
        raise
    _settle(runner, state, timing)
    runner.end(state, token, options, timing.value, None, timing.ended)
    return timing.value


def _settle(runner: LoopRunner, state: Any, timing: LoopTiming) -> None:
    """The measured loop becomes the step's time: its readings, its count, and both in the
    step's data (after what ``measure`` wrote in the loop)."""
    with runner.lock:
        state.started = timing.started
        state.calls = timing.calls
        data = state.data if state.data is not None else {}
        data[CALLS_KEY] = timing.calls
        data[LOOP_KEY] = Clock.elapsed_ms(timing.started, timing.ended)
        if timing.instructions is not None and INSTRUCTIONS_KEY not in data:
            data[INSTRUCTIONS_KEY] = timing.instructions
        state.data = data
