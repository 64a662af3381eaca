"""The analyses of a finished run, made once: the scores' uncertainty, the statistics'
intervals, the relative summary, the run-hygiene warnings, the threshold verdicts and the
baseline comparison.

Private to :mod:`pytest_benchsdk.results`. :func:`analyse` is the one place they are made: the
session end calls it for each benchmark, ``pytest-benchsdk merge`` for each merged run. Each
analysis is isolated: one that fails is reported in :attr:`Analyses.errors` and the others
still stand.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs

from pytest_benchsdk._analysis.baseline import (
    Baseline,
    BaselineComparison,
    CompareRule,
    compare_with_baseline,
)
from pytest_benchsdk._analysis.hygiene import (
    TIMER_FLOOR,
    UNMEASURED_METRIC,
    RunWarning,
    run_warnings,
    step_floor_warnings,
)
from pytest_benchsdk._analysis.scoring import (
    RecordsOutcome,
    ScoreResult,
    ScoringSpec,
    metric_samples,
    score,
)
from pytest_benchsdk._analysis.scoring_spec import scoring_spec_of
from pytest_benchsdk._analysis.uncertainty import ScoreUncertainty, score_uncertainty
from pytest_benchsdk._base.defaults import DEFAULT_COUNT_THRESHOLD, DEFAULT_NOISE_THRESHOLD
from pytest_benchsdk._base.numbers import row_scale
from pytest_benchsdk._base.spelling import closest_within
from pytest_benchsdk._config.models import BenchmarkConfig
from pytest_benchsdk._config.thresholds import (
    SCORE_KEY,
    SUCCESS_RATE_KEY,
    Threshold,
    ThresholdVerdict,
    evaluate_threshold,
    unmeasured_hint,
)
from pytest_benchsdk.records import ParticipantRecords, TaskRecord
from pytest_benchsdk.results._build import config_catalog, participant_summary
from pytest_benchsdk.results._intervals import metric_values, relative_summary, run_intervals
from pytest_benchsdk.results._model import (
    LATENCY,
    ParticipantSummary,
    PhaseSummary,
    RelativeSummary,
    StatisticInterval,
    metric_unit,
)
from pytest_benchsdk.results._samples import (
    ParticipantSamples,
    record_phase,
    shared_per_call_keys,
)

__all__ = [
    "Analyses",
    "ComparisonOptions",
    "HygieneOptions",
    "analyse",
    "judge_thresholds",
    "participant_verdicts",
]

_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class HygieneOptions:
    """How :func:`analyse` runs the run-hygiene checks: the warning codes to leave out
    (``ignore``, ``--bench-warnings-ignore``); ``warmup``, the warm-up iterations each
    participant ran first (per phase), and ``phase_warmup`` the count of each phase where it
    is its own (a cold phase gets none); ``rounds``: the run is a group of benchmarked tests,
    each participant's samples its rounds (the warnings' advice names the ``benchmark``
    fixture's knobs)."""

    ignore: Collection[str] = ()
    warmup: int = 0
    phase_warmup: Mapping[str, int] = attrs.field(factory=dict)
    rounds: bool = False


@attrs.frozen(kw_only=True)
class ComparisonOptions:
    """What :func:`analyse` compares the run with: ``baseline`` (a string says why there is
    none); ``setup``, this run's ``{"benchmark", "knobs", "environment"}``;
    ``noise_threshold``, the relative change below which nothing is a change
    (``--bench-compare-noise``); ``count_threshold``, the same for a count (``instructions``,
    ``--bench-compare-count-noise``); ``compare_on``, the metrics whose verdicts count
    (``--bench-compare-on``; one that no participant measured is
    :attr:`Analyses.usage_error`, and there is no comparison); ``rules``
    (``--bench-compare-fail=STAT:LIMIT``), judged in the comparison."""

    baseline: Baseline | str
    setup: Mapping[str, Any] = attrs.field(factory=dict)
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD
    count_threshold: float = DEFAULT_COUNT_THRESHOLD
    compare_on: Sequence[str] = ()
    rules: Sequence[CompareRule] = ()


