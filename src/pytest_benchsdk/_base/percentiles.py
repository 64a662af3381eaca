"""The one percentile rule: upstream's trimmed nearest rank, as positions.

A leaf (it imports nothing of the package), so that every area uses the same rule: the
analyses' statistics (:mod:`pytest_benchsdk._analysis.stats`, and through it scoring,
comparisons, intervals and every table) and the platform's system-metrics percentiles. Sort the
values, drop ``k = floor(n × trim)`` from each end (:func:`trimmed_range`), then the median is
the middle value or the mean of the two middle ones (:func:`median_positions`) and the
``p``-th percentile is the nearest rank, no interpolation (:func:`percentile_index`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "BEST_TAIL_NOTE",
    "median_positions",
    "nearest_rank",
    "percentile_index",
    "statistic_label",
    "trimmed_range",
]

#: What the views say under a table with a higher-is-better metric (marked ``↑``).
BEST_TAIL_NOTE = (
    "↑ higher is better: p95 and p99 are its best 5 % and 1 % of samples (upstream's scoring), "
    "not the worst"
)


def statistic_label(statistic: str, lower_is_better: bool | None) -> str:
    """A statistic's name as the views print it: a higher-is-better metric's ``p95`` and
    ``p99`` are its BEST samples (the percentiles count from the low end, and upstream's scoring
    rewards a high p95 there), so they say so (``p95 (best 5 %)``); every other statistic is
    its bare name. The numbers and the wire format keep upstream's names."""
    if lower_is_better is False and statistic in ("p95", "p99"):
        return f"{statistic} (best {100 - int(statistic[1:])} %)"
    return statistic


def percentile_index(p: int, m: int) -> int:
    """Position of the nearest-rank ``p``-th percentile among ``m`` sorted values (``m > 0``):
    ``max(0, ceil(p / 100 × m) − 1)``, clamped to ``m − 1``.

    No interpolation; ``(p / 100) * m`` mirrors upstream's float arithmetic.
    """
    return min(max(0, math.ceil(p / 100 * m) - 1), m - 1)


def nearest_rank(sorted_values: Sequence[float], p: int) -> float:
    """The nearest-rank ``p``-th percentile of ``sorted_values`` (sorted ascending, not
    empty), untrimmed."""
    return sorted_values[percentile_index(p, len(sorted_values))]


def median_positions(m: int) -> tuple[int, int]:
    """The two positions among ``m`` sorted values (``m > 0``) whose mean is the median: the
    middle one twice for odd ``m``, the two middle ones for even ``m``."""
    mid = m // 2
    return (mid, mid) if m % 2 else (mid - 1, mid)


def trimmed_range(n: int, trim: float) -> tuple[int, int]:
    """``(first, count)`` of the values that ``trim`` keeps of ``n`` sorted ones: upstream drops
    ``k = floor(n * trim)`` from each end when ``k > 0`` and ``n - 2k > 0``."""
    cut = n * trim
    # NaN/inf never trim (math.floor would raise on them, JS just fails the comparison).
    if math.isfinite(cut) and cut >= 1:
        k = math.floor(cut)
        if n - 2 * k > 0:
            return k, n - 2 * k
    return 0, n
