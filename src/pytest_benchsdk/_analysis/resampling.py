"""The one resampling engine of the analyses: every random draw, and every bootstrap interval.

Its callers say *what* to resample; this module says *how*:

* **The seeds.** :func:`generator` is the one seeded source of random numbers (a numpy
  ``Generator``); the same seed (and stream) gives the same draws, so every result that
  resamples is reproducible. :func:`check_seed` and :func:`check_resamples` hold the one rule
  for the arguments that set them.
* **Resamples of one sample**, for statistics numpy computes on a whole matrix at once
  (:func:`~pytest_benchsdk.compare.compare_samples`): :func:`bootstrap` draws ``resamples``
  rows of ``n`` positions with replacement, in chunks of at most :data:`MAX_CHUNK_CELLS`
  (int32), so a large sample never needs a ``(resamples × n)`` matrix at once; sorting a row
  of positions into a sorted sample sorts the resample, so every order statistic is a column.
* **Resamples of several groups**, for statistics computed on Python objects
  (:func:`~pytest_benchsdk.compare.score_uncertainty`: the records of each participant):
  :func:`group_resamples` yields one resample at a time, so memory stays one outcome's worth.
  Its draws are numpy's default (int64) integers, one group after the other; the matrix draws
  above are int32. Both streams are pinned by the scores' and the comparisons' tests, so each
  keeps its own.
* **Permutations** (the change points' permutation test): :func:`random_permutations`.
* **The bootstrap's interval**: :func:`percentile_interval` takes the order statistics of a
  drawn distribution (numpy's ``inverted_cdf``, no interpolation, so infinite values stay
  well-defined bounds); :func:`statistic_intervals` gives the same interval of a median, p95
  or p99 exactly, with no draws at all (below).
* **The budget**: :func:`affordable_resamples`, fewer resamples for large samples.

Exact intervals of the order statistics. The statistics are upstream's trimmed nearest-rank
rule (:mod:`pytest_benchsdk._base.percentiles`), and so are their resamples: a resample of
``n`` values drawn with replacement is trimmed by the same ``floor(n × trim)`` from each end,
so its p95 is one order statistic of the resample — its rank ``r`` is fixed by ``n`` and
``trim`` alone — and its median one or the mean of two neighbouring ones. The bootstrap
distribution of an order statistic needs no resampling: the ``r``-th smallest of ``n`` draws
from the sorted sample ``x`` is at most ``x[j]`` exactly when at least ``r`` of the ``n`` draws
land on ranks ``0..j``, a binomial tail, which is the regularized incomplete beta function
``I_{(j+1)/n}(r, n - r + 1)``. Each bound is the first rank where that passes the tail
probability (the ``inverted_cdf`` rule, as on an infinite number of resamples): a binary search
over the ranks, some forty evaluations of a continued fraction in plain Python, whatever ``n``.
The session end of a run therefore loads no numpy for them (its libraries alone hold about
15 MB of memory): numpy is imported only by the functions that draw.

The median of an even count is the mean of two neighbouring order statistics; it lies between
them in every resample, so the interval from the lower one's lower bound to the upper one's
upper bound holds its exact interval, and is wider by at most the gap to a neighbour at each
end. ``tests/analysis/test_statistic_intervals.py`` checks the intervals against resampling.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Final

from pytest_benchsdk._base.percentiles import median_positions, percentile_index, trimmed_range

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "INTERVAL_STATISTICS",
    "MAX_CHUNK_CELLS",
    "affordable_resamples",
    "bootstrap",
    "check_resamples",
    "check_seed",
    "generator",
    "group_resamples",
    "percentile_interval",
    "random_permutations",
    "statistic_intervals",
]

#: Resampled positions drawn at once at the most (int32: 16 MB).
MAX_CHUNK_CELLS: Final = 4_000_000
#: The statistics :func:`statistic_intervals` bounds: the ones every table prints.
INTERVAL_STATISTICS: Final = ("median", "p95", "p99")


# --- seeds -------------------------------------------------------------------------------------


def check_resamples(resamples: int | None, default: int) -> int:
    """``resamples``, or ``default`` for None; ``ValueError`` unless an int >= 1."""
    if resamples is None:
        return default
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(
            f"resamples must be an int >= 1, or None for the default (got {resamples!r})"
        )
    return resamples


def check_seed(seed: int) -> None:
    """``ValueError`` unless ``seed`` is an int >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0 (got {seed!r})")


def generator(seed: int, *stream: int) -> np.random.Generator:
    """The seeded source of every draw: numpy's ``default_rng(seed)``, or with ``stream`` (the
    place a draw is for, e.g. a segment's bounds) ``default_rng([seed, *stream])``, an
    independent stream that does not depend on the order the places are drawn in."""
    import numpy as np

    return np.random.default_rng([seed, *stream] if stream else seed)


# --- draws -------------------------------------------------------------------------------------


