"""What a report shows of one stored run: its summary, and the samples its charts draw.

Private to :mod:`pytest_benchsdk.report`. Everything here is data: no plotly, no HTML. Every
number in a table comes from the run's :class:`~pytest_benchsdk.results.RunSummary` (the one
the session printed); the charts draw the samples those numbers were computed from (the same
:class:`~pytest_benchsdk.results.ParticipantSamples`, and the scored metrics' samples as scoring
takes them), the stored baseline run's samples likewise, and, for the history, the summaries of
the benchmark's earlier runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from pytest_benchsdk._analysis.scoring import ScoringSpec, metric_samples
from pytest_benchsdk._base.numbers import phase_subject
from pytest_benchsdk._base.percentiles import statistic_label
from pytest_benchsdk.records import ParticipantRecords
from pytest_benchsdk.results import (
    LATENCY,
    RunSummary,
    record_phase,
    run_history,
    sample_sets,
    stored_spec,
    stored_summary,
)
from pytest_benchsdk.results import timeline as record_timeline
from pytest_benchsdk.store import ResultStore, StoredRun, UnknownRunError

__all__ = [
    "CHARTED_PARTICIPANTS",
    "LATENCY",
    "MAX_CODES",
    "HistoryChange",
    "HistoryPoint",
    "HistoryWindow",
    "RunReport",
    "Series",
    "StepStats",
    "TimelineBar",
    "load_run",
]

#: Error codes listed in the failures table (the most frequent first); the rest are counted.
MAX_CODES: Final = 50

#: Participants the charts draw at most: past it, the best and the worst half as many each
#: (by the ranking; unscored, by median latency). A chart of 10,000 participants' traces is
#: neither readable nor quick to draw (nor to build: 32 MB of figures); the tables list every
#: participant.
CHARTED_PARTICIPANTS: Final = 20


@attrs.frozen
class Series:
    """The samples of one metric of one participant (and phase, ``None`` for all phases); a
    ``baseline`` series is the compared baseline run's."""

    participant: str
    phase: str | None
    values: tuple[float, ...]
    baseline: bool = False

    @property
    def label(self) -> str:
        if self.baseline:
            return f"{self.participant} · baseline"
        return phase_subject(self.participant, self.phase)


@attrs.frozen
class StepStats:
    """Median and p95 latency of one step of one participant (from the summary): ``step`` is
    its label (``display.steps``), ``order`` its place."""

    participant: str
    step: str
    median: float
    p95: float
    count: int
    order: int = 0
    failed: int = 0


@attrs.frozen
class TimelineBar:
    """One iteration against run time: seconds since the run's first start."""

    participant: str
    task_index: int
    start_s: float
    end_s: float
    ok: bool


@attrs.frozen
class HistoryPoint:
    """One participant's median/p95 of one metric in one stored run of the benchmark (from
    that run's summary); ``verdicts`` are its comparison's ``regressed``/``improved`` rows of
    that participant."""

    run_id: str
    started_at: str
    participant: str
    metric: str
    unit: str
    median: float
    p95: float
    verdicts: tuple[str, ...]


@attrs.frozen
class HistoryChange:
    """A change point of the benchmark's history, as ``pytest-benchsdk history`` finds it (the
    same complete runs, the same method): the series (participant, metric, statistic), the
    run where the change starts, its relative size and direction, the medians of the regimes
    on either side, the permutation test's p-value."""

    participant: str
    metric: str
    statistic: str
    run_id: str
    change: float
    direction: str
    before: float
    after: float
    p_value: float
    #: The statistic as the views name it (``p95 (best 5 %)`` of a higher-is-better metric).
    label: str = ""


