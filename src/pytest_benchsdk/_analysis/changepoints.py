"""Change points in a series of runs: where a statistic shifted and stayed shifted.

Public home: :mod:`pytest_benchsdk.compare` (:func:`change_points`, :class:`ChangePoint`).

The method is **e-divisive means** (Matteson & James, "A nonparametric approach for multiple
change point analysis of multivariate data", JASA 2014), the method behind MongoDB's and Apache
Otava's (formerly Hunter) regression detection, with its **permutation test** for significance:

1. For a segment ``z`` of the series and each split ``τ`` into ``x = z[:τ]`` and ``y = z[τ:]``
   (each at least ``min_size`` long), the energy statistic ``Q(τ) = (n·m / (n + m)) · ê(x, y)``
   with ``ê = 2·mean|x_i − y_j| − mean_{i<k}|x_i − x_k| − mean_{j<k}|y_j − y_k|`` measures how
   far apart the two halves' distributions are. The best split of the series is the one with
   the largest ``Q`` over every current segment.
2. It is significant when ``Q`` is larger than what shuffling tells: each current segment is
   permuted ``permutations`` times, the largest ``Q`` of every permuted series is computed the
   same way, and ``p = (1 + #{permuted ≥ observed}) / (permutations + 1)``. A split with
   ``p ≤ alpha`` is kept and the search goes on in the new segments; the first split that is not
   significant ends it.
3. Change points whose segments' medians differ by less than ``min_change`` (relative) are
   merged away, smallest first (Otava's merge step uses a minimum magnitude likewise).

Why this and not a penalised segmentation (asv's): the permutation test's false-alarm rate is
``alpha`` for any distribution of the runs' statistics, heavy tails and outlier runs included,
as long as the runs are exchangeable, so its one knob means what it says; a penalty has no such
reading and must be tuned to each series' noise. Run histories are short (tens to hundreds of
runs), so a few hundred permutations per step are cheap (numpy, vectorised; drawn by
the one resampling engine, :mod:`~pytest_benchsdk._analysis.resampling`).

Under the null (no change at all) the first test is exact: a stationary series gets a change
point in at most ``alpha`` of cases (``benchmarks/calibration_changepoints.py`` measures it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from pytest_benchsdk._analysis.resampling import generator, random_permutations

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DEFAULT_PERMUTATIONS",
    "ChangePoint",
    "change_points",
    "fewest_runs",
]

#: Permutations per significance test: p-values down to 1/200 = 0.005.
DEFAULT_PERMUTATIONS: Final = 199
# Distance matrices are computed for this many cells at most at once (float64: 8 MB).
_MAX_CELLS: Final = 1_000_000
# The sequential permutation test: batches of this many, stopping after this many permuted
# statistics reach the observed one.
_BATCH: Final = 20
_STOP_AFTER: Final = 10


@attrs.frozen
class ChangePoint:
    """Where a series shifted: ``index`` is the position of the first value of the new regime;
    ``before``/``after`` are the medians of the segments on either side (between the
    neighbouring change points); ``p_value`` is the permutation test's when the split was
    found."""

    index: int
    before: float
    after: float
    p_value: float

    @property
    def change(self) -> float:
        """``after / before - 1`` (``(after - before) / |before|`` for a negative ``before``;
        NaN when ``before`` is 0)."""
        if self.before == 0:
            return math.nan
        return (self.after - self.before) / abs(self.before)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "before": self.before,
            "after": self.after,
            "change": None if math.isnan(self.change) else self.change,
            "pValue": self.p_value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChangePoint:
        return cls(
            int(data["index"]), float(data["before"]), float(data["after"]), float(data["pValue"])
        )


def fewest_runs(alpha: float = 0.05, min_size: int = 2) -> int:
    """The shortest series in which a change can be significant at ``alpha``: shuffling
    ``n`` values puts the ``k`` of a new regime at either end in ``2 / C(n, k)`` of cases, so
    with 7 runs no split is ever below 5 % (``2 / C(7, 3) = 0.057``) and 8 are needed."""
    n = 2 * min_size
    while 2 / math.comb(n, n // 2) > alpha:
        n += 1
    return n


def change_points(
    values: Iterable[float],
    *,
    alpha: float = 0.05,
    permutations: int = DEFAULT_PERMUTATIONS,
    min_size: int = 2,
    min_change: float = 0.0,
    seed: int = 0,
) -> tuple[ChangePoint, ...]:
    """The change points of ``values`` (a series in time order), first to last.

    * ``alpha``: significance level of each permutation test (a stationary series gets any
      change point in at most ``alpha`` of cases).
    * ``permutations``: shuffles per test; seeded (``seed``), so the same series gives the same
      answer.
    * ``min_size``: the fewest values a segment may have (a change in the last
      ``min_size - 1`` values cannot be seen yet).
    * ``min_change``: change points whose neighbouring segments' medians differ by less than
      this (relative, e.g. ``0.02``) are dropped.

    Raises ``ValueError`` for a value that is not a finite number, ``alpha`` outside (0, 1),
    ``permutations < 1``, ``min_size < 1``, a negative ``min_change`` or ``seed``.
    """
    import numpy as np

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, exclusive (got {alpha!r})")
    for name, number, least in (
        ("permutations", permutations, 1),
        ("min_size", min_size, 1),
        ("seed", seed, 0),
    ):
        if isinstance(number, bool) or not isinstance(number, int) or number < least:
            raise ValueError(f"{name} must be an int >= {least} (got {number!r})")
    if not (isinstance(min_change, (int, float)) and math.isfinite(min_change) and min_change >= 0):
        raise ValueError(f"min_change must be a finite number >= 0 (got {min_change!r})")
    try:
        series = np.array(list(values), dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"values must be numbers ({error})") from None
    if series.ndim != 1:
        raise ValueError(f"values must be a flat sequence of numbers (got shape {series.shape})")
    if not np.all(np.isfinite(series)):
        raise ValueError("values must be finite numbers (drop NaN and ±inf first)")

    if series.size < 2 * min_size:
        return ()
    found = _split(series, alpha, permutations, min_size, seed)
    return _merged(series, found, min_change)


@attrs.define
class _Segment:
    """One segment of the series under test: its best split and the largest Q of each
    permutation of it drawn so far (a stream seeded by the segment's place, so the answer does
    not depend on the order segments are tested in)."""

    values: npt.NDArray[np.float64]
    min_size: int
    rng: np.random.Generator
    split: int = 0
    q: float = 0.0
    permuted: list[float] = attrs.Factory(list)

    def draw(self, count: int) -> list[float]:
        """The first ``count`` permutations' largest Q."""
        n = self.values.size
        rows = max(1, _MAX_CELLS // (n * n))
        while len(self.permuted) < count:
            batch = min(rows, count - len(self.permuted))
            order = random_permutations(self.rng, batch, n)
            self.permuted.extend(_q_values(self.values[order], self.min_size).max(axis=1))
        return self.permuted[:count]


def _split(
    series: npt.NDArray[np.float64], alpha: float, permutations: int, min_size: int, seed: int
) -> dict[int, float]:
    """Significant splits (index → p-value), found one at a time."""
    import numpy as np

    bounds = [0, series.size]
    found: dict[int, float] = {}
    segments: dict[tuple[int, int], _Segment] = {}
    while True:
        testable = []
        for start, end in itertools.pairwise(bounds):
            if end - start < 2 * min_size:
                continue
            if (start, end) not in segments:
                values = series[start:end]
                q = _q_values(values[np.newaxis, :], min_size)[0]
                best = int(np.argmax(q))
                segments[(start, end)] = _Segment(
                    values,
                    min_size,
                    generator(seed, start, end),
                    start + min_size + best,
                    float(q[best]),
                )
            testable.append(segments[(start, end)])
        if not testable:
            return found
        candidate = max(testable, key=lambda segment: segment.q)
        p_value = _p_value(candidate.q, testable, permutations)
        if p_value > alpha:
            return found
        found[candidate.split] = p_value
        bounds = sorted([*bounds, candidate.split])


def _p_value(observed: float, segments: Sequence[_Segment], permutations: int) -> float:
    """The permutation test of the largest Q over ``segments`` (each permuted within itself).

    Sequential (Besag & Clifford 1991): permutations are drawn in batches and the test stops
    once :data:`_STOP_AFTER` of them reach the observed Q, with ``p = h / l``; otherwise
    ``p = (1 + exceedances) / (permutations + 1)``. A test that stops early could never have
    been significant at 5 % with 199 permutations (ten exceedances already give p > 0.05), so
    the verdicts are those of the full test; stable series, the common case, cost a tenth."""
    import numpy as np

    done = exceeded = 0
    while done < permutations:
        upto = min(permutations, done + _BATCH)
        null = np.max([segment.draw(upto)[done:upto] for segment in segments], axis=0)
        hits = np.cumsum(null >= observed) + exceeded
        if hits[-1] >= _STOP_AFTER:
            at = int(np.argmax(hits >= _STOP_AFTER))
            return _STOP_AFTER / (done + at + 1)
        exceeded, done = int(hits[-1]), upto
    return (1 + exceeded) / (permutations + 1)


def _q_values(rows: npt.NDArray[np.float64], min_size: int) -> npt.NDArray[np.float64]:
    """``Q(τ)`` for ``τ = min_size … n - min_size`` of each row (rows × splits).

    With ``W(τ)`` the sum of ``|z_i - z_k|`` over pairs ``i < k < τ`` (the left part), ``V(τ)``
    over pairs ``τ ≤ i < k`` (the right part) and ``T`` over all pairs, the cross sum is
    ``T - W - V``: two passes over the distance matrix per row."""
    import numpy as np

    count, n = rows.shape
    distances = np.abs(rows[:, :, np.newaxis] - rows[:, np.newaxis, :])
    # earlier[:, j]: distances of z_j to the values before it; later[:, j]: to those after it.
    earlier = np.einsum("rjk,jk->rj", distances, np.tri(n, n, -1))
    later = distances.sum(axis=2) - earlier
    tau = np.arange(min_size, n - min_size + 1)
    prefix = np.concatenate([np.zeros((count, 1)), np.cumsum(earlier, axis=1)], axis=1)
    suffix = np.concatenate(
        [np.cumsum(later[:, ::-1], axis=1)[:, ::-1], np.zeros((count, 1))], axis=1
    )
    within_left, within_right = prefix[:, tau], suffix[:, tau]
    cross = prefix[:, n][:, np.newaxis] - within_left - within_right
    left, right = tau.astype(float), (n - tau).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_left = np.where(left > 1, 2 * within_left / (left * (left - 1)), 0.0)
        mean_right = np.where(right > 1, 2 * within_right / (right * (right - 1)), 0.0)
    energy = 2 * cross / (left * right) - mean_left - mean_right
    result: npt.NDArray[np.float64] = left * right / n * energy
    return result


def _merged(
    series: npt.NDArray[np.float64], found: Mapping[int, float], min_change: float
) -> tuple[ChangePoint, ...]:
    """The change points with their segments' medians; those smaller than ``min_change``
    dropped one at a time (the smallest first: its neighbours' segments grow)."""
    import numpy as np

    kept = sorted(found)
    while True:
        bounds = [0, *kept, series.size]
        medians = [float(np.median(series[a:b])) for a, b in itertools.pairwise(bounds)]
        points = [
            ChangePoint(index, medians[i], medians[i + 1], found[index])
            for i, index in enumerate(kept)
        ]
        # A change from a median of 0 has no relative size: it stays.
        small = [p for p in points if abs(p.change) < min_change]
        if not small:
            return tuple(points)
        kept.remove(min(small, key=lambda p: abs(p.change)).index)
