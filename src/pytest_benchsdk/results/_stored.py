"""A stored run's :class:`~pytest_benchsdk.results.RunSummary`, read from the results store.

Private to :mod:`pytest_benchsdk.results`. A session keeps each finished run's summary in the
store (the analysis ``summary``), so :func:`stored_summary` gives back exactly what the session
printed. A run without one (a session that was killed, a store written by an older version, a
merged run) is summarised again from its records, with the same builders the session uses
(:func:`rebuild_summary`); only what the store never had is missing then (an ``on_score``
spec: its metrics read their data keys).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import attrs

from pytest_benchsdk._analysis.baseline import BaselineComparison
from pytest_benchsdk._analysis.hygiene import RunWarning
from pytest_benchsdk._analysis.scoring import ScoringSpec, metric_samples, scoring_config_to_spec
from pytest_benchsdk._analysis.uncertainty import ScoreUncertainty
from pytest_benchsdk._config.thresholds import ThresholdVerdict
from pytest_benchsdk.records import ParticipantRecords
from pytest_benchsdk.results._analyse import Analyses
from pytest_benchsdk.results._build import MetricCatalog, participant_summary, score_table
from pytest_benchsdk.results._model import ABSide, Knobs, RoundsKnobs, RunStatus, RunSummary
from pytest_benchsdk.results._samples import (
    iso_time,
    record_phase,
    sample_sets,
    shared_per_call_keys,
)
from pytest_benchsdk.store import ResultStore, StoredRun

__all__ = [
    "ANALYSIS_KINDS",
    "STATUS_KIND",
    "SUMMARY_KIND",
    "analysis_documents",
    "rebuild_summary",
    "save_analyses",
    "save_summary",
    "stored_analyses",
    "stored_spec",
    "stored_status",
    "stored_summary",
]

#: The analysis that keeps a run's summary, and the one that keeps its status.
SUMMARY_KIND = "summary"
STATUS_KIND = "status"
#: The kinds :func:`analysis_documents` keeps (besides the summary and the status).
ANALYSIS_KINDS = ("uncertainty", "warnings", "thresholds", "comparison")


def save_summary(store: ResultStore, run_id: str, summary: RunSummary) -> None:
    """Keep a finished run's summary and status with the stored run ``run_id``."""
    store.save_analysis(run_id, STATUS_KIND, summary.status.to_json())
    store.save_analysis(run_id, SUMMARY_KIND, summary.to_json())


def analysis_documents(analyses: Analyses) -> list[tuple[str, Any]]:
    """The documents the store keeps of a run's analyses, ``(kind, JSON body)``, each only
    when there is something to keep: the scores' ``uncertainty``, the run ``warnings``, the
    ``thresholds``' verdicts and the baseline ``comparison`` (or the note that says why there
    is none). :func:`stored_analyses` reads them back; the statistics' intervals and the
    relative summary are kept in the run's summary (:func:`save_summary`)."""
    documents: list[tuple[str, Any]] = [
        (kind, [item.to_json() for item in body])
        for kind, body in (
            ("uncertainty", analyses.uncertainty),
            ("warnings", analyses.warnings),
            ("thresholds", analyses.thresholds),
        )
        if body
    ]
    if analyses.comparison is not None:
        documents.append(("comparison", analyses.comparison.to_json()))
    elif analyses.comparison_note:
        documents.append(("comparison", {"note": analyses.comparison_note}))
    return documents


def save_analyses(
    store: ResultStore,
    run_id: str,
    analyses: Analyses,
    *,
    guard: Callable[[str, Callable[[], None]], object] | None = None,
) -> None:
    """Keep a run's analyses with the stored run ``run_id``, one document per kind
    (:func:`analysis_documents`): the one save step of the session end and of a merge.
    ``guard(kind, save)``, when given, runs each save (the session's reports a failure as an
    error of the run, and the other kinds are still kept); without it a failure raises."""
    for kind, body in analysis_documents(analyses):
        save = partial(store.save_analysis, run_id, kind, body)
        if guard is None:
            save()
        else:
            guard(kind, save)


