"""The implementation behind :mod:`pytest_benchsdk.scoring` (its docstring says what it is)."""

from __future__ import annotations

import collections
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from pytest_benchsdk._analysis.stats import (
    DEFAULT_TRIM,
    Stats,
    compute_stats,
    finite_samples,
    score_stat,
    stats_of_sorted,
)
from pytest_benchsdk._base.js import (
    OMIT,
    group_identity,
    is_number,
    js_round2,
    js_strict_equal,
    json_object,
    json_value,
    py_fixed,
)
from pytest_benchsdk.records import JSONObject, ParticipantRecords, TaskRecord

__all__ = [
    "DisplayConfigLike",
    "DisplayMetricLike",
    "MetricResult",
    "MetricScoring",
    "RecordsOutcome",
    "ScoreResult",
    "ScoringConfigLike",
    "ScoringMetricLike",
    "ScoringOutcome",
    "ScoringSpec",
    "ScoringSpecError",
    "ScoringSuccessLike",
    "StatWeights",
    "Stats",
    "WeightsLike",
    "compute_stats",
    "higher_is_better",
    "lower_is_better",
    "metric_samples",
    "ranking_key",
    "score",
    "score_stat",
    "scoring_config_to_spec",
    "validate_scoring_spec",
]

WEIGHT_SUM_TOLERANCE: Final = 0.01

MetricValue = str | Callable[[TaskRecord], object]
"""A ``record.data`` key, or a function of the record returning a number or list of numbers."""

SuccessPredicate = Callable[[TaskRecord], bool]


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


@attrs.frozen
class RecordsOutcome:
    """A run outcome that is only its records: what :func:`score` reads of one (for callers
    that score records without a run, e.g. resamples or a merged run)."""

    participants: tuple[ParticipantRecords, ...]


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


# --- spec models ------------------------------------------------------------------------------


@attrs.frozen
class StatWeights:
    """Share of the 0–100 composite carried by a metric's median, p95 and p99 scores."""

    median: float
    p95: float
    p99: float

    @classmethod
    def coerce(cls, obj: WeightsLike | Mapping[str, float]) -> StatWeights:
        """Accept a ``StatWeights``, a ``Weights``-like object or a ``{median, p95, p99}`` map."""
        if isinstance(obj, StatWeights):
            return obj
        values = [read_field(obj, name) for name in ("median", "p95", "p99")]
        if not all(is_number(v) for v in values):
            raise TypeError(f"weights need numeric median, p95 and p99 (got {obj!r})")
        return cls(values[0], values[1], values[2])

    def to_wire(self) -> JSONObject:
        """``{median, p95, p99}``."""
        return {"median": self.median, "p95": self.p95, "p99": self.p99}


def _coerce_weights(obj: StatWeights | WeightsLike | Mapping[str, float]) -> StatWeights:
    return StatWeights.coerce(obj)


@attrs.frozen
class MetricScoring:
    """One scored metric of a :class:`ScoringSpec` (upstream ``MetricScoring``).

    ``value`` is the ``record.data`` key to sample (default: ``name``) or a function of the
    :class:`~pytest_benchsdk.records.TaskRecord` returning a number or a list of numbers.
    ``ceiling`` is the worst acceptable value (lower-is-better) or the value earning 100
    (higher-is-better); ``floor`` (higher-is-better only, default 0) is the value at or below
    which a stat scores 0. ``trim`` is the fraction dropped from each end (default 0.05).
    Build instances with :func:`lower_is_better` / :func:`higher_is_better`.
    """

    name: str
    ceiling: float = attrs.field(kw_only=True)
    weights: StatWeights = attrs.field(kw_only=True, converter=_coerce_weights)
    value: MetricValue | None = attrs.field(default=None, kw_only=True)
    unit: str | None = attrs.field(default=None, kw_only=True)
    floor: float | None = attrs.field(default=None, kw_only=True)
    higher_is_better: bool | None = attrs.field(default=None, kw_only=True)
    trim: float | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def coerce(cls, obj: MetricScoring | Mapping[str, Any]) -> MetricScoring:
        """Accept a ``MetricScoring`` or a mapping with snake_case or camelCase keys."""
        if isinstance(obj, MetricScoring):
            return obj
        if not isinstance(obj, Mapping):
            raise TypeError(f"a scoring metric must be a MetricScoring or a mapping (got {obj!r})")
        return cls(
            required_field(obj, "name", None, "a scoring metric"),
            ceiling=required_field(obj, "ceiling", None, "a scoring metric"),
            weights=required_field(obj, "weights", None, "a scoring metric"),
            value=read_field(obj, "value"),
            unit=read_field(obj, "unit"),
            floor=read_field(obj, "floor"),
            higher_is_better=read_field(obj, "higher_is_better", "higherIsBetter"),
            trim=read_field(obj, "trim"),
        )


