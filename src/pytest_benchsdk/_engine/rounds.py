"""Calibrated rounds: the ``benchmark`` fixture's measurement, as pytest-benchmark takes it.

pytest-benchmark times a function in *rounds* of *iterations*: it calibrates the iterations
so that one round lasts at least ``max(min_time, 10 × the timer's precision)`` (1, 10, 100 …
calls, then one estimate from the last round's time), then runs
``max(min_rounds, ceil(max_time / round time))`` rounds; each round's time divided by its
iterations is one per-call sample. This module does the same, by pytest-benchmark's own rule
(:func:`_calibrate`): the calibration's first round is the function's first call in the test,
cold, and each count is timed once (with the warm-up, the fastest of the warm-up's rounds), so
the iterations and the number of rounds are the ones pytest-benchmark chooses with the same
settings (issue 47: a function whose first call is slow, as cattrs' converters generating
their code, gets one call per round and few rounds there, and so here). What it adds changes
nothing of that: the rounds stop when ``max_time`` has passed (the time between rounds
included; pytest-benchmark runs its count to the end), ``max_rounds`` caps them, and its loop
is pytest-benchmark's own shape, ``for _ in range(n): fn(*args, **kwargs)``, so the per-call
figures are comparable; and it reads the thread's CPU clock too: every round gives a
wall and a CPU time per call, in seconds at the clocks' nanosecond resolution (the CPU clock,
a system call on a virtual machine, is read around blocks of rounds of at least
:data:`CPU_BLOCK`: a round's CPU time is its wall time × its block's CPU share).

:func:`round_record` turns the rounds into one :class:`~pytest_benchsdk.records.TaskRecord`:
the per-call figures of the rounds as the lists ``time_ms`` and ``cpu_ms`` of its data (at
most :data:`KEPT_ROUNDS` values each: more rounds are kept as every k-th round, in run
order), and under ``rounds`` how many rounds ran and the calls each made (facts about the
measurement, not metrics: a mapping, which no view reads as one; :func:`round_count` reads it
back); its
``latency_ms`` is the median per-call time. The statistics a test reads back
(``benchmark.stats``) are :class:`RoundStats`, of every round.

Step calibration (``step(name, fn, calls="auto")``) is :mod:`.calibrated`; this is the other
calibrated loop, and it imports no pytest either (the glue passes the function and settings).
"""

from __future__ import annotations

import gc
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk import _instruments
from pytest_benchsdk._base.clock import iso_utc
from pytest_benchsdk._base.percentiles import median_positions, nearest_rank
from pytest_benchsdk._engine.calibrated import per_call
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY, Counter
from pytest_benchsdk.records import JSONObject, TaskRecord

__all__ = [
    "CPU_KEY",
    "KEPT_ROUNDS",
    "ROUNDS_KEY",
    "TEST_FAILED",
    "TEST_KEY",
    "TIME_KEY",
    "RoundSettings",
    "RoundStats",
    "Rounds",
    "check_pedantic",
    "count_rounds",
    "failed_record",
    "kept_rounds",
    "measure_pedantic",
    "measure_rounds",
    "pedantic_arguments",
    "repeated_record",
    "round_count",
    "round_record",
    "rounds_to_run",
    "timer_precision",
]

#: The data key of the rounds' wall time per call (milliseconds), a list.
TIME_KEY: Final = "time_ms"
#: The data key of the rounds' CPU time per call (milliseconds), a list (the key every
#: comparison and ``--bench-compare-on`` know as the CPU time).
CPU_KEY: Final = "cpu_ms"
#: The data key of how many rounds ran and how many calls each made: a mapping
#: ``{"count": rounds, "iterations": calls per round}``. Not numbers at the top level, where
#: every number of a record's data is a metric's sample.
ROUNDS_KEY: Final = "rounds"
#: Under :data:`ROUNDS_KEY`, a record of a test measured in turns (:func:`repeated_record`):
#: how many of the kept per-call figures each turn gave, in run order (the sides of an A/B
#: session pair their rounds turn by turn: ``_analysis.baseline.pairing`` reads it).
REPETITIONS_KEY: Final = "repetitions"
#: Per-call figures a record keeps at most per clock: a ~100 ns function makes ~100,000 rounds
#: in pytest-benchmark's second; a record keeps 1,000 of them, evenly spaced in run order (a
#: systematic sample: the same distribution, ~20 KB instead of ~2 MB). ``benchmark.stats`` is
#: of every round.
KEPT_ROUNDS: Final = 1000
#: Timer readings :func:`timer_precision` takes (pytest-benchmark reads its timer for a whole
#: second; the smallest step of a nanosecond clock shows within a few hundred pairs).
_PRECISION_READINGS: Final = 1000
#: How long a block of rounds lasts at least between two readings of the CPU clock (seconds).
CPU_BLOCK: Final = 0.001


