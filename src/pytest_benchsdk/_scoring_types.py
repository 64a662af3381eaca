"""The types at scoring's boundary: the config-like inputs it reads and the rows it returns.

Input protocols describe ``config.py``'s attrs models without importing ``config`` (scoring also
takes plain mappings with snake_case or upstream camelCase keys; :func:`read_field` reads
either). :class:`MetricResult` / :class:`ScoreResult` are the result rows with their wire form.
The public home of these names is :mod:`pytest_benchsdk.scoring`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from ._js import is_number
from .records import JSONObject, ParticipantRecords

__all__ = [
    "NOTHING",
    "DisplayConfigLike",
    "DisplayMetricLike",
    "MetricResult",
    "ScoreResult",
    "ScoringConfigLike",
    "ScoringMetricLike",
    "ScoringOutcome",
    "ScoringSuccessLike",
    "WeightsLike",
    "read_field",
    "required_field",
]


# --- input protocols (duck-typed config objects) ----------------------------------------------


class WeightsLike(Protocol):
    """Anything with ``median``, ``p95`` and ``p99`` weights (e.g. ``config.Weights``)."""

    @property
    def median(self) -> float: ...
    @property
    def p95(self) -> float: ...
    @property
    def p99(self) -> float: ...


class ScoringMetricLike(Protocol):
    """A declarative scoring metric (e.g. ``config.ScoringMetric``)."""

    @property
    def key(self) -> str: ...
    @property
    def ceiling(self) -> float: ...
    @property
    def weights(self) -> WeightsLike | Mapping[str, float]: ...
    @property
    def unit(self) -> str | None: ...
    @property
    def floor(self) -> float | None: ...
    @property
    def higher_is_better(self) -> bool | None: ...
    @property
    def trim(self) -> float | None: ...


class ScoringSuccessLike(Protocol):
    """The success rule of a scoring config (e.g. ``config.ScoringSuccess``)."""

    @property
    def require_data(self) -> Mapping[str, object]: ...


class ScoringConfigLike(Protocol):
    """A declarative scoring config (e.g. ``config.ScoringConfig``)."""

    @property
    def metrics(self) -> Sequence[ScoringMetricLike | Mapping[str, Any]]: ...
    @property
    def group_by(self) -> str | None: ...
    @property
    def success(self) -> ScoringSuccessLike | Mapping[str, Any] | None: ...


class DisplayMetricLike(Protocol):
    """A display metric (e.g. ``config.DisplayMetric``); only ``key`` and ``unit`` are read."""

    @property
    def key(self) -> str: ...
    @property
    def unit(self) -> str | None: ...


class DisplayConfigLike(Protocol):
    """A display config (e.g. ``config.DisplayConfig``); only ``metrics`` is read."""

    @property
    def metrics(self) -> Sequence[DisplayMetricLike | Mapping[str, Any]] | None: ...


class ScoringOutcome(Protocol):
    """What :func:`score` reads from a run outcome."""

    @property
    def participants(self) -> Sequence[ParticipantRecords]: ...


#: "Absent", where ``None`` is a value; scoring also keys records lacking ``group_by`` with it.
NOTHING: Final = object()


def read_field(obj: object, snake: str, camel: str | None = None) -> Any:
    """Read a field from an attrs-like object or a snake_case/camelCase mapping (None if absent)."""
    if isinstance(obj, Mapping):
        if snake in obj:
            return obj[snake]
        if camel is not None and camel in obj:
            return obj[camel]
        return None
    value = getattr(obj, snake, NOTHING)
    if value is NOTHING and camel is not None:
        value = getattr(obj, camel, None)
    return None if value is NOTHING else value


def required_field(obj: object, snake: str, camel: str | None, what: str) -> Any:
    """:func:`read_field`, raising ``TypeError`` naming ``what`` when the field is absent."""
    value = read_field(obj, snake, camel)
    if value is None:
        raise TypeError(f"{what} needs '{snake}' (got {obj!r})")
    return value


# --- results ----------------------------------------------------------------------------------


def _describe(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _wire_number(obj: Mapping[str, Any], key: str, where: str) -> float:
    if key not in obj:
        raise ValueError(f"{where}.{key} is required")
    value = obj[key]
    # JSON.stringify writes NaN/Infinity (e.g. from a ceiling of 0) as null; read it back as NaN.
    if value is None:
        return math.nan
    if not is_number(value):
        raise ValueError(f"{where}.{key} must be a number (got {_describe(value)})")
    return value  # type: ignore[no-any-return]


def _wire_string(obj: Mapping[str, Any], key: str, where: str) -> str:
    if key not in obj:
        raise ValueError(f"{where}.{key} is required")
    value = obj[key]
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} must be a string (got {_describe(value)})")
    return value


def _wire_object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a JSON object (got {_describe(value)})")
    return value


def _wire_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = [key for key in obj if key not in allowed]
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(repr(k) for k in unknown)}")


_METRIC_RESULT_KEYS: Final = ("name", "unit", "median", "p95", "p99")
_SCORE_RESULT_KEYS: Final = (
    "provider",
    "dimensions",
    "metrics",
    "compositeScore",
    "successRate",
    "skipped",
)


@attrs.frozen
class MetricResult:
    """Stats of one metric in one result row (stats are of the trimmed samples)."""

    name: str
    unit: str
    median: float
    p95: float
    p99: float

    def to_wire(self) -> JSONObject:
        """``{name, unit, median, p95, p99}``."""
        return {
            "name": self.name,
            "unit": self.unit,
            "median": self.median,
            "p95": self.p95,
            "p99": self.p99,
        }

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any], *, where: str = "metric") -> MetricResult:
        """Read a wire object back; raises ``ValueError`` naming the offending field."""
        obj = _wire_object(wire, where)
        _wire_keys(obj, _METRIC_RESULT_KEYS, where)
        return cls(
            name=_wire_string(obj, "name", where),
            unit=_wire_string(obj, "unit", where),
            median=_wire_number(obj, "median", where),
            p95=_wire_number(obj, "p95", where),
            p99=_wire_number(obj, "p99", where),
        )


def _metric_results(value: Iterable[MetricResult]) -> tuple[MetricResult, ...]:
    return tuple(value)


@attrs.frozen
class ScoreResult:
    """One result row (upstream ``BenchmarkScoreResult``): a participant, or a participant's
    ``group_by`` group. ``success_rate`` is unrounded; ``composite_score`` has two decimals."""

    provider: str
    dimensions: JSONObject
    metrics: tuple[MetricResult, ...] = attrs.field(converter=_metric_results)
    composite_score: float
    success_rate: float
    skipped: bool

    def to_wire(self) -> JSONObject:
        """``{provider, dimensions, metrics, compositeScore, successRate, skipped}``."""
        return {
            "provider": self.provider,
            "dimensions": dict(self.dimensions),
            "metrics": [metric.to_wire() for metric in self.metrics],
            "compositeScore": self.composite_score,
            "successRate": self.success_rate,
            "skipped": self.skipped,
        }

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any], *, where: str = "result") -> ScoreResult:
        """Read a wire object back; raises ``ValueError`` naming the offending field.

        ``null`` numbers (how JSON writes NaN/Infinity) are read as NaN.
        """
        obj = _wire_object(wire, where)
        _wire_keys(obj, _SCORE_RESULT_KEYS, where)
        if "dimensions" not in obj:
            raise ValueError(f"{where}.dimensions is required")
        dimensions = dict(_wire_object(obj["dimensions"], f"{where}.dimensions"))
        metrics = obj.get("metrics")
        if not isinstance(metrics, list):
            raise ValueError(f"{where}.metrics must be an array (got {_describe(metrics)})")
        skipped = obj.get("skipped")
        if not isinstance(skipped, bool):
            raise ValueError(f"{where}.skipped must be a boolean (got {_describe(skipped)})")
        return cls(
            provider=_wire_string(obj, "provider", where),
            dimensions=dimensions,
            metrics=[
                MetricResult.from_wire(m, where=f"{where}.metrics[{i}]")
                for i, m in enumerate(metrics)
            ],
            composite_score=_wire_number(obj, "compositeScore", where),
            success_rate=_wire_number(obj, "successRate", where),
            skipped=skipped,
        )