def _coerce_metrics(
    value: Iterable[MetricScoring | Mapping[str, Any]],
) -> tuple[MetricScoring, ...]:
    return tuple(MetricScoring.coerce(metric) for metric in value)


@attrs.frozen
class ScoringSpec:
    """What to score and how (upstream ``ScoringSpec``).

    ``dimensions`` are copied (JSON round trip) onto every result row; ``group_by`` names a
    ``record.data`` key whose distinct values get their own rows after the aggregate row;
    ``success(record)`` decides which records pass (default: ``status == 'success'``).
    """

    metrics: tuple[MetricScoring, ...] = attrs.field(converter=_coerce_metrics)
    dimensions: Mapping[str, Any] | None = None
    group_by: str | None = None
    success: SuccessPredicate | None = None

    @classmethod
    def coerce(cls, obj: ScoringSpec | Mapping[str, Any]) -> ScoringSpec:
        """Accept a ``ScoringSpec`` or a mapping (``group_by`` or ``groupBy`` key)."""
        if isinstance(obj, ScoringSpec):
            return obj
        if not isinstance(obj, Mapping):
            raise TypeError(f"a scoring spec must be a ScoringSpec or a mapping (got {obj!r})")
        metrics = obj.get("metrics")
        if metrics is None or isinstance(metrics, (str, Mapping)):
            raise TypeError(f"a scoring spec needs a 'metrics' list (got {metrics!r})")
        return cls(
            metrics,
            dimensions=read_field(obj, "dimensions"),
            group_by=read_field(obj, "group_by", "groupBy"),
            success=read_field(obj, "success"),
        )


def lower_is_better(
    name: str,
    *,
    ceiling: float,
    weights: StatWeights | WeightsLike | Mapping[str, float],
    unit: str | None = None,
    value: MetricValue | None = None,
    trim: float | None = None,
) -> MetricScoring:
    """A metric where smaller is better: a stat scores ``max(0, 100 * (1 - stat / ceiling))``."""
    return MetricScoring(
        name,
        ceiling=ceiling,
        weights=weights,
        value=value,
        unit=unit,
        higher_is_better=False,
        trim=trim,
    )


def higher_is_better(
    name: str,
    *,
    ceiling: float,
    weights: StatWeights | WeightsLike | Mapping[str, float],
    floor: float | None = None,
    unit: str | None = None,
    value: MetricValue | None = None,
    trim: float | None = None,
) -> MetricScoring:
    """A metric where larger is better: 0 at or below ``floor`` (default 0), 100 at ``ceiling``."""
    return MetricScoring(
        name,
        ceiling=ceiling,
        weights=weights,
        value=value,
        unit=unit,
        floor=floor,
        higher_is_better=True,
        trim=trim,
    )


class ScoringSpecError(ValueError):
    """A scoring spec that cannot be scored (weights not summing to 1.0 ± 0.01)."""


_TOTAL_MESSAGE: Final = (
    "Scoring spec weights sum to {total}, expected 1.0 (\u00b1{tolerance}). Each metric's "
    "weights.median + weights.p95 + weights.p99, summed across every declared metric, must total "
    "1.0 for compositeScore to stay a meaningful 0-100 scale. Per-metric totals: {breakdown}"
)


