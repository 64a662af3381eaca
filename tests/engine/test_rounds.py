"""The benchmark fixture's calibrated rounds (issue 35), without pytest: calibration against
a clock the test drives, the kept rounds, pedantic's rules, the record and the statistics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_benchsdk._engine.rounds import (
    KEPT_ROUNDS,
    Rounds,
    RoundSettings,
    RoundStats,
    check_pedantic,
    kept_rounds,
    measure_pedantic,
    measure_rounds,
    pedantic_arguments,
    round_count,
    round_record,
)


class StepClock:
    """A timer that advances ``per_call`` seconds on each call of the measured function (and
    1 ns on each reading), so a round of n calls lasts n × per_call."""

    def __init__(self, per_call: float) -> None:
        self.now = 0.0
        self.per_call = per_call

    def __call__(self) -> float:
        self.now += 1e-9
        return self.now

    def work(self) -> None:
        self.now += self.per_call


def test_calibration_grows_the_iterations_until_a_round_lasts_min_time() -> None:
    clock = StepClock(per_call=100e-9)
    settings = RoundSettings(timer=clock, min_time=5e-6, max_time=0.001, min_rounds=3)
    rounds = measure_rounds(clock.work, (), {}, settings)
    # pytest-benchmark's steps: 1 call (0.1 µs) and 10 (1 µs) are under half of min_time,
    # 100 calls (10 µs) reach it.
    assert rounds.iterations == 100
    per_call = rounds.per_call()
    assert all(math.isclose(v, 100e-9, rel_tol=0.01) for v in per_call)
    # max_time / the round's time (10 µs and the 1 ns reading), fewer when max_time has
    # passed on the real clock first (the rounds stop then), never fewer than min_rounds.
    assert 3 <= len(per_call) <= math.ceil(0.001 / (100 * 100e-9 + 1e-9)) + 1
    assert len(rounds.cpu) == len(rounds.wall)


def test_a_slow_function_gets_one_iteration_and_min_rounds() -> None:
    clock = StepClock(per_call=0.01)
    rounds = measure_rounds(clock.work, (), {}, RoundSettings(timer=clock, max_time=0.001))
    assert rounds.iterations == 1
    assert len(rounds.wall) == 5


class CountingClock(StepClock):
    def __init__(self, per_call: float) -> None:
        super().__init__(per_call)
        self.calls = 0

    def work(self) -> None:
        self.calls += 1
        super().work()


@pytest.mark.parametrize("per_call", [0.02, 0.001])
def test_a_slow_call_is_calibrated_once(per_call: float) -> None:
    # pytest-benchmark's calls: its calibration round (the first call) settles the count,
    # then min_rounds rounds (and, in the fixture, a call for the result).
    clock = CountingClock(per_call)
    settings = RoundSettings(timer=clock, max_time=0.001)
    rounds = measure_rounds(clock.work, (), {}, settings)
    assert (rounds.iterations, len(rounds.wall), clock.calls) == (1, 5, 1 + 5)


class ColdFirstCall(CountingClock):
    """A function whose first call lasts ``first`` seconds and every later one ``per_call``
    (a library generating its code on first use, as cattrs' converters)."""

    def __init__(self, first: float, per_call: float) -> None:
        super().__init__(per_call)
        self.first = first

    def work(self) -> None:
        self.calls += 1
        self.now += self.first if self.calls == 1 else self.per_call


# Settings where the fake calls are long and the real ones short: min_time 1 ms, warm calls
# of 100 µs (fake), so the rounds' real time (~1 µs a call) is far below max_time's deadline
# and the warm-up's limit, which read the real clock.
COLD = {"min_time": 0.001, "max_time": 0.1, "min_rounds": 5}


def test_the_first_call_is_the_calibrations_first_round_as_in_pytest_benchmark() -> None:
    # pytest-benchmark times the function's first call as its calibration's first round:
    # 10 ms >= min_time settles one call a round, and ceil(max_time / 10 ms) = 10 rounds.
    # (Calibrated warm, 10 calls of 100 µs a round and 100 rounds: a tenth of the timer's
    # overhead per call and ten times the rounds, so a lower minimum than pytest-benchmark's.)
    function = ColdFirstCall(first=0.01, per_call=100e-6)
    rounds = measure_rounds(function.work, (), {}, RoundSettings(timer=function, **COLD))
    assert (rounds.iterations, len(rounds.wall)) == (1, 10)
    assert function.calls == 1 + 10
    assert min(rounds.per_call()) == pytest.approx(100e-6, rel=1e-3)


def test_with_the_warmup_the_fastest_warm_round_calibrates_as_in_pytest_benchmark() -> None:
    # The warm-up inside the calibration (5 calls) makes the count's time the fastest round:
    # 1 call of 100 µs is under half of min_time, so 10 calls (1 ms) a round, and
    # ceil(0.1 s / 1 ms) = 100 rounds (the cold first call counts for nothing).
    function = ColdFirstCall(first=0.01, per_call=100e-6)
    settings = RoundSettings(timer=function, warmup=True, warmup_iterations=5, **COLD)
    rounds = measure_rounds(function.work, (), {}, settings)
    assert (rounds.iterations, len(rounds.wall)) == (10, 100)
    # Calibration: 1 + 5 warm-up calls at one a round, then 10 + one warm-up round of 10;
    # one warm-up round before the rounds (5 // 10 calls, at least one round), 100 rounds.
    assert function.calls == (1 + 5) + (10 + 10) + 10 + 100 * 10


def test_a_warmup_time_bounds_both_warm_ups_as_pytest_codspeeds() -> None:
    # --codspeed-warmup-time: the warm-up, the calibration's and the rounds' together, stops
    # when its time has passed. At 0 the calibration's warm-up runs no round (the cold first
    # call settles the count) and no warm-up round runs before the rounds (of 100,000 calls'
    # worth without it).
    function = ColdFirstCall(first=0.01, per_call=100e-6)
    settings = RoundSettings(
        timer=function, warmup=True, warmup_iterations=100_000, warmup_time=0.0, **COLD
    )
    rounds = measure_rounds(function.work, (), {}, settings)
    assert (rounds.iterations, len(rounds.wall)) == (1, 10)
    assert function.calls == 1 + 10


@pytest.mark.parametrize(
    ("duration", "settings", "expected"),
    [
        (0.01, RoundSettings(max_time=1.0), 100),
        (0.3, RoundSettings(max_time=1.0), 5),
        (0.3, RoundSettings(max_time=1.0, min_rounds=20), 20),
        (1e-6, RoundSettings(max_time=1.0, max_rounds=1000), 1000),
        (0.0, RoundSettings(), 5),
    ],
)
def test_the_rounds_follow_pytest_benchmarks_rule(
    duration: float, settings: RoundSettings, expected: int
) -> None:
    from pytest_benchsdk._engine.rounds import rounds_to_run

    assert rounds_to_run(duration, settings) == expected


@given(st.lists(st.floats(0, 1e3), min_size=0, max_size=3000))
def test_kept_rounds_are_all_or_an_evenly_spaced_sample_in_run_order(values: list[float]) -> None:
    kept = kept_rounds(values)
    if len(values) <= KEPT_ROUNDS:
        assert kept == values
        return
    assert len(kept) == KEPT_ROUNDS
    assert kept[0] == values[0]
    positions = [i * len(values) // KEPT_ROUNDS for i in range(KEPT_ROUNDS)]
    assert kept == [values[p] for p in positions]


def test_pedantic_runs_exactly_its_rounds_with_a_setup_each() -> None:
    calls: list[tuple[int, ...]] = []
    made = iter(range(100))

    def setup() -> tuple[tuple[int], dict[str, int]]:
        return (next(made),), {}

    def target(x: int) -> int:
        calls.append((x,))
        return x * 2

    rounds, value = measure_pedantic(
        target, (), {}, RoundSettings(), setup=setup, rounds=4, warmup_rounds=2, iterations=1
    )
    assert [c[0] for c in calls] == [0, 1, 2, 3, 4, 5]
    assert value == 10
    assert len(rounds.wall) == 4
    assert rounds.iterations == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rounds": 0}, "rounds must be an int >= 1 (got 0)"),
        ({"iterations": 1.5}, "iterations must be an int >= 1 (got 1.5)"),
        ({"warmup_rounds": -1}, "warmup_rounds must be an int >= 0 (got -1)"),
        ({"iterations": 2, "setup": lambda: None}, "iterations must be 1 with setup (got 2)"),
    ],
)
def test_pedantic_checks_its_arguments(kwargs: dict[str, object], message: str) -> None:
    given_kwargs = {"setup": None, "rounds": 1, "warmup_rounds": 0, "iterations": 1, **kwargs}
    with pytest.raises(ValueError, match=r"benchmark\.pedantic: ") as raised:
        check_pedantic(**given_kwargs)  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_setup_arguments_and_given_arguments_do_not_mix() -> None:
    with pytest.raises(TypeError, match="setup returned the arguments"):
        pedantic_arguments((1,), {}, lambda: ((2,), {}))
    assert pedantic_arguments((1,), {"a": 2}, lambda: None) == ((1,), {"a": 2})


