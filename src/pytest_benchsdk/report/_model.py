"""What a report shows of one stored run, read from the store into plain values.

Private to :mod:`pytest_benchsdk.report`. Everything here is data: no plotly, no HTML. The
statistics are untrimmed with nearest-rank percentiles (as comparisons and thresholds), except
where a stored score is shown as it was stored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import attrs

from .._stats import Stats, compute_stats, finite_samples
from ..compare import ScoreUncertainty, tied_with_above
from ..records import ParticipantRecords, TaskRecord
from ..scoring import ScoreResult, ScoringSpec, metric_samples, scoring_config_to_spec
from ..store import ResultStore, StoredRun

__all__ = [
    "LATENCY",
    "MAX_CODES",
    "MAX_MESSAGES",
    "FailureGroup",
    "HistoryPoint",
    "RunReport",
    "Series",
    "StepStats",
    "TimelineBar",
    "load_run",
]

#: The iteration latency's name among the metrics.
LATENCY: Final = "latency_ms"
#: Error codes listed in the failures table (the most frequent first); the rest are counted.
MAX_CODES: Final = 50
#: First messages kept per error code.
MAX_MESSAGES: Final = 5
#: Characters kept of one error message.
MAX_MESSAGE_CHARS: Final = 300


@attrs.frozen
class Series:
    """The samples of one metric of one participant (and phase, ``None`` for all phases)."""

    participant: str
    phase: str | None
    values: tuple[float, ...]

    @property
    def label(self) -> str:
        return self.participant if self.phase is None else f"{self.participant} · {self.phase}"


@attrs.frozen
class StepStats:
    """Median and p95 latency of one step of one participant (its successful runs)."""

    participant: str
    step: str
    median: float
    p95: float
    count: int


@attrs.frozen
class TimelineBar:
    """One iteration against run time: seconds since the run's first start."""

    participant: str
    task_index: int
    start_s: float
    end_s: float
    ok: bool


@attrs.frozen
class FailureGroup:
    """Failures with one error code: how many, and the first messages (capped)."""

    code: str
    count: int
    participants: tuple[str, ...]
    messages: tuple[str, ...]


@attrs.frozen
class HistoryPoint:
    """One participant's median/p95 of one metric in one stored run of the benchmark;
    ``verdicts`` are the stored comparison's ``regressed``/``improved`` rows of that
    participant."""

    run_id: str
    started_at: str
    participant: str
    metric: str
    unit: str
    median: float
    p95: float
    verdicts: tuple[str, ...]


@attrs.frozen
class RunReport:
    """Everything the report shows of one run."""

    run: StoredRun
    participants: tuple[str, ...]
    phases: tuple[str, ...]
    counts: Mapping[str, tuple[int, int]]  # participant -> (passed, total)
    scores: tuple[ScoreResult, ...]
    uncertainty: Mapping[str, ScoreUncertainty]
    ties: Mapping[str, str]
    #: metric name -> unit, in order: the latency first, then the scored metrics.
    metrics: Mapping[str, str]
    #: metric name -> series per participant (and per phase when the run has phases).
    samples: Mapping[str, tuple[Series, ...]]
    steps: tuple[StepStats, ...]
    step_names: tuple[str, ...]
    timeline: tuple[TimelineBar, ...]
    failures: tuple[FailureGroup, ...]
    failure_total: int
    history: tuple[HistoryPoint, ...]
    history_runs: tuple[StoredRun, ...]
    comparison: Mapping[str, Any] | None
    warnings: tuple[Mapping[str, Any], ...]


def _stats(values: Sequence[float]) -> Stats:
    return compute_stats(values, trim=0)


def _phase_of(record: TaskRecord) -> str | None:
    phase = (record.data or {}).get("phase")
    return phase if isinstance(phase, str) else None


def _spec_of(run: StoredRun, names: Sequence[str]) -> ScoringSpec | None:
    """The run's declarative scoring spec from its config snapshot, when it scores exactly the
    stored metrics (an ``on_score`` spec is not in the snapshot: then data keys are read)."""
    raw = run.config_snapshot.get("scoring")
    if not isinstance(raw, Mapping):
        return None
    try:
        spec = scoring_config_to_spec(raw)
    except Exception:
        return None
    return spec if [m.name for m in spec.metrics] == list(names) else None


