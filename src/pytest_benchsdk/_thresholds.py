"""Thresholds: declarative pass/fail limits per participant, k6-style.

A config's ``thresholds`` maps a metric key to expressions (one string or a list)::

    thresholds={"tti_ms": ["p95 < 3000", "median <= 800"], "success_rate": [">= 0.99"],
                "score": [">= 70"]}

A data key takes ``<stat> <op> <number>`` (stat: median, p95, p99, mean, min, max; op: ``<``,
``<=``, ``>``, ``>=``); ``success_rate`` and ``score`` take ``<op> <number>``. On the command
line, ``--bench-threshold "tti_ms: p95 < 3000"`` adds one (``KEY: EXPR``).

A data key's samples are the participant's passing records' ``data[key]`` values, taken with
the scoring engine's sample rule (finite numbers, one level of lists); ``latency_ms`` is the
iteration's latency unless the data has such a key. Statistics are of the
untrimmed samples with upstream's nearest-rank percentiles (a limit is about every sample, so
nothing is trimmed away). ``success_rate`` is passing records / records (0–1); ``score`` is the
participant's composite score (needs ``scoring`` or ``on_score``).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import attrs

from ._js import py_number
from ._stats import finite_samples, stats_of_sorted
from .records import TaskRecord

__all__ = [
    "LATENCY_KEY",
    "SCORE_KEY",
    "STATISTICS",
    "SUCCESS_RATE_KEY",
    "Threshold",
    "ThresholdTally",
    "ThresholdVerdict",
    "evaluate_threshold",
    "parse_cli_threshold",
    "parse_threshold",
    "parse_thresholds",
    "threshold_samples",
]

SUCCESS_RATE_KEY: Final = "success_rate"
SCORE_KEY: Final = "score"
#: The iteration's latency, unless the records' data has a ``latency_ms`` of its own.
LATENCY_KEY: Final = "latency_ms"
#: Keys whose expressions have no statistic: the value is one number per participant.
_SCALAR_KEYS: Final = (SUCCESS_RATE_KEY, SCORE_KEY)

STATISTICS: Final = ("median", "p95", "p99", "mean", "min", "max")
_OPERATORS: Final[Mapping[str, Callable[[float, float], bool]]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_EXPRESSION: Final = re.compile(
    r"^\s*(?:(?P<stat>[a-z0-9]+)\s*)?(?P<op><=|>=|<|>)\s*(?P<limit>[^\s<>=].*?)\s*$"
)


@attrs.frozen
class Threshold:
    """One limit: ``metric`` (a data key, ``success_rate`` or ``score``), ``statistic``
    (``None`` for the scalar keys), ``op`` and ``limit``."""

    metric: str
    statistic: str | None
    op: str
    limit: float

    @property
    def expression(self) -> str:
        """Canonical text without spaces: ``p95<3000``, ``>=0.99``."""
        return f"{self.statistic or ''}{self.op}{py_number(self.limit)}"

    @property
    def label(self) -> str:
        """``tti_ms-p95<3000``: the threshold's part of its item id."""
        return f"{self.metric}-{self.expression}"

    def holds(self, observed: float) -> bool:
        return _OPERATORS[self.op](observed, self.limit)


@attrs.frozen
class ThresholdVerdict:
    """A threshold evaluated for one participant. ``observed`` is ``None`` when there was
    nothing to measure (no sample): the threshold then fails."""

    threshold: Threshold
    participant: str
    observed: float | None
    passed: bool

    def message(self) -> str:
        """One line: participant, metric, statistic, observed value, limit."""
        t = self.threshold
        stat = f" {t.statistic}" if t.statistic else ""
        if self.observed is None:
            return (
                f"{self.participant}: {t.metric}{stat} has no samples "
                f"(threshold {t.op} {py_number(t.limit)})"
            )
        verdict = "ok" if self.passed else "breached"
        return (
            f"{self.participant}: {t.metric}{stat} = {py_number(round(self.observed, 6))}, "
            f"threshold {t.op} {py_number(t.limit)} {verdict}"
        )


def parse_threshold(metric: str, expression: object) -> Threshold:
    """One expression of ``metric``; ``ValueError`` with what is wrong."""
    if not isinstance(expression, str):
        raise ValueError(f"must be a string like 'p95 < 3000' (got {expression!r})")
    expression = expression.strip()
    found = _EXPRESSION.match(expression)
    if found is None:
        raise ValueError(
            f"cannot read {expression!r}: expected '<stat> <op> <number>' (stat: "
            f"{', '.join(STATISTICS)}; op: <, <=, >, >=)"
        )
    stat, op, raw = found.group("stat"), found.group("op"), found.group("limit")
    if metric in _SCALAR_KEYS:
        if stat is not None:
            raise ValueError(f"{expression!r}: {metric} takes '<op> <number>', without a statistic")
    elif stat is None:
        raise ValueError(f"{expression!r}: missing the statistic ({', '.join(STATISTICS)})")
    elif stat not in STATISTICS:
        raise ValueError(
            f"{expression!r}: unknown statistic {stat!r} (known: {', '.join(STATISTICS)})"
        )
    try:
        limit = float(raw)
    except ValueError:
        raise ValueError(f"{expression!r}: the limit {raw!r} is not a number") from None
    if not math.isfinite(limit):
        raise ValueError(f"{expression!r}: the limit must be a finite number")
    return Threshold(metric, stat, op, limit)