#: The run-hygiene checks with every code and no warm-up (:func:`analyse`'s default).
_ALL_CHECKS: Final = HygieneOptions()


@attrs.frozen
class Analyses:
    """What :func:`analyse` found. ``uncertainty`` is None when it was not estimated (no
    scoring, resamples off, or scores changed by a hook); ``intervals`` and ``relative`` are
    empty with resamples off."""

    uncertainty: tuple[ScoreUncertainty, ...] | None = None
    intervals: tuple[StatisticInterval, ...] = ()
    relative: RelativeSummary | None = None
    warnings: tuple[RunWarning, ...] = ()
    thresholds: tuple[ThresholdVerdict, ...] = ()
    comparison: BaselineComparison | None = None
    comparison_note: str | None = None
    errors: tuple[str, ...] = ()
    #: A mistake in how the comparison was asked for (``--bench-compare-on`` naming a key no
    #: participant measured), or a threshold on such a key: the session reports it as a usage
    #: error.
    usage_error: str | None = None
    #: Scored keys that no passing iteration of any participant measured (a misspelt key in
    #: the scoring), one line each: they fail the run.
    unmeasured: tuple[str, ...] = ()


def _guarded(what: str, errors: list[str], action: Callable[[], _T]) -> _T | None:
    """``action()``, or None with ``<what> failed: <error>`` in ``errors`` (an analysis never
    takes the others down; Ctrl-C still stops everything)."""
    try:
        return action()
    except Exception as exc:
        text = str(exc)
        errors.append(f"{what} failed: {type(exc).__name__}: {text}" if text else f"{what} failed")
        return None


def judge_thresholds(
    thresholds: Sequence[Threshold],
    summary: ParticipantSummary,
    score: float | None = None,
) -> list[ThresholdVerdict]:
    """Judge a participant's thresholds on its summary: the numbers the tables print (a
    threshold that names a phase: that phase's row; ``score`` is always the participant's)."""
    verdicts = []
    for threshold in thresholds:
        if summary.skipped is not None or not summary.ran:
            reason = summary.skipped or f"no iteration of {summary.name} ran"
            verdicts.append(ThresholdVerdict(threshold, summary.name, None, False, skipped=reason))
            continue
        part: ParticipantSummary | PhaseSummary = summary
        if threshold.phase is not None and threshold.metric != SCORE_KEY:
            # One phase only (no phase rows) is the whole run.
            phase = next((p for p in summary.phases if p.phase == threshold.phase), None)
            if phase is not None:
                part = phase
            elif summary.phases:
                verdicts.append(
                    ThresholdVerdict(
                        threshold,
                        summary.name,
                        None,
                        False,
                        skipped=f"{summary.name} ran no iteration of phase {threshold.phase}",
                    )
                )
                continue
        if not part.ran:
            reason = f"no iteration of {summary.name} · {threshold.phase} ran"
            verdicts.append(ThresholdVerdict(threshold, summary.name, None, False, skipped=reason))
            continue
        metric = next((m for m in part.metrics if m.key == threshold.metric), None)
        stats, unit = (None, "")
        hint = None
        if threshold.metric not in (SUCCESS_RATE_KEY, SCORE_KEY):
            if metric is not None:
                stats, unit = metric.stats, metric.unit
            elif threshold.metric == LATENCY:
                stats, unit = part.latency, "ms"
            else:
                measured = [LATENCY, *(m.key for m in part.metrics if m.key != LATENCY)]
                hint = f"{summary.name} {unmeasured_hint(threshold.metric, measured)}"
        verdict = evaluate_threshold(
            threshold,
            summary.name,
            stats=stats,
            success_rate=part.passed / part.ran,
            score=score,
            unit=unit,
            scale=None if stats is None else row_scale([stats.median, stats.p95, stats.p99]),
        )
        lower = metric.lower_is_better if metric is not None else None
        verdicts.append(attrs.evolve(verdict, hint=hint, lower_is_better=lower))
    return verdicts