def _metric_values(
    spec: ScoringSpec | None, names: Sequence[str], records: Sequence[TaskRecord]
) -> dict[str, list[float]]:
    """Each metric's samples, as scoring collects them (or ``data[name]`` of passing records)."""
    out: dict[str, list[float]] = {
        LATENCY: [
            r.latency_ms for r in records if r.status == "success" and r.latency_ms is not None
        ]
    }
    if spec is not None:
        out.update(metric_samples(spec, records))
        return out
    passing = [r.data or {} for r in records if r.status == "success"]
    for name in names:
        out[name] = finite_samples([data.get(name) for data in passing])
    return out


def _parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _timeline(participants: Sequence[ParticipantRecords]) -> tuple[TimelineBar, ...]:
    spans: list[tuple[str, int, float, float, bool]] = []
    for pr in participants:
        for r in pr.records:
            start, end = _parse_time(r.started_at), _parse_time(r.completed_at)
            if start is None:
                continue
            if end is None or end < start:
                end = start
            spans.append((pr.participant, r.task_index, start, end, r.status == "success"))
    if not spans:
        return ()
    t0 = min(span[2] for span in spans)
    return tuple(
        TimelineBar(name, index, start - t0, end - t0, ok) for name, index, start, end, ok in spans
    )


def _steps(
    participants: Sequence[ParticipantRecords],
) -> tuple[tuple[StepStats, ...], tuple[str, ...]]:
    names: dict[str, None] = {}
    rows: list[StepStats] = []
    for pr in participants:
        per_step: dict[str, list[float]] = {}
        for r in pr.records:
            for step in r.steps or ():
                names.setdefault(step.name, None)
                if step.status == "success" and step.latency_ms is not None:
                    per_step.setdefault(step.name, []).append(step.latency_ms)
        for step_name, values in per_step.items():
            stats = _stats(values)
            rows.append(StepStats(pr.participant, step_name, stats.median, stats.p95, len(values)))
    return tuple(rows), tuple(names)


def _failures(participants: Sequence[ParticipantRecords]) -> tuple[tuple[FailureGroup, ...], int]:
    counts: dict[str, int] = {}
    who: dict[str, dict[str, None]] = {}
    messages: dict[str, list[str]] = {}
    total = 0
    for pr in participants:
        for r in pr.records:
            if r.status == "success":
                continue
            total += 1
            code = r.error_code if isinstance(r.error_code, str) else "unknown"
            counts[code] = counts.get(code, 0) + 1
            who.setdefault(code, {})[pr.participant] = None
            kept = messages.setdefault(code, [])
            if len(kept) < MAX_MESSAGES:
                message = (r.data or {}).get("errorMessage")
                if message is not None:
                    text = str(message)
                    if len(text) > MAX_MESSAGE_CHARS:
                        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
                    kept.append(f"{pr.participant} #{r.task_index}: {text}")
    ordered = sorted(counts, key=lambda code: (-counts[code], code))[:MAX_CODES]
    groups = tuple(
        FailureGroup(code, counts[code], tuple(who[code]), tuple(messages[code]))
        for code in ordered
    )
    return groups, total


def _verdicts(comparison: Any) -> dict[str, list[str]]:
    """participant -> the stored comparison's ``regressed``/``improved`` rows, as text."""
    out: dict[str, list[str]] = {}
    if not isinstance(comparison, Mapping):
        return out
    for row in comparison.get("rows") or ():
        if not isinstance(row, Mapping):
            continue
        body = row.get("comparison")
        verdict = body.get("verdict") if isinstance(body, Mapping) else None
        if verdict in ("regressed", "improved"):
            text = f"{row.get('metric')} {row.get('statistic')} {verdict}"
            out.setdefault(str(row.get("participant")), []).append(text)
    return out