@attrs.frozen
class RunReport:
    """Everything the report shows of one run."""

    run: StoredRun
    summary: RunSummary
    #: Participants the charts draw, in declared order: every one that ran, or past
    #: :data:`CHARTED_PARTICIPANTS` the best and the worst (:attr:`charted_note` says so).
    participants: tuple[str, ...]
    phases: tuple[str, ...]
    #: metric key -> unit, in order: the latency first, then every measured metric (a
    #: benchmark of calibrated steps: their per-call metrics first, see
    #: :attr:`RunSummary.per_call`).
    metrics: Mapping[str, str]
    #: metric key -> label (``display.metrics``).
    labels: Mapping[str, str]
    #: metric key -> series per participant (and per phase when the run has phases).
    samples: Mapping[str, tuple[Series, ...]]
    timeline: tuple[TimelineBar, ...]
    history: tuple[HistoryPoint, ...]
    history_runs: tuple[StoredRun, ...]
    #: run id -> its number among the benchmark's stored runs (1: the oldest).
    history_numbers: Mapping[str, int] = attrs.Factory(dict)
    #: metric key -> the compared baseline run's series per participant (a stored baseline).
    baseline: Mapping[str, tuple[Series, ...]] = attrs.Factory(dict)
    #: Why the baseline's distributions are not drawn (a comparison without a stored run).
    baseline_note: str | None = None
    #: The change points of the history's series (complete runs up to this one).
    changes: tuple[HistoryChange, ...] = ()
    #: What the history left out and why (None: nothing).
    history_left_out: str | None = None
    #: Why this run is not in its own history (None: it is).
    history_run_left_out: str | None = None
    #: Which participants the charts leave out (None: they draw every one that ran).
    charted_note: str | None = None

    @property
    def steps(self) -> tuple[StepStats, ...]:
        """The charted participants' steps (computed on each access: read it once)."""
        charted = set(self.participants)
        return tuple(
            StepStats(
                p.name,
                s.label,
                s.latency.median,
                s.latency.p95,
                s.latency.count,
                s.order,
                s.failed,
            )
            for p in self.summary.ran_participants
            if p.name in charted
            for s in p.steps
            if s.latency is not None
        )

    @property
    def step_names(self) -> tuple[str, ...]:
        """The steps' labels in ``display.steps`` order (then as first recorded)."""
        first: dict[str, int] = {}
        for position, s in enumerate(self.steps):
            first.setdefault(s.step, position)
        order = {s.step: s.order for s in self.steps}
        return tuple(sorted(first, key=lambda label: (order[label], first[label])))


def _verdicts(summary: RunSummary) -> dict[tuple[str, str], list[str]]:
    """(participant, metric key) -> its comparison's ``regressed``/``improved`` rows of that
    metric, as text: a metric the comparison did not compare gets no mark."""
    out: dict[tuple[str, str], list[str]] = {}
    for row in summary.comparison.rows if summary.comparison is not None else ():
        if row.judged and row.verdict in ("regressed", "improved"):
            out.setdefault((row.participant, row.metric), []).append(
                f"{row.subject} {row.metric} {row.statistic_label} {row.verdict}"
            )
    return out


@attrs.frozen
class HistoryWindow:
    """The history the report draws: the runs ``pytest-benchsdk history`` keeps for this run
    (:func:`~pytest_benchsdk.results.run_history`, ending with it), each run's median/p95
    per participant and metric, the change points, and what was left out."""

    points: tuple[HistoryPoint, ...] = ()
    runs: tuple[StoredRun, ...] = ()
    #: run id -> its number among the benchmark's stored runs (1: the oldest).
    numbers: Mapping[str, int] = attrs.Factory(dict)
    changes: tuple[HistoryChange, ...] = ()
    #: ``3 other run(s) left out: …`` (None: nothing left out).
    left_out: str | None = None
    #: Why this run is not in its own history (None: it is).
    run_left_out: str | None = None


