"""A benchmark's history: its complete runs with one setup, the series of each participant's
statistics over them, and the change points in each series.

Private to :mod:`pytest_benchsdk.results`. A run belongs to a history when it is **complete**
(its status says every iteration of the benchmark's plan was selected and left a record: no
``-k``/node-id/``--lf`` subset, not interrupted, finished ``passed`` or ``failed``) and has the
same **setup**: benchmark, knobs (iterations, concurrency, stagger, group-by, providers,
warm-up) and dry run or not. Its numbers are those its summary printed
(:func:`~pytest_benchsdk.results.stored_summary`). The same runs give ``latest`` its baseline,
the comparison its between-run noise, ``pytest-benchsdk history`` its series and the HTML
report its change points.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from pytest_benchsdk._analysis.baseline import HistoryKey, history_key
from pytest_benchsdk._analysis.changepoints import ChangePoint, change_points, fewest_runs
from pytest_benchsdk._base.defaults import DEFAULT_COUNT_THRESHOLD, DEFAULT_NOISE_THRESHOLD
from pytest_benchsdk._base.numbers import is_count_unit, phase_subject
from pytest_benchsdk._base.percentiles import statistic_label
from pytest_benchsdk.results._model import LATENCY, Knobs, RunStatus, RunSummary
from pytest_benchsdk.results._stored import stored_status, stored_summary
from pytest_benchsdk.store import ResultStore, StoredRun

if TYPE_CHECKING:
    from pytest_benchsdk._base.runenv import RunEnvironment
    from pytest_benchsdk.results._live import BenchmarkRun

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "HISTORY_RULE",
    "HISTORY_START",
    "HISTORY_STATISTICS",
    "HistorySeries",
    "RunHistory",
    "RunSetup",
    "SeriesPoint",
    "complete_runs",
    "history_start",
    "history_values",
    "noise_history",
    "run_history",
    "start_history",
]

#: Complete runs a history shows by default (the newest ones).
DEFAULT_HISTORY_LIMIT: Final = 100
#: The statistics a history follows (those a comparison compares).
HISTORY_STATISTICS: Final = ("median", "p95")
#: Change points smaller than this (relative) are not reported: the comparisons' default
#: noise threshold.
DEFAULT_MIN_CHANGE: Final = DEFAULT_NOISE_THRESHOLD
#: The same for a count (``instructions``): a count does not move with load, so a change of
#: half a per cent stands out (the counts' own threshold).
COUNT_MIN_CHANGE: Final = DEFAULT_COUNT_THRESHOLD
#: Which runs a history holds, as every view of it (``pytest-benchsdk history``, the HTML
#: report) states it.
HISTORY_RULE: Final = (
    "only comparable runs: complete (every planned iteration selected and recorded) and with "
    "the same setup (benchmark, knobs, providers, warm-up, dry run or not)"
)
# Runs read from the store when looking for complete ones, newest first.
_SCAN_LIMIT: Final = 100_000
#: The run state that starts a benchmark's history afresh (``--bench-history-from``,
#: ``pytest-benchsdk history BENCHMARK --restart``): ``{"start": "at" | "after", "set": ISO
#: time}``, the history starting with this run or with the next one. The mark set last counts.
HISTORY_START: Final = "history_start"


@attrs.frozen
class RunSetup:
    """What two runs must share to be compared: the benchmark, the resolved knobs (their wire
    form, as stored) and whether it was a dry run."""

    benchmark_slug: str
    knobs: Mapping[str, Any]
    dry_run: bool

    @classmethod
    def of(cls, run: StoredRun) -> RunSetup:
        return cls(run.benchmark_slug, dict(run.knobs), run.dry_run)

    @classmethod
    def of_live(cls, run: BenchmarkRun, dry_run: bool) -> RunSetup:
        """The setup of a run while its session goes on (its knobs as the store keeps them,
        a group of benchmarked tests' rounds included; an A/B session's sides are not the
        setup's)."""
        knobs = run.schedule.resolved.to_wire()
        rounds = run.knobs.rounds
        if rounds is not None:
            knobs = {**knobs, **rounds.as_knobs()}
        return cls(run.config.benchmark_slug, knobs, dry_run)

    def describe(self, environment: RunEnvironment) -> dict[str, Any]:
        """The setup with the machine, as a comparison lists its differences
        (:func:`~pytest_benchsdk._analysis.baseline.setup_differences`)."""
        return {
            "benchmark": self.benchmark_slug,
            "knobs": dict(self.knobs),
            "environment": environment.to_dict(),
            "dry_run": self.dry_run,
        }

    def matches(self, run: StoredRun) -> bool:
        return (
            run.benchmark_slug == self.benchmark_slug
            and dict(run.knobs) == dict(self.knobs)
            and run.dry_run == self.dry_run
        )


def _is_complete(run: StoredRun, status: RunStatus) -> bool:
    return status.incomplete is None and run.record_count > 0


def history_start(store: ResultStore, benchmark_slug: str) -> tuple[str, bool] | None:
    """Where the benchmark's history starts afresh: the run marked last
    (:data:`HISTORY_START`) and whether the history includes it (None: no mark)."""
    found: tuple[str, str, bool] | None = None
    for run in store.list_runs(limit=_SCAN_LIMIT, benchmark_slug=benchmark_slug):
        mark = store.state_get(run.run_id, HISTORY_START)
        if isinstance(mark, dict) and mark.get("start") in ("at", "after"):
            when = str(mark.get("set", ""))
            if found is None or when > found[0]:
                found = (when, run.run_id, mark["start"] == "at")
    return None if found is None else (found[1], found[2])


def _mark(store: ResultStore, run_id: str, start: str) -> None:
    from datetime import datetime, timezone

    # Microseconds: two marks set in one second still say which came last.
    when = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    store.state_set(run_id, HISTORY_START, {"start": start, "set": when})


def start_history(store: ResultStore, benchmark_slug: str, run_id: str | None = None) -> str:
    """Start the benchmark's history afresh: with the run ``run_id`` (a run of that
    benchmark), or, None, with its next run; the line that says so. Earlier runs stay in the
    store (``show``, ``compare``, baselines), but no longer count in the history: neither in
    a comparison's between-run noise nor in ``pytest-benchsdk history``. Raises
    :class:`ValueError` when the benchmark has no runs, or ``run_id`` is another's."""
    runs = store.list_runs(limit=_SCAN_LIMIT, benchmark_slug=benchmark_slug)
    if run_id is None:
        if not runs:
            raise ValueError(f"no runs of benchmark {benchmark_slug} in {store.path}")
        _mark(store, runs[0].run_id, "after")
        return (
            f"History of {benchmark_slug}: starts afresh with its next run (the "
            f"{len(runs)} stored run(s) stay in the store, out of its history)"
        )
    run = store.get_run(run_id)
    if run.benchmark_slug != benchmark_slug:
        raise ValueError(f"run {run_id} is a run of {run.benchmark_slug}, not of {benchmark_slug}")
    _mark(store, run.run_id, "at")
    return f"History of {benchmark_slug}: starts afresh with run {run.run_id} ({run.started_at})"


def complete_runs(
    store: ResultStore,
    setup: RunSetup,
    *,
    before: str | None = None,
    limit: int = _SCAN_LIMIT,
    fresh: bool = False,
) -> Iterator[tuple[StoredRun, RunStatus]]:
    """The complete runs with ``setup``, newest first, with their status; ``before``: only
    runs stored before the run with that id (all of them when the store does not hold it);
    ``fresh``: only runs from where the history last started afresh (:func:`start_history`)."""
    runs = store.list_runs(limit=_SCAN_LIMIT, benchmark_slug=setup.benchmark_slug)
    ids = [run.run_id for run in runs]
    end = len(runs)
    if fresh:
        start = history_start(store, setup.benchmark_slug)
        if start is not None and start[0] in ids:
            end = ids.index(start[0]) + start[1]
    begin = ids.index(before) + 1 if before is not None and before in ids else 0
    runs = runs[begin:end]
    found = 0
    for run in runs:
        if found >= limit:
            return
        if not setup.matches(run):
            continue
        status = stored_status(store, run)
        if _is_complete(run, status):
            found += 1
            yield run, status


@attrs.frozen
class SeriesPoint:
    """One run's value of a series."""

    run_id: str
    started_at: str
    value: float


@attrs.frozen
class HistorySeries:
    """One participant's (with phases: one participant × phase's) statistic of one metric over
    the complete runs, oldest first, and the change points found in it (``ChangePoint.index``
    is a position in ``points``)."""

    participant: str
    metric: str
    label: str
    unit: str
    statistic: str
    lower_is_better: bool | None
    points: tuple[SeriesPoint, ...]
    change_points: tuple[ChangePoint, ...] = ()
    #: The phase (None: the participant's whole run).
    phase: str | None = None

    @property
    def key(self) -> HistoryKey:
        return history_key(self.participant, self.metric, self.statistic, self.phase)

    @property
    def statistic_label(self) -> str:
        """The statistic as the views name it: ``p95 (best 5 %)`` for a higher-is-better
        metric's best tail, so that a change of it is not read as the worst tail's."""
        return statistic_label(self.statistic, self.lower_is_better)

    @property
    def subject(self) -> str:
        """Who the series is about, as the views print it: ``e2b``, or ``e2b · cold``."""
        return phase_subject(self.participant, self.phase)

    def starts(self, change: ChangePoint) -> SeriesPoint:
        """The run where ``change`` starts."""
        return self.points[change.index]

    def direction(self, change: ChangePoint) -> str:
        """``regressed`` / ``improved`` when the metric has a direction, else ``higher`` /
        ``lower``."""
        up = change.after > change.before
        if self.lower_is_better is None:
            return "higher" if up else "lower"
        return "regressed" if up == self.lower_is_better else "improved"

    def to_json(self) -> dict[str, Any]:
        return {
            "participant": self.participant,
            "phase": self.phase,
            "metric": self.metric,
            "label": self.label,
            "unit": self.unit,
            "statistic": self.statistic,
            "lowerIsBetter": self.lower_is_better,
            "points": [
                {"runId": p.run_id, "startedAt": p.started_at, "value": p.value}
                for p in self.points
            ],
            "changePoints": [
                {
                    **c.to_json(),
                    "runId": self.starts(c).run_id,
                    "direction": self.direction(c),
                }
                for c in self.change_points
            ],
        }


@attrs.frozen
class RunHistory:
    """The complete runs of one benchmark with one setup (oldest first), and the series of
    every participant × metric × statistic over them. ``left_out`` counts the benchmark's other
    runs (partial, interrupted, unfinished, another setup, or beyond the limit)."""

    benchmark_slug: str
    benchmark_name: str
    knobs: Knobs
    dry_run: bool
    runs: tuple[StoredRun, ...]
    series: tuple[HistorySeries, ...]
    left_out: int = 0
    #: Why the ``left_out`` runs are (reason -> how many, in the order :meth:`left_out_line`
    #: lists them): ``another setup``, ``not complete``, ``beyond the limit``, ``newer``.
    left_out_reasons: Mapping[str, int] = attrs.field(factory=dict)
    #: The run the history ends with, when it is not in it itself (why: its
    #: :attr:`~pytest_benchsdk.results.RunStatus.incomplete`).
    anchor_left_out: str | None = None

    def left_out_line(self) -> str | None:
        """What the history left out and why, for people (None: nothing):
        ``5 other run(s) left out: 3 with another setup, 1 not complete (partial,
        interrupted or unfinished), 1 newer than this run``."""
        if not self.left_out:
            return None
        words = {
            "another setup": "with another setup",
            "not complete": "not complete (partial, interrupted or unfinished)",
            "beyond the limit": "older than the limit",
            "newer": "newer than the run it ends with",
            "before a fresh start": "before the history started afresh (--bench-history-from)",
        }
        parts = [f"{n} {words.get(reason, reason)}" for reason, n in self.left_out_reasons.items()]
        return f"{self.left_out} other run(s) left out: " + ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmarkSlug": self.benchmark_slug,
            "benchmarkName": self.benchmark_name,
            "knobs": self.knobs.to_json(),
            "dryRun": self.dry_run,
            "runs": [{"runId": r.run_id, "startedAt": r.started_at} for r in self.runs],
            "leftOut": self.left_out,
            "leftOutReasons": dict(self.left_out_reasons),
            "series": [s.to_json() for s in self.series],
        }


