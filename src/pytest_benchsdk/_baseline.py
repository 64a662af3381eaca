"""Comparing a run with a baseline run of the same benchmark (``--bench-compare``).

Per participant present in both runs and per compared metric (the scored metrics; the
iteration latency when nothing is scored), the median and the p95 are compared with
:func:`~pytest_benchsdk.compare.compare_samples` (bootstrap interval of the relative change,
Mann–Whitney U, a verdict only when the change is significant and clears the noise threshold).
A metric's samples are what scoring counts (:func:`~pytest_benchsdk.scoring.metric_samples`),
or the passing iterations' ``latencyMs``; its statistics follow the scores' percentile rule
(trimmed by the metric's ``trim``, default 5 %), so they are the numbers the score table
prints. Differences between the two runs that make the comparison less meaningful (knobs,
benchmark identity, platform, machine, CPU count, Python) are listed as warnings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ._js import py_number
from ._stats import DEFAULT_TRIM
from .compare import Comparison, Statistic, compare_samples
from .records import TaskRecord
from .scoring import ScoringSpec, metric_samples

__all__ = [
    "COMPARED_STATISTICS",
    "LATENCY_METRIC",
    "BaselineComparison",
    "ComparedMetric",
    "MetricComparison",
    "compare_runs",
    "compared_metrics",
    "setup_differences",
]

#: The statistics each metric is compared on.
COMPARED_STATISTICS: Final[tuple[Statistic, ...]] = ("median", "p95")
#: The metric compared when the benchmark scores nothing: the iteration's ``latencyMs``.
LATENCY_METRIC: Final = "latency_ms"


@attrs.frozen
class ComparedMetric:
    """A metric to compare: its key, direction, unit and ``trim`` (the statistics follow the
    scores' percentile rule)."""

    key: str
    lower_is_better: bool = True
    unit: str | None = None
    trim: float = DEFAULT_TRIM


def compared_metrics(spec: ScoringSpec | None) -> tuple[ComparedMetric, ...]:
    """The scored metrics of ``spec``, or the latency when nothing is scored."""
    if spec is None or not spec.metrics:
        return (ComparedMetric(LATENCY_METRIC, True, "ms"),)
    return tuple(
        ComparedMetric(
            metric.name,
            not metric.higher_is_better,
            metric.unit,
            DEFAULT_TRIM if metric.trim is None else metric.trim,
        )
        for metric in spec.metrics
    )


def _samples(
    records: Sequence[TaskRecord], metrics: Sequence[ComparedMetric], spec: ScoringSpec | None
) -> dict[str, list[float]]:
    if spec is None or not spec.metrics:
        return {
            LATENCY_METRIC: [
                r.latency_ms for r in records if r.status == "success" and r.latency_ms is not None
            ]
        }
    return metric_samples(spec, records)


@attrs.frozen
class MetricComparison:
    """One participant × metric × statistic: the comparison, or why there is none."""

    participant: str
    metric: str
    statistic: Statistic
    unit: str | None
    comparison: Comparison | None
    note: str | None = None

    @property
    def verdict(self) -> str | None:
        return self.comparison.verdict if self.comparison is not None else None

    def line(self) -> str:
        """One line for people: participant, metric, statistic, baseline → current, change
        and its interval, verdict."""
        head = f"{self.participant} {self.metric} {self.statistic}"
        c = self.comparison
        if c is None:
            return f"{head}: {self.note}"
        unit = f" {self.unit}" if self.unit else ""
        return (
            f"{head}: {_value(c.baseline_statistic)} → {_value(c.current_statistic)}{unit}, "
            f"{_percent(c.change)} [{_percent(c.ci_low)}, {_percent(c.ci_high)}] {c.verdict}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "metric": self.metric,
            "statistic": self.statistic,
            "unit": self.unit,
            "comparison": None if self.comparison is None else self.comparison.to_json(),
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricComparison:
        comparison = data.get("comparison")
        return cls(
            str(data["participant"]),
            str(data["metric"]),
            data["statistic"],
            data.get("unit"),
            None if comparison is None else Comparison.from_json(comparison),
            data.get("note"),
        )


@attrs.frozen
class BaselineComparison:
    """A run compared with its baseline: what the baseline is, the setup differences, the
    rows (participant × metric × statistic)."""

    baseline: str
    baseline_run_id: str | None
    warnings: tuple[str, ...]
    rows: tuple[MetricComparison, ...]

    @property
    def regressions(self) -> tuple[MetricComparison, ...]:
        return tuple(row for row in self.rows if row.verdict == "regressed")

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "baselineRunId": self.baseline_run_id,
            "warnings": list(self.warnings),
            "rows": [row.to_json() for row in self.rows],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineComparison:
        return cls(
            str(data["baseline"]),
            data.get("baselineRunId"),
            tuple(str(w) for w in data.get("warnings") or ()),
            tuple(MetricComparison.from_json(row) for row in data.get("rows") or ()),
        )


def _value(value: float) -> str:
    return py_number(round(value, 3) if abs(value) < 1000 else round(value))


def _percent(change: float) -> str:
    if change != change:  # NaN
        return "n/a"
    if change in (float("inf"), float("-inf")):
        return "+inf%" if change > 0 else "-inf%"
    return f"{change * 100:+.1f}%"


def compare_runs(
    baseline: Mapping[str, Sequence[TaskRecord]],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    *,
    noise_threshold: float = 0.02,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[MetricComparison, ...]:
    """Rows for every participant of ``current`` (in its order) × compared metric × statistic.
    A participant missing from the baseline, or a side without samples, gets a row with a
    ``note`` instead of a comparison."""
    metrics = compared_metrics(spec)
    rows: list[MetricComparison] = []
    for participant, records in current.items():
        if participant not in baseline:
            rows.extend(
                MetricComparison(participant, m.key, s, m.unit, None, "not in the baseline run")
                for m in metrics
                for s in COMPARED_STATISTICS
            )
            continue
        now = _samples(records, metrics, spec)
        then = _samples(baseline[participant], metrics, spec)
        for metric in metrics:
            for statistic in COMPARED_STATISTICS:
                rows.append(
                    _compare_one(
                        participant,
                        metric,
                        statistic,
                        then.get(metric.key, []),
                        now.get(metric.key, []),
                        noise_threshold=noise_threshold,
                        alpha=alpha,
                        seed=seed,
                    )
                )
    return tuple(rows)


def _compare_one(
    participant: str,
    metric: ComparedMetric,
    statistic: Statistic,
    then: Sequence[float],
    now: Sequence[float],
    **options: Any,
) -> MetricComparison:
    def row(comparison: Comparison | None, note: str | None = None) -> MetricComparison:
        return MetricComparison(participant, metric.key, statistic, metric.unit, comparison, note)

    if not then or not now:
        side = "baseline" if not then else "current run"
        return row(None, f"no samples in the {side}")
    try:
        return row(
            compare_samples(
                then,
                now,
                statistic=statistic,
                lower_is_better=metric.lower_is_better,
                trim=metric.trim,
                **options,
            )
        )
    except ValueError as exc:  # e.g. a baseline statistic of 0
        return row(None, str(exc))


def setup_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between two runs' setups, one line each. Each side is
    ``{"benchmark", "knobs", "environment"}`` (``environment``: the store's
    ``RunEnvironment.to_dict()`` form)."""
    lines: list[str] = []
    if baseline.get("benchmark") != current.get("benchmark"):
        lines.append(f"benchmark differs: {baseline.get('benchmark')} → {current.get('benchmark')}")
    old_knobs, new_knobs = baseline.get("knobs") or {}, current.get("knobs") or {}
    for key in dict.fromkeys([*old_knobs, *new_knobs]):
        if old_knobs.get(key) != new_knobs.get(key):
            lines.append(f"knob {key} differs: {old_knobs.get(key)} → {new_knobs.get(key)}")
    old_env, new_env = baseline.get("environment") or {}, current.get("environment") or {}
    for key, label in (
        ("platform", "platform"),
        ("arch", "architecture"),
        ("machine", "machine"),
        ("cpu_count", "CPU count"),
        ("hostname", "host"),
        ("python_version", "Python"),
    ):
        old, new = old_env.get(key), new_env.get(key)
        if old is not None and new is not None and old != new:
            lines.append(f"{label} differs: {old} → {new}")
    return tuple(lines)
