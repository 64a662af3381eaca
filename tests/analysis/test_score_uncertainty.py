"""Tests of pytest_benchsdk.compare.score_uncertainty and tied_with_above: real score() runs."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_benchsdk.compare import (
    DEFAULT_SCORE_RESAMPLES,
    ScoreUncertainty,
    score_uncertainty,
    tied_with_above,
)
from pytest_benchsdk.records import ParticipantRecords, TaskRecord
from pytest_benchsdk.scoring import ScoringSpec, lower_is_better, score

WEIGHTS = {"median": 0.6, "p95": 0.25, "p99": 0.15}
SPEC = ScoringSpec([lower_is_better("ms", ceiling=1000, weights=WEIGHTS)])


@attrs.frozen
class Outcome:
    participants: Sequence[ParticipantRecords]


def participant(
    name: str, median_ms: float, n: int = 200, seed: int = 0, failures: int = 0
) -> ParticipantRecords:
    values = np.random.default_rng(seed).lognormal(math.log(median_ms), 0.2, n).tolist()
    records = [
        TaskRecord(
            task_index=i,
            status="error" if i < failures else "success",
            data={"ms": value, "region": ("eu", "us")[i % 2]},
        )
        for i, value in enumerate(values)
    ]
    return ParticipantRecords(name, records)


def by_name(results: list[ScoreUncertainty]) -> dict[str, ScoreUncertainty]:
    return {u.participant: u for u in results}


def test_point_estimates_are_upstreams_scores_and_inside_their_intervals() -> None:
    outcome = Outcome([participant("slow", 400, seed=1), participant("fast", 100, seed=2)])
    results = score_uncertainty(outcome, SPEC, resamples=100)
    rows = {row.provider: row for row in score(outcome, SPEC)}
    assert [u.participant for u in results] == ["fast", "slow"]  # ranking order
    for u in results:
        assert u.score == rows[u.participant].composite_score
        assert u.low <= u.score <= u.high
        assert u.high - u.low < 10
        assert (u.level, u.resamples) == (0.95, 100)
    assert [u.rank for u in results] == [1, 2]


def test_a_clear_winner_ranks_first_in_every_resample() -> None:
    outcome = Outcome([participant("slow", 400, seed=1), participant("fast", 100, seed=2)])
    results = by_name(score_uncertainty(outcome, SPEC, resamples=100))
    # The shares run from the best rank taken to the worst: one rank each here.
    assert (results["fast"].first_rank, results["fast"].rank_probabilities) == (1, (1.0,))
    assert (results["slow"].first_rank, results["slow"].rank_probabilities) == (2, (1.0,))
    assert [results["slow"].rank_probability(rank) for rank in (1, 2, 3)] == [0.0, 1.0, 0.0]
    assert tied_with_above(list(results.values())) == {}


def test_near_equal_participants_share_ranks_and_are_tied() -> None:
    outcome = Outcome(
        [
            participant("a", 200, seed=1),
            participant("b", 201, seed=2),
            participant("far", 600, seed=3),
        ]
    )
    results = score_uncertainty(outcome, SPEC, resamples=100)
    named = by_name(results)
    assert 0.05 < named["a"].rank_probability(1) < 0.95
    assert named["far"].rank_probability(3) == 1.0
    top, second = results[0].participant, results[1].participant
    assert tied_with_above(results) == {second: top}
    assert tied_with_above(results[::-1]) == {second: top}  # read by rank, not by position


def test_rank_probabilities_sum_to_one_per_participant() -> None:
    outcome = Outcome([participant(f"p{i}", 200 + 5 * i, seed=i) for i in range(5)])
    for u in score_uncertainty(outcome, SPEC, resamples=50):
        assert 1 <= u.first_rank <= u.first_rank + len(u.rank_probabilities) - 1 <= 5
        assert u.rank_probabilities[0] > 0
        assert u.rank_probabilities[-1] > 0
        assert math.fsum(u.rank_probabilities) == pytest.approx(1.0)


def test_the_same_seed_gives_the_same_result() -> None:
    outcome = Outcome([participant("a", 200, seed=1), participant("b", 210, seed=2)])
    first = score_uncertainty(outcome, SPEC, resamples=40, seed=3)
    assert score_uncertainty(outcome, SPEC, resamples=40, seed=3) == first
    assert score_uncertainty(outcome, SPEC, resamples=40, seed=4) != first


def test_failures_are_resampled_too() -> None:
    # Half the records fail: the success rate varies between resamples, so does the score.
    outcome = Outcome([participant("flaky", 200, seed=1, failures=100)])
    (flaky,) = score_uncertainty(outcome, SPEC, resamples=100)
    all_pass = Outcome([participant("steady", 200, seed=1)])
    (steady,) = score_uncertainty(all_pass, SPEC, resamples=100)
    assert flaky.high - flaky.low > 2 * (steady.high - steady.low)


def test_group_by_scores_the_aggregate_row() -> None:
    outcome = Outcome([participant("a", 200, seed=1), participant("b", 300, seed=2)])
    grouped = attrs.evolve(SPEC, group_by="region")
    results = by_name(score_uncertainty(outcome, grouped, resamples=30))
    aggregates: dict[str, float] = {}
    for row in score(outcome, grouped):
        aggregates.setdefault(row.provider, row.composite_score)
    assert {name: u.score for name, u in results.items()} == aggregates
    assert by_name(score_uncertainty(outcome, SPEC, resamples=30)) == results


def test_a_participant_without_records_is_skipped_last_and_never_tied() -> None:
    outcome = Outcome([ParticipantRecords("empty", ()), participant("a", 200, seed=1)])
    results = score_uncertainty(outcome, SPEC, resamples=20)
    assert [u.participant for u in results] == ["a", "empty"]
    empty = results[1]
    assert empty.skipped
    assert (empty.score, empty.low, empty.high, empty.rank) == (0.0, 0.0, 0.0, 2)
    assert (empty.first_rank, empty.rank_probabilities) == (2, (1.0,))
    assert tied_with_above(results) == {}


def test_accepts_a_mapping_spec_and_display_metrics() -> None:
    outcome = Outcome([participant("a", 200, seed=1)])
    spec = {"metrics": list(SPEC.metrics)}
    (u,) = score_uncertainty(outcome, spec, display_metrics=[{"key": "ms", "unit": "ms"}])
    assert u.resamples == DEFAULT_SCORE_RESAMPLES
    assert u.score == score(outcome, SPEC)[0].composite_score


def test_to_json() -> None:
    outcome = Outcome([participant("a", 200, seed=1), participant("b", 300, seed=2)])
    data = score_uncertainty(outcome, SPEC, resamples=10)[0].to_json()
    assert set(data) == {
        "participant",
        "score",
        "low",
        "high",
        "rank",
        "rankProbabilities",
        "skipped",
        "level",
        "resamples",
        "samples",
        "firstRank",
    }
    json.dumps(data, allow_nan=False)


@settings(max_examples=25, deadline=None)
@given(
    medians=st.lists(st.floats(10, 900), min_size=1, max_size=4),
    sizes=st.lists(st.integers(1, 30), min_size=4, max_size=4),
    seed=st.integers(0, 1000),
)
def test_intervals_contain_the_point_and_probabilities_sum_to_one(
    medians: list[float], sizes: list[int], seed: int
) -> None:
    outcome = Outcome(
        [
            participant(f"p{i}", median, n=sizes[i], seed=seed + i)
            for i, median in enumerate(medians)
        ]
    )
    results = score_uncertainty(outcome, SPEC, resamples=20, seed=seed)
    assert sorted(u.rank for u in results) == list(range(1, len(medians) + 1))
    for u in results:
        assert u.low <= u.score <= u.high
        assert math.fsum(u.rank_probabilities) == pytest.approx(1.0)
    for below, above in tied_with_above(results).items():
        b, a = by_name(results)[below], by_name(results)[above]
        assert b.rank == a.rank + 1
        assert b.low <= a.high


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"level": 0}, "level must be between 0 and 1"),
        ({"level": 1.0}, "level must be between 0 and 1"),
        ({"resamples": 0}, "resamples must be an int >= 1"),
        ({"seed": -1}, "seed must be an int >= 0"),
    ],
)
def test_bad_arguments_are_clear_value_errors(kwargs: dict[str, object], message: str) -> None:
    outcome = Outcome([participant("a", 200, n=5)])
    with pytest.raises(ValueError, match=message):
        score_uncertainty(outcome, SPEC, **kwargs)  # type: ignore[arg-type]


def _pairwise_ranks(composites: np.ndarray, skipped: np.ndarray) -> np.ndarray:
    """The ranks by their definition: 1 + the participants ranked strictly above."""
    rows, n = composites.shape
    ranks = np.ones((rows, n), dtype=np.int64)
    for r in range(rows):
        for i in range(n):
            for j in range(n):
                below_kind = skipped[i] and not skipped[j]
                same_kind_higher = skipped[i] == skipped[j] and composites[r, j] > composites[r, i]
                ranks[r, i] += int(below_kind or same_kind_higher)
    return ranks


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.lists(
            st.sampled_from([0.0, 10.0, 10.5, 50.0, math.nan, math.inf]), min_size=5, max_size=5
        ),
        min_size=1,
        max_size=6,
    ),
    skipped=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_ranks_from_a_sort_are_the_pairwise_ranks(
    values: list[list[float]], skipped: list[bool]
) -> None:
    from pytest_benchsdk._analysis.uncertainty import _competition_ranks

    composites = np.array(values, dtype=np.float64)
    flags = np.array(skipped, dtype=bool)
    assert (_competition_ranks(composites, flags) == _pairwise_ranks(composites, flags)).all()


def test_many_participants_scale_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 48, item 8: 10,000 participants of one record each (a sweep over many
    configurations) took minutes; a one-record participant resamples to itself, so it is
    scored once, not once per resample, and its rank shares are a few, not one per participant."""
    from pytest_benchsdk._analysis import scoring

    scored: list[str] = []
    real = scoring._score_participant

    def counting(participant: ParticipantRecords, *args: object) -> object:
        scored.append(participant.participant)
        return real(participant, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(scoring, "_score_participant", counting)
    n, resamples = 300, 50
    outcome = Outcome(
        [participant(f"p{i}", 100 + i, n=1, seed=i) for i in range(n)]
        + [participant("many", 200, n=20, seed=1)]
    )
    results = score_uncertainty(outcome, SPEC, resamples=resamples)
    # Each participant scored for its point and once more for its resamples; the one with
    # 20 records once per resample.
    assert len(scored) == 2 * (n + 1) + resamples - 1
    assert sum(len(u.rank_probabilities) for u in results) <= 2 * (n + 1)
    assert sorted(u.rank for u in results) == list(range(1, n + 2))
    for u in results:
        assert math.fsum(u.rank_probabilities) == pytest.approx(1.0)