def participant_verdicts(
    config: BenchmarkConfig,
    name: str,
    samples: ParticipantSamples,
    records: Sequence[TaskRecord],
    thresholds: Sequence[Threshold],
) -> list[ThresholdVerdict]:
    """A participant's thresholds judged on what one process ran of it (a threshold item):
    its summary built as the session end builds it, from its samples and records (scored with
    the benchmark's scoring, when it has one; with phases, each phase's rows too)."""
    spec = scoring_spec_of(config)
    rows = None
    scored = None
    phases = [p.name for p in config.phases or ()] if len(config.phases or ()) > 1 else []
    phase_scored: dict[str, dict[str, list[float]]] | None = None
    if spec is not None:
        rows = score(RecordsOutcome((ParticipantRecords(name, tuple(records)),)), spec)
        if spec.metrics:
            scored = metric_samples(spec, records)
            phase_scored = {
                phase: metric_samples(spec, [r for r in records if record_phase(r) == phase])
                for phase in phases
            }
    summary = participant_summary(
        name,
        samples,
        config_catalog(config, spec, rows),
        planned=samples.count,
        planned_phases={phase: samples.counts(phase)[0] for phase in phases},
        scored_samples=scored,
        phase_scored_samples=phase_scored,
    )
    composite = None if not rows or rows[0].skipped else rows[0].composite_score
    return judge_thresholds(thresholds, summary, composite)


def _p99_metrics(spec: ScoringSpec | None, thresholds: Sequence[Threshold]) -> frozenset[str]:
    """The metrics whose p99 counts: a scoring weight on it, or a threshold judging it."""
    weighted = {m.name for m in spec.metrics if m.weights.p99 > 0} if spec is not None else set()
    judged = {t.metric for t in thresholds if t.statistic == "p99"}
    return frozenset(weighted | judged)


def _warnings(
    participants: Sequence[ParticipantSummary],
    samples: Mapping[str, ParticipantSamples],
    records: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    *,
    thresholds: Mapping[str, Sequence[Threshold]],
    warmup: int,
    phase_warmup: Mapping[str, int],
    ignore: Collection[str],
    rounds: bool = False,
) -> tuple[RunWarning, ...]:
    """Run-hygiene findings per participant (per participant × phase, with phases: a cold
    phase slower than the warm one is not a trend) on the compared metrics' samples in run
    order: the scored metrics (as scoring takes them), else the per-call metrics of a
    benchmark of calibrated steps, else the latency; ``p99-few-samples``
    only where p99 counts (a benchmarked test's: only where a threshold judges it, its score's
    weights being the plugin's); the codes in ``ignore`` left out."""
    found: list[RunWarning] = []
    per_call = shared_per_call_keys(
        kept for p in participants if p.ran and (kept := samples.get(p.name)) is not None
    )
    for participant in participants:
        if not participant.ran:
            continue
        kept = samples.get(participant.name)
        own = records.get(participant.name)
        units = {LATENCY: "ms", **{m.key: m.unit for m in participant.metrics}}
        # A benchmarked test's score is the plugin's own (its weights were not the user's
        # choice): its p99 counts only where a threshold judges it.
        p99_metrics = _p99_metrics(None if rounds else spec, thresholds.get(participant.name, ()))
        # The statistics' trims (a scored metric's own): high-variance judges what they use.
        trims = {
            m.name: m.trim for m in (spec.metrics if spec is not None else ()) if m.trim is not None
        }
        # Without phases (or with one) the participant's run is one series, as before.
        parts: list[tuple[str | None, int, int, int]] = [
            (p.phase, p.ran, p.ran - p.passed, phase_warmup.get(p.phase, warmup))
            for p in participant.phases
            if p.ran
        ] or [(None, participant.ran, participant.failed, warmup)]
        for phase, ran, failed, warm in parts:
            scored: list[str] = []
            if spec is not None and spec.metrics and own is not None:
                in_phase = own if phase is None else [r for r in own if record_phase(r) == phase]
                series = metric_samples(spec, in_phase)
                scored = [m.name for m in spec.metrics]
            elif kept is not None and per_call:
                # Calibrated steps only: their per-call figures (the latency is loop lengths).
                series = {key: kept.metric(key, phase) for key in per_call}
            else:
                series = {LATENCY: kept.latency(phase) if kept is not None else []}
            found.extend(
                warning
                for warning in run_warnings(
                    participant.name,
                    series,
                    iterations=ran,
                    failed=failed,
                    p99_metrics=p99_metrics,
                    units=units,
                    warmup=warm,
                    scored=scored,
                    phase=phase,
                    rounds=rounds,
                    trims=trims,
                )
                if warning.code not in ignore
            )
        if kept is not None and TIMER_FLOOR not in ignore:
            found.extend(step_floor_warnings(participant.name, _raw_steps(kept)))
    return tuple(found)