def validate_scoring_spec(spec: ScoringSpec | Mapping[str, Any]) -> None:
    """Raise :class:`ScoringSpecError` unless all declared weights sum to 1.0 ± 0.01.

    Independent of samples: metrics that end up without samples still count here.
    """
    spec = ScoringSpec.coerce(spec)
    total: float = 0
    for metric in spec.metrics:
        w = metric.weights
        # Left to right as upstream's reduce: ((total + median) + p95) + p99.
        total = total + w.median + w.p95 + w.p99
    if abs(total - 1) > WEIGHT_SUM_TOLERANCE:
        breakdown = ", ".join(
            f"{m.name}={py_fixed(m.weights.median + m.weights.p95 + m.weights.p99, 3)}"
            for m in spec.metrics
        )
        raise ScoringSpecError(
            _TOTAL_MESSAGE.format(
                total=py_fixed(total, 3),
                tolerance=WEIGHT_SUM_TOLERANCE,
                breakdown=breakdown or "(no metrics declared)",
            )
        )


# --- sample collection ------------------------------------------------------------------------

_EMPTY: Final[Mapping[str, Any]] = {}


def _collect(metric: MetricScoring, passing: Sequence[TaskRecord], datas: list[Any]) -> list[float]:
    value = metric.value
    if callable(value):
        return finite_samples([value(record) for record in passing])
    return finite_samples(_get_all(datas, metric.name if value is None else value, None))


def ranking_key(result: ScoreResult) -> tuple[bool, float]:
    """The ranking's order of participants' (aggregate) rows: scored ones by descending
    composite score, skipped ones last (``sorted(rows, key=ranking_key)``)."""
    return (result.skipped, -result.composite_score)


def metric_samples(
    spec: ScoringSpec | Mapping[str, Any], records: Sequence[TaskRecord]
) -> dict[str, list[float]]:
    """Each metric's samples exactly as :func:`score` collects them (passing records by the
    spec's ``success`` rule, ``value`` or ``data[name]``), **in record order** (unsorted,
    untrimmed): for comparisons, thresholds and run-hygiene checks beside the score."""
    resolved = ScoringSpec.coerce(spec)
    passing = list(itertools.compress(records, _passing_flags(records, resolved)))
    datas = [record.data or _EMPTY for record in passing]
    return {metric.name: _collect(metric, passing, datas) for metric in resolved.metrics}


def _get_all(datas: list[Any], key: object, default: object) -> list[Any]:
    """``[data.get(key, default) for data in datas]``, at C speed when all data are dicts."""
    try:
        # dict.get through map avoids a method lookup per record.
        return list(map(dict.get, datas, itertools.repeat(key), itertools.repeat(default)))
    except TypeError:  # some data is another Mapping type
        return [data.get(key, default) for data in datas]


# --- score ------------------------------------------------------------------------------------


@attrs.frozen
class _ScoredMetric:
    """A metric of the spec as one row scores it: its unit and trim resolved."""

    metric: MetricScoring
    unit: str
    trim: float


def _row(
    provider: str,
    dimensions: JSONObject,
    total: int,
    passed: int,
    samples: list[list[float]],
    scored_metrics: Sequence[_ScoredMetric],
) -> ScoreResult:
    """One result row from sorted per-metric samples (``samples[i]`` belongs to
    ``scored_metrics[i]``)."""
    success_rate = 0.0 if total == 0 else passed / total
    metric_sum: float = 0
    metrics: list[MetricResult] = []
    for scored_metric, values in zip(scored_metrics, samples, strict=True):
        if not values:
            continue  # no samples: dropped, weights not renormalised (upstream)
        metric = scored_metric.metric
        stats = stats_of_sorted(values, scored_metric.trim)
        w = metric.weights
        metric_sum += (
            w.median * score_stat(stats.median, metric)
            + w.p95 * score_stat(stats.p95, metric)
            + w.p99 * score_stat(stats.p99, metric)
        )
        metrics.append(
            MetricResult(metric.name, scored_metric.unit, stats.median, stats.p95, stats.p99)
        )
    composite = 0.0 if success_rate == 0 else js_round2(metric_sum * success_rate)
    return ScoreResult(
        provider=provider,
        dimensions=dimensions,
        metrics=metrics,
        composite_score=composite,
        success_rate=success_rate,
        skipped=total == 0,
    )


