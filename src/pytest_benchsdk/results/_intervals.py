"""The model's intervals: each participant's :class:`StatisticInterval` of its median, p95 and
p99, and the :class:`RelativeSummary` (the best participant against the others).

Private to :mod:`pytest_benchsdk.results`; :func:`~._analyse.analyse` makes both, once. The
statistics are not computed here: the intervals are the resampling engine's exact bootstrap
intervals (:func:`~pytest_benchsdk._analysis.resampling.statistic_intervals`, of upstream's
trimmed nearest-rank statistics), and the relative summary is
:func:`~pytest_benchsdk.compare.compare_samples` with the engine's resample budget. This
module picks the samples and the metrics, and builds the model's rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from pytest_benchsdk._analysis.resampling import affordable_resamples, statistic_intervals
from pytest_benchsdk.results._model import (
    LATENCY,
    ParticipantSummary,
    RelativeRow,
    RelativeSummary,
    StatisticInterval,
)
from pytest_benchsdk.results._samples import ParticipantSamples

__all__ = [
    "LEVEL",
    "UNSCORED_INTERVAL_METRICS",
    "metric_values",
    "relative_summary",
    "run_intervals",
]

#: The intervals' confidence.
LEVEL: Final = 0.95


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
    :data:`UNSCORED_INTERVAL_METRICS` of its other metrics; none of a metric with one
    sample."""
    out: list[StatisticInterval] = []
    for participant in participants:
        facts = [(LATENCY, participant.latency)]
        facts += [(m.key, m.stats) for m in participant.metrics if m.key in scored]
        others = [(m.key, m.stats) for m in participant.metrics if m.key not in scored]
        facts += others[:UNSCORED_INTERVAL_METRICS]
        for key, stats in facts:
            if stats is None:
                continue
            drawn = values(participant, key)
            if len(drawn) < 2:
                continue  # one value's "interval" is the value: no interval at all
            found = statistic_intervals(drawn, stats.trim, level=LEVEL)
            out.extend(
                StatisticInterval(participant.name, key, statistic, low, high, LEVEL)
                for statistic, (low, high) in found.items()
            )
    return tuple(out)


#: Resamples per side of a relative comparison: compare_samples' default, fewer for large
#: samples (each resample is a sort of n values), never fewer than 200.
_RELATIVE_CELLS: Final = 2_000_000
#: What all of a run's relative comparisons may cost together: up to 20 participants each get
#: :data:`_RELATIVE_CELLS`, more share it (a group of 200 benchmarked tests, say).
_RELATIVE_RUN_CELLS: Final = 20 * _RELATIVE_CELLS


def relative_summary(
    participants: Sequence[ParticipantSummary],
    metric: str,
    label: str,
    unit: str,
    lower_is_better: bool,
    values: Callable[[ParticipantSummary, str], list[float]],
) -> RelativeSummary | None:
    """The participant with the best median of ``metric`` against each other that ran, with
    :func:`~pytest_benchsdk.compare.compare_samples` (a ratio needs positive medians and an
    interval two samples: a participant whose median is not positive, or that has one sample,
    is left out). None with fewer than two."""
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
        # One sample has no interval: a ratio "95 % CI 1.66–1.66×" would claim a certainty
        # nothing measured.
        if len(drawn) >= 2:
            measured.append((participant, stats.median, stats.trim, drawn))
    if len(measured) < 2:
        return None
    sign = 1 if lower_is_better else -1
    reference, _, trim, base = min(measured, key=lambda m: sign * m[1])
    rows = []
    cells = min(_RELATIVE_CELLS, _RELATIVE_RUN_CELLS // (len(measured) - 1))
    for participant, _, _, current in measured:
        if participant is reference:
            continue
        n = max(len(base), len(current))
        resamples = affordable_resamples(n, cells=cells, most=DEFAULT_RESAMPLES, least=200)
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
        rows.append(
            RelativeRow(
                participant.name,
                ratio,
                low,
                high,
                c.verdict,
                decided_by=_decided_by(c.verdict, c.ci_low, c.ci_high, c.p_value, c.alpha),
                p_value=c.p_value,
                alpha=c.alpha,
                noise_threshold=c.noise_threshold,
            )
        )
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


def _decided_by(
    verdict: str, ci_low: float, ci_high: float, p_value: float, alpha: float
) -> str | None:
    """What made an ``unchanged`` verdict whose interval of the change leaves out 0 (of the
    ratio: 1×): the rank test, or the noise threshold; None when the interval says it."""
    if verdict != "unchanged" or ci_low <= 0 <= ci_high:
        return None
    return "mann-whitney" if p_value >= alpha else "noise-threshold"


def _inverse(value: float) -> float:
    return math.inf if value <= 0 else 1 / value
