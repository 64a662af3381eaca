"""Samples and their statistics: which values count, median/p95/p99, a stat's 0-100 score.

Upstream's math float for float: see :func:`compute_stats` and
:func:`score_stat`. The public home of these names is :mod:`pytest_benchsdk.scoring`.

The percentile rule itself (trim, median positions, nearest rank) is the leaf
:mod:`pytest_benchsdk._base.percentiles`, so that the platform's system metrics follow it too;
its position functions are re-exported here for the analyses.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple, Protocol

from pytest_benchsdk._base.numbers import is_finite
from pytest_benchsdk._base.percentiles import median_positions, percentile_index, trimmed_range

__all__ = [
    "DEFAULT_TRIM",
    "Stats",
    "compute_stats",
    "finite_samples",
    "median_positions",
    "percentile_index",
    "score_stat",
    "stats_of_sorted",
    "trimmed_range",
]

DEFAULT_TRIM: Final = 0.05


def _add_sample(out: list[float], raw: object) -> None:
    # The general rule: a finite number, or each finite number of a list (one level only).
    if isinstance(raw, (list, tuple)):
        out.extend(item for item in raw if is_finite(item))
    elif is_finite(raw):
        out.append(raw)  # type: ignore[arg-type]


_PLAIN_TYPES: Final = frozenset({float, int, type(None)})
_FLOAT_MAX: Final = sys.float_info.max
_not_none: Final = functools.partial(operator.is_not, None)


def finite_samples(raws: list[object]) -> list[float]:
    """The samples in ``raws``: each finite number (never a bool; an int too large for a float
    is JavaScript's Infinity, no sample), and each finite number of a list or tuple (one level
    only); anything else is ignored."""
    # Fast path, all in C: when every raw value is a plain float, int or None (no bools, lists,
    # subclasses), dropping None and keeping math.isfinite is exactly the sampling rule.
    kinds = set(map(type, raws))
    if kinds <= _PLAIN_TYPES:
        plain = list(filter(_not_none, raws)) if type(None) in kinds else raws
        if float not in kinds:
            # Ints only: samples unless one is too large for a float (JavaScript's Infinity).
            if not plain or (min(plain) >= -_FLOAT_MAX and max(plain) <= _FLOAT_MAX):  # type: ignore[type-var, operator]
                return plain  # type: ignore[return-value]
        else:
            try:
                return list(filter(math.isfinite, plain))  # type: ignore[arg-type]
            except OverflowError:
                pass  # an int too large for a float: take the general path
    out: list[float] = []
    for raw in raws:
        _add_sample(out, raw)
    return out


class Stats(NamedTuple):
    """Median, p95 and p99 of a (trimmed) sample."""

    median: float
    p95: float
    p99: float


def stats_of_sorted(values: Sequence[float], trim: float) -> Stats:
    """:func:`compute_stats` of values already sorted (``trim`` not None)."""
    n = len(values)
    if n == 0:
        return Stats(0, 0, 0)
    lo, m = trimmed_range(n, trim)
    low_mid, high_mid = median_positions(m)
    # The odd case reads the one middle value: (v + v) / 2 would overflow for huge v.
    if low_mid == high_mid:
        median = values[lo + low_mid]
    else:
        median = (values[lo + low_mid] + values[lo + high_mid]) / 2
    return Stats(
        median,
        values[lo + percentile_index(95, m)],
        values[lo + percentile_index(99, m)],
    )


def compute_stats(values: Iterable[float], trim: float | None = DEFAULT_TRIM) -> Stats:
    """Median, nearest-rank p95 and p99 of ``values`` after trimming (upstream ``computeStats``).

    ``k = floor(n * trim)`` values are dropped from each end when ``k > 0`` and ``n - 2k > 0``;
    otherwise nothing is (so ``trim >= 0.5``, ``trim <= 0`` and small samples are untrimmed).
    ``trim=None`` means the default 0.05. An empty input gives ``Stats(0, 0, 0)``.
    """
    return stats_of_sorted(sorted(values), DEFAULT_TRIM if trim is None else trim)


def _js_div(a: float, b: float) -> float:
    # JavaScript division never raises: x/0 is ±Infinity, 0/0 is NaN.
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


class _ScoreStatMetric(Protocol):
    @property
    def ceiling(self) -> float: ...
    @property
    def floor(self) -> float | None: ...
    @property
    def higher_is_better(self) -> bool | None: ...


def score_stat(stat: float, metric: _ScoreStatMetric) -> float:
    """Score one statistic 0–100 against ``metric`` (upstream ``scoreStat``).

    Higher-is-better: 0 at or below ``floor`` (default 0), 100 at or above ``ceiling``, linear
    between. Lower-is-better: ``max(0, 100 * (1 - stat / ceiling))`` — not capped at 100 for
    negative stats, and ``ceiling=0`` gives ``inf``/``nan`` rather than an error (as upstream).
    """
    ceiling = metric.ceiling
    if metric.higher_is_better:
        floor = 0 if metric.floor is None else metric.floor
        if stat <= floor:
            return 0.0
        if stat >= ceiling:
            return 100.0
        return _js_div(stat - floor, ceiling - floor) * 100
    result = 100 * (1 - _js_div(stat, ceiling))
    # Math.max(0, NaN) is NaN (Python's max would return 0).
    if math.isnan(result):
        return result
    return result if result > 0 else 0.0
