"""How sure is a median, a p95, a p99? Bootstrap intervals of the model's statistics, and the
relative summary (the best participant against the others).

Private to :mod:`pytest_benchsdk.results`; :func:`~._analyse.analyse` makes both, once.

The statistics are the model's (upstream's trimmed nearest-rank rule,
:mod:`pytest_benchsdk._analysis.stats`), and so are their resamples: a resample of ``n`` values
drawn with replacement is trimmed by the same ``floor(n × trim)`` from each end, so its p95 is one
order statistic of the resample — its rank ``r`` is fixed by ``n`` and ``trim`` alone — and
its median one or the mean of two neighbouring ones.

The bootstrap distribution of an order statistic needs no resampling, and no draws: the
``r``-th smallest of ``n`` draws from the sorted sample ``x`` is at most ``x[j]`` exactly when
at least ``r`` of the ``n`` draws land on ranks ``0..j``, a binomial tail, which is the
regularized incomplete beta function ``I_{(j+1)/n}(r, n - r + 1)``. Each bound is the first
rank where that passes the tail probability (numpy's ``inverted_cdf`` rule, as on an infinite
number of resamples): a binary search over the ranks, some forty evaluations of a continued
fraction in plain Python, whatever ``n``. The session end of a run therefore loads no numpy
for them (its libraries alone hold about 15 MB of memory).

The median of an even count is the mean of two neighbouring order statistics; it lies between
them in every resample, so the interval from the lower one's lower bound to the upper one's
upper bound holds its exact interval, and is wider by at most the gap to a neighbour at each
end. ``tests/analyses/test_statistic_intervals.py`` checks the intervals against resampling.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from pytest_benchsdk._analysis.stats import median_positions, percentile_index, trimmed_range
from pytest_benchsdk.results._model import (
    LATENCY,
    ParticipantSummary,
    RelativeRow,
    RelativeSummary,
    StatisticInterval,
)
from pytest_benchsdk.results._samples import ParticipantSamples

__all__ = [
    "INTERVAL_STATISTICS",
    "LEVEL",
    "UNSCORED_INTERVAL_METRICS",
    "metric_values",
    "relative_summary",
    "run_intervals",
    "statistic_intervals",
]

#: The statistics that get an interval: the ones every table prints.
INTERVAL_STATISTICS: Final = ("median", "p95", "p99")
#: The intervals' confidence.
LEVEL: Final = 0.95


def statistic_intervals(
    values: Sequence[float],
    trim: float,
    *,
    level: float = LEVEL,
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
        low = ordered[_bootstrap_quantile(n, low_rank, tail)]
        high = ordered[_bootstrap_quantile(n, high_rank, 1 - tail)]
        out[statistic] = (min(low, point), max(high, point))
    return out


def _bootstrap_quantile(n: int, rank: int, q: float) -> int:
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


def metric_values(
    participant: ParticipantSummary,
    metric: str,
    samples: ParticipantSamples | None,
    scored: Mapping[str, Sequence[float]] | None,
) -> list[float]:
    """The samples behind a participant's statistics of ``metric`` (as its summary computed
    them): the latency of the passing iterations, a scored metric as scoring takes it
    (``scored``: :func:`~pytest_benchsdk.scoring.metric_samples` of its records), else the data
    key's samples."""
    if samples is None:
        return []
    if metric == LATENCY:
        return samples.latency()
    if scored is not None and metric in scored:
        return list(scored[metric])
    return samples.metric(metric)


#: Metrics per participant that get intervals besides the latency and the scored ones: each
#: costs a few milliseconds, and a task that measures thousands of keys would otherwise keep the
#: session end busy for minutes.
UNSCORED_INTERVAL_METRICS: Final = 32


def run_intervals(
    participants: Sequence[ParticipantSummary],
    values: Callable[[ParticipantSummary, str], list[float]],
    scored: Sequence[str] = (),
) -> tuple[StatisticInterval, ...]:
    """The intervals of every participant's latency, its ``scored`` metrics and the first
    :data:`UNSCORED_INTERVAL_METRICS` of its other metrics."""
    out: list[StatisticInterval] = []
    for participant in participants:
        facts = [(LATENCY, participant.latency)]
        facts += [(m.key, m.stats) for m in participant.metrics if m.key in scored]
        others = [(m.key, m.stats) for m in participant.metrics if m.key not in scored]
        facts += others[:UNSCORED_INTERVAL_METRICS]
        for key, stats in facts:
            if stats is None:
                continue
            found = statistic_intervals(values(participant, key), stats.trim)
            out.extend(
                StatisticInterval(participant.name, key, statistic, low, high, LEVEL)
                for statistic, (low, high) in found.items()
            )
    return tuple(out)


#: Resamples per side of a relative comparison: compare_samples' default, fewer for large
#: samples (each resample is a sort of n values), never fewer than 200.
_RELATIVE_CELLS: Final = 2_000_000


def relative_summary(
    participants: Sequence[ParticipantSummary],
    metric: str,
    label: str,
    unit: str,
    lower_is_better: bool,
    values: Callable[[ParticipantSummary, str], list[float]],
) -> RelativeSummary | None:
    """The participant with the best median of ``metric`` against each other that ran, with
    :func:`~pytest_benchsdk.compare.compare_samples` (a ratio needs positive medians: a
    participant whose median is not is left out). None with fewer than two."""
    from pytest_benchsdk._analysis.compare import DEFAULT_RESAMPLES, compare_samples

    measured: list[tuple[ParticipantSummary, float, float, list[float]]] = []
    for participant in participants:
        if metric == LATENCY:
            stats = participant.latency
        else:
            found = participant.metric(metric)
            stats = found.stats if found is not None else None
        if stats is None or not stats.median > 0:
            continue
        drawn = values(participant, metric)
        if drawn:
            measured.append((participant, stats.median, stats.trim, drawn))
    if len(measured) < 2:
        return None
    sign = 1 if lower_is_better else -1
    reference, _, trim, base = min(measured, key=lambda m: sign * m[1])
    rows = []
    for participant, _, _, current in measured:
        if participant is reference:
            continue
        n = max(len(base), len(current))
        resamples = max(200, min(DEFAULT_RESAMPLES, _RELATIVE_CELLS // n))
        # The other's median over the reference's: change = other / reference - 1.
        c = compare_samples(
            base,
            current,
            statistic="median",
            lower_is_better=lower_is_better,
            resamples=resamples,
            trim=trim,
        )
        ratio, low, high = 1 + c.change, 1 + c.ci_low, 1 + c.ci_high
        if not lower_is_better:
            ratio, low, high = 1 / ratio, _inverse(high), _inverse(low)
        rows.append(RelativeRow(participant.name, ratio, low, high, c.verdict))
    rows.sort(key=lambda r: r.factor)
    return RelativeSummary(
        reference=reference.name,
        metric=metric,
        label=label,
        unit=unit,
        statistic="median",
        lower_is_better=lower_is_better,
        level=LEVEL,
        rows=tuple(rows),
    )


def _inverse(value: float) -> float:
    return math.inf if value <= 0 else 1 / value