@attrs.frozen
class _Metric:
    key: str
    label: str
    unit: str
    lower_is_better: bool | None


def _values(summary: RunSummary) -> Iterator[tuple[str, str | None, _Metric, str, float]]:
    """(participant, phase, metric, statistic, value) of every statistic a history follows:
    each participant's whole run (phase None) and, with phases, each phase's (a run stored
    before its phases had rows has none: its phases' series start later)."""
    for p in summary.ran_participants:
        parts: list[tuple[str | None, Any]] = [(None, p), *((ph.phase, ph) for ph in p.phases)]
        for phase, part in parts:
            facts = [(_Metric(LATENCY, "latency", "ms", True), part.latency)]
            facts += [
                (_Metric(m.key, m.label, m.unit, m.lower_is_better), m.stats)
                for m in part.metrics
                if m.key != LATENCY
            ]
            for metric, stats in facts:
                if stats is None:
                    continue
                for statistic in HISTORY_STATISTICS:
                    value = stats.get(statistic)
                    if math.isfinite(value):
                        yield p.name, phase, metric, statistic, value


def history_values(
    store: ResultStore,
    setup: RunSetup,
    *,
    before: str | None,
    limit: int,
) -> tuple[int, dict[HistoryKey, list[float]]]:
    """For a comparison's between-run noise: how many complete runs with ``setup`` the store
    holds before the run ``before``, and, from the latest ``limit`` of them, each
    participant × metric × statistic's values (and each participant × phase's, keyed by
    :func:`~pytest_benchsdk._analysis.baseline.history_key`), oldest first (a run that failed
    ``--bench-compare-fail`` included: it ran on this machine like the others, and a step it
    made counts once in :func:`~pytest_benchsdk._analysis.baseline.between_run_noise`)."""
    runs = [run for run, _ in complete_runs(store, setup, before=before)]
    values: dict[HistoryKey, list[float]] = {}
    for run in reversed(runs[:limit]):
        for participant, phase, metric, statistic, value in _values(stored_summary(store, run)):
            key = history_key(participant, metric.key, statistic, phase)
            values.setdefault(key, []).append(value)
    return len(runs), values


