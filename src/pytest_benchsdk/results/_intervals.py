"""How sure is a median, a p95, a p99? Bootstrap intervals of the model's statistics, and the
relative summary (the best participant against the others).

Private to :mod:`pytest_benchsdk.results`; :func:`~._analyse.analyse` makes both, once.

The statistics are the model's (upstream's trimmed nearest-rank rule,
:mod:`pytest_benchsdk._stats`), and so are their resamples: a resample of ``n`` values drawn
with replacement is trimmed by the same ``floor(n × trim)`` from each end, so its p95 is one
order statistic of the resample — its rank ``r`` is fixed by ``n`` and ``trim`` alone — and
its median one or the mean of two neighbouring ones.

The bootstrap distribution of an order statistic needs no resampling: the ``r``-th smallest
of ``n`` draws from the sorted sample ``x`` is ``x[ceil(n × U) - 1]`` with ``U`` the ``r``-th
smallest of ``n`` uniform numbers, which is Beta(r, n − r + 1); and the next one up is
``U + (1 − U) × Beta(1, n − r)``. Drawing those (numpy) gives the percentile bootstrap's
distribution for the cost of the draws, whatever ``n``: a few milliseconds for 20,000 draws,
where resampling 1,000 samples 2,000 times takes ten (and 100,000 samples a second).
``tests/analyses/test_statistic_intervals.py`` checks the intervals against resampling.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from .._stats import median_positions, percentile_index, trimmed_range
from ._model import (
    LATENCY,
    ParticipantSummary,
    RelativeRow,
    RelativeSummary,
    StatisticInterval,
)
from ._samples import ParticipantSamples

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DRAWS",
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
#: Draws from each statistic's bootstrap distribution: the interval's bounds are quantiles of
#: these, so their own sampling error is that of a 20,000-resample bootstrap.
DRAWS: Final = 20_000


def statistic_intervals(
    values: Sequence[float],
    trim: float,
    *,
    level: float = LEVEL,
    draws: int = DRAWS,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """The percentile bootstrap interval at ``level`` of the median, p95 and p99 of
    ``values`` (finite numbers) trimmed by ``trim``; each contains the statistic itself (a
    bootstrap distribution of an order statistic can sit to one side of it). Empty for no
    values. The same values and seed give the same intervals."""
    import numpy as np

    n = len(values)
    if n == 0:
        return {}
    ordered: npt.NDArray[np.float64] = np.sort(np.asarray(values, dtype=np.float64))
    first, kept = trimmed_range(n, trim)
    rng = np.random.default_rng(seed)
    tail = (1 - level) / 2
    out: dict[str, tuple[float, float]] = {}
    for statistic in INTERVAL_STATISTICS:
        if statistic == "median":
            low_mid, high_mid = median_positions(kept)
            rank = first + low_mid + 1
            u = rng.beta(rank, n - rank + 1, size=draws)
            point = (ordered[first + low_mid] + ordered[first + high_mid]) / 2
            if low_mid == high_mid:
                drawn = _at(ordered, u)
            else:
                # The next order statistic up: the smallest of the n - rank draws above u.
                above = u + (1 - u) * rng.beta(1, n - rank, size=draws)
                drawn = (_at(ordered, u) + _at(ordered, above)) / 2
        else:
            position = percentile_index(95 if statistic == "p95" else 99, kept)
            rank = first + position + 1
            drawn = _at(ordered, rng.beta(rank, n - rank + 1, size=draws))
            point = ordered[first + position]
        low, high = np.quantile(drawn, [tail, 1 - tail], method="inverted_cdf")
        out[statistic] = (min(float(low), float(point)), max(float(high), float(point)))
    return out


def _at(ordered: npt.NDArray[np.float64], u: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The sorted sample's value at each uniform order statistic ``u`` (``x[ceil(n u) - 1]``)."""
    import numpy as np

    n = ordered.size
    index = np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1)
    result: npt.NDArray[np.float64] = ordered[index]
    return result


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
    from ..compare import DEFAULT_RESAMPLES, compare_samples

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