def _history(
    store: ResultStore, run: StoredRun, summary: RunSummary, limit: int, charted: Sequence[str]
) -> HistoryWindow:
    """The history :func:`~pytest_benchsdk.results.run_history` gives for ``run`` (one rule
    for every view: :data:`~pytest_benchsdk.results.HISTORY_RULE`), as the report draws it:
    each participant's whole run (the phases' series are in ``pytest-benchsdk history``), of
    the ``charted`` participants."""
    if limit <= 0:
        return HistoryWindow()
    # Only the charted participants' series (and their change points) are found.
    found = run_history(
        store, run.benchmark_slug, until=run.run_id, limit=limit, participants=tuple(charted)
    )
    if found is None:
        return HistoryWindow()
    ids = [r.run_id for r in store.list_runs(limit=100_000, benchmark_slug=run.benchmark_slug)]
    numbers = {run_id: len(ids) - index for index, run_id in enumerate(ids)}
    # This run's summary is read already (a summary of 10,000 participants: a second to read).
    verdicts = {
        r.run_id: _verdicts(summary if r.run_id == run.run_id else stored_summary(store, r))
        for r in found.runs
    }
    started = {r.run_id: r.started_at for r in found.runs}
    values: dict[tuple[str, str, str], dict[str, float]] = {}
    units: dict[str, str] = {}
    drawn = set(charted)
    for series in found.series:
        if series.phase is not None or series.participant not in drawn:
            continue
        units[series.metric] = series.unit
        for point in series.points:
            key = (point.run_id, series.participant, series.metric)
            values.setdefault(key, {})[series.statistic] = point.value
    points = tuple(
        HistoryPoint(
            run_id,
            started[run_id],
            participant,
            metric,
            units[metric],
            stats.get("median", float("nan")),
            stats.get("p95", float("nan")),
            tuple(verdicts[run_id].get((participant, metric), ())),
        )
        for (run_id, participant, metric), stats in values.items()
    )
    changes = tuple(
        HistoryChange(
            series.participant,
            series.metric,
            series.statistic,
            series.starts(change).run_id,
            change.change,
            series.direction(change),
            change.before,
            change.after,
            change.p_value,
            statistic_label(series.statistic, series.lower_is_better),
        )
        for series in found.series
        if series.phase is None and series.participant in drawn
        for change in series.change_points
    )
    return HistoryWindow(
        points,
        found.runs,
        {r.run_id: numbers.get(r.run_id, 0) for r in found.runs},
        changes,
        found.left_out_line(),
        found.anchor_left_out,
    )


def _series(
    records: Sequence[ParticipantRecords],
    spec: ScoringSpec | None,
    metrics: Sequence[str],
    phases: Sequence[str | None],
    *,
    baseline: bool = False,
) -> dict[str, list[Series]]:
    """Per metric, the series of each participant that left a record (and phase): the
    latency and the unscored metrics as the summary samples them, the scored ones as scoring
    takes them."""
    out: dict[str, list[Series]] = {key: [] for key in metrics}
    scored_keys = {m.name for m in spec.metrics} if spec is not None else set()
    for pr in records:
        kept = sample_sets(pr.records)
        if not kept.count:
            continue
        for phase in phases:
            in_phase = [r for r in pr.records if phase is None or record_phase(r) == phase]
            scored = metric_samples(spec, in_phase) if spec is not None else {}
            for key in metrics:
                if key == LATENCY:
                    values = kept.latency(phase)
                elif key in scored_keys:
                    values = scored.get(key, [])
                else:
                    values = kept.metric(key, phase)
                out[key].append(Series(pr.participant, phase, tuple(values), baseline))
    return out


def _baseline(
    store: ResultStore, summary: RunSummary, metrics: Sequence[str], charted: Sequence[str]
) -> tuple[dict[str, tuple[Series, ...]], str | None]:
    """The compared baseline run's series (all phases together) of the ``charted``
    participants, when it is a stored run."""
    comparison = summary.comparison
    if comparison is None:
        return {}, None
    if comparison.baseline_run_id is None:
        return {}, "the baseline was not a stored run, so its samples are not drawn"
    try:
        base = store.get_run(comparison.baseline_run_id)
    except UnknownRunError:
        return {}, f"the baseline run {comparison.baseline_run_id} is no longer in the store"
    drawn = set(charted)
    series = _series(
        [pr for pr in store.participant_records(base.run_id) if pr.participant in drawn],
        stored_spec(store, base),
        metrics,
        (None,),
        baseline=True,
    )
    return {key: tuple(found) for key, found in series.items()}, None


