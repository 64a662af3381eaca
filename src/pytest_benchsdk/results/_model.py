"""The model of a finished run: every fact a reader needs, computed once.

Private to :mod:`pytest_benchsdk.results`, which re-exports the public names. Everything here
is plain data with a JSON form (``to_json`` / ``from_json``, camelCase keys like the rest of
``--bench-json``), so the same :class:`RunSummary` is rendered by the terminal, ``--bench-json``,
Markdown, ``pytest-benchsdk show`` and the HTML report, and is kept in the store.

**The percentile rule**, one for every median, p95 and p99 a view prints (scores, the latency
and metric tables, steps, thresholds, comparisons): upstream's ``computeStats`` — sort the
samples, drop ``floor(n × trim)`` from each end (``trim`` is the scored metric's ``trim``,
default 5 %; nothing is dropped below 20 samples), then the nearest-rank percentile of the
rest. ``mean``, ``min`` and ``max`` are of every sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from pytest_benchsdk._analysis.baseline import BaselineComparison
from pytest_benchsdk._analysis.hygiene import RunWarning
from pytest_benchsdk._analysis.scoring import ScoreResult
from pytest_benchsdk._analysis.stats import DEFAULT_TRIM, stats_of_sorted
from pytest_benchsdk._analysis.uncertainty import ScoreUncertainty
from pytest_benchsdk._base.percentiles import nearest_rank
from pytest_benchsdk._base.runenv import RunEnvironment
from pytest_benchsdk._config.thresholds import ThresholdVerdict
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY

__all__ = [
    "INSTRUCTIONS_UNIT",
    "LATENCY",
    "STATUS_REASONS",
    "ABSide",
    "FailureGroup",
    "Knobs",
    "MetricSummary",
    "ParticipantSummary",
    "PhaseSummary",
    "RankedParticipant",
    "RelativeRow",
    "RelativeSummary",
    "RoundCount",
    "RoundsKnobs",
    "RunStatus",
    "RunSummary",
    "SampleStats",
    "ScoreTable",
    "StatisticInterval",
    "StepSummary",
    "metric_unit",
]

#: The iteration latency's key among the metrics.
LATENCY: Final = "latency_ms"
#: Units read as times (the views scale them: ns, µs, ms, s).
_TIME_SUFFIXES: Final = ("ns", "us", "µs", "ms", "s")
#: The unit of ``instructions`` (``--bench-instructions``) in every view and export: a count
#: (:data:`pytest_benchsdk._base.numbers.COUNT_UNITS`), never a time.
INSTRUCTIONS_UNIT: Final = "instr"


def metric_unit(key: str, declared: str | None) -> str:
    """A metric's unit: the declared one (scoring or ``display.metrics``), else the time unit
    its key ends with (``dumps_ms`` → ``ms``, ``read_us`` → ``us``), ``instr`` for
    ``instructions`` (a count, ``--bench-instructions``), else ``""``."""
    if declared:
        return declared
    if key == INSTRUCTIONS_KEY:
        return INSTRUCTIONS_UNIT
    for suffix in _TIME_SUFFIXES:
        if key.endswith(f"_{suffix}"):
            return suffix
    return ""


def _num(value: float | None) -> float | None:
    """A number for JSON: NaN and ±inf as None (``JSON.stringify``'s rule)."""
    return value if value is not None and math.isfinite(value) else None


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


@attrs.frozen
class SampleStats:
    """Statistics of one sample set, by the module's percentile rule."""

    count: int
    median: float
    p95: float
    p99: float
    mean: float
    min: float
    max: float
    trim: float = DEFAULT_TRIM
    #: The sample standard deviation (0 for one value) and the nearest-rank quartiles of
    #: every value (untrimmed): pytest-benchmark's columns (``--bench-columns``).
    stddev: float = math.nan
    q1: float = math.nan
    q3: float = math.nan

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @classmethod
    def of(cls, values: Sequence[float], trim: float | None = None) -> SampleStats | None:
        """The statistics of ``values`` (None for no values)."""
        if not values:
            return None
        trim = DEFAULT_TRIM if trim is None else trim
        ordered = sorted(values)
        stats = stats_of_sorted(ordered, trim)
        n = len(ordered)
        mean = math.fsum(ordered) / n
        variance = math.fsum((v - mean) ** 2 for v in ordered) / (n - 1) if n > 1 else 0.0
        return cls(
            count=n,
            median=float(stats.median),
            p95=float(stats.p95),
            p99=float(stats.p99),
            mean=mean,
            min=float(ordered[0]),
            max=float(ordered[-1]),
            trim=trim,
            stddev=math.sqrt(variance),
            q1=float(nearest_rank(ordered, 25)),
            q3=float(nearest_rank(ordered, 75)),
        )

    def get(self, statistic: str) -> float:
        """``median``, ``p95``, ``p99``, ``mean``, ``min``, ``max``, ``stddev``, ``q1``,
        ``q3`` or ``iqr``."""
        value: float = getattr(self, statistic)
        return value

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "median": _num(self.median),
            "p95": _num(self.p95),
            "p99": _num(self.p99),
            "mean": _num(self.mean),
            "min": _num(self.min),
            "max": _num(self.max),
            "trim": self.trim,
            "stddev": _num(self.stddev),
            "q1": _num(self.q1),
            "q3": _num(self.q3),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SampleStats | None:
        if data is None:
            return None
        return cls(
            count=int(data["count"]),
            median=_float(data["median"]),
            p95=_float(data["p95"]),
            p99=_float(data["p99"]),
            mean=_float(data["mean"]),
            min=_float(data["min"]),
            max=_float(data["max"]),
            trim=float(data.get("trim", DEFAULT_TRIM)),
            # Summaries stored before these existed have none.
            stddev=_float(data.get("stddev")),
            q1=_float(data.get("q1")),
            q3=_float(data.get("q3")),
        )


def _stats_json(stats: SampleStats | None) -> dict[str, Any] | None:
    return None if stats is None else stats.to_json()


@attrs.frozen
class MetricSummary:
    """One measured metric of a participant (or phase): scored or not, with its unit and
    display label. ``lower_is_better`` is None when nothing says (an unscored metric without a
    ``display.metrics`` direction)."""

    key: str
    label: str
    unit: str
    scored: bool
    lower_is_better: bool | None
    stats: SampleStats | None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "unit": self.unit,
            "scored": self.scored,
            "lowerIsBetter": self.lower_is_better,
            "stats": _stats_json(self.stats),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricSummary:
        return cls(
            key=str(data["key"]),
            label=str(data["label"]),
            unit=str(data["unit"]),
            scored=bool(data["scored"]),
            lower_is_better=data.get("lowerIsBetter"),
            stats=SampleStats.from_json(data.get("stats")),
        )


@attrs.frozen
class StepSummary:
    """One step of a participant: its label (``display.steps``), its successful invocations'
    latency and how many invocations failed."""

    name: str
    label: str
    order: int
    latency: SampleStats | None
    failed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "order": self.order,
            "latency": _stats_json(self.latency),
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepSummary:
        return cls(
            name=str(data["name"]),
            label=str(data["label"]),
            order=int(data["order"]),
            latency=SampleStats.from_json(data.get("latency")),
            failed=int(data["failed"]),
        )


@attrs.frozen
class FailureGroup:
    """A participant's failures with one error code: how many, and the first messages
    (``(task index, message)``, capped)."""

    code: str
    count: int
    messages: tuple[tuple[int, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "count": self.count,
            "messages": [{"taskIndex": i, "message": m} for i, m in self.messages],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FailureGroup:
        return cls(
            code=str(data["code"]),
            count=int(data["count"]),
            messages=tuple((int(m["taskIndex"]), str(m["message"])) for m in data["messages"]),
        )


@attrs.frozen
class PhaseSummary:
    """A participant's iterations of one phase."""

    phase: str
    planned: int
    ran: int
    passed: int
    latency: SampleStats | None
    metrics: tuple[MetricSummary, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "planned": self.planned,
            "ran": self.ran,
            "passed": self.passed,
            "latency": _stats_json(self.latency),
            "metrics": [m.to_json() for m in self.metrics],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PhaseSummary:
        return cls(
            phase=str(data["phase"]),
            planned=int(data["planned"]),
            ran=int(data["ran"]),
            passed=int(data["passed"]),
            latency=SampleStats.from_json(data.get("latency")),
            metrics=tuple(MetricSummary.from_json(m) for m in data["metrics"]),
        )


@attrs.frozen
class RoundCount:
    """How a benchmarked test (the ``benchmark`` fixture's) was measured: ``rounds`` rounds of
    ``iterations`` calls each (pytest-benchmark's ``rounds`` and ``iterations``): facts about
    the measurement, not metrics."""

    rounds: int
    iterations: int

    def to_json(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "iterations": self.iterations}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RoundCount | None:
        if not data:
            return None
        return cls(int(data["rounds"]), int(data["iterations"]))


@attrs.frozen
class FixtureStats:
    """A benchmarked test as pytest-benchmark's JSON files hold it: its identity (``fullname``
    its node id, ``name``, ``group``, ``param``/``params``, ``extra_info``, ``options``: its
    rounds' settings), pytest-benchmark's ``stats`` of its rounds (seconds, by its definitions:
    :func:`pytest_benchsdk._analysis.pytest_benchmark.fixture_stats`) and ``data``, the kept
    rounds' time per call (seconds, run order)."""

    fullname: str
    name: str
    stats: Mapping[str, Any]
    data: tuple[float, ...] = ()
    group: str | None = None
    param: str | None = None
    params: Mapping[str, Any] | None = None
    extra_info: Mapping[str, Any] = attrs.Factory(dict)
    options: Mapping[str, Any] = attrs.Factory(dict)
    #: ``--benchmark-cprofile``: the profiled call's top functions (pytest-benchmark's rows).
    cprofile: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            **({"cprofile": [dict(row) for row in self.cprofile]} if self.cprofile else {}),
            "fullname": self.fullname,
            "name": self.name,
            "group": self.group,
            "param": self.param,
            "params": None if self.params is None else dict(self.params),
            "extra_info": dict(self.extra_info),
            "options": dict(self.options),
            "stats": dict(self.stats),
            "data": list(self.data),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> FixtureStats | None:
        if not data:
            return None
        params = data.get("params")
        return cls(
            fullname=str(data["fullname"]),
            name=str(data["name"]),
            group=data.get("group"),
            param=data.get("param"),
            params=None if params is None else dict(params),
            extra_info=dict(data.get("extra_info") or {}),
            options=dict(data.get("options") or {}),
            stats=dict(data["stats"]),
            data=tuple(float(v) for v in data.get("data") or ()),
            cprofile=tuple(dict(row) for row in data.get("cprofile") or ()),
        )


@attrs.frozen
class ParticipantSummary:
    """Everything measured of one participant: ``planned`` selected iterations, ``ran`` of
    them left a record, ``passed`` of those passed; the latency (passing iterations); every
    measured metric (the scored ones first, in the scoring's order, then the others as first
    measured); the steps; each phase (with more than one phase); the failures by error code.
    ``skipped`` says why a participant did not run at all (missing env vars)."""

    name: str
    planned: int
    ran: int
    passed: int
    latency: SampleStats | None
    metrics: tuple[MetricSummary, ...] = ()
    steps: tuple[StepSummary, ...] = ()
    phases: tuple[PhaseSummary, ...] = ()
    failures: tuple[FailureGroup, ...] = ()
    skipped: str | None = None
    #: A benchmarked test's rounds and iterations (None for a bench file's participant).
    rounds: RoundCount | None = None
    #: A benchmarked test as pytest-benchmark's JSON holds it (None for a bench file's
    #: participant, or a record made before issue 47).
    fixture: FixtureStats | None = None

    @property
    def failed(self) -> int:
        return self.ran - self.passed

    def metric(self, key: str) -> MetricSummary | None:
        return next((m for m in self.metrics if m.key == key), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "planned": self.planned,
            "ran": self.ran,
            "passed": self.passed,
            "latency": _stats_json(self.latency),
            "metrics": [m.to_json() for m in self.metrics],
            "steps": [s.to_json() for s in self.steps],
            "phases": [p.to_json() for p in self.phases],
            "failures": [f.to_json() for f in self.failures],
            "skipped": self.skipped,
            "rounds": None if self.rounds is None else self.rounds.to_json(),
            **({} if self.fixture is None else {"fixture": self.fixture.to_json()}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParticipantSummary:
        return cls(
            name=str(data["name"]),
            planned=int(data["planned"]),
            ran=int(data["ran"]),
            passed=int(data["passed"]),
            latency=SampleStats.from_json(data.get("latency")),
            metrics=tuple(MetricSummary.from_json(m) for m in data["metrics"]),
            steps=tuple(StepSummary.from_json(s) for s in data["steps"]),
            phases=tuple(PhaseSummary.from_json(p) for p in data["phases"]),
            failures=tuple(FailureGroup.from_json(f) for f in data["failures"]),
            skipped=data.get("skipped"),
            rounds=RoundCount.from_json(data.get("rounds")),
            fixture=FixtureStats.from_json(data.get("fixture")),
        )


@attrs.frozen
class RankedParticipant:
    """One participant's place in the ranking: ``rank`` (None: nothing to rank — every
    iteration failed, or it was skipped), whether its interval overlaps the one ranked just
    above (``tied_with_above``), its score rows (the aggregate first, then one per
    ``group_by`` value) and, with phases, each phase's rows scored alone."""

    participant: str
    rank: int | None
    tied_with_above: bool
    rows: tuple[ScoreResult, ...]
    phase_rows: tuple[tuple[str, ScoreResult], ...] = ()
    uncertainty: ScoreUncertainty | None = None

    @property
    def row(self) -> ScoreResult:
        """The aggregate row: the participant's score."""
        return self.rows[0]

    @property
    def keeps_rank(self) -> float | None:
        """How often the participant kept its rank among the resamples."""
        u = self.uncertainty
        if u is None or u.skipped or self.rank is None:
            return None
        return u.rank_probability(self.rank)

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "rank": self.rank,
            "tiedWithAbove": self.tied_with_above,
            "rows": [r.to_wire() for r in self.rows],
            "phaseRows": [{"phase": p, "row": r.to_wire()} for p, r in self.phase_rows],
            "uncertainty": None if self.uncertainty is None else self.uncertainty.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RankedParticipant:
        u = data.get("uncertainty")
        return cls(
            participant=str(data["participant"]),
            rank=data.get("rank"),
            tied_with_above=bool(data["tiedWithAbove"]),
            rows=tuple(ScoreResult.from_wire(r) for r in data["rows"]),
            phase_rows=tuple(
                (str(p["phase"]), ScoreResult.from_wire(p["row"])) for p in data["phaseRows"]
            ),
            uncertainty=None if u is None else ScoreUncertainty.from_json(u),
        )


@attrs.frozen
class ScoreTable:
    """The scores of a run: upstream's rows as scored (``results``, in participant order, as
    the platform gets them) and the ranking built from them. ``metrics`` are the scored
    metrics as ``(key, unit, label)``; ``group_by`` the scoring's ``group_by`` (declarative
    scoring only); ``dimensions`` the config's base dimensions; ``level`` the intervals'
    confidence (None without intervals)."""

    results: tuple[ScoreResult, ...]
    ranking: tuple[RankedParticipant, ...]
    metrics: tuple[tuple[str, str, str], ...]
    group_by: str | None = None
    dimensions: Mapping[str, Any] = attrs.Factory(dict)
    level: float | None = None
    #: The keys of the scored metrics that are higher-is-better (their p95/p99 are the best
    #: tail; the views mark them ``↑``).
    higher_is_better: frozenset[str] = frozenset()

    @property
    def has_ties(self) -> bool:
        return any(entry.tied_with_above for entry in self.ranking)

    def to_json(self) -> dict[str, Any]:
        return {
            "results": [r.to_wire() for r in self.results],
            "ranking": [entry.to_json() for entry in self.ranking],
            "metrics": [{"key": k, "unit": u, "label": label} for k, u, label in self.metrics],
            "groupBy": self.group_by,
            "dimensions": dict(self.dimensions),
            "level": self.level,
            "higherIsBetter": sorted(self.higher_is_better),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ScoreTable | None:
        if data is None:
            return None
        return cls(
            results=tuple(ScoreResult.from_wire(r) for r in data["results"]),
            ranking=tuple(RankedParticipant.from_json(e) for e in data["ranking"]),
            metrics=tuple(
                (str(m["key"]), str(m["unit"]), str(m["label"])) for m in data["metrics"]
            ),
            group_by=data.get("groupBy"),
            dimensions=dict(data.get("dimensions") or {}),
            level=data.get("level"),
            higher_is_better=frozenset(data.get("higherIsBetter") or ()),
        )


@attrs.frozen
class StatisticInterval:
    """How sure one statistic of the model is: the percentile bootstrap interval at ``level``
    of a participant's ``median``, ``p95`` or ``p99`` of ``metric`` (a metric key, or
    :data:`LATENCY`), with the statistic's own trim (see :mod:`._intervals`)."""

    participant: str
    metric: str
    statistic: str
    low: float
    high: float
    level: float

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "metric": self.metric,
            "statistic": self.statistic,
            "low": _num(self.low),
            "high": _num(self.high),
            "level": self.level,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StatisticInterval:
        return cls(
            participant=str(data["participant"]),
            metric=str(data["metric"]),
            statistic=str(data["statistic"]),
            low=_float(data["low"]),
            high=_float(data["high"]),
            level=float(data["level"]),
        )


@attrs.frozen
class RelativeRow:
    """The reference participant against one other: ``factor`` is how many times better the
    reference's statistic is (the other's over the reference's for a lower-is-better metric,
    the reference's over the other's for a higher-is-better one; at least 1 but for noise),
    ``low``/``high`` its interval, ``verdict`` the comparison's (``unchanged``: no clear
    difference). ``decided_by`` names what made an ``unchanged`` verdict whose interval
    leaves out 1× (the words would contradict the interval otherwise): ``mann-whitney``, the
    rank test's ``p_value`` was not below ``alpha``; ``noise-threshold``, the interval does
    not clear ``noise_threshold`` (a relative change). None: the interval decided."""

    participant: str
    factor: float
    low: float
    high: float
    verdict: str
    decided_by: str | None = None
    p_value: float | None = None
    alpha: float | None = None
    noise_threshold: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "factor": _num(self.factor),
            "low": _num(self.low),
            "high": _num(self.high),
            "verdict": self.verdict,
            "decidedBy": self.decided_by,
            "pValue": None if self.p_value is None else _num(self.p_value),
            "alpha": self.alpha,
            "noiseThreshold": self.noise_threshold,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RelativeRow:
        p_value = data.get("pValue")
        return cls(
            participant=str(data["participant"]),
            factor=_float(data["factor"]),
            low=_float(data["low"]),
            high=_float(data["high"]),
            verdict=str(data["verdict"]),
            decided_by=data.get("decidedBy"),
            p_value=None if p_value is None else _float(p_value),
            alpha=data.get("alpha"),
            noise_threshold=data.get("noiseThreshold"),
        )


@attrs.frozen
class RelativeSummary:
    """hyperfine's summary: the participant with the best ``statistic`` of ``metric`` (the first
    scored metric, else the latency) against every other that ran, each ratio with its
    bootstrap interval at ``level`` (:func:`~pytest_benchsdk.compare.compare_samples`)."""

    reference: str
    metric: str
    label: str
    unit: str
    statistic: str
    lower_is_better: bool
    level: float
    rows: tuple[RelativeRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "metric": self.metric,
            "label": self.label,
            "unit": self.unit,
            "statistic": self.statistic,
            "lowerIsBetter": self.lower_is_better,
            "level": self.level,
            "rows": [r.to_json() for r in self.rows],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RelativeSummary | None:
        if data is None:
            return None
        return cls(
            reference=str(data["reference"]),
            metric=str(data["metric"]),
            label=str(data["label"]),
            unit=str(data["unit"]),
            statistic=str(data["statistic"]),
            lower_is_better=bool(data["lowerIsBetter"]),
            level=float(data["level"]),
            rows=tuple(RelativeRow.from_json(r) for r in data["rows"]),
        )


#: Why a run did not pass, in the order :meth:`RunStatus.text` lists them.
STATUS_REASONS: Final = (
    "iterations",  # iterations failed
    "items",  # items failed without a record (setup, teardown, a crashed worker)
    "errors",  # the session end failed for this run (scoring, a hook, on_complete, the store)
    "threshold",  # a threshold was breached
    "regression",  # --bench-compare-fail found a regression
    "warnings",  # --bench-warnings=error and a run warning
)


@attrs.frozen
class RunStatus:
    """How the run ended: ``state`` (``passed``, ``failed``, ``interrupted``, or ``running``
    for a run whose session never finished it), the ``reasons`` of a failure
    (:data:`STATUS_REASONS`), ``planned``/``ran`` iterations and whether the run is
    ``complete``: every iteration of the benchmark's plan was selected and left a record (no
    ``-k``/node-id subset, not interrupted). Only a complete run is a baseline by default
    (:attr:`incomplete` says why another one is not). ``unit`` names what ``planned`` and
    ``ran`` count: ``iterations`` of a bench file, ``tests`` of a group of benchmarked tests
    (one record each)."""

    state: str
    reasons: tuple[str, ...] = ()
    planned: int = 0
    ran: int = 0
    complete: bool = True
    unit: str = "iterations"

    def text(self) -> str:
        """``passed``, ``failed (threshold, regression)``, ``interrupted (3 of 60 iterations
        ran)``; ``, partial`` when the selection was a subset."""
        if self.state == "interrupted":
            return f"interrupted ({self.ran} of {self.planned} {self.unit} ran)"
        head = self.state
        if self.reasons:
            head += f" ({', '.join(self.reasons)})"
        if not self.complete and self.state in ("passed", "failed"):
            head += ", partial"
        return head

    @property
    def incomplete(self) -> str | None:
        """Why the run is not complete, for people (None when it is: it finished, passed or
        failed, and every planned iteration was selected): ``it was interrupted (3 of 60
        iterations ran)``, ``its session never finished it``, ``it ran a subset of the
        benchmark (-k, a node id, --lf)``."""
        if self.state == "interrupted":
            return f"it was {self.text()}"
        if self.state == "running":
            return "its session never finished it (killed, or still running)"
        if self.state not in ("passed", "failed"):
            return f"its status is {self.state}"
        if not self.complete:
            return "it ran a subset of the benchmark (-k, a node id, --lf)"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reasons": list(self.reasons),
            "planned": self.planned,
            "ran": self.ran,
            "complete": self.complete,
            "unit": self.unit,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunStatus:
        return cls(
            state=str(data["state"]),
            reasons=tuple(str(r) for r in data.get("reasons") or ()),
            planned=int(data.get("planned", 0)),
            ran=int(data.get("ran", 0)),
            complete=bool(data.get("complete", True)),
            unit=str(data.get("unit") or "iterations"),
        )


#: pytest-benchmark's settings of a test's calibrated rounds, as :class:`RoundsKnobs` (and the
#: marker) names them, with their JSON keys.
_ROUND_SETTINGS: Final = (
    ("min_rounds", "minRounds"),
    ("min_time", "minTime"),
    ("max_time", "maxTime"),
    ("timer", "timer"),
    ("disable_gc", "disableGc"),
    ("warmup", "warmup"),
    ("warmup_iterations", "warmupIterations"),
    ("calibration_precision", "calibrationPrecision"),
)

#: The stored knobs' key of a group of benchmarked tests' :class:`RoundsKnobs`.
_ROUNDS_KNOB: Final = "rounds"


@attrs.frozen
class RoundsKnobs:
    """The knobs of a group of benchmarked tests (the ``benchmark`` fixture's run, set by the
    plugin's benchmarked tests and stored with the run under ``rounds``): the settings of
    pytest-benchmark's calibrated rounds its tests were measured with (``@pytest.mark.
    benchmark(...)``; times in seconds, ``timer`` by name). A setting the tests do not share
    is None (set per test). A test using ``benchmark.pedantic(...)`` runs the rounds it asks
    for instead; each test's own count is :attr:`ParticipantSummary.rounds`."""

    min_rounds: int | None = None
    min_time: float | None = None
    max_time: float | None = None
    timer: str | None = None
    disable_gc: bool | None = None
    warmup: bool | None = None
    warmup_iterations: int | None = None
    calibration_precision: int | None = None

    @classmethod
    def of_settings(cls, settings: Sequence[Any]) -> RoundsKnobs:
        """From each test's :class:`~pytest_benchsdk._engine.rounds.RoundSettings`."""
        shared: dict[str, Any] = {}
        for name, _ in _ROUND_SETTINGS:
            values = {_setting_text(getattr(s, name)) for s in settings}
            if len(values) == 1:
                value = getattr(settings[0], name)
                shared[name] = _setting_text(value) if name == "timer" else value
        return cls(**shared)

    def settings(self) -> list[tuple[str, Any]]:
        """``(name, value)`` of the settings (None: per test), in pytest-benchmark's order;
        ``warmup_iterations`` only with warm-up on, ``calibration_precision`` only when not
        pytest-benchmark's default."""
        from pytest_benchsdk._engine.rounds import RoundSettings

        default_precision = attrs.fields(RoundSettings).calibration_precision.default
        out = []
        for name, _ in _ROUND_SETTINGS:
            value = getattr(self, name)
            if name == "warmup_iterations" and self.warmup is False:
                continue
            if name == "calibration_precision" and value == default_precision:
                continue  # pytest-benchmark's own, which few change
            out.append((name, value))
        return out

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, name) for name, key in _ROUND_SETTINGS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RoundsKnobs | None:
        if not isinstance(data, Mapping):
            return None
        return cls(**{name: data.get(key) for name, key in _ROUND_SETTINGS})

    @classmethod
    def of_knobs(cls, knobs: Mapping[str, Any]) -> RoundsKnobs | None:
        """From the knobs stored with a run (None for a bench file's run)."""
        return cls.from_json(knobs.get(_ROUNDS_KNOB))

    def as_knobs(self) -> dict[str, Any]:
        """The run's stored knobs that say it is a group of benchmarked tests (read back by
        :meth:`of_knobs`)."""
        return {_ROUNDS_KNOB: self.to_json()}


def _setting_text(value: Any) -> Any:
    """A setting as the knobs keep it: a callable (the timer) by its dotted name."""
    if callable(value):
        module = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None) or repr(value)
        return f"{module}.{name}" if module else name
    return value


@attrs.frozen
class Knobs:
    """The knobs the run used: ``iterations`` per participant (all phases), ``phases`` as
    ``(name, iterations)``, ``warmup`` the warm-up iterations asked for (config or
    ``--bench-warmup``) and, with phases, ``phase_warmup`` as ``(phase, count, source)``: what
    each participant runs right before each phase (``source``: ``phase``, its own ``warmup``;
    ``default``; ``cold``, a cold-named phase, which gets none unless it asks)."""

    iterations: int
    concurrency: int
    stagger_delay_ms: float
    group_by: str
    warmup: int = 0
    phases: tuple[tuple[str, int], ...] = ()
    providers: tuple[str, ...] | None = None
    phase_warmup: tuple[tuple[str, int, str], ...] = ()
    #: The phases were sized on the command line (``--bench-phase-iterations``): the knobs
    #: line says each phase's size.
    phases_sized: bool = False
    #: A group of benchmarked tests' settings (None for a bench file): its participants are
    #: tests, each measured in rounds, and the knobs above mean nothing for it.
    rounds: RoundsKnobs | None = None

    @property
    def unit(self) -> str:
        """What a run with these knobs counts (:attr:`RunStatus.unit`): ``tests`` for a group
        of benchmarked tests, ``iterations`` for a bench file."""
        return "iterations" if self.rounds is None else "tests"

    def to_json(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "concurrency": self.concurrency,
            "staggerDelayMs": self.stagger_delay_ms,
            "groupBy": self.group_by,
            "warmup": self.warmup,
            "phases": [{"name": n, "iterations": i} for n, i in self.phases],
            "providers": None if self.providers is None else list(self.providers),
            "phaseWarmup": [{"phase": p, "count": c, "source": s} for p, c, s in self.phase_warmup],
            "phasesSized": self.phases_sized,
            "rounds": None if self.rounds is None else self.rounds.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Knobs:
        providers = data.get("providers")
        return cls(
            iterations=int(data["iterations"]),
            concurrency=int(data["concurrency"]),
            stagger_delay_ms=float(data["staggerDelayMs"]),
            group_by=str(data["groupBy"]),
            warmup=int(data.get("warmup") or 0),
            phases=tuple((str(p["name"]), int(p["iterations"])) for p in data.get("phases") or ()),
            providers=None if providers is None else tuple(str(p) for p in providers),
            phase_warmup=tuple(
                (str(w["phase"]), int(w["count"]), str(w["source"]))
                for w in data.get("phaseWarmup") or ()
            ),
            phases_sized=bool(data.get("phasesSized", False)),
            rounds=RoundsKnobs.from_json(data.get("rounds")),
        )


@attrs.frozen
class ABSide:
    """The run's side of an A/B session (``--bench-ab``): ``side`` ``"A"`` (the revision's
    code) or ``"B"`` (the working tree's), ``revision`` side A's commit, ``other_run_id`` the
    other side's run (for B: the run its comparison pairs with)."""

    side: str
    revision: str
    other_run_id: str | None = None

    @classmethod
    def of_knobs(
        cls, knobs: Mapping[str, Any], comparison: BaselineComparison | None
    ) -> ABSide | None:
        """From the knobs an A/B session stores with each side's run (``abSide``,
        ``abRevision``, A's ``abRun``); None for any other run."""
        side, revision = knobs.get("abSide"), knobs.get("abRevision")
        if side not in ("A", "B") or not isinstance(revision, str):
            return None
        other = knobs.get("abRun") if side == "A" else None
        if side == "B" and comparison is not None:
            other = comparison.baseline_run_id
        return cls(str(side), revision, other if isinstance(other, str) else None)

    def line(self) -> str:
        """``A/B: side B (the working tree) against 1a2b3c4; side A is run 5b56…``."""
        short = self.revision[:7]
        other = f"run {self.other_run_id[:12]}…" if self.other_run_id else "not stored"
        if self.side == "A":
            return f"A/B: side A (revision {short}); side B is {other}"
        return f"A/B: side B (the working tree) against revision {short}; side A is {other}"

    def to_json(self) -> dict[str, Any]:
        return {"side": self.side, "revision": self.revision, "otherRunId": self.other_run_id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ABSide | None:
        if not data:
            return None
        other = data.get("otherRunId")
        return cls(str(data["side"]), str(data["revision"]), None if other is None else str(other))


@attrs.frozen
class RunSummary:
    """One finished run of one benchmark, as every view shows it.

    ``started_at``/``finished_at`` are the benchmark's own (its first iteration's start, its
    last one's end), not the session's. ``participants`` are in declared order, skipped ones
    included. ``scores`` is None for a benchmark without scoring; ``comparison`` is the
    ``--bench-compare`` result (or ``comparison_note`` says why there is none).
    """

    benchmark_slug: str
    benchmark_name: str
    file: str | None
    knobs: Knobs
    environment: RunEnvironment
    status: RunStatus
    participants: tuple[ParticipantSummary, ...]
    local_run_id: str | None = None
    platform_run_id: str | None = None
    dashboard_url: str | None = None
    dry_run: bool = False
    run_key: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    scores: ScoreTable | None = None
    thresholds: tuple[ThresholdVerdict, ...] = ()
    comparison: BaselineComparison | None = None
    comparison_note: str | None = None
    warnings: tuple[RunWarning, ...] = ()
    errors: tuple[str, ...] = ()
    #: What the schedule said about the config (e.g. uneven phases), once per run.
    notes: tuple[str, ...] = ()
    #: Per participant and metric the intervals of the median, p95 and p99 (none when the
    #: run's resampling was off).
    intervals: tuple[StatisticInterval, ...] = ()
    #: The best participant against the others (two or more ran, resampling on).
    relative: RelativeSummary | None = None
    #: The run's side of an A/B session (``--bench-ab``), if it is one.
    ab: ABSide | None = None
    #: A benchmark without scored metrics whose every passing iteration is made of calibrated
    #: steps (``step(name, fn, calls=...)``): those steps' per-call metrics, which it is judged
    #: and exported on instead of the latency (its loops' length); empty otherwise.
    per_call: tuple[str, ...] = ()

    def participant(self, name: str) -> ParticipantSummary | None:
        return next((p for p in self.participants if p.name == name), None)

    def interval(self, participant: str, metric: str, statistic: str) -> StatisticInterval | None:
        """The interval of ``participant``'s ``statistic`` of ``metric``, if there is one."""
        return next(
            (
                i
                for i in self.intervals
                if i.participant == participant and i.metric == metric and i.statistic == statistic
            ),
            None,
        )

    @property
    def ran_participants(self) -> tuple[ParticipantSummary, ...]:
        return tuple(p for p in self.participants if p.ran)

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmarkSlug": self.benchmark_slug,
            "benchmarkName": self.benchmark_name,
            "file": self.file,
            "knobs": self.knobs.to_json(),
            "environment": self.environment.to_dict(),
            "status": self.status.to_json(),
            "participants": [p.to_json() for p in self.participants],
            "localRunId": self.local_run_id,
            "runId": self.platform_run_id,
            "dashboardUrl": self.dashboard_url,
            "dryRun": self.dry_run,
            "runKey": self.run_key,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "scores": None if self.scores is None else self.scores.to_json(),
            "thresholds": [t.to_json() for t in self.thresholds],
            "comparison": None if self.comparison is None else self.comparison.to_json(),
            "comparisonNote": self.comparison_note,
            "warnings": [w.to_json() for w in self.warnings],
            "errors": list(self.errors),
            "notes": list(self.notes),
            "intervals": [i.to_json() for i in self.intervals],
            "relative": None if self.relative is None else self.relative.to_json(),
            "ab": None if self.ab is None else self.ab.to_json(),
            "perCall": list(self.per_call),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        comparison = data.get("comparison")
        return cls(
            benchmark_slug=str(data["benchmarkSlug"]),
            benchmark_name=str(data["benchmarkName"]),
            file=data.get("file"),
            knobs=Knobs.from_json(data["knobs"]),
            environment=RunEnvironment.from_dict(data["environment"]),
            status=RunStatus.from_json(data["status"]),
            participants=tuple(ParticipantSummary.from_json(p) for p in data["participants"]),
            local_run_id=data.get("localRunId"),
            platform_run_id=data.get("runId"),
            dashboard_url=data.get("dashboardUrl"),
            dry_run=bool(data.get("dryRun", False)),
            run_key=data.get("runKey"),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            scores=ScoreTable.from_json(data.get("scores")),
            thresholds=tuple(ThresholdVerdict.from_json(t) for t in data.get("thresholds") or ()),
            comparison=None if comparison is None else BaselineComparison.from_json(comparison),
            comparison_note=data.get("comparisonNote"),
            warnings=tuple(RunWarning.from_json(w) for w in data.get("warnings") or ()),
            errors=tuple(str(e) for e in data.get("errors") or ()),
            notes=tuple(str(n) for n in data.get("notes") or ()),
            intervals=tuple(StatisticInterval.from_json(i) for i in data.get("intervals") or ()),
            relative=RelativeSummary.from_json(data.get("relative")),
            ab=ABSide.from_json(data.get("ab")),
            per_call=tuple(str(k) for k in data.get("perCall") or ()),
        )