@attrs.frozen
class RoundSettings:
    """pytest-benchmark's calibration settings (its defaults; seconds, not milliseconds)."""

    min_rounds: int = 5
    min_time: float = 0.000005
    max_time: float = 1.0
    calibration_precision: int = 10
    warmup: bool = False
    warmup_iterations: int = 100_000
    disable_gc: bool = False
    timer: Callable[[], float] = time.perf_counter
    #: At most this many rounds (pytest-codspeed's ``max_rounds``; None: as ``max_time``
    #: holds), above ``min_rounds``.
    max_rounds: int | None = None
    #: How long the warm-up lasts at most in all, in seconds (pytest-codspeed's
    #: ``warmup_time``, from ``--codspeed-warmup-time``): from the calibration's start, its
    #: warm-up rounds and the warm-up rounds before the rounds stop when it has passed.
    #: None: pytest-benchmark's limits (``max_time`` for each count's warm-up in the
    #: calibration, ``warmup_iterations`` alone for the rounds').
    warmup_time: float | None = None


@attrs.frozen
class Rounds:
    """What the rounds measured: per round, the wall and CPU time of its ``iterations`` calls
    (seconds), and when they ran (epoch seconds); where instructions were counted
    (``--bench-instructions``), each counted round's instructions per call."""

    iterations: int
    wall: tuple[float, ...]
    cpu: tuple[float, ...]
    started: float
    ended: float
    instructions: tuple[float, ...] = ()

    def per_call(self) -> list[float]:
        """Each round's wall time per call, in seconds."""
        n = self.iterations
        return [t / n for t in self.wall]

    def cpu_per_call(self) -> list[float]:
        n = self.iterations
        return [t / n for t in self.cpu]


_precisions: dict[Callable[[], float], float] = {}


def timer_precision(timer: Callable[[], float]) -> float:
    """The smallest positive difference of two successive readings of ``timer`` (kept per
    timer for the process)."""
    known = _precisions.get(timer)
    if known is not None:
        return known
    precision = math.inf
    for _ in range(_PRECISION_READINGS):
        t1 = timer()
        t2 = timer()
        while t2 <= t1:
            t2 = timer()
        precision = min(precision, t2 - t1)
    _precisions[timer] = precision
    return precision


Runner = Callable[[int], float]


def _runner(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    settings: RoundSettings,
) -> Runner:
    """One round of ``n`` calls, its wall time in seconds: pytest-benchmark's round (the
    tracer off, the GC off when asked)."""
    timer = settings.timer
    disable_gc = settings.disable_gc

    def run(n: int) -> float:
        gc_enabled = gc.isenabled()
        if disable_gc:
            gc.disable()
        tracer = sys.gettrace()
        sys.settrace(None)
        try:
            loops = range(n)
            start = timer()
            for _ in loops:
                fn(*args, **kwargs)
            end = timer()
            return end - start
        finally:
            sys.settrace(tracer)
            if gc_enabled:
                gc.enable()

    return run


def _calibrate(
    run: Runner, settings: RoundSettings, warmup_until: float | None = None
) -> tuple[float, int]:
    """``(round time, iterations)``: pytest-benchmark 5's ``_calibrate_timer``, step for step.

    Its first round is one call, the function's first in the test (cold: caches, the
    interpreter's specialising, a library generating its code on first use), timed; a count
    is timed once, and with the warm-up (``warmup``) the fastest of that round and the
    warm-up's rounds of the same count (up to ``warmup_iterations`` calls, at most
    ``max_time``) is its time. A round of at least ``min_time`` settles the count; one of at
    least half of it (``min_time × 5 / calibration_precision``) gives an estimate
    (``ceil(min_time × count / time)``, settled at once when it is 1), a shorter one ten times
    the count. The round time returned sets the number of rounds, as there
    (``ceil(max_time / round time)``): a cold first call of 1 ms makes 1 call a round and
    1,000 rounds of ``max_time = 1`` s, whatever the warm calls take. ``warmup_until``
    (a :func:`time.perf_counter` reading): the warm-up's end instead (``warmup_time``)."""
    precision = timer_precision(settings.timer)
    min_time = max(settings.min_time, precision * settings.calibration_precision)
    min_time_estimate = min_time * 5 / settings.calibration_precision
    warmup = settings.warmup_iterations if settings.warmup else 0
    loops = 1
    while True:
        duration = run(loops)
        if warmup:
            until = time.perf_counter() + settings.max_time
            if warmup_until is not None:
                until = warmup_until
            warmup_iterations = 0
            while time.perf_counter() < until and warmup_iterations < warmup:
                duration = min(duration, run(loops))
                warmup_iterations += loops
        if duration >= min_time:
            return duration, loops
        if duration >= min_time_estimate:
            loops = math.ceil(min_time * loops / duration)
            if loops == 1:
                return duration, loops
        else:
            loops *= 10