def parse_thresholds(raw: object) -> tuple[tuple[Threshold, ...], list[tuple[str, str]]]:
    """A config's ``thresholds``: the parsed thresholds and every problem as
    ``(field path, message)`` (all of them, not the first)."""
    if isinstance(raw, (tuple, list)) and all(isinstance(t, Threshold) for t in raw):
        return tuple(raw), []  # already parsed (a BenchmarkConfig validated again)
    if not isinstance(raw, Mapping):
        return (), [("thresholds", "must be a dict of metric key -> expression(s)")]
    parsed: list[Threshold] = []
    problems: list[tuple[str, str]] = []
    for key, value in raw.items():
        if not (isinstance(key, str) and key.strip()):
            problems.append(("thresholds", f"metric keys must be non-empty strings (got {key!r})"))
            continue
        expressions: Sequence[object] = [value] if isinstance(value, str) else value
        if not isinstance(expressions, (list, tuple)) or not expressions:
            problems.append(
                (f"thresholds.{key}", "must be an expression or a non-empty list of them")
            )
            continue
        for index, expression in enumerate(expressions):
            try:
                parsed.append(parse_threshold(key, expression))
            except ValueError as exc:
                problems.append((f"thresholds.{key}[{index}]", str(exc)))
    return tuple(parsed), problems


def parse_cli_threshold(text: str) -> Threshold:
    """``--bench-threshold "tti_ms: p95 < 3000"`` (``KEY: EXPR``)."""
    key, sep, expression = text.partition(":")
    if not sep or not key.strip():
        raise ValueError(
            f'--bench-threshold expects "KEY: EXPR", e.g. "tti_ms: p95 < 3000" (got "{text}")'
        )
    try:
        return parse_threshold(key.strip(), expression)
    except ValueError as exc:
        raise ValueError(f"--bench-threshold {key.strip()}: {exc}") from None


def _statistic(values: Sequence[float], statistic: str) -> float:
    ordered = sorted(values)
    if statistic == "min":
        return ordered[0]
    if statistic == "max":
        return ordered[-1]
    if statistic == "mean":
        return math.fsum(ordered) / len(ordered)
    stats = stats_of_sorted(ordered, 0.0)
    return float(getattr(stats, statistic))


def threshold_samples(
    metric: str, passing: Iterable[tuple[Mapping[str, object] | None, float]]
) -> list[float]:
    """The samples of a data key from the passing records' ``(data, latency_ms)``: the data
    values (the scoring rule), or for ``latency_ms`` the iteration latency when no record's
    data has that key."""
    pairs = list(passing)
    samples = finite_samples([(data or {}).get(metric) for data, _ in pairs])
    if metric == LATENCY_KEY and not any(metric in (data or {}) for data, _ in pairs):
        samples = finite_samples([latency for _, latency in pairs])
    return samples


def evaluate_threshold(
    threshold: Threshold,
    participant: str,
    *,
    samples: Sequence[float] = (),
    passed: int = 0,
    total: int = 0,
    score: float | None = None,
) -> ThresholdVerdict:
    """Evaluate for one participant: ``samples`` of a data key (:func:`threshold_samples`),
    ``passed``/``total`` its record counts (``success_rate``), ``score`` its composite score."""
    observed: float | None
    if threshold.metric == SUCCESS_RATE_KEY:
        observed = passed / total if total else None
    elif threshold.metric == SCORE_KEY:
        observed = score if score is not None and math.isfinite(score) else None
    else:
        assert threshold.statistic is not None
        observed = _statistic(samples, threshold.statistic) if samples else None
    passed_check = observed is not None and threshold.holds(observed)
    return ThresholdVerdict(threshold, participant, observed, passed_check)


class ThresholdTally:
    """What a participant's thresholds need of its iterations in one process, kept as they
    finish: counts, the samples of the data keys the thresholds name, and (only for a
    ``score`` threshold) the records themselves."""

    def __init__(self, thresholds: Sequence[Threshold]) -> None:
        self.keys = tuple(
            dict.fromkeys(t.metric for t in thresholds if t.metric not in _SCALAR_KEYS)
        )
        self.keeps_records = any(t.metric == SCORE_KEY for t in thresholds)
        self.total = 0
        self.passed = 0
        self.samples: dict[str, list[float]] = {key: [] for key in self.keys}
        self.records: list[TaskRecord] = []

    def add(self, record: TaskRecord) -> None:
        self.total += 1
        if record.status != "success":
            if self.keeps_records:
                self.records.append(record)
            return
        self.passed += 1
        pair = [(record.data, record.latency_ms if record.latency_ms is not None else math.nan)]
        for key in self.keys:
            self.samples[key].extend(threshold_samples(key, pair))
        if self.keeps_records:
            self.records.append(record)

    def evaluate(
        self, threshold: Threshold, participant: str, score: float | None = None
    ) -> ThresholdVerdict:
        return evaluate_threshold(
            threshold,
            participant,
            samples=self.samples.get(threshold.metric, ()),
            passed=self.passed,
            total=self.total,
            score=score,
        )
