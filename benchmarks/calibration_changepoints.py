"""Calibrate ``change_points`` (e-divisive means with a permutation test) on synthetic histories.

A history is a series of one statistic over runs, each run's value ``100 × noise``:

* **False positives**: stationary series (no change at all) of ``n`` runs, noise normal with a
  5 % standard deviation, lognormal (σ = 0.05) with 5 % outlier runs at +40 %, and AR(1)
  drift (φ = 0.5, the runs are not exchangeable); the share of series given any change point
  (target: at most ``alpha`` = 5 % for exchangeable noise).
* **Detection**: a step of +5 %, +10 % or +20 % after ``n - after`` runs of normal 5 % noise;
  the share of series with a change point within one run of the step, in its direction, and
  the share of series that also got a change point more than three runs away from it.
* **Speed**: one series of 100 and of 500 runs (``pytest-benchsdk history`` shows 100 by
  default), best of three.

Run: ``python benchmarks/calibration_changepoints.py [--series N] [--seed N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from pytest_benchsdk.compare import change_points

MIN_CHANGE = 0.02  # what pytest-benchsdk history uses: the comparisons' noise threshold


def normal(rng: np.random.Generator, n: int) -> np.ndarray:
    return 100 * (1 + rng.normal(0, 0.05, n))


def outliers(rng: np.random.Generator, n: int) -> np.ndarray:
    values = 100 * rng.lognormal(0, 0.05, n)
    values[rng.random(n) < 0.05] *= 1.4
    return values


def drift(rng: np.random.Generator, n: int) -> np.ndarray:
    e = np.empty(n)
    e[0] = rng.normal(0, 0.05)
    for i in range(1, n):
        e[i] = 0.5 * e[i - 1] + rng.normal(0, 0.05 * np.sqrt(1 - 0.25))
    return 100 * (1 + e)


def false_positive_rate(
    make: Callable[[np.random.Generator, int], np.ndarray], n: int, count: int, seed: int
) -> float:
    rng = np.random.default_rng(seed)
    hits = sum(
        bool(change_points(make(rng, n), min_change=MIN_CHANGE, seed=i)) for i in range(count)
    )
    return hits / count


def detection(n: int, after: int, step: float, count: int, seed: int) -> tuple[float, float]:
    """(share found at the step in its direction, share with another change point too)."""
    rng = np.random.default_rng(seed)
    at = n - after
    found = extra = 0
    for i in range(count):
        values = normal(rng, n)
        values[at:] *= 1 + step
        points = change_points(values, min_change=MIN_CHANGE, seed=i)
        right = [p for p in points if abs(p.index - at) <= 1 and p.after > p.before]
        found += bool(right)
        extra += any(abs(p.index - at) > 3 for p in points)
    return found / count, extra / count


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=300, help="series per cell")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    count, seed = args.series, args.seed

    print(f"change_points: alpha 0.05, 199 permutations, min size 2, min change {MIN_CHANGE:.0%}")
    print(f"{count} series per cell, seed {seed}\n")
    print("false positives (stationary series: share with any change point)")
    print(f"{'runs':>6}  {'normal 5 %':>11}  {'outlier runs':>12}  {'AR(1) drift':>11}")
    for n in (10, 20, 50, 100):
        rates = [
            false_positive_rate(make, n, count, seed + n) for make in (normal, outliers, drift)
        ]
        print(f"{n:>6}  " + "  ".join(f"{r:>11.1%}" for r in rates))
    print("\ndetection (normal 5 % noise; found: a change point within one run of the step)")
    print(f"{'runs':>6}  {'after':>5}  {'step':>5}  {'found':>6}  {'also elsewhere':>14}")
    for n, after in ((10, 5), (30, 15), (30, 5), (30, 3), (30, 2), (100, 10)):
        for step in (0.05, 0.10, 0.20):
            found, extra = detection(n, after, step, count, seed + n + after)
            print(f"{n:>6}  {after:>5}  {step:>+5.0%}  {found:>6.1%}  {extra:>14.1%}")
    rng = np.random.default_rng(seed)
    for n in (100, 500):
        values = normal(rng, n)
        values[n // 2 :] *= 1.1
        seconds = best_of(3, lambda v=values: change_points(v, min_change=MIN_CHANGE))
        print(f"\nspeed: one series of {n} runs with one step: {seconds * 1000:.0f} ms")


if __name__ == "__main__":
    main()