#: A comparison row's verdicts that say the run changed.
_CHANGED: Final = ("regressed", "improved")


def _judged_changed(store: ResultStore, run: StoredRun) -> set[HistoryKey]:
    """The rows the run's own comparison with its baseline judged changed (regressed or
    improved; an A/B session's paired rows say how two trees differ, not the run: none)."""
    body = store.analysis(run.run_id, "comparison")
    if not isinstance(body, dict) or body.get("paired"):
        return set()
    found: set[HistoryKey] = set()
    for row in body.get("rows") or ():
        if isinstance(row, dict) and row.get("verdict") in _CHANGED:
            phase = row.get("phase")
            found.add(
                history_key(
                    str(row.get("participant")),
                    str(row.get("metric")),
                    str(row.get("statistic")),
                    None if phase is None else str(phase),
                )
            )
    return found


def _last_change(values: Sequence[float]) -> int:
    """Where the series' last change point is (0: none), as ``pytest-benchsdk history``
    finds them (:func:`~pytest_benchsdk.compare.change_points`, changes under
    :data:`DEFAULT_MIN_CHANGE` left out)."""
    if len(values) < fewest_runs():
        return 0
    found = sorted(change.index for change in change_points(values, min_change=DEFAULT_MIN_CHANGE))
    if not found:
        return 0
    bounds = [0, *found, len(values)]
    levels = [statistics.median(values[a:b]) for a, b in itertools.pairwise(bounds)]
    if not all(level > 0 and math.isfinite(level) for level in levels):
        return found[-1]
    step = abs(math.log(levels[-1] / levels[-2]))
    # A level the series has been at before, not next to it, is where it flips back and forth
    # (a machine whose load comes and goes): those flips are its noise, which the band must
    # see, not a change to cut at.
    if any(abs(math.log(levels[-1] / level)) < step / 2 for level in levels[:-2]):
        return 0
    return found[-1]


