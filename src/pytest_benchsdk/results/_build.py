"""Building a :class:`~pytest_benchsdk.results.RunSummary`'s parts from samples and scores.

Private to :mod:`pytest_benchsdk.results`. :class:`MetricCatalog` says what the config knows of
each metric and step (label, unit, direction, whether and how it is scored);
:func:`participant_summary` turns one participant's samples into its facts; :func:`score_table`
ranks the score rows. The session end, ``pytest-benchsdk merge``, the threshold items and the
store's read-back all build summaries through these functions only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pytest_benchsdk._analysis.pytest_benchmark import fixture_stats
from pytest_benchsdk._analysis.scoring import ScoreResult, ScoringSpec, ranking_key
from pytest_benchsdk._analysis.stats import DEFAULT_TRIM
from pytest_benchsdk._analysis.uncertainty import ScoreUncertainty, tied_with_above
from pytest_benchsdk._config.models import BenchmarkConfig
from pytest_benchsdk._engine.rounds import TIME_KEY
from pytest_benchsdk._instruments import INSTRUCTIONS_KEY
from pytest_benchsdk.results._model import (
    FailureGroup,
    FixtureStats,
    MetricSummary,
    ParticipantSummary,
    PhaseSummary,
    RankedParticipant,
    RoundCount,
    SampleStats,
    ScoreTable,
    StepSummary,
    metric_unit,
)
from pytest_benchsdk.results._samples import ParticipantSamples

__all__ = [
    "MetricCatalog",
    "MetricInfo",
    "config_catalog",
    "participant_summary",
    "score_table",
]


@attrs.frozen
class MetricInfo:
    """What the config says of one metric: its label, unit and direction; for a scored one the
    data key its samples come from (``sample_key``; None for a function) and its ``trim``."""

    key: str
    label: str
    unit: str
    lower_is_better: bool | None
    scored: bool = False
    sample_key: str | None = None
    trim: float = DEFAULT_TRIM


@attrs.frozen
class MetricCatalog:
    """The metrics and steps of a benchmark as its config describes them."""

    scored: tuple[MetricInfo, ...] = ()
    #: ``display.metrics`` by key: ``(label, unit, lower_is_better)``.
    display: Mapping[str, tuple[str, str | None, bool | None]] = attrs.Factory(dict)
    #: ``display.steps`` by key: ``(label, order)``.
    steps: Mapping[str, tuple[str, int | None]] = attrs.Factory(dict)

    @classmethod
    def of(
        cls,
        spec: ScoringSpec | None,
        display: Any = None,
        score_units: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> MetricCatalog:
        """From a scoring spec and a ``display`` config (model or camelCase mapping).
        ``score_units``: the units the score rows carry (they win, as scoring resolved them);
        ``labels``: the scoring config's metric labels."""
        shown: dict[str, tuple[str, str | None, bool | None]] = {}
        steps: dict[str, tuple[str, int | None]] = {}
        for entry in _entries(display, "metrics"):
            key = _field(entry, "key")
            if not isinstance(key, str):
                continue
            direction = _field(entry, "direction")
            lower = None if direction is None else direction == "lower-better"
            label = _field(entry, "label")
            shown[key] = (
                label if isinstance(label, str) and label else key,
                _field(entry, "unit"),
                lower,
            )
        for entry in _entries(display, "steps"):
            key = _field(entry, "key")
            if isinstance(key, str):
                label, order = _field(entry, "label"), _field(entry, "order")
                steps[key] = (
                    label if isinstance(label, str) and label else key,
                    order if isinstance(order, int) else None,
                )
        scored: list[MetricInfo] = []
        for metric in spec.metrics if spec is not None else ():
            sample_key = metric.value if isinstance(metric.value, str) else None
            if metric.value is None:
                sample_key = metric.name
            display_entry = shown.get(sample_key or metric.name) or shown.get(metric.name)
            unit = (score_units or {}).get(metric.name) or metric.unit
            if not unit and display_entry is not None:
                unit = display_entry[1]
            label = (labels or {}).get(metric.name) or (
                display_entry[0] if display_entry is not None else metric.name
            )
            scored.append(
                MetricInfo(
                    key=metric.name,
                    label=label,
                    unit=metric_unit(sample_key or metric.name, unit),
                    lower_is_better=not metric.higher_is_better,
                    scored=True,
                    sample_key=sample_key,
                    trim=DEFAULT_TRIM if metric.trim is None else metric.trim,
                )
            )
        return cls(tuple(scored), shown, steps)

    def unscored(self, key: str) -> MetricInfo:
        label, unit, lower = self.display.get(key, (key, None, None))
        if lower is None and key == INSTRUCTIONS_KEY:
            lower = True  # a count of work done: fewer is better, unless the display says
        return MetricInfo(key, label, metric_unit(key, unit), lower)

    def is_scored_sample(self, key: str) -> bool:
        """Whether data key ``key`` is a scored metric's samples (shown under that metric)."""
        return any(info.sample_key == key or info.key == key for info in self.scored)

    def step(self, name: str) -> tuple[str, int | None]:
        return self.steps.get(name, (name, None))