def stored_status(store: ResultStore, run: StoredRun) -> RunStatus:
    """The run's status with its reasons (a run without a stored status: the store's column)."""
    body = store.analysis(run.run_id, STATUS_KIND)
    if isinstance(body, Mapping):
        try:
            status = RunStatus.from_json(body)
        except (KeyError, TypeError, ValueError):
            pass
        else:
            # The column is the truth for the state (a resubmit or merge may have set it).
            return status if status.state == run.status else attrs.evolve(status, state=run.status)
    # No status kept: the session never finished the run (it was killed), or an older store.
    # What ran is what the records say; what was planned is what the benchmark declares for
    # its participants (a -k subset planned fewer), and never less than what ran.
    knobs = _knobs(run)
    planned = max(knobs.iterations * len(run.participants), run.record_count)
    return RunStatus(run.status, ran=run.record_count, planned=planned, unit=knobs.unit)


def stored_summary(store: ResultStore, run: StoredRun) -> RunSummary:
    """The run's summary as its session printed it (rebuilt from the records if it has
    none)."""
    body = store.analysis(run.run_id, SUMMARY_KIND)
    if isinstance(body, Mapping):
        try:
            summary = RunSummary.from_json(body)
        except (KeyError, TypeError, ValueError):
            pass
        else:
            # What can change after the session: the platform's ids (a resubmit).
            return attrs.evolve(
                summary,
                local_run_id=run.run_id,
                platform_run_id=run.platform_run_id,
                dashboard_url=run.dashboard_url,
                status=stored_status(store, run),
            )
    return rebuild_summary(store, run)


def stored_spec(
    store: ResultStore, run: StoredRun, units: Mapping[str, str] | None = None
) -> ScoringSpec | None:
    """The run's declarative scoring spec from its config snapshot, with the units its scores
    were stored with (or ``units``; None without scoring, or for an ``on_score`` spec, which
    the store does not keep)."""
    snapshot = run.config_snapshot
    scoring = snapshot.get("scoring")
    if not isinstance(scoring, Mapping):
        return None
    if units is None:
        units = {m.name: m.unit for r in store.scores(run.run_id) for m in r.metrics}
    dimensions = snapshot.get("dimensions")
    display = {"metrics": [{"key": key, "unit": unit} for key, unit in units.items()]}
    try:
        return scoring_config_to_spec(
            scoring, dimensions if isinstance(dimensions, Mapping) else None, display
        )
    except Exception:
        return None


def stored_analyses(store: ResultStore, run_id: str) -> Analyses:
    """The analyses kept with a run (each one that cannot be read is left out)."""
    kept = store.analyses(run_id)

    def read(kind: str, reader: Any) -> Any:
        body = kept.get(kind)
        if body is None:
            return None
        try:
            return reader(body)
        except (KeyError, TypeError, ValueError):
            return None

    comparison = kept.get("comparison")
    note = comparison.get("note") if isinstance(comparison, Mapping) else None
    return Analyses(
        uncertainty=read("uncertainty", lambda b: tuple(ScoreUncertainty.from_json(u) for u in b)),
        warnings=read("warnings", lambda b: tuple(RunWarning.from_json(w) for w in b)) or (),
        thresholds=read("thresholds", lambda b: tuple(ThresholdVerdict.from_json(t) for t in b))
        or (),
        comparison=None if note else read("comparison", BaselineComparison.from_json),
        comparison_note=str(note) if note else None,
    )