def noise_history(
    store: ResultStore,
    setup: RunSetup,
    *,
    before: str | None,
    limit: int,
    baseline: str | None = None,
) -> tuple[int, dict[HistoryKey, list[float]], dict[HistoryKey, dict[str, int]]]:
    """A comparison's history (:func:`history_values`) as its between-run noise may read
    it: from where the history last started afresh (:func:`start_history`), and per row
    without the runs that cannot tell its noise: those **before the row's last change point**
    (another level, as ``pytest-benchsdk history`` shows it) and those **judged changed**
    (regressed or improved) for the row in their own comparison since the run ``baseline``
    (the comparison's baseline; every run when it is not among them): a regression is not
    noise, and a run that kept it must not widen the band that judges the next run. A run
    judged changed before the baseline is history like any other: the baseline moved past it
    (a later run passed), so it was noise, or the change was accepted. Returns how many
    complete runs there are, the values per row (oldest first), and per row how many runs
    were left out and why (``before_change``, ``changed``)."""
    runs = [run for run, _ in complete_runs(store, setup, before=before, fresh=True)]
    ids = [run.run_id for run in runs]
    # Newest first: the runs newer than the baseline (all of them when it is not among them).
    since = set(ids[: ids.index(baseline)] if baseline in ids else ids)
    series: dict[HistoryKey, list[tuple[float, bool]]] = {}
    for run in reversed(runs[:limit]):
        changed = _judged_changed(store, run) if run.run_id in since else set()
        for participant, phase, metric, statistic, value in _values(stored_summary(store, run)):
            key = history_key(participant, metric.key, statistic, phase)
            series.setdefault(key, []).append((value, key in changed))
    values: dict[HistoryKey, list[float]] = {}
    left_out: dict[HistoryKey, dict[str, int]] = {}
    for key, points in series.items():
        start = _last_change([value for value, _ in points])
        kept = points[start:]
        values[key] = [value for value, changed in kept if not changed]
        counts = {"before_change": start, "changed": sum(changed for _, changed in kept)}
        if any(counts.values()):
            left_out[key] = {reason: n for reason, n in counts.items() if n}
    return len(runs), values, left_out