def charted_participants(summary: RunSummary) -> tuple[tuple[str, ...], str | None]:
    """The participants the charts draw (in declared order) and, when that is not every one
    that ran, a sentence saying which: past :data:`CHARTED_PARTICIPANTS`, the best and the
    worst half as many each, by the ranking (unscored: by median latency)."""
    ran = [p.name for p in summary.ran_participants]
    if len(ran) <= CHARTED_PARTICIPANTS:
        return tuple(ran), None
    half = CHARTED_PARTICIPANTS // 2
    ran_set = set(ran)
    if summary.scores is not None:
        ranked = [e.participant for e in summary.scores.ranking if e.participant in ran_set]
        listed = set(ranked)
        order = ranked + [name for name in ran if name not in listed]
        by = "ranked"
    else:
        latency = {p.name: p.latency.median for p in summary.ran_participants if p.latency}
        order = sorted(ran, key=lambda name: (name not in latency, latency.get(name, 0.0)))
        by = "by median latency"
    chosen = {*order[:half], *order[-half:]}
    note = (
        f"The charts draw the {half} best and the {half} worst {by} of the {len(ran):,} "
        f"participants that ran; the tables list every one."
    )
    return tuple(name for name in ran if name in chosen), note


def load_run(store: ResultStore, run_id: str, *, history: int) -> RunReport:
    """Read one run: its summary, the samples behind it and its baseline's."""
    run = store.get_run(run_id)
    summary = stored_summary(store, run)
    records = store.participant_records(run_id)
    spec = stored_spec(store, run)
    metrics: dict[str, str] = {LATENCY: "ms"}
    labels: dict[str, str] = {LATENCY: "latency"}
    if summary.knobs.rounds is not None:
        # A benchmarked test's latency is its median time per call, one value per test: its
        # rounds are the time_ms samples, charted as that metric.
        metrics, labels = {}, {}
    if summary.per_call:
        # A benchmark of calibrated steps: their per-call figures first (the latency after:
        # the calibration loops' length).
        metrics = {**dict.fromkeys(summary.per_call, "ms"), **metrics}
    for p in summary.participants:
        for m in p.metrics:
            metrics.setdefault(m.key, m.unit)
            labels.setdefault(m.key, m.label)
    phases = tuple(dict.fromkeys(ph.phase for p in summary.participants for ph in p.phases))
    charted, charted_note = charted_participants(summary)
    if charted_note is not None:
        # Only the charted participants' samples are read into charts.
        kept = set(charted)
        records = [pr for pr in records if pr.participant in kept]
    samples = _series(records, spec, list(metrics), phases or (None,))
    spans = [(pr.participant, *bar) for pr in records for bar in record_timeline(pr.records)]
    t0 = min((span[2] for span in spans), default=0.0)
    timeline = tuple(
        TimelineBar(name, index, start - t0, end - t0, ok) for name, index, start, end, ok in spans
    )
    past = _history(store, run, summary, history, charted)
    baseline, baseline_note = _baseline(store, summary, list(metrics), charted)
    return RunReport(
        changes=past.changes,
        history_left_out=past.left_out,
        history_run_left_out=past.run_left_out,
        run=run,
        summary=summary,
        participants=charted,
        charted_note=charted_note,
        phases=phases,
        metrics=metrics,
        labels=labels,
        samples={key: tuple(series) for key, series in samples.items()},
        timeline=timeline,
        history=past.points,
        history_runs=past.runs,
        history_numbers=past.numbers,
        baseline=baseline,
        baseline_note=baseline_note,
    )