def _history(
    store: ResultStore, run: StoredRun, limit: int
) -> tuple[tuple[HistoryPoint, ...], tuple[StoredRun, ...]]:
    """Up to ``limit`` runs of the benchmark ending with ``run``, oldest first, and per run
    and participant the median/p95 of each scored metric as stored with the run's scores
    (trimmed as scoring trims), or of the latency of passing iterations for a run without
    scores (untrimmed; reading the records back costs about 0.1 s per 1,000 of them)."""
    if limit <= 0:
        return (), ()
    runs = store.list_runs(limit=100_000, benchmark_slug=run.benchmark_slug)
    ids = [r.run_id for r in runs]
    start = ids.index(run.run_id) if run.run_id in ids else 0
    window = list(reversed(runs[start : start + limit]))
    points: list[HistoryPoint] = []
    for past in window:
        verdicts = _verdicts(store.analysis(past.run_id, "comparison"))
        scores = store.scores(past.run_id)
        if scores:
            # A scored run: its stored statistics (cheap, and what its summary showed).
            seen: set[str] = set()
            for row in scores:
                if row.skipped or row.provider in seen:
                    continue
                seen.add(row.provider)
                for metric in row.metrics:
                    points.append(
                        HistoryPoint(
                            past.run_id,
                            past.started_at,
                            row.provider,
                            metric.name,
                            metric.unit,
                            metric.median,
                            metric.p95,
                            tuple(verdicts.get(row.provider, ())),
                        )
                    )
            continue
        for pr in store.participant_records(past.run_id):
            values = [
                r.latency_ms
                for r in pr.records
                if r.status == "success" and r.latency_ms is not None
            ]
            if not values:
                continue
            stats = _stats(values)
            points.append(
                HistoryPoint(
                    past.run_id,
                    past.started_at,
                    pr.participant,
                    LATENCY,
                    "ms",
                    stats.median,
                    stats.p95,
                    tuple(verdicts.get(pr.participant, ())),
                )
            )
    return tuple(points), tuple(window)


def _uncertainty(raw: Any) -> dict[str, ScoreUncertainty]:
    out: dict[str, ScoreUncertainty] = {}
    if not isinstance(raw, list):
        return out
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        try:
            probabilities: Any = tuple(float(p) for p in item.get("rankProbabilities") or ())
            u = ScoreUncertainty(
                participant=str(item["participant"]),
                score=float(item["score"]),
                low=float(item["low"] if item["low"] is not None else math.nan),
                high=float(item["high"] if item["high"] is not None else math.nan),
                rank=int(item["rank"]),
                rank_probabilities=probabilities,
                skipped=bool(item.get("skipped", False)),
                level=float(item.get("level", 0.95)),
                resamples=int(item.get("resamples", 0)),
            )
        except (KeyError, TypeError, ValueError):
            continue
        out[u.participant] = u
    return out


def load_run(store: ResultStore, run_id: str, *, history: int) -> RunReport:
    """Read one run and what the report shows of it."""
    run = store.get_run(run_id)
    participants = store.participant_records(run_id)
    scores = tuple(store.scores(run_id))
    names: list[str] = []
    units: dict[str, str] = {LATENCY: "ms"}
    for row in scores:
        for metric in row.metrics:
            if metric.name not in units:
                names.append(metric.name)
                units[metric.name] = metric.unit
    spec = _spec_of(run, names)
    phases: dict[str, None] = {}
    for pr in participants:
        for r in pr.records:
            phase = _phase_of(r)
            if phase is not None:
                phases.setdefault(phase, None)
    samples: dict[str, list[Series]] = {name: [] for name in units}
    for pr in participants:
        groups: list[tuple[str | None, list[TaskRecord]]] = [(None, list(pr.records))]
        if phases:
            groups = [(phase, [r for r in pr.records if _phase_of(r) == phase]) for phase in phases]
        for phase, records in groups:
            if not records:
                continue
            values = _metric_values(spec, names, records)
            for name in units:
                samples[name].append(Series(pr.participant, phase, tuple(values.get(name, ()))))
    uncertainty = _uncertainty(store.analysis(run_id, "uncertainty"))
    steps, step_names = _steps(participants)
    failures, failure_total = _failures(participants)
    points, window = _history(store, run, history)
    comparison = store.analysis(run_id, "comparison")
    warnings = store.analysis(run_id, "warnings")
    return RunReport(
        run=run,
        participants=tuple(pr.participant for pr in participants),
        phases=tuple(phases),
        counts={
            pr.participant: (sum(r.status == "success" for r in pr.records), len(pr.records))
            for pr in participants
        },
        scores=scores,
        uncertainty=uncertainty,
        ties=tied_with_above(list(uncertainty.values())),
        metrics=units,
        samples={name: tuple(series) for name, series in samples.items()},
        steps=steps,
        step_names=step_names,
        timeline=_timeline(participants),
        failures=failures,
        failure_total=failure_total,
        history=points,
        history_runs=window,
        comparison=comparison if isinstance(comparison, Mapping) else None,
        warnings=tuple(w for w in warnings or () if isinstance(w, Mapping))
        if isinstance(warnings, list)
        else (),
    )