def rounds_to_run(duration: float, settings: RoundSettings) -> int:
    """How many rounds follow a calibration whose round took ``duration`` seconds:
    pytest-benchmark's ``max(ceil(max_time / duration), min_rounds)``, then at most
    ``max_rounds`` (above ``min_rounds``). The rounds also stop when ``max_time`` has passed
    (:func:`_timed_rounds`), so a count made large by a round timed too short never runs
    past it."""
    rounds = math.ceil(settings.max_time / duration) if duration > 0 else 1
    rounds = max(rounds, settings.min_rounds, 1)
    if settings.max_rounds is not None:
        rounds = min(rounds, max(settings.max_rounds, 1))
    return rounds


def count_rounds(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    settings: RoundSettings,
    counter: Counter,
) -> Rounds:
    """``benchmark(fn, *args, **kwargs)`` counted (``--bench-instructions``): one warm call,
    then one round of the counter's ``calls`` calls in a counted region (a count needs no
    calibration and no repeats to settle: it is the same every time)."""
    started = time.time()
    fn(*args, **kwargs)
    calls = counter.calls
    loops = range(calls)
    gc_enabled = gc.isenabled()
    if settings.disable_gc:
        gc.disable()
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        cpu_start = time.thread_time()
        start = settings.timer()
        region = counter.begin()
        for _ in loops:
            fn(*args, **kwargs)
        count = counter.end(region)
        end = settings.timer()
        cpu = time.thread_time() - cpu_start
    finally:
        sys.settrace(tracer)
        if gc_enabled:
            gc.enable()
    instructions = per_call(count, calls)
    return Rounds(
        calls,
        (end - start,),
        (cpu,),
        started,
        time.time(),
        () if instructions is None else (instructions,),
    )


