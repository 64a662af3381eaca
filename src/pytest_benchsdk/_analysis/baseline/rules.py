"""``--bench-compare-fail=STAT:LIMIT``: pytest-benchmark's expressions (``min:5%``,
``mean:0.001``), each judged per participant × metric on both sides' samples.

Part of :mod:`pytest_benchsdk._analysis.baseline` (which re-exports every name in
``__all__``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.baseline.metrics import per_call_keys
from pytest_benchsdk._analysis.scoring import ScoringSpec, metric_samples
from pytest_benchsdk._analysis.stats import finite_samples
from pytest_benchsdk._base.numbers import change_of_values, change_text
from pytest_benchsdk._base.percentiles import nearest_rank
from pytest_benchsdk.records import TaskRecord

__all__ = ["RULE_STATISTICS", "CompareRule", "RuleVerdict", "judge_rules", "rule_statistic"]

#: The statistics an expression may name (pytest-benchmark's), each of the metric's samples;
#: ``ops`` (calls per second, ``1 / mean``) is the one where higher is better.
RULE_STATISTICS: Final = ("min", "max", "mean", "stddev", "median", "iqr", "ops")
#: Seconds in one of a metric's time units (an absolute limit is in seconds, as
#: pytest-benchmark's).
_SECONDS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


@attrs.frozen
class CompareRule:
    """``STAT:N%`` (worse by more than N % of the baseline's) or ``STAT:N`` (worse by more
    than N seconds; N operations per second for ``ops``): pytest-benchmark's
    ``--benchmark-compare-fail`` expression."""

    statistic: str
    limit: float
    relative: bool

    @property
    def text(self) -> str:
        return f"{self.statistic}:{self.limit:g}{'%' if self.relative else ''}"

    @classmethod
    def parse(cls, text: str) -> CompareRule:
        """Read one expression; a ``ValueError`` saying what is wrong and what is expected."""
        statistic, sep, limit = text.strip().partition(":")
        statistic = statistic.strip().lower()
        if not sep or statistic not in RULE_STATISTICS:
            raise ValueError(
                f"{text!r} is not STAT:N% or STAT:N (STAT one of {', '.join(RULE_STATISTICS)}; "
                "e.g. min:5% or mean:0.001 for a thousandth of a second)"
            )
        limit = limit.strip()
        relative = limit.endswith("%")
        try:
            value = float(limit.removesuffix("%"))
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{text!r}: the limit must be a number >= 0 (got {limit!r})")
        return cls(statistic, value, relative)


def rule_statistic(values: Sequence[float], statistic: str) -> float:
    """One of :data:`RULE_STATISTICS` of ``values`` (not empty)."""
    ordered = sorted(values)
    n = len(ordered)
    mean = math.fsum(ordered) / n
    if statistic == "min":
        return ordered[0]
    if statistic == "max":
        return ordered[-1]
    if statistic == "mean":
        return mean
    if statistic == "stddev":
        return statistics.stdev(ordered) if n > 1 else 0.0
    if statistic == "median":
        return statistics.median(ordered)
    if statistic == "iqr":
        return nearest_rank(ordered, 75) - nearest_rank(ordered, 25)
    return 1.0 / mean if mean > 0 else math.nan  # ops: per the metric's own unit


@attrs.frozen
class RuleVerdict:
    """One expression judged for one participant × metric: the statistic on both sides
    (``ops`` per second when the metric is a time) and whether it is worse beyond the limit."""

    participant: str
    metric: str
    rule: str
    unit: str | None
    baseline: float
    current: float
    failed: bool

    def line(self) -> str:
        change = change_text(self.current / self.baseline - 1) if self.baseline else "new"
        unit = None if self.rule.startswith("ops") else self.unit
        values = change_of_values(self.baseline, self.current, unit)
        if self.rule.startswith("ops"):
            values += " /s"
        verdict = "FAILED" if self.failed else "ok"
        return f"{self.participant} ({self.metric}) {self.rule}: {values} ({change}): {verdict}"

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "metric": self.metric,
            "rule": self.rule,
            "unit": self.unit,
            "baseline": self.baseline,
            "current": self.current,
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuleVerdict:
        return cls(
            str(data["participant"]),
            str(data["metric"]),
            str(data["rule"]),
            data.get("unit"),
            float(data["baseline"]),
            float(data["current"]),
            bool(data["failed"]),
        )


def judge_rules(
    rules: Sequence[CompareRule],
    baseline: Mapping[str, Sequence[TaskRecord]],
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
) -> tuple[RuleVerdict, ...]:
    """Each rule for each participant on both sides, on each scored metric (else the
    per-call metrics of a benchmark of calibrated steps, else the latency): failed when the
    statistic is worse than the baseline's by more than the limit."""
    verdicts: list[RuleVerdict] = []
    per_call = per_call_keys(current)
    for participant, records in current.items():
        before = baseline.get(participant)
        if not before:
            continue
        for metric, unit, now, then in _rule_samples(spec, before, records, per_call):
            if not now or not then:
                continue
            for rule in rules:
                b = rule_statistic(then, rule.statistic)
                c = rule_statistic(now, rule.statistic)
                seconds = _SECONDS.get(unit or "")
                if rule.statistic == "ops" and seconds is not None:
                    b, c = b / seconds, c / seconds
                worse = b - c if rule.statistic == "ops" else c - b
                if rule.relative:
                    limit = abs(b) * rule.limit / 100
                elif rule.statistic != "ops" and seconds is not None:
                    limit = rule.limit / seconds  # seconds, in the metric's unit
                else:
                    limit = rule.limit
                verdicts.append(
                    RuleVerdict(participant, metric, rule.text, unit, b, c, worse > limit)
                )
    return tuple(verdicts)


def _rule_samples(
    spec: ScoringSpec | None,
    before: Sequence[TaskRecord],
    now: Sequence[TaskRecord],
    per_call: Sequence[str] = (),
) -> list[tuple[str, str | None, list[float], list[float]]]:
    if spec is not None and spec.metrics:
        current, base = metric_samples(spec, now), metric_samples(spec, before)
        return [
            (m.name, m.unit or None, current.get(m.name, []), base.get(m.name, []))
            for m in spec.metrics
        ]

    def latency(records: Sequence[TaskRecord]) -> list[float]:
        return finite_samples([r.latency_ms for r in records if r.status == "success"])

    if per_call:  # a benchmark of calibrated steps: their per-call figures
        return [
            (key, "ms", _data_samples(now, key), _data_samples(before, key)) for key in per_call
        ]
    return [("latency_ms", "ms", latency(now), latency(before))]


def _data_samples(records: Sequence[TaskRecord], key: str) -> list[float]:
    return finite_samples(
        [r.data.get(key) for r in records if r.status == "success" and isinstance(r.data, Mapping)]
    )