def _sorted_samples(
    scored_metrics: Sequence[_ScoredMetric], passing: Sequence[TaskRecord]
) -> list[list[float]]:
    datas = [record.data or _EMPTY for record in passing]
    out = []
    for scored_metric in scored_metrics:
        values = _collect(scored_metric.metric, passing, datas)
        values.sort()
        out.append(values)
    return out


def _passing_flags(records: Sequence[TaskRecord], spec: ScoringSpec) -> list[Any]:
    # Truthiness decides, as in Array.prototype.filter.
    if spec.success is None:
        return [record.status == "success" for record in records]
    return list(map(spec.success, records))


def _group_identities(raws: list[object]) -> tuple[list[object], dict[object, object]]:
    """Per-record group keys, and each key's first-seen raw value.

    Keys come from :func:`_group_identity`; plain strings (the usual case) are their own key.
    """
    if set(map(type, raws)) <= {str, object}:  # strings and NOTHING only: all in C
        return raws, {}
    identities: list[object] = []
    first: dict[object, object] = {}
    for raw in raws:
        if type(raw) is str or raw is NOTHING:
            identities.append(raw)
            continue
        identity = group_identity(raw)
        identities.append(identity)
        first.setdefault(identity, raw)
    return identities, first


def _score_participant(
    participant: ParticipantRecords,
    spec: ScoringSpec,
    scored_metrics: Sequence[_ScoredMetric],
    base: JSONObject,
) -> list[ScoreResult]:
    provider = participant.participant
    records = participant.records
    group_by = spec.group_by
    if not group_by or not records:
        passing = list(itertools.compress(records, _passing_flags(records, spec)))
        samples = _sorted_samples(scored_metrics, passing)
        return [_row(provider, dict(base), len(records), len(passing), samples, scored_metrics)]

    # Each record's success is decided once and each sample list sorted once; the aggregate row
    # sorts the concatenation of the already sorted group lists, which timsort merges in
    # near-linear time.
    flags = _passing_flags(records, spec)
    datas = [record.data or _EMPTY for record in records]
    raws = _get_all(datas, group_by, NOTHING)
    identities, first_raw = _group_identities(raws)
    totals = collections.Counter(identities)
    passing_by: dict[object, list[TaskRecord]] = {key: [] for key in totals}  # first-seen order
    for identity, record in itertools.compress(zip(identities, records, strict=True), flags):
        passing_by[identity].append(record)

    rows: list[ScoreResult] = []
    aggregate: list[list[float]] = [[] for _ in scored_metrics]
    for identity, passing in passing_by.items():
        samples = _sorted_samples(scored_metrics, passing)
        for merged, values in zip(aggregate, samples, strict=True):
            merged.extend(values)
        dimensions = dict(base)
        if identity is not NOTHING:
            # The missing-key group keeps the base dimensions only (as upstream does).
            converted = json_value(first_raw.get(identity, identity))
            if converted is not OMIT:
                dimensions[group_by] = converted
        rows.append(
            _row(provider, dimensions, totals[identity], len(passing), samples, scored_metrics)
        )
    for merged in aggregate:
        merged.sort()
    passed = sum(len(passing) for passing in passing_by.values())
    rows.insert(0, _row(provider, dict(base), len(records), passed, aggregate, scored_metrics))
    return rows


def _display_unit_map(
    display_metrics: Iterable[DisplayMetricLike | Mapping[str, Any]] | None,
) -> dict[str, Any]:
    units: dict[str, Any] = {}
    for entry in display_metrics or ():
        # Later duplicates win, like a Map.
        units[read_field(entry, "key")] = read_field(entry, "unit")
    return units


def score(
    outcome: ScoringOutcome,
    spec: ScoringSpec | Mapping[str, Any],
    display_metrics: Iterable[DisplayMetricLike | Mapping[str, Any]] | None = None,
) -> list[ScoreResult]:
    """Score every participant of ``outcome`` (upstream ``score``).

    Validates the spec first (:class:`ScoringSpecError`). Rows come in participant order; with
    ``spec.group_by`` a participant with records gets its aggregate row first, then one row per
    distinct ``data[group_by]`` value in first-seen order (values compared by JSON text; records
    without the key share one row carrying only the base dimensions). A participant without
    records gets one skipped row. A metric's unit is ``metric.unit``, else the unit of the
    display metric whose key is the metric's ``value`` (when a string) or name, else ``''``.
    """
    results: list[ScoreResult] = []
    for rows in score_each(outcome, spec, display_metrics):
        results.extend(rows)
    return results