#: The step the record builder adds to a task that took none (upstream's record builder).
_IMPLICIT_STEP: Final = "task"


def _raw_steps(kept: ParticipantSamples) -> dict[str, list[float]]:
    """The latencies of the named steps each timed by one clock pair: not a calibrated loop's
    per-call figures, nor the implicit ``task`` step (the latency again, which is checked
    where the latency is: without scoring)."""
    calibrated = kept.calibrated_steps()
    return {
        name: kept.step(name)[0]
        for name in kept.step_names()
        if name not in calibrated and name != _IMPLICIT_STEP
    }


def analyse(
    participants: Sequence[ParticipantSummary],
    *,
    samples: Mapping[str, ParticipantSamples],
    records: Sequence[ParticipantRecords] = (),
    spec: ScoringSpec | None = None,
    results: Sequence[ScoreResult] | None = None,
    display_metrics: Any = None,
    resamples: int = 0,
    score_intervals: bool = True,
    hygiene: HygieneOptions | None = _ALL_CHECKS,
    thresholds: Mapping[str, Sequence[Threshold]] | None = None,
    comparison: ComparisonOptions | None = None,
) -> Analyses:
    """Every analysis of one run.

    * ``records``: the participants' records (needed for scores' intervals and comparisons);
      ``spec`` and ``results``: the scoring spec and the score rows (as shown).
    * ``resamples``: bootstrap resamples for the scores' intervals (0: none, and neither the
      statistics' intervals nor the relative summary); ``score_intervals`` False: no scores'
      intervals whatever ``resamples`` says (a run whose participants each have one record
      holding their samples, as a benchmarked test's: resampling records says nothing).
    * ``hygiene``: run the run-hygiene checks as :class:`HygieneOptions` says (None: none).
      With phases each participant × phase is judged alone.
    * ``thresholds``: per participant the thresholds to judge (those selected).
    * ``comparison``: compare with a baseline as :class:`ComparisonOptions` says (None: no
      comparison, and no note of why).
    """
    errors: list[str] = []
    by_name = {pr.participant: pr.records for pr in records}
    uncertainty: tuple[ScoreUncertainty, ...] | None = None
    if results is not None and spec is not None and resamples > 0 and score_intervals:
        spec_ = spec
        estimates = _guarded(
            "score uncertainty",
            errors,
            lambda: score_uncertainty(
                RecordsOutcome(tuple(records)),
                spec_,
                display_metrics=display_metrics,
                resamples=resamples,
            ),
        )
        # The intervals are of upstream's scores: a pytest_benchsdk_scores hook that changed
        # them leaves intervals that would not contain what is shown, so there are none then.
        shown: dict[str, float] = {}
        for row in results:
            shown.setdefault(row.provider, row.composite_score)
        if estimates is not None and all(
            u.skipped or shown.get(u.participant) == u.score for u in estimates
        ):
            uncertainty = tuple(estimates)
    intervals: tuple[StatisticInterval, ...] = ()
    relative: RelativeSummary | None = None
    if resamples > 0:
        values = _values(samples, by_name, spec)
        ran = [p for p in participants if p.ran and p.skipped is None]
        scored = [m.name for m in spec.metrics] if spec is not None else []
        intervals = (
            _guarded("statistic intervals", errors, lambda: run_intervals(ran, values, scored))
            or ()
        )
        per_call = shared_per_call_keys(
            kept for p in ran if (kept := samples.get(p.name)) is not None
        )
        primary = _primary(ran, spec, per_call)
        relative = _guarded(
            "relative summary", errors, lambda: relative_summary(ran, *primary, values)
        )
    found: tuple[RunWarning, ...] = ()
    if hygiene is not None:
        checks = hygiene
        found = (
            _guarded(
                "run-hygiene checks",
                errors,
                lambda: _warnings(
                    participants,
                    samples,
                    by_name,
                    spec,
                    thresholds=thresholds or {},
                    warmup=checks.warmup,
                    phase_warmup=checks.phase_warmup,
                    ignore=checks.ignore,
                    rounds=checks.rounds,
                ),
            )
            or ()
        )
    verdicts: list[ThresholdVerdict] = []
    composites: dict[str, float] = {}
    for row in results or ():
        if row.provider and not row.skipped:
            composites.setdefault(row.provider, row.composite_score)
    wanted = {p.name: (thresholds or {}).get(p.name, ()) for p in participants}
    judged = [p for p in participants if wanted[p.name]]
    if judged:
        verdicts.extend(
            _guarded(
                "thresholds",
                errors,
                lambda: [
                    verdict
                    for p in judged
                    for verdict in judge_thresholds(wanted[p.name], p, composites.get(p.name))
                ],
            )
            or ()
        )
    current = {name: recs for name, recs in by_name.items() if recs}
    # --bench-compare-on counts only where a comparison was asked for (the first run too).
    asked_on = () if comparison is None or comparison.baseline is None else comparison.compare_on
    usage, unmeasured, unknown_on, unscored = _nothing_measured(
        participants, spec, verdicts, asked_on
    )
    if unscored:
        # A misspelt key: the error says it all, not again as a warning per participant.
        found = _drop_unmeasured_warnings(found, unscored)
    usage_error = "\n".join(usage) or None
    compared, note = _compare(comparison, current, spec, usage, unknown_on, errors)
    return Analyses(
        uncertainty=uncertainty,
        intervals=intervals,
        relative=relative,
        warnings=found,
        thresholds=tuple(verdicts),
        comparison=compared,
        comparison_note=note,
        errors=tuple(errors),
        usage_error=usage_error,
        unmeasured=tuple(unmeasured),
    )