def test_the_record_and_the_statistics_of_the_rounds() -> None:
    wall = tuple(float(v) * 1e-6 for v in (4, 2, 6, 8, 10))
    rounds = Rounds(2, wall, tuple(w / 2 for w in wall), 1_700_000_000.0, 1_700_000_001.0)
    stats = RoundStats.of(rounds)
    assert stats.min == pytest.approx(1e-6)
    assert stats.max == pytest.approx(5e-6)
    assert stats.median == pytest.approx(3e-6)
    assert stats.mean == pytest.approx(3e-6)
    assert stats.stddev == pytest.approx(math.sqrt(2.5) * 1e-6)
    assert stats.ops == pytest.approx(1 / 3e-6)
    assert stats.rounds == 5
    assert stats.iterations == 2
    record = round_record(rounds, stats, {"n": 3})
    assert record.task_index == 0
    assert record.status == "success"
    assert record.latency_ms == pytest.approx(0.003)
    assert record.data is not None
    assert record.data["time_ms"] == pytest.approx([0.002, 0.001, 0.003, 0.004, 0.005])
    assert record.data["cpu_ms"] == pytest.approx([0.001, 0.0005, 0.0015, 0.002, 0.0025])
    # How it was measured is a fact, not a metric: no number at the data's top level.
    assert record.data["rounds"] == {"count": 5, "iterations": 2}
    assert "iterations" not in record.data
    assert round_count(record.data) == (5, 2)
    assert round_count({"rounds": 5}) is None
    assert record.data["extra_info"] == {"n": 3}