def score_each(
    outcome: ScoringOutcome,
    spec: ScoringSpec | Mapping[str, Any],
    display_metrics: Iterable[DisplayMetricLike | Mapping[str, Any]] | None = None,
) -> list[list[ScoreResult]]:
    """:func:`score`'s rows, one list per participant of ``outcome`` (in participant order;
    the aggregate row first): the spec validated once for every participant."""
    spec = ScoringSpec.coerce(spec)
    validate_scoring_spec(spec)
    base = json_object(spec.dimensions if spec.dimensions is not None else {})
    units = _display_unit_map(display_metrics)
    scored_metrics = []
    for metric in spec.metrics:
        unit = metric.unit
        if unit is None:
            unit_key = metric.value if isinstance(metric.value, str) else metric.name
            unit = units.get(unit_key)
        scored_metrics.append(
            _ScoredMetric(
                metric,
                "" if unit is None else unit,
                DEFAULT_TRIM if metric.trim is None else metric.trim,
            )
        )
    return [
        _score_participant(participant, spec, scored_metrics, base)
        for participant in outcome.participants
    ]


# --- declarative config -> spec ---------------------------------------------------------------


def _success_predicate(require_data: Mapping[str, object]) -> SuccessPredicate:
    required = tuple(require_data.items())  # snapshot: later edits to the config do not leak in

    def success(record: TaskRecord) -> bool:
        if record.status != "success":
            return False
        data = record.data
        if data is None:
            return False
        return all(js_strict_equal(data.get(key, NOTHING), want) for key, want in required)

    return success


def scoring_config_to_spec(
    scoring: ScoringConfigLike | Mapping[str, Any],
    dimensions: Mapping[str, Any] | None = None,
    display: DisplayConfigLike | Mapping[str, Any] | None = None,
) -> ScoringSpec:
    """Turn a declarative scoring config into a :class:`ScoringSpec` (upstream
    ``scoringConfigToSpec``).

    ``scoring`` is a ``config.ScoringConfig`` or a mapping with snake_case or camelCase keys.
    Each metric samples ``data[key]``. Its unit is the display unit for that key when
    ``display.metrics`` exists (falling back to the metric's unit), else the metric's unit, else
    ``''``. With ``success.require_data`` a record passes only if its status is ``'success'`` and
    each listed data value is strictly equal (JavaScript ``===``: ``True`` is not ``1``).
    """
    raw_metrics = read_field(scoring, "metrics")
    if raw_metrics is None or isinstance(raw_metrics, (str, Mapping)):
        raise TypeError(f"scoring.metrics must be a list (got {raw_metrics!r})")
    display_metrics = None if display is None else read_field(display, "metrics")
    units = None if display_metrics is None else _display_unit_map(display_metrics)

    metrics: list[MetricScoring] = []
    for entry in raw_metrics:
        key = required_field(entry, "key", None, "a scoring metric")
        unit = read_field(entry, "unit")
        if units is not None:
            display_unit = units.get(key)
            if display_unit is not None:
                unit = display_unit
        metrics.append(
            MetricScoring(
                key,
                value=key,
                unit="" if unit is None else unit,
                ceiling=required_field(entry, "ceiling", None, "a scoring metric"),
                floor=read_field(entry, "floor"),
                higher_is_better=read_field(entry, "higher_is_better", "higherIsBetter"),
                weights=required_field(entry, "weights", None, "a scoring metric"),
                trim=read_field(entry, "trim"),
            )
        )

    success = read_field(scoring, "success")
    predicate: SuccessPredicate | None = None
    if success is not None:
        require_data = read_field(success, "require_data", "requireData")
        if not isinstance(require_data, Mapping):
            raise TypeError(f"scoring.success.require_data must be a mapping (got {success!r})")
        predicate = _success_predicate(require_data)

    group_by = read_field(scoring, "group_by", "groupBy")
    return ScoringSpec(
        metrics,
        dimensions=None if dimensions is None else json_object(dimensions),
        group_by=group_by or None,
        success=predicate,
    )