def measure_rounds(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    settings: RoundSettings,
) -> Rounds:
    """``benchmark(fn, *args, **kwargs)`` measured: calibrate, (warm up,) run the rounds
    (counted instead, where ``--bench-instructions`` counts: :func:`count_rounds`)."""
    counter = _instruments.ACTIVE
    if counter is not None:
        return count_rounds(fn, args, kwargs, settings, counter)
    run = _runner(fn, args, kwargs, settings)
    started = time.time()
    # pytest-benchmark's rule, its first round cold (see _calibrate): the iterations and
    # the rounds are the ones it chooses, so the per-call figures are of the same rounds.
    warmup_until = None
    if settings.warmup_time is not None:
        warmup_until = time.perf_counter() + settings.warmup_time
    duration, iterations = _calibrate(run, settings, warmup_until)
    rounds = rounds_to_run(duration, settings)
    if settings.warmup and settings.warmup_iterations:
        for _ in range(min(rounds, max(1, settings.warmup_iterations // iterations))):
            if warmup_until is not None and time.perf_counter() >= warmup_until:
                break
            run(iterations)
    wall, cpu = _timed_rounds(fn, args, kwargs, settings, iterations, rounds)
    return Rounds(iterations, tuple(wall), tuple(cpu), started, time.time())


def _timed_rounds(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    settings: RoundSettings,
    iterations: int,
    rounds: int,
) -> tuple[list[float], list[float]]:
    """Up to ``rounds`` rounds of ``iterations`` calls (fewer when ``max_time`` has passed and
    ``min_rounds`` ran: the time between rounds counts too): their wall and CPU times.

    The tracer is off (and the GC, when asked) for all of them at once, not round by round as
    pytest-benchmark switches them: the rounds themselves are the same loop, and the session
    spends its ``max_time`` measuring instead of switching. The CPU clock is read around blocks
    of rounds lasting :data:`CPU_BLOCK`, not around each round: a reading costs ~2.6 µs on a
    virtual machine (a system call), as long as a short round itself. Each round's CPU time is
    its wall time × its block's CPU share."""
    timer, clock, thread_cpu = settings.timer, time.perf_counter, time.thread_time
    loops = range(iterations)
    wall: list[float] = []
    cpu: list[float] = []
    gc_enabled = gc.isenabled()
    if settings.disable_gc:
        gc.disable()
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        deadline = clock() + settings.max_time
        block_cpu, block_wall, first = thread_cpu(), clock(), 0
        for index in range(rounds):
            start = timer()
            for _ in loops:
                fn(*args, **kwargs)
            end = timer()
            wall.append(end - start)
            now = clock()
            last = index == rounds - 1 or (
                now >= deadline and index + 1 >= min(settings.min_rounds, rounds)
            )
            if last or now - block_wall >= CPU_BLOCK:
                used = thread_cpu()
                share = (used - block_cpu) / (now - block_wall) if now > block_wall else 1.0
                cpu.extend(w * share for w in wall[first:])
                first = len(wall)
                block_cpu, block_wall = used, clock()
            if last:
                break
    finally:
        sys.settrace(tracer)
        if gc_enabled:
            gc.enable()
    return wall, cpu


def measure_pedantic(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    settings: RoundSettings,
    *,
    setup: Callable[[], Any] | None,
    rounds: int,
    warmup_rounds: int,
    iterations: int,
) -> tuple[Rounds, Any]:
    """``benchmark.pedantic(...)`` measured: exactly ``rounds`` rounds of ``iterations``
    calls after ``warmup_rounds``, ``setup()`` before each (its ``(args, kwargs)``, when it
    returns them, are the round's arguments). Returns the rounds and the value of a call (the
    last round's, with one iteration; else one more call after the rounds, as
    pytest-benchmark)."""
    check_pedantic(setup, rounds, warmup_rounds, iterations)

    def arguments() -> tuple[Sequence[Any], Mapping[str, Any]]:
        return pedantic_arguments(args, kwargs, setup)

    started = time.time()
    for _ in range(warmup_rounds):
        call_args, call_kwargs = arguments()
        _runner(fn, call_args, call_kwargs, settings)(iterations)
    wall: list[float] = []
    cpu: list[float] = []
    counts: list[float] = []
    value: Any = None
    # Its rounds are the user's, counted as they are (warm-up only as warmup_rounds asks).
    counter = _instruments.ACTIVE
    for _ in range(rounds):
        call_args, call_kwargs = arguments()
        # Rounds of pedantic are the user's (a setup before each): the CPU clock around each.
        cpu_start = time.thread_time()
        region = None if counter is None else counter.begin()
        try:
            if iterations == 1:
                w, value = _single_call(fn, call_args, call_kwargs, settings)
            else:
                w = _runner(fn, call_args, call_kwargs, settings)(iterations)
        finally:
            count = None if counter is None else counter.end(region)
        cpu.append(time.thread_time() - cpu_start)
        wall.append(w)
        counted = per_call(count, iterations)
        if counted is not None:
            counts.append(counted)
    ended = time.time()
    if iterations > 1:
        call_args, call_kwargs = arguments()
        value = fn(*call_args, **call_kwargs)
    return Rounds(iterations, tuple(wall), tuple(cpu), started, ended, tuple(counts)), value


def _single_call(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    settings: RoundSettings,
) -> tuple[float, Any]:
    """One call timed with its value, the tracer off (the GC off when asked)."""
    timer = settings.timer
    gc_enabled = gc.isenabled()
    if settings.disable_gc:
        gc.disable()
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        start = timer()
        value = fn(*args, **kwargs)
        end = timer()
    finally:
        sys.settrace(tracer)
        if gc_enabled:
            gc.enable()
    return end - start, value


def pedantic_arguments(
    args: Sequence[Any], kwargs: Mapping[str, Any], setup: Callable[[], Any] | None
) -> tuple[Sequence[Any], Mapping[str, Any]]:
    """A round's arguments: ``setup()``'s ``(args, kwargs)`` when it returns them (then
    ``args``/``kwargs`` must be empty, as pytest-benchmark says), else the given ones."""
    if setup is None:
        return args, kwargs
    given = setup()
    if not given:
        return args, kwargs
    if args or kwargs:
        raise TypeError(
            "benchmark.pedantic: setup returned the arguments, so args= and kwargs= cannot "
            "be given too"
        )
    call_args, call_kwargs = given
    return tuple(call_args), dict(call_kwargs)


def check_pedantic(
    setup: Callable[[], Any] | None, rounds: object, warmup_rounds: object, iterations: object
) -> None:
    """pytest-benchmark's checks of ``pedantic``'s arguments, in Python's words."""
    if not _int(iterations) or iterations < 1:  # type: ignore[operator]
        raise ValueError(f"benchmark.pedantic: iterations must be an int >= 1 (got {iterations!r})")
    if not _int(rounds) or rounds < 1:  # type: ignore[operator]
        raise ValueError(f"benchmark.pedantic: rounds must be an int >= 1 (got {rounds!r})")
    if not _int(warmup_rounds) or warmup_rounds < 0:  # type: ignore[operator]
        raise ValueError(
            f"benchmark.pedantic: warmup_rounds must be an int >= 0 (got {warmup_rounds!r})"
        )
    if setup is not None and iterations != 1:
        raise ValueError(
            "benchmark.pedantic: setup= runs before each round, so a round has one call: "
            f"iterations must be 1 with setup (got {iterations})"
        )


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def kept_rounds(values: Sequence[float], keep: int = KEPT_ROUNDS) -> list[float]:
    """``values`` as they are when there are at most ``keep`` of them; else ``keep`` of them
    evenly spaced in run order (positions ``floor(i × n / keep)``): a systematic sample, which
    keeps the distribution and the order the rounds ran in (so the run-hygiene checks still see
    a drift)."""
    n = len(values)
    if n <= keep:
        return list(values)
    return [values[i * n // keep] for i in range(keep)]


@attrs.frozen
class RoundStats:
    """Statistics of every round's time per call (seconds), under pytest-benchmark's names:
    what ``benchmark.stats`` gives a test. Quartiles and the median by the project's one
    percentile rule (nearest rank; the median of an even count the mean of the middle two)."""

    min: float
    max: float
    mean: float
    stddev: float
    median: float
    q1: float
    q3: float
    rounds: int
    iterations: int
    total: float
    data: tuple[float, ...]

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def ops(self) -> float:
        """Calls per second (``1 / mean``; 0 when the mean is 0, as pytest-benchmark)."""
        return 1.0 / self.mean if self.mean else 0.0

    @classmethod
    def of(cls, rounds: Rounds) -> RoundStats:
        data = rounds.per_call()
        ordered = sorted(data)
        n = len(ordered)
        mean = math.fsum(ordered) / n
        stddev = math.sqrt(math.fsum((v - mean) ** 2 for v in ordered) / (n - 1)) if n > 1 else 0.0
        low, high = median_positions(n)
        return cls(
            min=ordered[0],
            max=ordered[-1],
            mean=mean,
            stddev=stddev,
            median=(ordered[low] + ordered[high]) / 2,
            q1=nearest_rank(ordered, 25),
            q3=nearest_rank(ordered, 75),
            rounds=n,
            iterations=rounds.iterations,
            total=math.fsum(rounds.wall),
            data=tuple(data),
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "stddev": self.stddev,
            "median": self.median,
            "q1": self.q1,
            "q3": self.q3,
            "iqr": self.iqr,
            "ops": self.ops,
            "rounds": self.rounds,
            "iterations": self.iterations,
            "total": self.total,
        }


def _ms(seconds: float) -> float:
    # Milliseconds to the picosecond: a per-call figure of a loop resolves below a nanosecond.
    return round(seconds * 1000.0, 9)


#: The data key of a benchmarked test's identity as pytest-benchmark names it: a mapping
#: ``{fullname, name, group, param, params, options}`` (what its JSON files hold per test).
TEST_KEY: Final = "test"


def round_record(
    rounds: Rounds,
    stats: RoundStats,
    extra_info: Mapping[str, Any] | None = None,
    test: Mapping[str, Any] | None = None,
) -> TaskRecord:
    """The record of one benchmarked test (task index 0): the kept per-call figures, how
    many rounds of how many calls (``rounds``), ``extra_info`` (as given, when not
    empty) and the test's identity (``test``, :data:`TEST_KEY`, when given)."""
    data: JSONObject = {
        TIME_KEY: [_ms(v) for v in kept_rounds(rounds.per_call())],
        CPU_KEY: [_ms(v) for v in kept_rounds(rounds.cpu_per_call())],
        ROUNDS_KEY: {"count": len(rounds.wall), "iterations": rounds.iterations},
    }
    if rounds.instructions:
        data[INSTRUCTIONS_KEY] = list(kept_rounds(rounds.instructions))
    if extra_info:
        data["extra_info"] = dict(extra_info)
    if test:
        data[TEST_KEY] = dict(test)
    return TaskRecord(
        task_index=0,
        status="success",
        started_at=iso_utc(rounds.started),
        completed_at=iso_utc(rounds.ended),
        latency_ms=_ms(stats.median),
        data=data,
    )


def repeated_record(
    parts: Sequence[Rounds], extra_info: Mapping[str, Any] | None = None
) -> TaskRecord:
    """The record of one benchmarked test measured in turns (an A/B session's side runs it
    once per process pair, each turn with its share of ``max_time``): each turn's kept
    per-call figures one after the other (at most :data:`KEPT_ROUNDS` in all, shared evenly),
    with how many each gave under ``rounds`` → :data:`REPETITIONS_KEY`; ``rounds`` counts
    every turn's rounds, its ``iterations`` the calls per round over all turns (each turn
    calibrates its own). ``latency_ms`` is the median per-call time of every round."""
    if not parts:
        raise ValueError("a test measured in turns needs at least one turn")
    keep = max(1, KEPT_ROUNDS // len(parts))
    wall = [kept_rounds(part.per_call(), keep) for part in parts]
    cpu = [kept_rounds(part.cpu_per_call(), keep) for part in parts]
    every = sorted(value for part in parts for value in part.per_call())
    low, high = median_positions(len(every))
    count = sum(len(part.wall) for part in parts)
    calls = sum(len(part.wall) * part.iterations for part in parts)
    data: JSONObject = {
        TIME_KEY: [_ms(v) for values in wall for v in values],
        CPU_KEY: [_ms(v) for values in cpu for v in values],
        ROUNDS_KEY: {
            "count": count,
            "iterations": max(1, round(calls / count)),
            REPETITIONS_KEY: [len(values) for values in wall],
        },
    }
    counts = [v for part in parts for v in kept_rounds(part.instructions, keep)]
    if counts:
        data[INSTRUCTIONS_KEY] = counts
    if extra_info:
        data["extra_info"] = dict(extra_info)
    return TaskRecord(
        task_index=0,
        status="success",
        started_at=iso_utc(min(part.started for part in parts)),
        completed_at=iso_utc(max(part.ended for part in parts)),
        latency_ms=_ms((every[low] + every[high]) / 2),
        data=data,
    )


def round_count(data: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """``(rounds, iterations per round)`` of a benchmarked test's record data (its
    ``rounds`` mapping), or None for any other record."""
    counted = (data or {}).get(ROUNDS_KEY)
    if not isinstance(counted, Mapping):
        return None
    count, iterations = counted.get("count"), counted.get("iterations")
    if isinstance(count, bool) or isinstance(iterations, bool):
        return None
    if not (isinstance(count, int) and isinstance(iterations, int)):
        return None
    return count, iterations


#: The error code of a benchmarked test that failed (its record: its rounds, if it measured
#: any, and the test's error).
TEST_FAILED: Final = "test_failed"


def failed_record(
    rounds: Rounds | None,
    message: str,
    started: float,
    ended: float,
    extra_info: Mapping[str, Any] | None = None,
) -> TaskRecord:
    """The record of a benchmarked test that failed: its rounds' figures (and ``extra_info``)
    when it measured (the failure came after), with ``errorMessage``; no latency (a failed
    record is never a sample)."""
    if rounds is not None:
        record = round_record(rounds, RoundStats.of(rounds), extra_info)
        data: JSONObject = {**(record.data or {}), "errorMessage": message}
        return attrs.evolve(
            record, status="error", error_code=TEST_FAILED, latency_ms=None, data=data
        )
    return TaskRecord(
        task_index=0,
        status="error",
        started_at=iso_utc(started),
        completed_at=iso_utc(ended),
        latency_ms=None,
        error_code=TEST_FAILED,
        data={"errorMessage": message},
    )