def run_history(
    store: ResultStore,
    benchmark_slug: str,
    *,
    until: str | None = None,
    participants: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    limit: int = DEFAULT_HISTORY_LIMIT,
    min_change: float | None = None,
    alpha: float = 0.05,
) -> RunHistory | None:
    """The history of a benchmark: its latest ``limit`` complete runs with the setup of the
    run ``until`` (default: of its newest complete run), ending with that run, and each series
    with its change points (:func:`~pytest_benchsdk.compare.change_points`, changes under
    ``min_change`` left out; by default :data:`DEFAULT_MIN_CHANGE`, and for a count, such as
    ``instructions``, :data:`COUNT_MIN_CHANGE`: a count does not move with load, so a smaller
    step is a change). ``participants``/``metrics`` keep only those. None when the
    benchmark has no complete run."""
    every = store.list_runs(limit=_SCAN_LIMIT, benchmark_slug=benchmark_slug)
    anchor: StoredRun | None
    if until is not None:
        anchor = store.get_run(until)
    else:
        anchor = next((r for r in every if _is_complete(r, stored_status(store, r))), None)
    if anchor is None:
        return None
    setup = RunSetup.of(anchor)
    window: list[StoredRun] = []
    anchor_status = stored_status(store, anchor)
    if _is_complete(anchor, anchor_status):
        window.append(anchor)
    every_earlier = sum(1 for _ in complete_runs(store, setup, before=anchor.run_id))
    earlier = [run for run, _ in complete_runs(store, setup, before=anchor.run_id, fresh=True)]
    window += earlier
    beyond = max(0, len(window) - limit)
    window = list(reversed(window[:limit]))
    if not window:
        return None
    reasons = _left_out_reasons(every, anchor, setup, every_earlier, beyond, window)
    if every_earlier > len(earlier):
        reasons["before a fresh start"] = every_earlier - len(earlier)
    if until is None and "newer" in reasons:
        # The history ends with the newest complete run: every newer one is not complete.
        newer = reasons.pop("newer")
        reasons["not complete"] = reasons.get("not complete", 0) + newer
        order = ("another setup", "not complete", "beyond the limit", "before a fresh start")
        reasons = {reason: reasons[reason] for reason in order if reason in reasons}
    summaries = [stored_summary(store, run) for run in window]
    found: dict[tuple[str, str | None, str, str], tuple[_Metric, list[SeriesPoint]]] = {}
    for run, summary in zip(window, summaries, strict=True):
        for participant, phase, metric, statistic, value in _values(summary):
            if participants and participant not in participants:
                continue
            if metrics and metric.key not in metrics and metric.label not in metrics:
                continue
            entry = found.setdefault((participant, phase, metric.key, statistic), (metric, []))
            entry[1].append(SeriesPoint(run.run_id, run.started_at, value))
    series = []
    for (participant, phase, key, statistic), (metric, points) in found.items():
        smallest = min_change
        if smallest is None:
            smallest = COUNT_MIN_CHANGE if is_count_unit(metric.unit) else DEFAULT_MIN_CHANGE
        changes = change_points([p.value for p in points], alpha=alpha, min_change=smallest)
        series.append(
            HistorySeries(
                participant,
                key,
                metric.label,
                metric.unit,
                statistic,
                metric.lower_is_better,
                tuple(points),
                changes,
                phase,
            )
        )
    newest = summaries[-1]
    return RunHistory(
        benchmark_slug=benchmark_slug,
        benchmark_name=newest.benchmark_name,
        knobs=newest.knobs,
        dry_run=anchor.dry_run,
        runs=tuple(window),
        series=tuple(series),
        left_out=sum(reasons.values()),
        left_out_reasons=reasons,
        anchor_left_out=None if window[-1].run_id == anchor.run_id else anchor_status.incomplete,
    )


def _left_out_reasons(
    every: Sequence[StoredRun],
    anchor: StoredRun,
    setup: RunSetup,
    complete_earlier: int,
    beyond: int,
    window: Sequence[StoredRun],
) -> dict[str, int]:
    """Why each of the benchmark's stored runs (``every``, newest first) is not in ``window``:
    newer than ``anchor``, another setup, not complete, or beyond the limit (reasons with no
    run left out)."""
    ids = [run.run_id for run in every]
    at = ids.index(anchor.run_id) if anchor.run_id in ids else 0
    older = every[at + 1 :]
    same = sum(1 for run in older if setup.matches(run))
    in_window = {run.run_id for run in window}
    anchor_incomplete = anchor.run_id in ids and anchor.run_id not in in_window
    reasons = {
        "another setup": len(older) - same,
        "not complete": same - complete_earlier + anchor_incomplete,
        "beyond the limit": beyond,
        "newer": at,
    }
    return {reason: n for reason, n in reasons.items() if n > 0}