def _knobs(run: StoredRun) -> Knobs:
    knobs, snapshot = run.knobs, run.config_snapshot
    phases_raw = snapshot.get("phases")
    phases = (
        tuple(
            (str(p.get("name")), int(p.get("iterations") or 0))
            for p in phases_raw or ()
            if isinstance(p, Mapping)
        )
        if isinstance(phases_raw, list)
        else ()
    )
    iterations = sum(n for _, n in phases) if phases else int(knobs.get("iterations") or 0)
    providers = knobs.get("providers")
    return Knobs(
        iterations=iterations,
        concurrency=int(knobs.get("concurrency") or 1),
        stagger_delay_ms=float(knobs.get("staggerDelayMs") or 0),
        group_by=str(knobs.get("groupBy") or "participant"),
        warmup=int(knobs.get("warmup") or 0),
        phases=phases,
        providers=tuple(str(p) for p in providers) if isinstance(providers, list) else None,
        rounds=RoundsKnobs.of_knobs(knobs),
    )


def rebuild_summary(
    store: ResultStore,
    run: StoredRun,
    *,
    analyses: Analyses | None = None,
    participants: Sequence[ParticipantRecords] | None = None,
) -> RunSummary:
    """Summarise a stored run from its records, scores and analyses, with the builders the
    session uses. ``analyses`` / ``participants`` replace what the store holds (a merge passes
    the analyses it just made)."""
    if participants is None:
        participants = store.participant_records(run.run_id)
    if analyses is None:
        analyses = stored_analyses(store, run.run_id)
    results = store.scores(run.run_id)
    spec = stored_spec(store, run)
    snapshot = run.config_snapshot
    scoring = snapshot.get("scoring")
    labels = (
        {
            str(m.get("key")): str(m["label"])
            for m in metrics
            if isinstance(m, Mapping) and m.get("label")
        }
        if isinstance(scoring, Mapping) and isinstance(metrics := scoring.get("metrics"), list)
        else None
    )
    units = {m.name: m.unit for r in results for m in r.metrics}
    catalog = MetricCatalog.of(spec, snapshot.get("display"), units, labels)
    knobs = _knobs(run)
    phase_names = [name for name, _ in knobs.phases] if len(knobs.phases) > 1 else []
    summaries = []
    spans = []
    kept = []
    for pr in participants:
        samples = sample_sets(pr.records)
        kept.append(samples)
        span = samples.span()
        if span is not None:
            spans.append(span)
        scored = phase_scored = None
        if spec is not None and spec.metrics:
            scored = metric_samples(spec, pr.records)
            phase_scored = {
                phase: metric_samples(spec, [r for r in pr.records if record_phase(r) == phase])
                for phase in phase_names
            }
        planned_phases = dict(knobs.phases) if phase_names else {}
        summaries.append(
            participant_summary(
                pr.participant,
                samples,
                catalog,
                planned=max(knobs.iterations, samples.count),
                planned_phases=planned_phases,
                scored_samples=scored,
                phase_scored_samples=phase_scored,
            )
        )
    scores = None
    if results:
        group_by = scoring.get("groupBy") if isinstance(scoring, Mapping) else None
        dimensions = snapshot.get("dimensions")
        scores = score_table(
            results,
            catalog,
            uncertainty=analyses.uncertainty,
            group_by=group_by if isinstance(group_by, str) else None,
            dimensions=dimensions if isinstance(dimensions, Mapping) else None,
        )
    return RunSummary(
        benchmark_slug=run.benchmark_slug,
        benchmark_name=run.benchmark_name,
        file=run.file,
        knobs=knobs,
        environment=run.environment,
        status=stored_status(store, run),
        participants=tuple(summaries),
        local_run_id=run.run_id,
        platform_run_id=run.platform_run_id,
        dashboard_url=run.dashboard_url,
        dry_run=run.dry_run,
        run_key=run.run_key,
        started_at=iso_time(min(s for s, _ in spans)) if spans else None,
        finished_at=iso_time(max(e for _, e in spans)) if spans else None,
        scores=scores,
        thresholds=analyses.thresholds,
        comparison=analyses.comparison,
        comparison_note=analyses.comparison_note,
        warnings=analyses.warnings,
        intervals=analyses.intervals,
        relative=analyses.relative,
        ab=ABSide.of_knobs(run.knobs, analyses.comparison),
        per_call=() if spec is not None and spec.metrics else shared_per_call_keys(kept),
    )