def _compare(
    comparison: ComparisonOptions | None,
    current: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
    usage: Sequence[str],
    unknown_on: Sequence[str],
    errors: list[str],
) -> tuple[BaselineComparison | None, str | None]:
    """:func:`analyse`'s comparison: the comparison or the note why there is none (a
    ``--bench-compare-on`` key no participant measured, ``unknown_on``: nothing is compared,
    whether or not there is a baseline yet: the first run says it too)."""
    compared: BaselineComparison | None = None
    note: str | None = None
    baseline = None if comparison is None else comparison.baseline
    if baseline is not None and unknown_on:
        problem = next(line for line in usage if "--bench-compare-on" in line)
        baseline = f"nothing compared: {problem}"
    if isinstance(baseline, str):
        note = baseline
    elif baseline is not None and comparison is not None:
        base, asked = baseline, comparison
        compared = _guarded(
            "baseline comparison",
            errors,
            lambda: compare_with_baseline(
                base,
                current,
                spec,
                asked.setup,
                asked.noise_threshold,
                asked.compare_on,
                asked.rules,
                asked.count_threshold,
            ),
        )
    return compared, note


def _drop_unmeasured_warnings(
    warnings: tuple[RunWarning, ...], keys: frozenset[str]
) -> tuple[RunWarning, ...]:
    """The run warnings without the ``unmeasured-metric`` ones on ``keys``: scored keys nobody
    measured, which the run's error says already."""
    return tuple(
        w for w in warnings if not (w.code == UNMEASURED_METRIC and set(w.metrics) <= keys)
    )