def bootstrap(
    rng: np.random.Generator,
    n: int,
    resamples: int,
    statistic: Callable[[npt.NDArray[np.int32]], npt.NDArray[np.float64]],
    *,
    ordered: bool = True,
) -> npt.NDArray[np.float64]:
    """The bootstrap distribution of a statistic of one sample of ``n`` values: its value on
    each of ``resamples`` resamples drawn with replacement.

    ``statistic`` takes a matrix of positions into the sample (one row per resample, ``n``
    columns) and returns the statistic of each row; with ``ordered`` each row is sorted (small
    integers, one vectorised sort), so rows index an already sorted sample in order. Rows are
    drawn in chunks of at most :data:`MAX_CHUNK_CELLS` positions.
    """
    import numpy as np

    chunk_rows = max(1, MAX_CHUNK_CELLS // n)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk_rows):
        rows = min(chunk_rows, resamples - start)
        positions = rng.integers(0, n, size=(rows, n), dtype=np.int32)
        if ordered:
            positions.sort(axis=1)
        out[start : start + rows] = statistic(positions)
    return out


def group_resamples(
    rng: np.random.Generator, sizes: Sequence[int], resamples: int
) -> Iterator[list[list[int]]]:
    """``resamples`` resamples of several groups, one at a time: for each, per group of
    ``sizes`` as many positions into it as it has, drawn with replacement (an empty group
    draws nothing and gets none)."""
    for _ in range(resamples):
        yield [rng.integers(0, size, size=size).tolist() if size else [] for size in sizes]


def random_permutations(rng: np.random.Generator, rows: int, n: int) -> npt.NDArray[np.intp]:
    """``rows`` random permutations of ``range(n)``, one per row."""
    import numpy as np

    return np.argsort(rng.random((rows, n)), axis=1)


def affordable_resamples(n: int, *, cells: int, most: int, least: int) -> int:
    """Resamples of a sample of ``n`` that cost about ``cells`` drawn values: ``cells // n``,
    at least ``least`` and at most ``most``."""
    return max(least, min(most, cells // n))


# --- intervals ---------------------------------------------------------------------------------


def percentile_interval(distribution: npt.NDArray[np.float64], tail: float) -> tuple[float, float]:
    """The percentile bootstrap interval of a drawn ``distribution``: its ``tail`` and
    ``1 - tail`` quantiles, each an order statistic (``inverted_cdf``: no interpolation, so
    infinite values stay well-defined bounds instead of turning into NaN)."""
    import numpy as np

    low, high = np.quantile(distribution, [tail, 1 - tail], method="inverted_cdf")
    return float(low), float(high)


def statistic_intervals(
    values: Sequence[float],
    trim: float,
    *,
    level: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """The percentile bootstrap interval at ``level`` of the median, p95 and p99 of
    ``values`` (finite numbers) trimmed by ``trim``; each contains the statistic itself (a
    bootstrap distribution of an order statistic can sit to one side of it). Empty for no
    values. Exact (no resampling, no random numbers): the same values give the same
    intervals."""
    n = len(values)
    if n == 0:
        return {}
    ordered = sorted(values)
    first, kept = trimmed_range(n, trim)
    tail = (1 - level) / 2
    out: dict[str, tuple[float, float]] = {}
    for statistic in INTERVAL_STATISTICS:
        if statistic == "median":
            low_mid, high_mid = median_positions(kept)
            low_rank, high_rank = first + low_mid + 1, first + high_mid + 1
            point = (ordered[first + low_mid] + ordered[first + high_mid]) / 2
        else:
            position = percentile_index(95 if statistic == "p95" else 99, kept)
            low_rank = high_rank = first + position + 1
            point = ordered[first + position]
        low = ordered[_order_statistic_quantile(n, low_rank, tail)]
        high = ordered[_order_statistic_quantile(n, high_rank, 1 - tail)]
        out[statistic] = (min(low, point), max(high, point))
    return out


def _order_statistic_quantile(n: int, rank: int, q: float) -> int:
    """The sorted sample's index of the ``q`` quantile (inverted CDF) of the ``rank``-th
    smallest of ``n`` draws with replacement: the first index ``j`` whose probability
    ``P(rank-th smallest <= x[j]) = I_{(j+1)/n}(rank, n - rank + 1)`` reaches ``q``."""
    lo, hi = 0, n - 1  # I_1 = 1 >= q: the answer is at most n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _regularized_beta((mid + 1) / n, rank, n - rank + 1) >= q:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _regularized_beta(x: float, a: float, b: float) -> float:
    """``I_x(a, b)``, the regularized incomplete beta function, for ``a, b > 0``: the
    continued fraction of Numerical Recipes (§6.4) by the modified Lentz method, on the side
    of ``x`` where it converges fast (``O(sqrt(max(a, b)))`` terms)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny, epsilon = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 100_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            step = c * d
            fraction *= step
        if abs(step - 1.0) < epsilon:
            break
    return fraction