def config_catalog(
    config: BenchmarkConfig, spec: ScoringSpec | None, results: Sequence[ScoreResult] | None
) -> MetricCatalog:
    """A benchmark's catalog: its scoring spec, its ``display``, the scoring config's labels
    and the units its score rows carry."""
    scoring = config.scoring
    labels = (
        {m.key: m.label for m in scoring.metrics if m.label}
        if scoring is not None and config.on_score is None
        else None
    )
    units = {m.name: m.unit for r in results or () for m in r.metrics}
    return MetricCatalog.of(spec, config.display, units, labels)


def _entries(display: Any, field: str) -> Sequence[Any]:
    if display is None:
        return ()
    value = display.get(field) if isinstance(display, Mapping) else getattr(display, field, None)
    return value or ()


def _field(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, Mapping) else getattr(entry, name, None)


def _metric(
    info: MetricInfo, values: Sequence[float] | None, *, trim: float | None = None
) -> MetricSummary:
    return MetricSummary(
        key=info.key,
        label=info.label,
        unit=info.unit,
        scored=info.scored,
        lower_is_better=info.lower_is_better,
        stats=SampleStats.of(values or (), info.trim if trim is None else trim),
    )


def _metrics(
    samples: ParticipantSamples,
    catalog: MetricCatalog,
    scored_samples: Mapping[str, Sequence[float]] | None,
    phase: str | None,
) -> tuple[MetricSummary, ...]:
    out: list[MetricSummary] = []
    for info in catalog.scored:
        if scored_samples is not None and info.key in scored_samples:
            values: Sequence[float] = scored_samples[info.key]
        else:
            # No records to sample as scoring does (a function value, or no records at hand):
            # the data key's samples of the passing records.
            values = samples.metric(info.sample_key, phase) if info.sample_key else []
        out.append(_metric(info, values))
    calibrated = samples.calibrated_steps()
    for key in samples.metric_keys():
        if catalog.is_scored_sample(key):
            continue
        values = samples.metric(key, phase)
        if values:
            info = catalog.unscored(key)
            if key in calibrated:  # a calibrated step's time per call, unless said otherwise
                info = attrs.evolve(
                    info,
                    unit=info.unit or "ms",
                    lower_is_better=True if info.lower_is_better is None else info.lower_is_better,
                )
            out.append(_metric(info, values))
    return tuple(out)


def participant_summary(
    name: str,
    samples: ParticipantSamples,
    catalog: MetricCatalog,
    *,
    planned: int,
    planned_phases: Mapping[str, int] | None = None,
    scored_samples: Mapping[str, Sequence[float]] | None = None,
    phase_scored_samples: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    skipped: str | None = None,
) -> ParticipantSummary:
    """One participant's facts. ``scored_samples`` are the scored metrics' samples as scoring
    takes them (:func:`~pytest_benchsdk.scoring.metric_samples` of the records), so their
    statistics are the score rows'; without them a scored metric reads its data key.
    ``planned_phases``: selected iterations per phase (a run with more than one phase)."""
    ran, passed = samples.counts()
    phases: list[PhaseSummary] = []
    for phase, planned_in_phase in (planned_phases or {}).items():
        phase_ran, phase_passed = samples.counts(phase)
        phases.append(
            PhaseSummary(
                phase=phase,
                planned=planned_in_phase,
                ran=phase_ran,
                passed=phase_passed,
                latency=SampleStats.of(samples.latency(phase)),
                metrics=_metrics(samples, catalog, (phase_scored_samples or {}).get(phase), phase),
            )
        )
    steps = []
    for position, step_name in enumerate(samples.step_names()):
        label, order = catalog.step(step_name)
        latencies, failed = samples.step(step_name)
        steps.append(
            StepSummary(
                name=step_name,
                label=label,
                order=position if order is None else order,
                latency=SampleStats.of(latencies),
                failed=failed,
            )
        )
    steps.sort(key=lambda s: (s.order, s.name))
    counted = samples.rounds()
    return ParticipantSummary(
        name=name,
        planned=planned,
        ran=ran,
        passed=passed,
        latency=SampleStats.of(samples.latency()),
        metrics=_metrics(samples, catalog, scored_samples, None),
        steps=tuple(steps),
        phases=tuple(phases),
        failures=tuple(
            FailureGroup(code, count, tuple(messages))
            for code, count, messages in samples.failures()
        ),
        skipped=skipped,
        rounds=None if counted is None else RoundCount(*counted),
        fixture=_fixture_stats(samples, counted),
    )


