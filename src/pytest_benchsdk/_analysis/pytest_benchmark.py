"""pytest-benchmark's statistics of a benchmarked test, by its own definitions.

A pytest-benchmark JSON file (``--benchmark-json``, ``.benchmarks/…/NNNN_name.json``) holds per
test ``stats{min, max, mean, stddev, rounds, median, iqr, q1, q3, iqr_outliers,
stddev_outliers, outliers, ld15iqr, hd15iqr, ops, total, iterations}``; readers of those files
(``pytest-benchmark compare``, github-action-benchmark) expect its numbers. So they are computed
here as pytest-benchmark 5 computes them (``pytest_benchmark/stats.py``), from the per-call time
of each round in seconds: ``stddev`` is the sample standard deviation (0 for one round), the
quartiles are Wikipedia's methods 2 (an even count) and 3 (an odd one), Tukey's fences at 1.5
IQR give ``iqr_outliers``, ``ld15iqr`` and ``hd15iqr``, ``stddev_outliers`` counts the rounds
beyond one standard deviation from the mean, ``outliers`` is ``"<stddev>;<iqr>"``.

A record keeps at most a thousand rounds' figures (every k-th round beyond that,
``_engine.rounds.kept_rounds``): the statistics are those of the kept figures, while
``rounds`` is how many rounds ran and ``total`` (the sum of every round's time per call) is
``mean × rounds``, so ``ops`` (``rounds / total``) stays ``1 / mean``.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

__all__ = ["STAT_FIELDS", "fixture_stats"]

#: pytest-benchmark's ``Stats.fields``, in its order, then ``iterations``.
STAT_FIELDS = (
    "min",
    "max",
    "mean",
    "stddev",
    "rounds",
    "median",
    "iqr",
    "q1",
    "q3",
    "iqr_outliers",
    "stddev_outliers",
    "outliers",
    "ld15iqr",
    "hd15iqr",
    "ops",
    "total",
    "iterations",
)


def _q1(data: Sequence[float]) -> float:
    n = len(data)
    if n == 1:
        return data[0]
    if n % 2:  # method 3
        k, q = n // 4, n % 4
        if q == 1:
            return 0.25 * data[k - 1] + 0.75 * data[k]
        return 0.75 * data[k] + 0.25 * data[k + 1]
    return statistics.median(data[: n // 2])  # method 2


def _q3(data: Sequence[float]) -> float:
    n = len(data)
    if n == 1:
        return data[0]
    if n % 2:  # method 3
        k, q = n // 4, n % 4
        if q == 1:
            return 0.75 * data[3 * k] + 0.25 * data[3 * k + 1]
        return 0.25 * data[3 * k + 1] + 0.75 * data[3 * k + 2]
    return statistics.median(data[n // 2 :])  # method 2


def fixture_stats(
    per_call: Sequence[float], *, iterations: int = 1, rounds: int | None = None
) -> dict[str, Any]:
    """pytest-benchmark's ``stats`` of the rounds' time per call ``per_call`` (seconds, in
    run order; not empty): ``rounds`` is how many rounds ran (default: as many as figures)."""
    data = [float(v) for v in per_call]
    if not data:
        raise ValueError("pytest-benchmark's statistics need at least one round")
    ordered = sorted(data)
    n = len(data)
    mean = statistics.mean(data)
    stddev = statistics.stdev(data) if n > 1 else 0.0
    q1, q3 = _q1(ordered), _q3(ordered)
    iqr = q3 - q1
    low_fence, high_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    iqr_outliers = sum(1 for v in data if v < low_fence or v > high_fence)
    stddev_outliers = sum(1 for v in data if v < mean - stddev or v > mean + stddev)
    if n == 1:
        ld15iqr = hd15iqr = data[0]
    else:
        ld15iqr = ordered[bisect_left(ordered, low_fence)]
        hd15iqr = ordered[bisect_right(ordered, high_fence) - 1]
    count = n if rounds is None or rounds < n else rounds
    total = math.fsum(data) if count == n else mean * count
    return {
        "min": ordered[0],
        "max": ordered[-1],
        "mean": mean,
        "stddev": stddev,
        "rounds": count,
        "median": statistics.median(ordered),
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": iqr_outliers,
        "stddev_outliers": stddev_outliers,
        "outliers": f"{stddev_outliers};{iqr_outliers}",
        "ld15iqr": ld15iqr,
        "hd15iqr": hd15iqr,
        "ops": count / total if total else 0,
        "total": total,
        "iterations": iterations,
    }