def _nothing_measured(
    participants: Sequence[ParticipantSummary],
    spec: ScoringSpec | None,
    verdicts: Sequence[ThresholdVerdict],
    compare_on: Sequence[str],
) -> tuple[list[str], list[str], list[str], frozenset[str]]:
    """The keys the run scores, judges with a threshold or compares on (``compare_on``) that
    no passing iteration of any participant measured (a misspelt ``througput_rps``): one line
    per key naming what asked for it, the closest measured key (one or two edits away) and the
    keys measured. Returns ``(usage lines, failure lines, compare-on keys, misspelt scored
    keys)``: a threshold or ``--bench-compare-on`` on such a key is a usage error, a scored one
    alone fails the run; a scored key with a measured key close to it is a misspelling the
    line says all of (no ``unmeasured-metric`` warning for it).
    Nothing when no iteration passed at all (the participants failed: their own failures say
    so)."""
    if not any(p.passed for p in participants if p.skipped is None):
        return [], [], [], frozenset()
    seen = {m.key for p in participants for m in p.metrics if m.stats is not None}
    measured = [LATENCY, *sorted(seen - {LATENCY})]
    special = {SUCCESS_RATE_KEY, SCORE_KEY, LATENCY}
    roles: dict[str, list[str]] = {}
    for metric in spec.metrics if spec is not None else ():
        roles.setdefault(metric.name, []).append("scored")
    for verdict in verdicts:
        if verdict.skipped is None and verdict.threshold.metric not in special:
            found = roles.setdefault(verdict.threshold.metric, [])
            if "threshold" not in found:
                found.append("threshold")
    for key in compare_on:
        found = roles.setdefault(key, [])
        if "compare-on" not in found:
            found.append("compare-on")
    usage: list[str] = []
    failures: list[str] = []
    unknown_compared: list[str] = []
    scored: set[str] = set()
    there = ", ".join(measured)
    for key, asked in roles.items():
        if key in measured:
            continue
        closest = closest_within(key, measured)
        guess = f" (did you mean {closest}?)" if closest is not None else ""
        if asked == ["compare-on"]:
            what = "--bench-compare-on"
        else:
            what = ", ".join(
                {
                    "scored": f"scoring on {key}",
                    "threshold": f"threshold on {key}",
                    "compare-on": f"--bench-compare-on {key}",
                }[role]
                for role in asked
            )
        line = f"{what}: no participant measured {key}{guess}; the keys there are: {there}"
        if "compare-on" in asked:
            unknown_compared.append(key)
        if "scored" in asked and closest is not None:
            scored.add(key)
        (failures if asked == ["scored"] else usage).append(line)
    return usage, failures, unknown_compared, frozenset(scored)


def _values(
    samples: Mapping[str, ParticipantSamples],
    records: Mapping[str, Sequence[TaskRecord]],
    spec: ScoringSpec | None,
) -> Callable[[ParticipantSummary, str], list[float]]:
    """Reads a participant's samples of a metric as its summary took them (the scored metrics
    through scoring, from the records, once per participant)."""
    scored: dict[str, dict[str, list[float]]] = {}

    def values(participant: ParticipantSummary, metric: str) -> list[float]:
        name = participant.name
        if spec is not None and spec.metrics and name in records and name not in scored:
            scored[name] = metric_samples(spec, records[name])
        return metric_values(participant, metric, samples.get(name), scored.get(name))

    return values


def _primary(
    participants: Sequence[ParticipantSummary],
    spec: ScoringSpec | None,
    per_call: Sequence[str] = (),
) -> tuple[str, str, str, bool]:
    """The metric the relative summary compares: the first scored one that was measured (when
    nothing is scored: the first per-call metric of a benchmark of calibrated steps), else the
    latency. ``(key, label, unit, lower_is_better)``."""
    scored = [m.name for m in spec.metrics] if spec is not None and spec.metrics else per_call
    for key in scored:
        found = [m for p in participants if (m := p.metric(key)) and m.stats]
        if found:
            m = found[0]
            return m.key, m.label, m.unit, m.lower_is_better is not False
    return LATENCY, "latency", metric_unit(LATENCY, None), True
