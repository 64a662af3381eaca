"""An A/B session's benchmarked tests: each side's record holds the test's rounds turn by turn
(``_engine.rounds.repeated_record``), and the paired comparison pairs the two sides' rounds
within each turn, the turns its clusters."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_benchsdk._analysis.baseline import Baseline, compare_runs, compare_with_baseline
from pytest_benchsdk._analysis.scoring import ScoringSpec
from pytest_benchsdk._engine.rounds import Rounds, RoundStats, repeated_record, round_record
from pytest_benchsdk.records import TaskRecord

WEIGHTS = {"median": 1, "p95": 0, "p99": 0}
SPEC = ScoringSpec.coerce(
    {"metrics": [{"name": "time_ms", "unit": "ms", "ceiling": 10, "weights": WEIGHTS}]}
)


def turn(per_call_s: list[float], iterations: int = 10) -> Rounds:
    wall = tuple(v * iterations for v in per_call_s)
    return Rounds(iterations, wall, wall, 1000.0, 1001.0)


def noisy(n: int, level: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(level * rng.lognormal(0, 0.03)) for _ in range(n)]


def test_a_record_of_turns_keeps_each_turn_s_rounds_and_says_how_many() -> None:
    record = repeated_record([turn([1e-3] * 5), turn([2e-3] * 3, iterations=30)], {"k": 1})
    data = record.data
    assert data is not None
    assert data["time_ms"] == [1.0] * 5 + [2.0] * 3
    assert data["cpu_ms"] == [1.0] * 5 + [2.0] * 3
    # Eight rounds, five of 10 calls and three of 30: 17.5 calls a round on average.
    assert data["rounds"] == {"count": 8, "iterations": 18, "repetitions": [5, 3]}
    assert data["extra_info"] == {"k": 1}
    assert record.latency_ms == 1.0
    with pytest.raises(ValueError, match="at least one turn"):
        repeated_record([])


def test_many_rounds_are_kept_evenly_per_turn() -> None:
    record = repeated_record([turn([1e-3] * 3000), turn([1e-3] * 10)])
    assert record.data is not None
    assert record.data["rounds"]["repetitions"] == [500, 10]
    assert len(record.data["time_ms"]) == 510


def test_the_sides_rounds_pair_within_each_turn_as_many_as_both_have() -> None:
    a = repeated_record([turn(noisy(8, 1e-3, 1)), turn(noisy(5, 1e-3, 2))])
    b = repeated_record([turn(noisy(6, 1.5e-3, 3)), turn(noisy(9, 1.5e-3, 4))])
    (row, *_) = compare_runs({"t": [a]}, {"t": [b]}, SPEC, paired=True, processes=2)
    assert (row.metric, row.statistic) == ("time_ms", "median")
    assert row.comparison is not None
    assert row.comparison.baseline_n == row.comparison.current_n == 6 + 5
    assert row.comparison.change == pytest.approx(0.5, abs=0.05)
    assert row.noise == "paired"


def test_a_record_without_turns_pairs_nothing() -> None:
    a = round_record(turn([1e-3] * 6), RoundStats.of(turn([1e-3] * 6)))
    b = repeated_record([turn([1e-3] * 6)])
    (row, *_) = compare_runs({"t": [a]}, {"t": [b]}, SPEC, paired=True)
    assert row.comparison is None
    assert row.note == "no round with a sample on both sides"


def test_turns_that_disagree_widen_the_interval() -> None:
    # Side B is 10 % slower in one turn and 10 % faster in the other: the turns are clusters,
    # so the interval spans both instead of resting on the rounds' agreement within each.
    a = repeated_record([turn(noisy(30, 1e-3, 5)), turn(noisy(30, 1e-3, 6))])
    b = repeated_record([turn(noisy(30, 1.1e-3, 7)), turn(noisy(30, 0.9e-3, 8))])
    rows = compare_runs({"t": [a]}, {"t": [b]}, SPEC, paired=True, processes=2)
    together = compare_runs({"t": [a]}, {"t": [b]}, SPEC, paired=True, processes=1)
    wide, narrow = rows[0].comparison, together[0].comparison
    assert wide is not None
    assert narrow is not None
    assert wide.verdict == "unchanged"
    assert (wide.ci_high - wide.ci_low) > (narrow.ci_high - narrow.ci_low)


def test_the_comparison_says_its_rounds_are_tests_turns() -> None:
    a = repeated_record([turn(noisy(8, 1e-3, 1)), turn(noisy(8, 1e-3, 2))])
    b = repeated_record([turn(noisy(8, 1e-3, 3)), turn(noisy(8, 1e-3, 4))])
    baseline = Baseline("A: main", None, {"t": [a]}, {}, paired=True, processes=2, turns=True)
    current: dict[str, list[TaskRecord]] = {"t": [b]}
    comparison = compare_with_baseline(baseline, current, None, {})
    assert comparison.turns is True
    assert comparison.noise_line().startswith(
        "Noise: paired rounds (each test ran on both sides in turns"
    )
    assert comparison.to_json()["pairedTurns"] is True
    again = type(comparison).from_json(comparison.to_json())
    assert again.turns is True