def _fixture_stats(
    samples: ParticipantSamples, counted: tuple[int, int] | None
) -> FixtureStats | None:
    """A benchmarked test as pytest-benchmark's JSON holds it: its identity and its kept
    rounds' time per call, with pytest-benchmark's statistics of them (seconds)."""
    test = samples.test()
    per_call = [v / 1000 for v in samples.metric(TIME_KEY)]
    if test is None or counted is None or not per_call:
        return None
    identity, extra_info = test
    rounds, iterations = counted
    params = identity.get("params")
    group, param = identity.get("group"), identity.get("param")
    return FixtureStats(
        fullname=str(identity.get("fullname", "")),
        name=str(identity.get("name", "")),
        group=None if group is None else str(group),
        param=None if param is None else str(param),
        params=dict(params) if isinstance(params, Mapping) else None,
        extra_info=dict(extra_info),
        options=dict(options) if isinstance(options := identity.get("options"), Mapping) else {},
        stats=fixture_stats(per_call, iterations=iterations, rounds=rounds),
        data=tuple(per_call),
        cprofile=_cprofile_rows(identity.get("cprofile")),
    )


def _cprofile_rows(rows: object) -> tuple[Mapping[str, Any], ...]:
    """``--benchmark-cprofile``'s rows kept with a test's identity."""
    if not isinstance(rows, list):
        return ()
    return tuple(dict(row) for row in rows if isinstance(row, Mapping))


def score_table(
    results: Sequence[ScoreResult],
    catalog: MetricCatalog,
    *,
    uncertainty: Sequence[ScoreUncertainty] | None = None,
    phase_results: Mapping[str, Sequence[ScoreResult]] | None = None,
    group_by: str | None = None,
    dimensions: Mapping[str, Any] | None = None,
) -> ScoreTable:
    """The ranking of the score rows: participants by their aggregate row (upstream's order:
    higher composite first); a participant none of whose iterations passed gets no rank (it has
    no score to rank, only a success rate of 0) and comes after the ranked ones, skipped ones
    last. Ties are between neighbours whose intervals overlap, ranked ones only. When the
    scoring names metrics and no participant's row has any of them (nothing scored was
    measured: every score is empty), nobody is ranked."""
    firsts: dict[str, ScoreResult] = {}
    for row in results:
        if row.provider:
            firsts.setdefault(row.provider, row)
    empty = bool(catalog.scored) and not any(row.metrics for row in firsts.values())

    def unrankable(row: ScoreResult) -> bool:
        return empty or row.skipped or row.success_rate == 0

    ordered = sorted(firsts.values(), key=lambda r: (unrankable(r), *ranking_key(r)))
    by_participant = {u.participant: u for u in uncertainty or ()}
    ranked = [r.provider for r in ordered if not unrankable(r)]
    ties = tied_with_above([by_participant[p] for p in ranked if p in by_participant])
    # Each participant's rows and phase rows, gathered in one pass (a pass per participant
    # would cost participants x rows).
    rows_of: dict[str, list[ScoreResult]] = {}
    for row in results:
        rows_of.setdefault(row.provider, []).append(row)
    phase_rows_of: dict[str, list[tuple[str, ScoreResult]]] = {}
    for phase, rows in (phase_results or {}).items():
        for row in rows:
            phase_rows_of.setdefault(row.provider, []).append((phase, row))
    ranking = []
    rank = 0
    for first in ordered:
        name = first.provider
        place: int | None = None
        if not unrankable(first):
            rank += 1
            place = rank
        ranking.append(
            RankedParticipant(
                participant=name,
                rank=place,
                tied_with_above=place is not None and name in ties,
                rows=tuple(rows_of.get(name, ())),
                phase_rows=tuple(phase_rows_of.get(name, ())),
                uncertainty=by_participant.get(name),
            )
        )
    # The scored metrics in the scoring's order, a metric no row measured included ("-").
    metric_keys = list(
        dict.fromkeys(
            [*(i.key for i in catalog.scored), *(m.name for r in results for m in r.metrics)]
        )
    )
    infos = {info.key: info for info in catalog.scored}
    units = {m.name: m.unit for r in results for m in r.metrics}
    metrics = tuple(
        (
            key,
            metric_unit(key, units.get(key) or (infos[key].unit if key in infos else "")),
            infos[key].label if key in infos else key,
        )
        for key in metric_keys
    )
    level = next(iter(by_participant.values())).level if by_participant else None
    return ScoreTable(
        results=tuple(results),
        ranking=tuple(ranking),
        metrics=metrics,
        group_by=group_by,
        dimensions=dict(dimensions or {}),
        level=level,
        higher_is_better=frozenset(i.key for i in catalog.scored if i.lower_is_better is False),
    )
