"""What a comparison compares: the metrics (the scored ones, the latency, the keys
``--bench-compare-on`` names), the keys the run measured, each metric's samples of a set of
records, and a record's phase.

Part of :mod:`pytest_benchsdk._analysis.baseline` (which re-exports every name in
``__all__`` but :func:`samples_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from pytest_benchsdk._analysis.scoring import ScoringSpec, metric_samples
from pytest_benchsdk._analysis.stats import DEFAULT_TRIM, finite_samples
from pytest_benchsdk.records import TaskRecord

__all__ = [
    "COUNT_METRICS",
    "COUNT_UNIT",
    "CPU_METRIC",
    "LATENCY_METRIC",
    "CompareOnError",
    "ComparedMetric",
    "check_compare_on",
    "compared_metrics",
    "measured_keys",
    "per_call_keys",
    "per_call_keys_of",
    "record_phase",
    "samples_of",
]

#: The CPU time an iteration measured (``cpu_ms``): an A/B comparison shows its rows too.
CPU_METRIC: Final = "cpu_ms"
#: Metrics that are counts, not times (``--bench-instructions``): compared on their own spread
#: with the count threshold (:func:`~pytest_benchsdk.compare.compare_counts`), never with the
#: wall-time history's noise.
COUNT_METRICS: Final = frozenset({"instructions"})
#: A count's unit, as every view writes it.
COUNT_UNIT: Final = "instr"
#: The metric compared when the benchmark scores nothing: the iteration's ``latencyMs``.
LATENCY_METRIC: Final = "latency_ms"
#: The step data key of a calibrated step's count of calls (the engine's ``CALLS_KEY``, which
#: the analyses do not import): a step that has it was timed in a calibrated loop.
_CALLS: Final = "calls"


def per_call_keys_of(record: TaskRecord) -> tuple[str, ...] | None:
    """The per-call metrics of a record made of calibrated steps only
    (``step(name, fn, calls=...)``): each step's name, whose data key holds its time per
    call. None when the record has a step timed otherwise (one clock pair, or the implicit
    ``task`` step), or a calibrated step without its figure in the data."""
    steps = record.steps or ()
    data = record.data if isinstance(record.data, Mapping) else {}
    if not steps:
        return None
    keys: dict[str, None] = {}
    for step in steps:
        if not (isinstance(step.data, Mapping) and _CALLS in step.data):
            return None
        if not finite_samples([data.get(step.name)]) and step.status == "success":
            return None
        keys[step.name] = None
    return tuple(key for key in keys if finite_samples([data.get(key)]))


def per_call_keys(records: Mapping[str, Sequence[TaskRecord]]) -> tuple[str, ...]:
    """The per-call metrics a benchmark is judged on by default when it scores nothing and
    every passing iteration of every participant is made of calibrated steps only (the
    latency of such an iteration is the length of its calibration loops, not the work): the
    steps' names, in first-seen order. Empty otherwise (the latency is judged)."""
    keys: dict[str, None] = {}
    passing = 0
    for participant_records in records.values():
        for record in participant_records:
            if record.status != "success":
                continue
            passing += 1
            found = per_call_keys_of(record)
            if found is None:
                return ()
            keys.update(dict.fromkeys(found))
    return tuple(keys) if passing else ()


def record_phase(record: TaskRecord) -> str | None:
    """The record's phase (``data["phase"]``, set by the plugin; None without phases)."""
    data = record.data
    phase = data.get("phase") if isinstance(data, Mapping) else None
    return phase if isinstance(phase, str) else None


@attrs.frozen
class ComparedMetric:
    """A metric to compare: its key, direction, unit and ``trim`` (the statistics follow the
    scores' percentile rule)."""

    key: str
    lower_is_better: bool = True
    unit: str | None = None
    trim: float = DEFAULT_TRIM


class CompareOnError(ValueError):
    """``--bench-compare-on`` names a key that no participant of the run measured (the
    message names the keys there are)."""


def compared_metrics(
    spec: ScoringSpec | None, compare_on: Sequence[str] = (), per_call: Sequence[str] = ()
) -> tuple[ComparedMetric, ...]:
    """The scored metrics of ``spec`` (when nothing is scored: the per-call metrics
    ``per_call`` of a benchmark made of calibrated steps, see :func:`per_call_keys`, else the
    latency), then each key of ``compare_on`` that is not among them (lower is better; ``ms``
    for a key ending in ``_ms`` or a per-call metric)."""
    if (spec is None or not spec.metrics) and per_call:
        metrics = [ComparedMetric(key, True, "ms") for key in per_call]
    elif spec is None or not spec.metrics:
        metrics = [ComparedMetric(LATENCY_METRIC, True, "ms")]
    else:
        metrics = [
            ComparedMetric(
                metric.name,
                not metric.higher_is_better,
                metric.unit,
                DEFAULT_TRIM if metric.trim is None else metric.trim,
            )
            for metric in spec.metrics
        ]
    known = {m.key for m in metrics}
    for key in compare_on:
        if key not in known:
            known.add(key)
            unit = (
                "ms"
                if key == LATENCY_METRIC or key.endswith("_ms") or key in per_call
                else COUNT_UNIT
                if key in COUNT_METRICS
                else None
            )
            metrics.append(ComparedMetric(key, True, unit))
    return tuple(metrics)


def measured_keys(records: Mapping[str, Sequence[TaskRecord]]) -> tuple[str, ...]:
    """The metrics the participants' passing records measured: the latency and every data key
    with a sample (sorted after the latency)."""
    keys: set[str] = set()
    for participant_records in records.values():
        for record in participant_records:
            if record.status != "success" or not isinstance(record.data, Mapping):
                continue
            keys.update(
                key
                for key, value in record.data.items()
                if isinstance(key, str) and finite_samples([value])
            )
    keys.discard(LATENCY_METRIC)
    return (LATENCY_METRIC, *sorted(keys))


def check_compare_on(
    compare_on: Sequence[str],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
) -> None:
    """:class:`CompareOnError` for a key of ``compare_on`` no participant of ``current``
    measured (a scored metric counts as measured)."""
    if not compare_on:
        return
    there = list(measured_keys(current))
    there += [m.name for m in (spec.metrics if spec is not None else ()) if m.name not in there]
    unknown = [key for key in compare_on if key not in there]
    if unknown:
        raise CompareOnError(
            f"no participant measured {', '.join(unknown)}; the keys there are: {', '.join(there)}"
        )


def samples_of(
    records: Sequence[TaskRecord], metrics: Sequence[ComparedMetric], spec: ScoringSpec | None
) -> dict[str, list[float]]:
    """Each metric's samples of ``records``: what scoring counts of a scored metric
    (:func:`~pytest_benchsdk._analysis.scoring.metric_samples`), the passing iterations'
    ``latencyMs``, or a measured key's finite values in their data."""
    samples = {} if spec is None or not spec.metrics else metric_samples(spec, records)
    passing = [r for r in records if r.status == "success"]
    for metric in metrics:
        if metric.key in samples:
            continue
        if metric.key == LATENCY_METRIC:
            samples[LATENCY_METRIC] = [r.latency_ms for r in passing if r.latency_ms is not None]
        else:  # a measured key that is not scored (e.g. cpu_ms): the data's samples
            samples[metric.key] = finite_samples(
                [r.data.get(metric.key) if isinstance(r.data, Mapping) else None for r in passing]
            )
    return samples
