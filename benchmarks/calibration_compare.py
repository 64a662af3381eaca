"""Calibrate ``compare_samples`` and time it, and time ``score_uncertainty``.

Calibration: lognormal samples (sigma 0.2), ``--n`` per side, ``--pairs`` pairs per row.
``identical`` draws both sides from one distribution: a flag either way is a false alarm
(target <= 5 %). ``+20 %`` scales the current side by 1.2: it should be flagged ``regressed``
(target >= 90 % for the median). Each statistic untrimmed and trimmed 5 % (``trim=0.05``, the
scores' percentile rule, which ``--bench-compare`` uses; the mean is never trimmed).

Speed: ``compare_samples`` for 10 participants x 3 metrics x (median, p95) with 1,000 samples
per side and the default resamples (target <= 2 s in total), and ``score_uncertainty`` for
10 participants x 1,000 records (3 metrics) x 200 resamples. Best of ``--repeat`` runs.

Run: ``python benchmarks/calibration_compare.py [--seed N] [--pairs N] [--n N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from pytest_benchsdk.compare import (
    DEFAULT_RESAMPLES,
    Statistic,
    compare_samples,
    score_uncertainty,
)
from pytest_benchsdk.records import ParticipantRecords, TaskRecord
from pytest_benchsdk.scoring import ScoringSpec, lower_is_better

SIGMA = 0.2
SHIFT = 1.2
STATISTICS: tuple[Statistic, ...] = ("median", "p95", "mean")


def calibration_rows(
    seed: int, pairs: int, n: int, trim: float = 0.0
) -> list[tuple[str, float, float]]:
    """Per statistic: share of identical pairs flagged either way, share of +20 % pairs
    flagged regressed."""
    rng = np.random.default_rng(seed)
    identical = [(rng.lognormal(0, SIGMA, n), rng.lognormal(0, SIGMA, n)) for _ in range(pairs)]
    shifted = [
        (rng.lognormal(0, SIGMA, n), rng.lognormal(0, SIGMA, n) * SHIFT) for _ in range(pairs)
    ]
    rows: list[tuple[str, float, float]] = []
    for statistic in STATISTICS:
        false_alarms = sum(
            compare_samples(a, b, statistic=statistic, trim=trim).verdict != "unchanged"
            for a, b in identical
        )
        detected = sum(
            compare_samples(a, b, statistic=statistic, trim=trim).verdict == "regressed"
            for a, b in shifted
        )
        rows.append((statistic, false_alarms / pairs, detected / pairs))
    return rows


def compare_workload(seed: int) -> Callable[[], object]:
    """10 participants x 3 metrics x (median, p95), 1,000 samples per side."""
    rng = np.random.default_rng(seed)
    sides = [
        (rng.lognormal(5, SIGMA, 1000), rng.lognormal(5, SIGMA, 1000) * 1.05) for _ in range(30)
    ]

    def run() -> object:
        return [
            compare_samples(baseline, current, statistic=statistic)
            for baseline, current in sides
            for statistic in ("median", "p95")
        ]

    return run


class _Outcome:
    def __init__(self, participants: list[ParticipantRecords]) -> None:
        self.participants = participants


def uncertainty_workload(seed: int) -> Callable[[], object]:
    """10 participants x 1,000 records with 3 metrics, 200 resamples."""
    rng = np.random.default_rng(seed)
    participants = []
    for p in range(10):
        values = rng.lognormal(6 + p * 0.01, 0.3, (1000, 3)).tolist()
        records = [
            TaskRecord(
                task_index=i,
                status="success" if i % 50 else "error",
                data={"a": a, "b": b, "c": c},
            )
            for i, (a, b, c) in enumerate(values)
        ]
        participants.append(ParticipantRecords(f"provider-{p}", records))
    outcome = _Outcome(participants)
    weights = {"median": 0.2, "p95": 0.1, "p99": 1 / 30}
    spec = ScoringSpec([lower_is_better(key, ceiling=2000, weights=weights) for key in "abc"])
    return lambda: score_uncertainty(outcome, spec, resamples=200)


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--n", type=int, default=50, help="samples per side (calibration)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(
        f"calibration: lognormal sigma={SIGMA}, n={args.n} per side, {args.pairs} pairs, "
        f"alpha=0.05, noise threshold 2 %, {DEFAULT_RESAMPLES} resamples"
    )
    print(f"{'statistic':<10} {'trim':>5} {'identical: flagged':>19} {'+20 %: regressed':>17}")
    for trim in (0.0, 0.05):
        for statistic, false_alarms, detected in calibration_rows(
            args.seed, args.pairs, args.n, trim
        ):
            print(f"{statistic:<10} {trim:>5.0%} {false_alarms:>19.1%} {detected:>17.1%}")

    compare_seconds = best_of(args.repeat, compare_workload(args.seed))
    print(
        f"compare_samples, 60 comparisons (10 x 3 metrics x median/p95, 1,000 per side): "
        f"{compare_seconds:.2f} s (target <= 2 s), {compare_seconds / 60 * 1000:.1f} ms each"
    )
    uncertainty_seconds = best_of(args.repeat, uncertainty_workload(args.seed))
    print(
        f"score_uncertainty, 10 participants x 1,000 records x 3 metrics, 200 resamples: "
        f"{uncertainty_seconds:.2f} s"
    )


if __name__ == "__main__":
    main()
